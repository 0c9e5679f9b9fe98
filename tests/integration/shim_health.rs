//! `GET /resources/{resourceId}/health` (spec §4.7, `resources.health/v1`) against the running
//! shim, controller and a real server: a deployed app reads healthy from the controller's
//! observations (`mode=cached`) and from the server itself (`mode=live`, a Docker inspect and a
//! request through the edge proxy); a container killed by hand is observed (the runtime's
//! `observedAt` moves past the kill) and healthy again after drift repair.

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, delete_resource, ready_server, remove_server, wait_listed_with};
use crate::shim_projects_envs::{environment, invalid, project};

async fn health(rest: &Rest, id: &str, query: &str) -> Value {
    rest.get(&format!("/resources/{id}/health{query}"))
        .await
        .ok()
}

/// Waits until the cached health reads `overall` and its runtime was observed after `after`.
async fn wait_health(rest: &Rest, id: &str, overall: &str, after: Timestamp) -> Value {
    eventually(
        WAIT,
        &format!("health {overall} observed after {after}"),
        || async {
            let body = health(rest, id, "").await;
            let observed: Timestamp = body["runtime"]["observedAt"].as_str()?.parse().ok()?;
            (body["overall"] == overall && observed > after).then_some(body)
        },
    )
    .await
}

/// Runs the docker CLI (tests only) and returns its trimmed output.
fn docker(args: &[&str]) -> String {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    assert!(output.status.success(), "docker {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn check<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("check {name} in {body}"))
}

#[tokio::test]
async fn health_reads_a_deployed_app_cached_and_live_and_follows_a_killed_container() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("health{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Health", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let base = format!("/resources/{id}/health");
    invalid(member.get(&format!("{base}?mode=fast")).await, "mode");
    invalid(member.get(&format!("{base}?verbose=1")).await, "verbose");

    let item = wait_listed_with(&member, &id, "succeeded").await;
    let deployment = item["lastDeploymentId"].as_str().unwrap().to_string();
    let body = wait_health(&member, &id, "healthy", Timestamp::UNIX_EPOCH).await;
    assert_eq!(body["schemaVersion"], "resources.health/v1");
    assert_eq!(body["resourceId"], id.as_str());
    assert_eq!(body["partial"], false);
    assert_eq!(body["runtime"]["lifecycle"], "running");
    assert_eq!(body["runtime"]["runtimeKind"], "docker-container");
    assert_eq!(body["latestDeployment"]["id"], deployment.as_str());
    assert_eq!(body["latestDeployment"]["status"], "succeeded");
    assert_eq!(body["healthPolicy"]["status"], "configured");
    assert_eq!(body["healthPolicy"]["path"], "/healthz");
    let access = &body["publicAccess"];
    assert_eq!(access["status"], "ready", "{body}");
    assert!(access["url"].as_str().unwrap().contains(&slug), "{access}");
    let intent = &access["routeIntentStatus"];
    assert_eq!(intent["schemaVersion"], "route-intent-status/v1");
    assert_eq!(intent["context"]["deploymentId"], deployment.as_str());
    assert_eq!(intent["recommendedAction"], "none");
    assert_eq!(body["proxy"]["status"], "ready");
    assert_eq!(body["checks"], json!([]));
    let observed = health(&member, &id, "?includeChecks=true").await;
    assert_eq!(check(&observed, "runtime-observed")["status"], "passed");

    // Live: the server is asked now.
    let live = health(&member, &id, "?mode=live").await;
    assert_eq!(live["partial"], false, "{live}");
    assert_eq!(
        check(&live, "runtime-container")["status"],
        "passed",
        "{live}"
    );
    let public = check(&live, "public-access");
    assert_eq!(public["status"], "passed", "{live}");
    assert_eq!(public["statusCode"], 200);
    let runtime_only = health(&member, &id, "?mode=live&includeRuntimeProbe=true").await;
    assert_eq!(
        runtime_only["checks"].as_array().unwrap().len(),
        1,
        "{runtime_only}"
    );

    // Killed by hand: the observer sees it, drift repair starts it again, health follows.
    let killed_at = Timestamp::now();
    let container = docker(&[
        "ps",
        "-q",
        "--filter",
        &format!("label=berth.dev/namespace={}", org.namespace),
        "--filter",
        &format!("label=berth.dev/deployment={deployment}"),
    ]);
    assert!(!container.is_empty(), "the app's container runs");
    docker(&["kill", &container]);
    let repaired = wait_health(&member, &id, "healthy", killed_at).await;
    assert_eq!(repaired["runtime"]["lifecycle"], "running");

    // Another organization sees nothing.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Admin).await.rest;
    outsider.get(&base).await.error(404, "not_found");

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
