//! Resources over HTTP (spec §4.7 `GET /resources`, `DELETE /resources/{resourceId}`, and the
//! shim's `POST /resources`) against the running shim, controller and a real server: filters,
//! roles, token scope, confirmations, idempotency, and deletion removing containers and route.

use berth_crds::member::OrganizationRole;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_tests::rest::{Reply, Rest, TestOrg};
use berth_tests::{client, eventually, kubectl, random_suffix};
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::deploy_support::{
    WAIT, delete_resource, docker_names, fetch, ready_server, remove_server, wait_body,
    wait_containers_gone, wait_listed_with,
};
use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_tokens::create_token;

/// A Resource written directly as a custom resource (the GitOps way), not deployable.
async fn kube_resource(
    client: &Client,
    org: &TestOrg,
    project: &str,
    env: &str,
    name: &str,
) -> String {
    let id = format!("res-t{}", random_suffix());
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": project, "environmentId": env, "name": name, "kind": "worker",
        "services": [{"name": "jobs", "kind": "worker"}],
    }))
    .unwrap();
    Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &Resource::new(&id, spec))
        .await
        .expect("create resource");
    id
}

/// Ids of `GET /resources{query}`.
async fn listed(rest: &Rest, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = rest.get(&format!("/resources{query}")).await.ok()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn every_resource_endpoint_needs_a_token() {
    let anonymous = Rest::anonymous();
    anonymous
        .get("/resources")
        .await
        .error(401, "unauthenticated");
    anonymous
        .post("/resources", json!({}))
        .await
        .error(401, "unauthenticated");
    anonymous
        .delete("/resources/res-x", json!({}))
        .await
        .error(401, "unauthenticated");
}

#[tokio::test]
async fn list_filters_scope_and_confirmed_idempotent_delete() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let (prod, stage) = (
        environment(&member, &shop, "prod").await,
        environment(&member, &shop, "stage").await,
    );
    let blog = project(&member, "Blog").await;
    let blog_env = environment(&member, &blog, "prod").await;
    let a = kube_resource(&client, &org, &shop, &prod, "Queue Worker").await;
    let b = kube_resource(&client, &org, &shop, &stage, "Queue Worker").await;
    let c = kube_resource(&client, &org, &blog, &blog_env, "Mailer").await;
    eventually(WAIT, "resources visible to the shim", || async {
        (listed(&member, "").await.len() == 3).then_some(())
    })
    .await;

    // The list item of spec §2.2, before any deployment.
    let items = member
        .get(&format!("/resources?environmentId={prod}"))
        .await
        .ok();
    let item = &items["items"][0];
    assert_eq!(item["id"], a.as_str());
    assert_eq!(item["projectId"], shop.as_str());
    assert_eq!(item["environmentId"], prod.as_str());
    assert_eq!(item["name"], "Queue Worker");
    assert_eq!(item["slug"], "queue-worker");
    assert_eq!(item["kind"], "worker");
    assert_eq!(
        item["services"],
        json!([{"name": "jobs", "kind": "worker"}])
    );
    assert_eq!(item["deploymentCount"], 0);
    assert!(item["createdAt"].as_str().unwrap().ends_with('Z'));
    for absent in [
        "lastDeploymentId",
        "destinationId",
        "description",
        "networkProfile",
    ] {
        assert!(item.get(absent).is_none(), "{absent} in {item}");
    }

    // Filters, alone and together.
    assert_eq!(
        listed(&member, &format!("?projectId={shop}")).await,
        sorted(&[&a, &b])
    );
    assert_eq!(
        listed(&member, &format!("?environmentId={stage}")).await,
        vec![b.clone()]
    );
    let both = format!("?projectId={shop}&environmentId={stage}");
    assert_eq!(listed(&member, &both).await, vec![b.clone()]);
    let crossed = format!("?projectId={blog}&environmentId={prod}");
    assert!(listed(&member, &crossed).await.is_empty());
    invalid(member.get("/resources?projectId=").await, "projectId");
    invalid(
        member.get("/resources?environmentId=").await,
        "environmentId",
    );
    invalid(member.get("/resources?project=x").await, "project");
    member
        .get("/resources?projectId=prj-missing")
        .await
        .error(404, "not_found");

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    assert!(listed(&outsider, "").await.is_empty());
    outsider
        .get(&format!("/resources?projectId={shop}"))
        .await
        .error(404, "not_found");
    let confirm_a = json!({"confirmation": {"resourceSlug": "queue-worker"}});
    outsider
        .delete(&format!("/resources/{a}"), confirm_a.clone())
        .await
        .error(404, "not_found");

    // Deploy tokens see their scope only, and cannot delete.
    let (_, token) = create_token(&admin, &org.id, json!({"resourceIds": [a]})).await;
    let ci = Rest::anonymous().with_token(&token);
    eventually(WAIT, "deploy token usable", || async {
        (ci.get("/resources").await.status == 200).then_some(())
    })
    .await;
    assert_eq!(listed(&ci, "").await, vec![a.clone()]);
    let (_, blog_token) = create_token(&admin, &org.id, json!({"projectIds": [blog]})).await;
    let blog_ci = Rest::anonymous().with_token(&blog_token);
    eventually(WAIT, "second deploy token usable", || async {
        (blog_ci.get("/resources").await.status == 200).then_some(())
    })
    .await;
    assert_eq!(listed(&blog_ci, "").await, vec![c.clone()]);
    blog_ci
        .get(&format!("/resources?projectId={shop}"))
        .await
        .error(403, "forbidden");
    ci.delete(&format!("/resources/{a}"), confirm_a.clone())
        .await
        .error(403, "forbidden");

    // Deleting: admin only, confirmed by the slug; a refused delete changes nothing.
    let path_a = format!("/resources/{a}");
    member
        .delete(&path_a, confirm_a.clone())
        .await
        .error(403, "forbidden");
    invalid(
        admin.delete(&path_a, json!({})).await,
        "confirmation.resourceSlug",
    );
    let wrong = admin
        .delete(&path_a, json!({"confirmation": {"resourceSlug": a}}))
        .await
        .error(409, "confirmation_mismatch");
    assert_eq!(wrong["details"]["field"], "confirmation.resourceSlug");
    invalid(
        admin
            .delete(
                &path_a,
                json!({"confirmation": {"resourceSlug": "queue-worker"}, "x": 1}),
            )
            .await,
        "x",
    );
    assert_eq!(
        listed(&member, "").await.len(),
        3,
        "refused deletes change nothing"
    );
    admin
        .delete("/resources/res-missing", confirm_a.clone())
        .await
        .error(404, "not_found");

    let keyed =
        json!({"confirmation": {"resourceSlug": "queue-worker"}, "idempotencyKey": "del-1"});
    assert_eq!(
        admin.delete(&path_a, keyed.clone()).await.ok()["id"],
        a.as_str()
    );
    assert!(!listed(&member, "").await.contains(&a));
    // A repeat with the key answers the same; without it the resource is simply gone.
    assert_eq!(
        admin.delete(&path_a, keyed.clone()).await.ok()["id"],
        a.as_str()
    );
    // The key belongs to that delete: reusing it for another resource is refused.
    let reused = admin.delete(&format!("/resources/{b}"), keyed).await;
    assert_eq!(
        reused.error(409, "conflict")["details"]["field"],
        "idempotencyKey"
    );
    assert!(listed(&member, "").await.contains(&b));
    // Once the finalizer is done, a delete without the key finds nothing.
    let api = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    eventually(WAIT, "resource object gone", || async {
        api.get_opt(&a).await.ok()?.is_none().then_some(())
    })
    .await;
    eventually(WAIT, "delete of a gone resource is 404", || async {
        let reply = admin.delete(&path_a, confirm_a.clone()).await;
        (reply.status == 404).then_some(reply)
    })
    .await
    .error(404, "not_found");
}

