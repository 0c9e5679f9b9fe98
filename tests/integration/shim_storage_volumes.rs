//! Storage volumes over HTTP (Appaloft's `/storage-volumes` routes) against the running shim,
//! controller and a real server: bad input named and nothing created, list and show with
//! their attachments, attaching only existing volumes of the resource's environment, a
//! refused delete while attached (and one from kubectl held until detached), and what the
//! volumes hold inside deployed containers.

use berth_crds::condition::{ConditionStatus, READY};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::storage_volume::StorageVolume;
use berth_tests::rest::{Reply, Rest, TestOrg};
use berth_tests::{TestNamespace, client, eventually, kubectl};
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::deploy_support::{
    WAIT, delete_resource, docker_names, ready_server, remove_server, wait_body, wait_listed_with,
};
use crate::shim_projects_envs::{environment, invalid, project};

/// Creates a storage volume and returns its id.
pub(crate) async fn create_volume(rest: &Rest, body: Value) -> String {
    let created = rest.post("/storage-volumes", body).await.expect(201);
    let id = created["id"].as_str().expect("a volume id").to_string();
    assert!(id.starts_with("vol-"), "{created}");
    id
}

/// A named volume `name` in `project`/`environment`; returns its id.
pub(crate) async fn named_volume(
    rest: &Rest,
    project: &str,
    environment: &str,
    name: &str,
) -> String {
    let body = json!({
        "projectId": project, "environmentId": environment, "name": name, "kind": "named-volume",
    });
    create_volume(rest, body).await
}

/// Ids of `GET /storage-volumes{query}`, sorted.
async fn listed(rest: &Rest, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = rest.get(&format!("/storage-volumes{query}")).await.ok()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// The `storageVolume` of `GET /storage-volumes/{id}`.
async fn shown(rest: &Rest, id: &str) -> Value {
    let answer = rest.get(&format!("/storage-volumes/{id}")).await.ok();
    assert_eq!(answer["schemaVersion"], "storage-volumes.show/v1");
    assert!(
        answer["generatedAt"].as_str().unwrap().ends_with('Z'),
        "{answer}"
    );
    answer["storageVolume"].clone()
}

async fn attach(rest: &Rest, resource: &str, volume: &str, path: &str) -> Reply {
    let body = json!({"storageVolumeId": volume, "destinationPath": path});
    rest.post(&format!("/resources/{resource}/storage-attachments"), body)
        .await
}

/// A create body in `project`/`environment` with `patch` applied (`null` removes a field).
fn volume_body(project: &str, environment: &str, patch: Value) -> Value {
    let mut body = json!({
        "projectId": project, "environmentId": environment, "name": "Uploads",
        "kind": "named-volume",
    });
    let fields = body.as_object_mut().unwrap();
    for (key, value) in patch.as_object().unwrap() {
        match value {
            Value::Null => fields.remove(key),
            value => fields.insert(key.clone(), value.clone()),
        };
    }
    body
}

/// Bodies a create refuses (as patches of [`volume_body`]) and the field each names.
fn refusals(other_project_environment: &str) -> Vec<(Value, &'static str)> {
    let bind = |path: &str| json!({"kind": "bind-mount", "sourcePath": path});
    vec![
        (json!({"name": null}), "name"),
        (json!({"name": "  "}), "name"),
        (json!({"kind": "tmpfs"}), "kind"),
        (json!({"kind": "bind-mount"}), "sourcePath"),
        (bind("srv/data"), "sourcePath"),
        (bind("/srv/../etc"), "sourcePath"),
        (bind("/"), "sourcePath"),
        (json!({"sourcePath": "/srv/data"}), "sourcePath"),
        (
            json!({"environmentId": other_project_environment}),
            "environmentId",
        ),
        (json!({"projectId": ""}), "projectId"),
        (
            json!({"backupRelationship": {"retentionRequired": true}}),
            "backupRelationship",
        ),
    ]
}

#[tokio::test]
async fn bad_volumes_are_refused_by_field_and_create_nothing() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let blog = project(&member, "Blog").await;
    let blog_env = environment(&member, &blog, "prod").await;
    let body = |patch: Value| volume_body(&shop, &prod, patch);
    let post = |patch: Value| member.post("/storage-volumes", body(patch));
    for (patch, field) in refusals(&blog_env) {
        invalid(post(patch.clone()).await, field);
    }
    for (patch, kind) in [
        (json!({"projectId": "prj-missing"}), "project"),
        (json!({"environmentId": "env-missing"}), "environment"),
    ] {
        let error = post(patch).await.error(404, "not_found");
        assert_eq!(error["details"]["kind"], kind, "{error}");
    }
    assert!(
        listed(&member, "").await.is_empty(),
        "a refused create stored a volume"
    );
    // Nothing reached the API server either.
    let stored = kubectl(
        &["get", "storagevolumes", "-n", &org.namespace, "-o", "name"],
        None,
    );
    assert!(
        String::from_utf8_lossy(&stored.stdout).trim().is_empty(),
        "{stored:?}"
    );

    // A good one; its name's slug is then taken in the environment, not in another.
    let id = create_volume(&member, body(json!({"description": "user uploads"}))).await;
    let error = post(json!({"name": "uploads!"}))
        .await
        .error(409, "storage_volume_slug_conflict");
    assert_eq!(error["details"]["field"], "name");
    let other = named_volume(&member, &blog, &blog_env, "Uploads").await;
    let mut both = vec![id.clone(), other.clone()];
    both.sort();
    assert_eq!(listed(&member, "").await, both);
    assert_eq!(
        listed(&member, &format!("?environmentId={prod}")).await,
        [id]
    );
    assert_eq!(
        listed(&member, &format!("?projectId={blog}")).await,
        [other]
    );
    member
        .get("/storage-volumes?projectId=prj-missing")
        .await
        .error(404, "not_found");
    invalid(member.get("/storage-volumes?serverId=x").await, "serverId");
}

