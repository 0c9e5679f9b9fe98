//! Resource configuration over HTTP (spec §4.7): profiles, source, auto-deploy, storage,
//! variables, env-file import, secrets and the effective configuration, against the running
//! shim and the real API server. Secret values must never come back or reach the log.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_crds::environment::Environment;
use berth_crds::member::OrganizationRole;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::{Resource, ResourceKind, ResourceSpec};
use berth_crds::variable::{PlainVariable, VariableExposure};
use berth_tests::rest::{Rest, TestOrg, transcript};
use berth_tests::{client, eventually, random_suffix};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::{SignedDuration, Timestamp, Unit};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_storage_volumes::named_volume;
use crate::shim_tokens::create_token;

const WAIT: Duration = Duration::from_secs(30);

/// A Resource written directly as a custom resource (the GitOps way); returns its id.
async fn resource(
    client: &Client,
    org: &TestOrg,
    project_id: &str,
    environment_id: &str,
) -> String {
    resource_with(client, org, project_id, environment_id, vec![], None).await
}

async fn resource_with(
    client: &Client,
    org: &TestOrg,
    project_id: &str,
    environment_id: &str,
    variables: Vec<PlainVariable>,
    secrets_ref: Option<String>,
) -> String {
    let id = format!("res-t{}", random_suffix());
    let spec = ResourceSpec {
        project_id: project_id.into(),
        environment_id: environment_id.into(),
        server_id: None,
        destination_id: None,
        name: "Web".into(),
        slug: None,
        kind: ResourceKind::Application,
        description: None,
        services: vec![],
        source: None,
        runtime_profile: None,
        network_profile: None,
        access_profile: None,
        auto_deploy: Default::default(),
        first_deployment: Default::default(),
        storage_attachments: vec![],
        deployment_history_limit: None,
        variables,
        dependency_bindings: vec![],
        secrets_ref,
        image_pull_secret_ref: None,
        runtime: None,
    };
    Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &Resource::new(&id, spec))
        .await
        .expect("create resource");
    id
}

/// Waits until the shim's cache shows the resource (the first call after a kube write).
async fn visible(rest: &Rest, id: &str) {
    eventually(WAIT, "resource visible to the shim", || async {
        let reply = rest.get(&format!("/resources/{id}/secrets")).await;
        (reply.status == 200).then_some(())
    })
    .await;
}

async fn spec_of(client: &Client, org: &TestOrg, id: &str) -> ResourceSpec {
    Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .get(id)
        .await
        .expect("resource")
        .spec
}

/// Asserts no response body and no line of the shim's log holds `value`.
#[track_caller]
fn assert_never_shown(value: &str) {
    assert!(
        !transcript().iter().any(|body| body.contains(value)),
        "a secret value came back in a response"
    );
    let path = std::env::var("BERTH_SHIM_LOG").expect("BERTH_SHIM_LOG is set");
    let log = std::fs::read_to_string(&path).expect("the shim log is readable");
    assert!(!log.contains(value), "a secret value is in {path}");
}