/// Asserts a 409 naming `field`.
#[track_caller]
fn conflict(reply: Reply, field: &str) {
    let error = reply.error(409, "conflict");
    assert_eq!(error["details"]["field"], field, "{error}");
}

/// The body of a good `POST /resources` for the sample app.
fn sample_app(project: &str, env: &str, server: &str, name: &str) -> Value {
    json!({
        "projectId": project, "environmentId": env, "name": name, "kind": "application",
        "description": "the sample app", "serverId": server,
        "services": [{"name": "web", "kind": "web"}],
        "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
        "networkProfile": {"internalPort": 8080},
        "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
    })
}

/// A Resource manifest applied with kubectl (the GitOps way) that the controller deploys.
fn kubectl_apply(namespace: &str, id: &str, project: &str, env: &str, server: &str) {
    let manifest = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": {"name": id, "namespace": namespace},
        "spec": {
            "projectId": project, "environmentId": env, "serverId": server,
            "name": id, "slug": id, "kind": "application",
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            "networkProfile": {"internalPort": 8080},
        },
    });
    let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

#[tokio::test]
async fn created_resources_deploy_list_their_access_and_delete_cleanly() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let blog = project(&member, "Blog").await;
    let blog_env = environment(&member, &blog, "prod").await;

    // One resource the GitOps way, deployed by the controller, shows up in the list.
    let gitops = format!("gitops{}", random_suffix());
    kubectl_apply(&org.namespace, &gitops, &shop, &prod, &server);

    eventually(
        WAIT,
        "kubectl-applied resource visible to the shim",
        || async { listed(&member, "").await.contains(&gitops).then_some(()) },
    )
    .await;

    // Bad input names the field and creates nothing.
    let body = |patch: Value| {
        let mut body = sample_app(&shop, &prod, &server, "Shop Web");
        for (key, value) in patch.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let post = |body: Value| member.post("/resources", body);
    invalid(
        post(json!({"name": "x", "kind": "application"})).await,
        "projectId",
    );
    invalid(
        post(body(json!({"projectId": "prj-missing"}))).await,
        "projectId",
    );
    invalid(
        post(body(json!({"environmentId": blog_env}))).await,
        "environmentId",
    );
    invalid(
        post(body(json!({"serverId": "srv-missing"}))).await,
        "serverId",
    );
    invalid(post(body(json!({"kind": "spaceship"}))).await, "kind");
    invalid(post(body(json!({"name": ""}))).await, "name");
    invalid(post(body(json!({"colour": "red"}))).await, "colour");
    invalid(
        post(body(json!({"networkProfile": {"internalPort": 0}}))).await,
        "networkProfile.internalPort",
    );
    invalid(
        post(body(json!({"source": {"kind": "docker-image"}}))).await,
        "source.locator",
    );
    invalid(
        post(body(
            json!({"runtimeProfile": {"healthCheck": {"path": "healthz"}}}),
        ))
        .await,
        "runtimeProfile.healthCheck.path",
    );
    invalid(
        post(body(json!({"imagePullSecretName": ""}))).await,
        "imagePullSecretName",
    );
    conflict(post(body(json!({"slug": gitops}))).await, "slug");
    let only_gitops = vec![gitops.clone()];
    assert_eq!(
        listed(&member, &format!("?projectId={shop}")).await,
        only_gitops
    );

    // A good one comes back as its list item, then the controller deploys it.
    let created = post(body(json!({"imagePullSecretName": "pull-creds"})))
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    // The pull Secret is only read when the server lacks the image (here it has it).
    let stored = Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .get(&id)
        .await
        .unwrap();
    let pull_secret = stored.spec.image_pull_secret_ref.map(|r| r.name);
    assert_eq!(pull_secret.as_deref(), Some("pull-creds"));
    assert!(id.starts_with("res-"), "{created}");
    assert_eq!(created["slug"], "shop-web");
    assert_eq!(created["kind"], "application");
    assert_eq!(created["description"], "the sample app");
    assert_eq!(created["services"], json!([{"name": "web", "kind": "web"}]));
    assert_eq!(created["networkProfile"]["internalPort"], 8080);
    assert_eq!(created["deploymentCount"], 0);
    conflict(post(body(json!({"name": "Shop  Web!"}))).await, "slug");

    let item = wait_listed_with(&member, &id, "succeeded").await;
    assert_eq!(item["deploymentCount"], 1);
    assert_eq!(item["lastDeploymentId"], format!("dep-{id}-1"));
    assert_eq!(item["proxyRouteStatus"], "ready");
    assert_eq!(
        item["lastRouteRealizationDeploymentId"],
        format!("dep-{id}-1")
    );
    let summary = &item["accessSummary"];
    let planned = &summary["plannedGeneratedAccessRoute"];
    assert_eq!(planned["hostname"], "shop-web.localhost");
    assert_eq!(planned["url"], format!("http://shop-web.localhost:{port}/"));
    assert_eq!(planned["scheme"], "http");
    assert_eq!(planned["proxyKind"], "caddy");
    assert_eq!(planned["targetPort"], 8080);
    let latest = &summary["latestGeneratedAccessRoute"];
    assert_eq!(latest["deploymentId"], format!("dep-{id}-1"));
    assert_eq!(latest["deploymentStatus"], "succeeded");
    assert!(latest["updatedAt"].as_str().unwrap().ends_with('Z'));
    wait_body(port, "shop-web.localhost", "hello from berth sample-app v1").await;

    let listed_gitops = wait_listed_with(&member, &gitops, "succeeded").await;
    assert_eq!(listed_gitops["deploymentCount"], 1);
    assert_eq!(
        listed_gitops["accessSummary"]["plannedGeneratedAccessRoute"]["hostname"],
        format!("{gitops}.localhost")
    );
    wait_body(port, &format!("{gitops}.localhost"), "sample-app v1").await;

    // A wrong slug changes nothing: the resource is listed and still serves.
    let path = format!("/resources/{id}");
    admin
        .delete(&path, json!({"confirmation": {"resourceSlug": "shop"}}))
        .await
        .error(409, "confirmation_mismatch");
    let http = reqwest::Client::new();
    let (status, page) = fetch(&http, port, "shop-web.localhost").await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(listed(&member, "").await.contains(&id));

    // The right slug: the resource goes, then its containers and its route.
    let deleted = admin
        .delete(&path, json!({"confirmation": {"resourceSlug": "shop-web"}}))
        .await
        .ok();
    assert_eq!(deleted["id"], id.as_str());
    assert!(!listed(&member, "").await.contains(&id));
    wait_containers_gone(&id).await;
    eventually(WAIT, "route removed from the edge proxy", || {
        let http = http.clone();
        async move {
            let (status, _) = fetch(&http, port, "shop-web.localhost").await?;
            (status == 404).then_some(())
        }
    })
    .await;
    // The other resource on the same proxy is untouched.
    wait_body(port, &format!("{gitops}.localhost"), "sample-app v1").await;
    let filter = format!("label=berth.dev/resource={gitops}");
    assert!(!docker_names(&filter).is_empty());

    delete_resource(&admin, &gitops, &gitops).await;
    remove_server(&admin, &server).await;
}