#[tokio::test]
async fn volumes_list_their_attachments_and_are_deleted_only_when_detached() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let staging = environment(&member, &shop, "staging").await;
    let uploads = named_volume(&member, &shop, &prod, "Uploads").await;
    let media = create_volume(
        &member,
        json!({
            "projectId": shop, "environmentId": prod, "name": "Media", "kind": "bind-mount",
            "sourcePath": "/srv/media",
        }),
    )
    .await;
    let elsewhere = named_volume(&member, &shop, &staging, "Cache").await;

    assert_unattached(&member, &uploads, &media).await;

    // Attaching names an existing volume of the resource's own environment.
    let web = resource(&member, &shop, &prod).await;
    let error = attach(&member, &web, "vol-missing", "/data")
        .await
        .error(404, "not_found");
    assert_eq!(error["details"]["field"], "storageVolumeId");
    invalid(
        attach(&member, &web, &elsewhere, "/data").await,
        "storageVolumeId",
    );
    let attachment = attach(&member, &web, &uploads, "/data").await.ok()["id"].clone();
    assert_attached(&member, &uploads, &web, &attachment).await;

    // Deleting it is refused while attached, naming the resource; the data's fate is told.
    let error = member
        .delete(&format!("/storage-volumes/{uploads}"), json!({}))
        .await
        .error(409, "storage_volume_delete_blocked");
    assert!(error["message"].as_str().unwrap().contains(&web), "{error}");
    assert_eq!(error["details"]["resourceIds"], json!([web]));
    assert_eq!(shown(&member, &uploads).await["attachmentCount"], 1);
    let path = format!(
        "/resources/{web}/storage-attachments/{}",
        attachment.as_str().unwrap()
    );
    member.delete(&path, json!({})).await.ok();
    let wrong = json!({"confirmation": {"storageVolumeId": media}});
    member
        .delete(&format!("/storage-volumes/{uploads}"), wrong)
        .await
        .error(409, "confirmation_mismatch");
    let deleted = member
        .delete(&format!("/storage-volumes/{uploads}"), json!({}))
        .await
        .ok();
    assert_eq!(deleted["id"], uploads.as_str());
    assert_eq!(
        listed(&member, &format!("?environmentId={prod}")).await,
        std::slice::from_ref(&media)
    );
    member
        .get(&format!("/storage-volumes/{uploads}"))
        .await
        .error(404, "not_found");

    held_while_attached(&client, &member, &org, &web, (&shop, &prod)).await;

    // Another organization's volume is unknown there, for every route.
    assert_unknown_elsewhere(&client, &media).await;
    assert_eq!(shown(&member, &media).await["id"], media.as_str());
}

