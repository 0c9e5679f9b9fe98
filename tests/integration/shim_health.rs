//! `GET /resources/{resourceId}/health` (spec §4.7, `resources.health/v1`) against the running
//! shim, controller and a real server: a deployed app reads healthy from the controller's
//! observations (`mode=cached`) and from the server itself (`mode=live`, a Docker inspect and a
//! request through the edge proxy); a container killed by hand is observed (the runtime's
//! `observedAt` moves past the kill) and healthy again after drift repair, and the crash
//! evidence (exit code, last output with the secret masked) is in the attempt's timeline.

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use berth_crds::resource::Resource;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::deploy_support::{
    WAIT, assert_never_shown, delete_resource, ready_server, remove_server, wait_listed_with,
};
use crate::deployments_build::Scratch;
use crate::shim_projects_envs::{environment, invalid, project};

/// The sample app, printing its secret token at start.
const DOCKERFILE: &str = r#"FROM berth/sample-app:1
CMD ["/bin/sh", "-c", "echo \"api token is $API_TOKEN\"; echo 'serving'; exec /bin/sample-app"]
"#;

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
pub(crate) fn docker(args: &[&str]) -> String {
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
    let folder = Scratch::new();
    folder.write("Dockerfile", DOCKERFILE);
    // No server yet, so the secret is in place before the first (and only) deployment.
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Health", "slug": slug,
                "kind": "application",
                "source": {"kind": "local-folder", "locator": folder.path().to_str().unwrap()},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let secret = format!("tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "API_TOKEN", "value": secret}),
        )
        .await
        .ok();
    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let patch = json!({ "spec": { "serverId": server } });
    resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("set the resource's server");
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
    // `observedAt` has whole seconds: the kill comes more than a second after the first
    // observation, and a later one is any at or after the kill's second.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let killed_at = Timestamp::now() - SignedDuration::from_secs(1);
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

    // The history shows the transition: healthy, the kill, healthy again after repair.
    let history = format!("/resources/{id}/health-history?limit=720");
    let observations = eventually(WAIT, "the kill and the repair in the history", || async {
        let body = member.get(&history).await.ok();
        assert_eq!(body["schemaVersion"], "resources.health-history/v1");
        let observations = body["observations"].as_array()?.clone();
        let overall: Vec<&str> = observations
            .iter()
            .filter_map(|o| o["overall"].as_str())
            .collect();
        let kill = overall.iter().position(|o| *o == "unhealthy")?;
        let before = overall[..kill].contains(&"healthy");
        let after = overall[kill..].contains(&"healthy");
        (before && after).then_some(observations)
    })
    .await;
    let down = observations
        .iter()
        .find(|o| o["overall"] == "unhealthy")
        .unwrap();
    assert_eq!(down["runtimeLifecycle"], "exited", "{down}");
    assert_eq!(down["latestDeploymentId"], deployment.as_str(), "{down}");
    assert_eq!(down["summary"]["schemaVersion"], "resources.health/v1");
    assert_eq!(down["summary"]["runtime"]["reasonCode"], "container_exited");
    let why = down["summary"]["runtime"]["message"].as_str().unwrap();
    assert!(why.contains("exit code 137"), "{down}");
    let history_base = format!("/resources/{id}/health-history");
    let future = member
        .get(&format!(
            "{history_base}?window.from=2099-01-01T00:00:00Z&window.to=2099-01-02T00:00:00Z"
        ))
        .await
        .ok();
    assert_eq!(future["observations"], json!([]), "{future}");
    invalid(
        member
            .get(&format!(
                "{history_base}?window.from=2030-01-01T00:00:00%2B02:00"
            ))
            .await,
        "window.from",
    );
    invalid(
        member.get(&format!("{history_base}?limit=721")).await,
        "limit",
    );

    // Why it stopped stays on record in the attempt's timeline, the secret masked.
    let timeline = format!("/resources/{id}/deployments/{deployment}/timeline?limit=1000");
    let entries = eventually(WAIT, "crash evidence in the timeline", || async {
        let body = member.get(&timeline).await.ok();
        let entries = body["entries"].as_array()?.clone();
        entries
            .iter()
            .any(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("stopped with exit code 137"))
            })
            .then_some(entries)
    })
    .await;
    let after_crash: Vec<&str> = entries
        .iter()
        .skip_while(|e| {
            !e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("exit code 137")
        })
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        after_crash.contains(&"api token is ****"),
        "{after_crash:?}"
    );
    assert!(after_crash.contains(&"serving"), "{after_crash:?}");
    assert_never_shown(&secret, &[]);

    // Another organization sees nothing.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Admin).await.rest;
    outsider.get(&base).await.error(404, "not_found");

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

/// The sample app, crashing with exit code 3 once `/tmp/crash-now` appears.
const CRASHING_DOCKERFILE: &str = r#"FROM berth/sample-app:1
CMD ["/bin/sh", "-c", "echo \"api token is $API_TOKEN\"; /bin/sample-app & while [ ! -f /tmp/crash-now ]; do sleep 1; done; rm /tmp/crash-now; echo 'fatal: out of cheese'; exit 3"]
"#;

#[tokio::test]
async fn a_crash_docker_restarts_by_itself_leaves_its_evidence() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("crash{}", random_suffix());
    let folder = Scratch::new();
    folder.write("Dockerfile", CRASHING_DOCKERFILE);
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Crashing", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "local-folder", "locator": folder.path().to_str().unwrap()},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let item = wait_listed_with(&member, &id, "succeeded").await;
    let deployment = item["lastDeploymentId"].as_str().unwrap().to_string();
    let container = docker(&[
        "ps",
        "-q",
        "--filter",
        &format!("label=berth.dev/namespace={}", org.namespace),
        "--filter",
        &format!("label=berth.dev/deployment={deployment}"),
    ]);
    assert!(!container.is_empty(), "the app's container runs");
    // The app exits on its own; Docker's restart policy (unless-stopped) starts it again,
    // possibly before drift repair sees it stopped. Either way the crash is on record.
    docker(&["exec", &container, "touch", "/tmp/crash-now"]);
    let timeline = format!("/resources/{id}/deployments/{deployment}/timeline?limit=1000");
    let entries = eventually(WAIT, "crash evidence in the timeline", || async {
        let body = member.get(&timeline).await.ok();
        let messages: Vec<String> = body["entries"]
            .as_array()?
            .iter()
            .filter_map(|e| e["message"].as_str().map(str::to_string))
            .collect();
        let crash = messages
            .iter()
            .position(|m| m.contains("stopped with exit code 3"))?;
        Some(messages[crash..].to_vec())
    })
    .await;
    assert!(
        entries.iter().any(|m| m == "fatal: out of cheese"),
        "{entries:?}"
    );
    wait_health(&member, &id, "healthy", Timestamp::UNIX_EPOCH).await;
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