fn keys(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn profiles_source_auto_deploy_and_storage() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let id = resource(&client, &org, &project_id, &env_id).await;
    visible(rest, &id).await;
    let base = format!("/resources/{id}");

    let set = rest
        .post(
            &format!("{base}/network-profile"),
            json!({"networkProfile": {"internalPort": 8080, "exposureMode": "direct-port", "hostPort": 9007199254740991u64}}),
        )
        .await
        .ok();
    assert_eq!(set["id"], id.as_str());
    let network = spec_of(&client, &org, &id).await.network_profile.unwrap();
    assert_eq!(network.internal_port, 8080);
    assert_eq!(network.host_port, Some(9_007_199_254_740_991));
    for (profile, field) in [
        (json!({"internalPort": 0}), "networkProfile.internalPort"),
        (
            json!({"internalPort": 9007199254740992u64}),
            "networkProfile.internalPort",
        ),
        (
            json!({"internalPort": 80, "hostPort": 0}),
            "networkProfile.hostPort",
        ),
        (
            json!({"internalPort": 80, "targetServiceName": ""}),
            "networkProfile.targetServiceName",
        ),
        (
            json!({"internalPort": 80, "upstreamProtocol": "udp"}),
            "networkProfile.upstreamProtocol",
        ),
        (json!({}), "networkProfile.internalPort"),
    ] {
        let reply = rest
            .post(
                &format!("{base}/network-profile"),
                json!({"networkProfile": profile}),
            )
            .await;
        invalid(reply, field);
    }

    rest.post(
        &format!("{base}/access-profile"),
        json!({"accessProfile": {}}),
    )
    .await
    .ok();
    let access = spec_of(&client, &org, &id).await.access_profile.unwrap();
    assert_eq!(access.path_prefix, "/");
    let reply = rest
        .post(
            &format!("{base}/access-profile"),
            json!({"accessProfile": {"pathPrefix": ""}}),
        )
        .await;
    invalid(reply, "accessProfile.pathPrefix");

    // Build commands run on a base image: without one they would do nothing, so are refused.
    let reply = rest
        .post(
            &format!("{base}/runtime-profile"),
            json!({"runtimeProfile": {"strategy": "static", "buildCommand": "make", "publishDirectory": "dist"}}),
        )
        .await;
    invalid(reply, "runtimeProfile.baseImage");
    rest.post(
        &format!("{base}/runtime-profile"),
        json!({"runtimeProfile": {"strategy": "static", "baseImage": "berth/busybox:1",
            "buildCommand": "make", "publishDirectory": "dist"}}),
    )
    .await
    .ok();
    let runtime = spec_of(&client, &org, &id).await.runtime_profile.unwrap();
    assert_eq!(runtime.publish_directory.as_deref(), Some("dist"));
    assert_eq!(runtime.base_image.as_deref(), Some("berth/busybox:1"));
    let reply = rest
        .post(
            &format!("{base}/runtime-profile"),
            json!({"runtimeProfile": {"strategy": ""}}),
        )
        .await;
    invalid(reply, "runtimeProfile.strategy");

    // Auto-deploy needs a source; then a changed source binding blocks it until re-enabled.
    let reply = rest
        .post(&format!("{base}/auto-deploy"), json!({"mode": "enable"}))
        .await;
    reply.error(409, "conflict");
    let source = json!({"kind": "local-folder", "locator": "/srv/app"});
    let body = json!({"source": source, "idempotencyKey": "bind-1"});
    rest.post(&format!("{base}/source"), body.clone())
        .await
        .ok();
    let enabled = rest
        .post(
            &format!("{base}/auto-deploy"),
            json!({"mode": "enable", "refs": ["refs/heads/main"]}),
        )
        .await
        .ok();
    assert_eq!(enabled["status"], "enabled", "{enabled}");
    assert_eq!(enabled["triggerKind"], "git-push");
    assert_eq!(enabled["eventKinds"], json!(["push"]));
    assert!(
        enabled["sourceBindingFingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(enabled.get("blockedReason").is_none());

    // The same key again changes nothing; the same key with another source is refused.
    let generation = |client: Client, ns: String, id: String| async move {
        Api::<Resource>::namespaced(client, &ns)
            .get(&id)
            .await
            .unwrap()
            .metadata
            .generation
    };
    let before = generation(client.clone(), org.namespace.clone(), id.clone()).await;
    let again = rest.post(&format!("{base}/source"), body).await.ok();
    assert_eq!(again["id"], id.as_str());
    assert_eq!(
        generation(client.clone(), org.namespace.clone(), id.clone()).await,
        before
    );
    let reply = rest
        .post(
            &format!("{base}/source"),
            json!({"source": {"kind": "remote-git", "locator": "https://x/y.git"}, "idempotencyKey": "bind-1"}),
        )
        .await;
    reply.error(409, "conflict");
    invalid(
        rest.post(
            &format!("{base}/source"),
            json!({"source": {"kind": "remote-git", "locator": ""}}),
        )
        .await,
        "source.locator",
    );

    rest.post(
        &format!("{base}/source"),
        json!({"source": {"kind": "remote-git", "locator": "https://example.com/shop.git"}, "idempotencyKey": "bind-2"}),
    )
    .await
    .ok();
    // An older key repeated later still changes nothing: the git source stays bound.
    let again = rest
        .post(
            &format!("{base}/source"),
            json!({"source": source, "idempotencyKey": "bind-1"}),
        )
        .await
        .ok();
    assert_eq!(again["id"], id.as_str());
    let bound = spec_of(&client, &org, &id).await.source.unwrap();
    assert_eq!(bound.kind, "remote-git");
    let blocked = rest.get(&format!("{base}/auto-deploy")).await.ok();
    assert_eq!(blocked["status"], "blocked", "{blocked}");
    assert_eq!(blocked["blockedReason"], "source-binding-changed");
    let renewed = rest
        .post(&format!("{base}/auto-deploy"), json!({"mode": "enable"}))
        .await
        .ok();
    assert_eq!(renewed["status"], "enabled");
    assert_ne!(
        renewed["sourceBindingFingerprint"],
        enabled["sourceBindingFingerprint"]
    );
    invalid(
        rest.post(&format!("{base}/auto-deploy"), json!({"mode": "sometimes"}))
            .await,
        "mode",
    );

    // Storage: attach, refuse a second volume at the same path, detach (the volume stays).
    let data = named_volume(rest, &project_id, &env_id, "Data").await;
    let other = named_volume(rest, &project_id, &env_id, "Other").await;
    let attached = rest
        .post(
            &format!("{base}/storage-attachments"),
            json!({"storageVolumeId": data, "destinationPath": "/data"}),
        )
        .await
        .ok();
    let attachment = attached["id"].as_str().unwrap().to_string();
    rest.post(
        &format!("{base}/storage-attachments"),
        json!({"storageVolumeId": other, "destinationPath": "/data"}),
    )
    .await
    .error(409, "conflict");
    invalid(
        rest.post(
            &format!("{base}/storage-attachments"),
            json!({"storageVolumeId": data, "destinationPath": "data"}),
        )
        .await,
        "destinationPath",
    );
    let spec = spec_of(&client, &org, &id).await;
    assert_eq!(spec.storage_attachments.len(), 1);
    assert_eq!(spec.storage_attachments[0].storage_volume_id, data);
    let detached = rest
        .delete(
            &format!("{base}/storage-attachments/{attachment}"),
            json!({}),
        )
        .await
        .ok();
    assert_eq!(detached["id"], attachment.as_str());
    assert!(
        spec_of(&client, &org, &id)
            .await
            .storage_attachments
            .is_empty()
    );
    rest.delete(
        &format!("{base}/storage-attachments/{attachment}"),
        json!({}),
    )
    .await
    .error(404, "not_found");
}

#[tokio::test]
async fn variables_import_and_secrets_never_show_values() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let id = resource(&client, &org, &project_id, &env_id).await;
    visible(rest, &id).await;
    let base = format!("/resources/{id}");
    let secret_value = format!("sv-{}{}", random_suffix(), random_suffix());
    let imported_secret = format!("iv-{}{}", random_suffix(), random_suffix());

    let set = rest
        .post(
            &format!("{base}/variables"),
            json!({"key": "LOG_LEVEL", "value": "debug", "exposure": "runtime"}),
        )
        .await
        .ok();
    assert_eq!(set, Value::Null);
    rest.post(
        &format!("{base}/variables"),
        json!({"key": "DB_PASSWORD", "value": secret_value, "exposure": "runtime"}),
    )
    .await
    .ok();
    invalid(
        rest.post(
            &format!("{base}/variables"),
            json!({"key": "1BAD", "value": "x"}),
        )
        .await,
        "key",
    );
    invalid(
        rest.post(
            &format!("{base}/variables"),
            json!({"key": "A", "value": "x", "exposure": "always"}),
        )
        .await,
        "exposure",
    );

    // The plain one is in the spec; the secret-looking one only in the Resource's Secret.
    let spec = spec_of(&client, &org, &id).await;
    assert_eq!(
        keys(&serde_json::to_value(&spec.variables).unwrap()),
        vec!["LOG_LEVEL"]
    );
    let secret_name = spec.secrets_ref.clone().expect("secretsRef set");
    let stored = Api::<Secret>::namespaced(client.clone(), &org.namespace)
        .get(&secret_name)
        .await
        .unwrap();
    let owner = &stored.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Resource", id.as_str())
    );
    let data = stored.data.unwrap();
    assert_eq!(data["runtime.DB_PASSWORD"].0, secret_value.as_bytes());
    assert!(
        !serde_json::to_string(&spec)
            .unwrap()
            .contains(&secret_value)
    );

    invalid(
        rest.post(
            &format!("{base}/variables/import"),
            json!({"content": " \n"}),
        )
        .await,
        "content",
    );
    let comments_only = rest
        .post(
            &format!("{base}/variables/import"),
            json!({"content": "# nothing here\n\n"}),
        )
        .await
        .ok();
    assert_eq!(comments_only["importedEntries"], json!([]));
    // A malformed line names the line and imports nothing.
    let before = spec_of(&client, &org, &id).await;
    let error = rest
        .post(
            &format!("{base}/variables/import"),
            json!({"content": format!("NEW_ONE=1\nAPI_TOKEN={imported_secret}\nthis is not a pair\n")}),
        )
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "content");
    assert_eq!(error["details"]["line"], 3);
    assert_eq!(spec_of(&client, &org, &id).await, before);

    let content = format!(
        "# app settings\n\nexport LOG_LEVEL=info\nGREETING=\"hello world\"\nQUOTED='a # b'\nAPI_TOKEN={imported_secret}\nGREETING=hi # again\n"
    );
    let result = rest
        .post(
            &format!("{base}/variables/import"),
            json!({"content": content, "exposure": "runtime"}),
        )
        .await
        .ok();
    assert_eq!(result["resourceId"], id.as_str());
    let entries = result["importedEntries"].as_array().unwrap();
    let by_key = |key: &str| entries.iter().find(|e| e["key"] == key).unwrap().clone();
    assert_eq!(by_key("LOG_LEVEL")["action"], "replaced");
    assert_eq!(by_key("LOG_LEVEL")["sourceLine"], 3);
    assert_eq!(by_key("GREETING")["value"], "hi");
    assert_eq!(by_key("GREETING")["sourceLine"], 7);
    assert_eq!(by_key("QUOTED")["value"], "a # b");
    assert_eq!(by_key("API_TOKEN")["value"], "****");
    assert_eq!(by_key("API_TOKEN")["isSecret"], true);
    assert_eq!(by_key("API_TOKEN")["kind"], "secret");
    assert_eq!(by_key("API_TOKEN")["action"], "created");
    assert_eq!(
        result["duplicateOverrides"],
        json!([{"key": "GREETING", "exposure": "runtime", "firstLine": 4, "lastLine": 7, "rule": "last-wins"}])
    );
    assert_eq!(
        result["existingOverrides"],
        json!([{"key": "LOG_LEVEL", "exposure": "runtime", "previousScope": "resource", "rule": "resource-entry-replaced"}])
    );

    // Secrets: list, show, create, rotate, delete; every read masked.
    let list = rest.get(&format!("{base}/secrets")).await.ok();
    assert_eq!(list["schemaVersion"], "resources.secrets.list/v1");
    assert_eq!(keys(&list["items"]), vec!["API_TOKEN", "DB_PASSWORD"]);
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["value"] == "****" && e["scope"] == "resource" && e["isSecret"] == true)
    );
    let shown = rest.get(&format!("{base}/secrets/DB_PASSWORD")).await.ok();
    assert_eq!(shown["schemaVersion"], "resources.secrets.show/v1");
    assert_eq!(shown["secret"]["value"], "****");
    assert!(
        shown["secret"]["updatedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let build_secret = format!("bv-{}{}", random_suffix(), random_suffix());
    let created = rest
        .post(
            &format!("{base}/secrets"),
            json!({"key": "NPM_TOKEN", "value": build_secret, "exposure": "build-time"}),
        )
        .await
        .ok();
    assert_eq!(
        created,
        json!({"resourceId": id, "key": "NPM_TOKEN", "exposure": "build-time"})
    );
    rest.post(
        &format!("{base}/secrets"),
        json!({"key": "NPM_TOKEN", "value": "x", "exposure": "build-time"}),
    )
    .await
    .error(409, "conflict");
    assert_eq!(
        keys(&rest.get(&format!("{base}/secrets")).await.ok()["items"]).len(),
        2
    );
    let build = rest
        .get(&format!("{base}/secrets?exposure=build-time"))
        .await
        .ok();
    assert_eq!(keys(&build["items"]), vec!["NPM_TOKEN"]);
    invalid(
        rest.get(&format!("{base}/secrets?exposure=sometimes"))
            .await,
        "exposure",
    );
    let rotated_value = format!("rv-{}{}", random_suffix(), random_suffix());
    rest.post(
        &format!("{base}/secrets/DB_PASSWORD"),
        json!({"value": rotated_value}),
    )
    .await
    .ok();
    rest.post(&format!("{base}/secrets/MISSING"), json!({"value": "x"}))
        .await
        .error(404, "not_found");
    rest.get(&format!("{base}/secrets/NPM_TOKEN"))
        .await
        .error(404, "not_found");
    rest.delete(
        &format!("{base}/secrets/NPM_TOKEN"),
        json!({"exposure": "build-time"}),
    )
    .await
    .ok();
    rest.delete(
        &format!("{base}/variables/QUOTED"),
        json!({"exposure": "runtime"}),
    )
    .await
    .ok();
    rest.delete(&format!("{base}/variables/QUOTED"), json!({}))
        .await
        .error(404, "not_found");
    let data = Api::<Secret>::namespaced(client.clone(), &org.namespace)
        .get(&secret_name)
        .await
        .unwrap()
        .data
        .unwrap();
    assert_eq!(data["runtime.DB_PASSWORD"].0, rotated_value.as_bytes());
    assert!(!data.contains_key("build-time.NPM_TOKEN"));

    let effective = rest.get(&format!("{base}/effective-config")).await.ok();
    assert_eq!(effective["schemaVersion"], "resources.effective-config/v1");
    for value in [
        &secret_value,
        &imported_secret,
        &build_secret,
        &rotated_value,
    ] {
        assert_never_shown(value);
    }
}

#[tokio::test]
async fn effective_config_merges_every_scope_and_reads_gitops_config() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let preview_id = environment(rest, &project_id, "preview").await;
    let env_secret = format!("es-{}", random_suffix());
    let hand_secret = format!("hs-{}{}", random_suffix(), random_suffix());
    let variable = |key: &str, value: &str| PlainVariable {
        key: key.into(),
        value: value.into(),
        exposure: VariableExposure::Runtime,
    };
    // Environment variables written the GitOps way, on the Environment CR.
    let environments = Api::<Environment>::namespaced(client.clone(), &org.namespace);
    let patch = json!({"spec": {"variables": [
        {"key": "LOG_LEVEL", "value": "warn"},
        {"key": "REGION", "value": "eu"},
        {"key": "SESSION_SECRET", "value": env_secret},
    ]}});
    environments
        .patch(&env_id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // Organization and project variables, also GitOps-only.
    let patch = json!({"spec": {"variables": [
        {"key": "LOG_LEVEL", "value": "info"},
        {"key": "ORG_ONLY", "value": "o"},
    ]}});
    Api::<Organization>::all(client.clone())
        .patch(&org.id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let patch = json!({"spec": {"variables": [
        {"key": "REGION", "value": "us"},
        {"key": "PORT", "value": "9000"},
    ]}});
    Api::<Project>::namespaced(client.clone(), &org.namespace)
        .patch(&project_id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // The resource and its Secret written by hand, as kubectl apply would.
    let secret_name = format!("hand-{}", random_suffix());
    let id = resource_with(
        &client,
        &org,
        &project_id,
        &env_id,
        vec![variable("LOG_LEVEL", "debug")],
        Some(secret_name.clone()),
    )
    .await;
    let hand_made = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "runtime.STRIPE_KEY".to_string(),
            ByteString(hand_secret.clone().into_bytes()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &hand_made)
        .await
        .unwrap();
    visible(rest, &id).await;
    let base = format!("/resources/{id}");

    // LOG_LEVEL, REGION, SESSION_SECRET, STRIPE_KEY, ORG_ONLY, PORT and three BERTH_* facts.
    let effective = eventually(WAIT, "every scope's variables in the caches", || async {
        let body = rest.get(&format!("{base}/effective-config")).await.ok();
        (body["effectiveEntries"].as_array()?.len() == 9).then_some(body)
    })
    .await;
    assert_eq!(effective["environmentId"], env_id.as_str());
    assert_eq!(
        effective["precedence"],
        json!([
            "defaults",
            "system",
            "organization",
            "project",
            "environment",
            "resource",
            "deployment"
        ])
    );
    assert_eq!(
        keys(&effective["ownedEntries"]),
        vec!["LOG_LEVEL", "STRIPE_KEY"]
    );
    let find = |key: &str| {
        effective["effectiveEntries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            find("LOG_LEVEL")["value"].clone(),
            find("LOG_LEVEL")["scope"].clone()
        ),
        (json!("debug"), json!("resource"))
    );
    assert_eq!(find("REGION")["scope"], "environment");
    assert_eq!(find("ORG_ONLY")["scope"], "organization");
    assert_eq!(
        (find("PORT")["value"].clone(), find("PORT")["scope"].clone()),
        (json!("9000"), json!("project"))
    );
    assert_eq!(
        (
            find("BERTH_RESOURCE_ID")["value"].clone(),
            find("BERTH_RESOURCE_ID")["scope"].clone()
        ),
        (json!(id), json!("system"))
    );
    assert_eq!(find("SESSION_SECRET")["value"], "****");
    assert_eq!(find("STRIPE_KEY")["value"], "****");
    // One override per key and exposure: the scope used, and every scope it hides.
    let override_of = |key: &str| -> Value {
        effective["overrides"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["key"] == key)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        override_of("LOG_LEVEL"),
        json!({"key": "LOG_LEVEL", "exposure": "runtime", "selectedScope": "resource",
            "overriddenScopes": ["organization", "environment"]})
    );
    assert_eq!(
        override_of("REGION"),
        json!({"key": "REGION", "exposure": "runtime", "selectedScope": "environment",
            "overriddenScopes": ["project"]})
    );
    assert_eq!(effective["overrides"].as_array().unwrap().len(), 2);
    // The hand-written Secret is listed like one the API wrote.
    let list = rest.get(&format!("{base}/secrets")).await.ok();
    assert_eq!(keys(&list["items"]), vec!["STRIPE_KEY"]);

    let preview = rest
        .get(&format!(
            "{base}/effective-config?previewEnvironmentId={preview_id}"
        ))
        .await
        .ok();
    assert_eq!(preview["environmentId"], preview_id.as_str());
    // The preview environment has no variables: its entries come from the other scopes only.
    let mut previewed = keys(&preview["effectiveEntries"]);
    previewed.sort();
    assert_eq!(
        previewed,
        vec![
            "BERTH_ENVIRONMENT_ID",
            "BERTH_PROJECT_ID",
            "BERTH_RESOURCE_ID",
            "LOG_LEVEL",
            "ORG_ONLY",
            "PORT",
            "REGION",
            "STRIPE_KEY"
        ]
    );
    rest.get(&format!(
        "{base}/effective-config?previewEnvironmentId=env-nope"
    ))
    .await
    .error(404, "not_found");
    invalid(
        rest.get(&format!("{base}/effective-config?bogus=1")).await,
        "bogus",
    );
    assert_never_shown(&env_secret);
    assert_never_shown(&hand_secret);
}

#[tokio::test]
async fn other_organizations_and_deploy_token_scope() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let project_id = project(&member.rest, "Shop").await;
    let env_id = environment(&member.rest, &project_id, "prod").await;
    let id = resource(&client, &org, &project_id, &env_id).await;
    let second = resource(&client, &org, &project_id, &env_id).await;
    visible(&member.rest, &id).await;
    visible(&member.rest, &second).await;

    for path in ["secrets", "effective-config", "auto-deploy"] {
        outsider
            .rest
            .get(&format!("/resources/{id}/{path}"))
            .await
            .error(404, "not_found");
    }
    outsider
        .rest
        .post(
            &format!("/resources/{id}/variables"),
            json!({"key": "A", "value": "1"}),
        )
        .await
        .error(404, "not_found");

    let (_, token) = create_token(&admin.rest, &org.id, json!({"resourceIds": [id]})).await;
    let ci = Rest::anonymous().with_token(&token);
    eventually(WAIT, "deploy token usable", || async {
        let reply = ci.get(&format!("/resources/{id}/secrets")).await;
        (reply.status == 200).then_some(())
    })
    .await;
    ci.post(
        &format!("/resources/{id}/variables"),
        json!({"key": "BUILD", "value": "42"}),
    )
    .await
    .ok();
    ci.post(
        &format!("/resources/{second}/variables"),
        json!({"key": "BUILD", "value": "42"}),
    )
    .await
    .error(404, "not_found");
    let annotations = Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .get(&id)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert_eq!(
        annotations["berth.dev/updated-by-actor-kind"],
        "deploy-token"
    );
}

/// The effective config with the fields that differ between two resources (ids, times) removed.
fn comparable(config: &Value) -> Value {
    let strip = |entries: &Value| -> Vec<Value> {
        entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let mut e = e.clone();
                let map = e.as_object_mut().unwrap();
                map.remove("resourceId");
                map.remove("updatedAt");
                // The system entry naming the resource differs by definition.
                if map["key"] == "BERTH_RESOURCE_ID" {
                    map.remove("value");
                }
                e
            })
            .collect()
    };
    json!({
        "owned": strip(&config["ownedEntries"]),
        "effective": strip(&config["effectiveEntries"]),
        "overrides": config["overrides"],
        "environmentId": config["environmentId"],
    })
}