/// A volume deleted with kubectl while attached (the REST API refuses; kubectl cannot) is
/// kept, `DeletionBlocked` and a Warning naming the resource, until it is detached; then it
/// goes.
async fn held_while_attached(
    client: &Client,
    member: &Rest,
    org: &TestOrg,
    web: &str,
    (project, environment): (&str, &str),
) {
    let scratch = named_volume(member, project, environment, "Scratch").await;
    let attachment = attach(member, web, &scratch, "/scratch").await.ok()["id"].clone();
    let namespace = org.namespace.as_str();
    let api = Api::<StorageVolume>::namespaced(client.clone(), namespace);
    eventually(WAIT, "the volume held by its finalizer", || async {
        let volume = api.get(&scratch).await.ok()?;
        volume.metadata.finalizers.filter(|f| !f.is_empty())
    })
    .await;
    let output = kubectl(
        &[
            "-n",
            namespace,
            "delete",
            "storagevolume",
            &scratch,
            "--wait=false",
        ],
        None,
    );
    assert!(output.status.success(), "kubectl delete: {output:?}");
    let blocked = eventually(WAIT, "the deletion blocked", || async {
        let status = api.get(&scratch).await.ok()?.status?;
        let blocked = status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "DeletionBlocked" && c.status == ConditionStatus::True)?;
        Some(blocked.message)
    })
    .await;
    assert!(blocked.contains(&format!("resource/{web}")), "{blocked}");
    let events = kubectl(
        &[
            "-n",
            namespace,
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={scratch},reason=DeletionBlocked"),
            "-o",
            "name",
        ],
        None,
    );
    assert!(
        !events.stdout.is_empty(),
        "a DeletionBlocked event: {events:?}"
    );
    // Still there, still listed with its attachment, while the resource holds it.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let volume = shown(member, &scratch).await;
    assert_eq!(
        (&volume["attachmentCount"], &volume["lifecycleStatus"]),
        (&json!(1), &json!("deleted"))
    );

    let path = format!(
        "/resources/{web}/storage-attachments/{}",
        attachment.as_str().unwrap()
    );
    member.delete(&path, json!({})).await.ok();
    eventually(WAIT, "the detached volume gone", || async {
        api.get_opt(&scratch).await.ok()?.is_none().then_some(())
    })
    .await;
    member
        .get(&format!("/storage-volumes/{scratch}"))
        .await
        .error(404, "not_found");
}

/// A new named volume and a bind mount as `show` answers them: no attachments, no null.
async fn assert_unattached(member: &Rest, uploads: &str, media: &str) {
    let volume = shown(member, uploads).await;
    assert_eq!(volume["name"], "Uploads");
    assert_eq!(volume["slug"], "uploads");
    assert_eq!(volume["kind"], "named-volume");
    assert_eq!(volume["lifecycleStatus"], "active");
    assert_eq!(
        (
            volume["attachmentCount"].clone(),
            volume["attachments"].clone()
        ),
        (json!(0), json!([]))
    );
    assert!(
        volume.get("sourcePath").is_none(),
        "no null, no empty field: {volume}"
    );
    assert!(volume["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(shown(member, media).await["sourcePath"], "/srv/media");
}

/// The volume lists its one attachment, and the resource's detail names the volume.
async fn assert_attached(member: &Rest, uploads: &str, web: &str, attachment: &Value) {
    let volume = shown(member, uploads).await;
    assert_eq!(volume["attachmentCount"], 1);
    let attached = &volume["attachments"][0];
    assert_eq!(&attached["attachmentId"], attachment);
    assert_eq!(attached["resourceId"], web);
    assert_eq!(attached["resourceName"], "Web");
    assert_eq!(
        (
            attached["destinationPath"].as_str(),
            attached["mountMode"].as_str()
        ),
        (Some("/data"), Some("read-write"))
    );
    assert!(
        attached["attachedAt"].as_str().unwrap().ends_with('Z'),
        "{attached}"
    );
    let detail = member.get(&format!("/resources/{web}")).await.ok();
    let summary = &detail["storageAttachments"][0];
    assert_eq!(
        (
            summary["storageVolumeName"].as_str(),
            summary["storageVolumeKind"].as_str()
        ),
        (Some("Uploads"), Some("named-volume"))
    );
}

/// A member of another organization finds volume `id` nowhere.
async fn assert_unknown_elsewhere(client: &Client, id: &str) {
    let mut other_org = TestOrg::new(client).await;
    let stranger = other_org.user(OrganizationRole::Admin).await.rest;
    stranger
        .get(&format!("/storage-volumes/{id}"))
        .await
        .error(404, "not_found");
    stranger
        .delete(&format!("/storage-volumes/{id}"), json!({}))
        .await
        .error(404, "not_found");
    assert!(listed(&stranger, "").await.is_empty());
}

/// A resource created over REST without a server (nothing deploys); returns its id.
async fn resource(rest: &Rest, project: &str, environment: &str) -> String {
    let body = json!({
        "projectId": project, "environmentId": environment, "name": "Web", "kind": "application",
        "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
        "networkProfile": {"internalPort": 8080},
    });
    rest.post("/resources", body).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Starts an attempt of `resource` and waits until it succeeded; returns its id.
async fn redeploy(rest: &Rest, client: &Client, org: &TestOrg, start: &Value) -> String {
    let created = rest.post("/deployments", start.clone()).await.expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let api = Api::<Deployment>::namespaced(client.clone(), &org.namespace);
    let status = eventually(WAIT, &format!("{id} finished"), || async {
        let status = api.get(&id).await.ok()?.status?;
        status.status.filter(|s| s.is_terminal()).map(|_| status)
    })
    .await;
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    id
}

/// Runs `script` in the container of deployment `deployment`.
fn exec(deployment: &str, script: &str) -> std::process::Output {
    let names = docker_names(&format!("label=berth.dev/deployment={deployment}"));
    let container = names.first().expect("the attempt's container");
    std::process::Command::new("docker")
        .args(["exec", container, "sh", "-c", script])
        .output()
        .expect("docker exec")
}

#[tokio::test]
async fn volumes_mount_into_deployed_containers_and_named_data_survives_a_redeploy() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    // The stack's server is this machine: a directory here is the server's directory.
    let host_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        host_dir.path().join("hello.txt"),
        "from the server's disk\n",
    )
    .unwrap();
    let data = named_volume(&admin, &shop, &prod, "Data").await;
    let host = create_volume(
        &admin,
        json!({
            "projectId": shop, "environmentId": prod, "name": "Host files", "kind": "bind-mount",
            "sourcePath": host_dir.path().to_str().unwrap(),
        }),
    )
    .await;
    let body = json!({
        "projectId": shop, "environmentId": prod, "name": "Files", "kind": "application",
        "serverId": server, "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
        "networkProfile": {"internalPort": 8080},
        "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
    });
    let web = admin.post("/resources", body).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_listed_with(&admin, &web, "succeeded").await;
    attach(&admin, &web, &data, "/www/data").await.ok();
    attach(&admin, &web, &host, "/www/host").await.ok();
    let start =
        json!({"projectId": shop, "environmentId": prod, "serverId": server, "resourceId": web});
    let first = redeploy(&admin, &client, &org, &start).await;

    // The bind mount shows the server's file; the named volume takes a file written inside.
    wait_body(port, "files.localhost", "hello from berth sample-app").await;
    let http = reqwest::Client::new();
    let seen = fetch_path(&http, port, "/host/hello.txt").await;
    assert_eq!(seen.as_deref(), Some("from the server's disk\n"));
    let written = exec(&first, "echo kept-data > /www/data/note.txt");
    assert!(written.status.success(), "{written:?}");

    // A new attempt runs a new container: the named volume's file is still there.
    let second = redeploy(&admin, &client, &org, &start).await;
    assert_ne!(first, second);
    let read = exec(&second, "cat /www/data/note.txt");
    assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), "kept-data");
    assert_eq!(
        fetch_path(&http, port, "/data/note.txt").await.as_deref(),
        Some("kept-data\n")
    );

    refused_mounts(&client, &org, &admin, &start, host_dir.path()).await;

    delete_resource(&admin, &web, "files").await;
    let _ = std::process::Command::new("docker")
        .args([
            "volume",
            "rm",
            &berth_crds::resource::volume_name(&org.namespace, &data),
        ])
        .output();
    remove_server(&admin, &server).await;
}