#[tokio::test]
async fn configuration_written_with_kube_reads_like_configuration_written_over_rest() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let over_rest = resource(&client, &org, &project_id, &env_id).await;
    visible(rest, &over_rest).await;
    let base = format!("/resources/{over_rest}");
    rest.post(
        &format!("{base}/variables"),
        json!({"key": "LOG_LEVEL", "value": "debug"}),
    )
    .await
    .ok();
    rest.post(
        &format!("{base}/secrets"),
        json!({"key": "API_TOKEN", "value": "rest-side-value", "exposure": "build-time"}),
    )
    .await
    .ok();

    let secret_name = format!("gitops-{}", random_suffix());
    let by_kube = resource_with(
        &client,
        &org,
        &project_id,
        &env_id,
        vec![PlainVariable {
            key: "LOG_LEVEL".into(),
            value: "debug".into(),
            exposure: VariableExposure::Runtime,
        }],
        Some(secret_name.clone()),
    )
    .await;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "build-time.API_TOKEN".to_string(),
            ByteString(b"kube-side-value".to_vec()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    visible(rest, &by_kube).await;

    let read = |id: String| async move {
        rest.get(&format!("/resources/{id}/effective-config"))
            .await
            .ok()
    };
    let from_rest = read(over_rest.clone()).await;
    let from_kube = read(by_kube.clone()).await;
    assert_eq!(comparable(&from_rest), comparable(&from_kube));
    assert_eq!(from_rest["ownedEntries"].as_array().unwrap().len(), 2);
    for id in [&over_rest, &by_kube] {
        let list = rest
            .get(&format!("/resources/{id}/secrets?exposure=build-time"))
            .await
            .ok();
        assert_eq!(keys(&list["items"]), vec!["API_TOKEN"]);
    }
    assert_never_shown("rest-side-value");
    assert_never_shown("kube-side-value");
}

/// `autoDeployPolicy.updatedAt` of `GET /resources/{id}`.
async fn policy_updated_at(rest: &Rest, id: &str) -> Timestamp {
    let shown = rest.get(&format!("/resources/{id}")).await.ok();
    let at = shown["autoDeployPolicy"]["updatedAt"]
        .as_str()
        .unwrap_or_default();
    at.parse()
        .unwrap_or_else(|_| panic!("updatedAt {at:?}: {shown}"))
}

/// Waits until the controller has seen the resource's auto-deploy policy as it is now, then
/// returns `autoDeployPolicy.updatedAt`, asserting it is no earlier than `since` (the API
/// server's times have whole seconds).
async fn policy_seen_since(
    rest: &Rest,
    api: &Api<Resource>,
    id: &str,
    since: Timestamp,
) -> Timestamp {
    eventually(
        WAIT,
        "the controller to see the auto-deploy policy",
        || async {
            let resource = api.get(id).await.ok()?;
            let seen = resource.status?.auto_deploy?.policy_fingerprint;
            (seen == resource.spec.auto_deploy.fingerprint()).then_some(())
        },
    )
    .await;
    let at = policy_updated_at(rest, id).await;
    let since = since.round(Unit::Second).unwrap() - SignedDuration::from_secs(1);
    assert!(at >= since, "updatedAt {at} before the change at {since}");
    at
}