/// The body of a 200 for `path` of `files.localhost` through the edge proxy.
async fn fetch_path(http: &reqwest::Client, port: u16, path: &str) -> Option<String> {
    let response = http
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", "files.localhost")
        .send()
        .await
        .ok()?;
    (response.status() == 200).then_some(())?;
    response.text().await.ok()
}

/// Attachments the controller refuses to mount: one naming no StorageVolume (applied with
/// kubectl) fails its attempt naming it rather than mounting something else in its place; a
/// bind mount of a directory the server lacks is refused by Docker, saying why.
async fn refused_mounts(
    client: &Client,
    org: &TestOrg,
    admin: &Rest,
    start: &Value,
    host_dir: &std::path::Path,
) {
    let orphan = first_attempt_error(client, org, start, "vol-gone").await;
    assert_eq!(orphan.code, "storage_volume_not_found");
    assert!(orphan.message.contains("vol-gone"), "{}", orphan.message);
    let absent = format!("{}/absent", host_dir.display());
    let body = json!({
        "projectId": start["projectId"], "environmentId": start["environmentId"],
        "name": "Absent", "kind": "bind-mount", "sourcePath": absent,
    });
    let absent_volume = create_volume(admin, body).await;
    let refused = first_attempt_error(client, org, start, &absent_volume).await;
    assert_eq!(refused.code, "container_start_failed");
    assert!(refused.message.contains(&absent), "{}", refused.message);
}

/// A new Resource applied with kubectl whose attachment names storage volume `volume`: its first
/// attempt's error.
async fn first_attempt_error(
    client: &Client,
    org: &TestOrg,
    start: &Value,
    volume: &str,
) -> berth_crds::deployment::DeploymentError {
    let id = format!("orphan{}", berth_tests::random_suffix());
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": start["projectId"], "environmentId": start["environmentId"],
        "serverId": start["serverId"], "name": id, "kind": "application",
        "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
        "networkProfile": {"internalPort": 8080},
        "storageAttachments": [
            {"attachmentId": "a1", "storageVolumeId": volume, "destinationPath": "/data"},
        ],
    }))
    .unwrap();
    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    resources
        .create(&PostParams::default(), &Resource::new(&id, spec))
        .await
        .expect("create resource");
    let api = Api::<Deployment>::namespaced(client.clone(), &org.namespace);
    let name = format!("dep-{id}-1");
    let status = eventually(WAIT, &format!("{name} failed"), || async {
        let status = api.get(&name).await.ok()?.status?;
        (status.status == Some(DeploymentState::Failed)).then_some(status)
    })
    .await;
    let _ = resources.delete(&id, &Default::default()).await;
    status.last_error.expect("the failed attempt's error")
}

#[tokio::test]
async fn a_volume_applied_with_kubectl_that_breaks_the_source_path_rule_says_so() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "vol-rule").await;
    for (name, kind, source_path) in [
        ("bind-without-path", "bind-mount", None),
        ("named-with-path", "named-volume", Some("/srv/data")),
    ] {
        let manifest = json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "StorageVolume",
            "metadata": { "name": name, "namespace": ns.name },
            "spec": {
                "projectId": "prj-1", "environmentId": "env-1", "name": name, "kind": kind,
                "sourcePath": source_path,
            },
        });
        let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
        assert!(output.status.success(), "kubectl apply: {output:?}");
    }
    let volumes = ns.api::<StorageVolume>();
    for name in ["bind-without-path", "named-with-path"] {
        let ready = eventually(WAIT, &format!("{name} Ready=False"), || async {
            let status = volumes.get(name).await.ok()?.status?;
            let ready = status.conditions.into_iter().find(|c| c.type_ == READY)?;
            (ready.status == ConditionStatus::False).then_some(ready)
        })
        .await;
        assert_eq!(ready.reason, "InvalidSpec");
        assert!(
            ready.message.contains("spec.sourcePath"),
            "{}",
            ready.message
        );
    }
}