/// The resource's auto-deploy policy says when it last became what it is (Appaloft's
/// `autoDeployPolicy.updatedAt`): its creation until it changes, the change's time once it
/// changed over REST or with kubectl, and not moved by changes to other fields.
#[tokio::test]
async fn auto_deploy_policy_says_when_it_last_changed() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let project_id = project(rest, "Auto").await;
    let env_id = environment(rest, &project_id, "prod").await;
    let id = resource(&client, &org, &project_id, &env_id).await;
    visible(rest, &id).await;
    let api = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let base = format!("/resources/{id}");
    let shown = rest.get(&base).await.ok();
    let created: Timestamp = shown["resource"]["createdAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(policy_updated_at(rest, &id).await, created, "{shown}");
    let seen = policy_seen_since(rest, &api, &id, created).await;
    assert_eq!(
        seen, created,
        "a policy nobody changed dates from the creation"
    );

    let source = json!({"source": {"kind": "local-folder", "locator": "/srv/app"}});
    rest.post(&format!("{base}/source"), source).await.ok();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before_enable = Timestamp::now();
    let enable = json!({"mode": "enable", "refs": ["refs/heads/main"]});
    rest.post(&format!("{base}/auto-deploy"), enable).await.ok();
    let enabled_at = policy_seen_since(rest, &api, &id, before_enable).await;
    assert!(
        enabled_at > created,
        "{enabled_at} after creation {created}"
    );

    // Another field changed: the policy's time stays (once the controller saw the change).
    let body = json!({"networkProfile": {"internalPort": 8081}});
    rest.post(&format!("{base}/network-profile"), body)
        .await
        .ok();
    eventually(WAIT, "the controller to see the new generation", || async {
        let resource = api.get(&id).await.ok()?;
        let seen = resource.status?.observed_generation;
        (seen == resource.metadata.generation).then_some(())
    })
    .await;
    assert_eq!(policy_updated_at(rest, &id).await, enabled_at);

    // Changed with kubectl's kind of write: the controller stamps it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before_patch = Timestamp::now();
    let patch = json!({"spec": {"autoDeploy": {"refs": ["refs/heads/release"]}}});
    api.patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let patched_at = policy_seen_since(rest, &api, &id, before_patch).await;
    assert!(patched_at > enabled_at, "{patched_at} after {enabled_at}");
    let status = api.get(&id).await.unwrap().status.unwrap();
    assert_eq!(status.auto_deploy.unwrap().updated_at.0, patched_at);
}
