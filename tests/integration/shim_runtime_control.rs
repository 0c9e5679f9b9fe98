//! Runtime control against the running shim, controller and a real server: `POST
//! /resources/{id}/runtime-control` stops the sample app (it stays stopped: drift repair leaves
//! it, and stops it again when started by hand), starts it (it serves through the edge again)
//! and restarts it (a new start time); health reports each attempt in `latestRuntimeControl`;
//! an archived environment refuses. The same through `spec.runtime` applied with kubectl.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, kubectl, random_suffix};
use kube::Api;
use serde_json::{Value, json};

use crate::deploy_support::{
    WAIT, delete_resource, fetch, ready_server, remove_server, wait_body, wait_listed_with,
};
use crate::shim_projects_envs::{environment, invalid, project};

/// `docker inspect` of the resource's container (tests only): (state, start time).
fn container_state(resource: &str) -> Option<(String, String)> {
    let filter = format!("label=berth.dev/resource={resource}");
    let output = std::process::Command::new("docker")
        .args(["ps", "-aq", "--filter", &filter])
        .output()
        .expect("docker CLI (tests only)");
    let ids = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let id = ids.lines().next()?;
    let output = std::process::Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{.State.Status}} {{.State.StartedAt}}",
            id,
        ])
        .output()
        .expect("docker CLI (tests only)");
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let (state, started) = text.split_once(' ')?;
    Some((state.to_string(), started.to_string()))
}

async fn wait_container(resource: &str, state: &str) -> String {
    eventually(
        WAIT,
        &format!("container of {resource} {state}"),
        || async {
            let (now, started) = container_state(resource)?;
            (now == state).then_some(started)
        },
    )
    .await
}

/// Waits until health shows the runtime control `attempt` finished with `status`.
async fn wait_control(rest: &Rest, id: &str, attempt: &str, status: &str) -> Value {
    eventually(WAIT, &format!("{attempt} {status} in health"), || async {
        let body = rest.get(&format!("/resources/{id}/health")).await.ok();
        let control = &body["latestRuntimeControl"];
        (control["runtimeControlAttemptId"] == attempt && control["status"] == status)
            .then_some(body)
    })
    .await
}

async fn control(rest: &Rest, id: &str, operation: &str) -> Value {
    let path = format!("/resources/{id}/runtime-control");
    rest.post(&path, json!({"operation": operation}))
        .await
        .expect(202)
}

/// The phases of a health record's `latestRuntimeControl` as `name:status`.
fn phases(health: &Value) -> Vec<String> {
    health["latestRuntimeControl"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}:{}",
                p["phase"].as_str().unwrap(),
                p["status"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn rest_stops_starts_and_restarts_the_runtime_and_an_archived_environment_refuses() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("rtc{}", random_suffix());
    let host = format!("{slug}.localhost");
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Control", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&member, &id, "succeeded").await;
    wait_body(port, &host, "sample-app v1").await;
    let path = format!("/resources/{id}/runtime-control");
    invalid(
        member.post(&path, json!({"operation": "pause"})).await,
        "operation",
    );
    invalid(member.post(&path, json!({})).await, "operation");

    // Stop: accepted at once, then carried out; the container stays stopped.
    let accepted = control(&member, &id, "stop").await;
    assert_eq!(accepted["operation"], "stop", "{accepted}");
    assert_eq!(accepted["status"], "accepted");
    assert_eq!(accepted["runtimeState"], "stopping");
    let stop = accepted["runtimeControlAttemptId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(stop.starts_with(&format!("rtc-{id}-")), "{stop}");
    wait_container(&id, "exited").await;
    let health = wait_control(&member, &id, &stop, "succeeded").await;
    assert_eq!(health["latestRuntimeControl"]["operation"], "stop");
    assert_eq!(health["latestRuntimeControl"]["runtimeState"], "stopped");
    assert_eq!(
        phases(&health),
        ["validate:succeeded", "stop:succeeded", "verify:succeeded"]
    );
    let stopped = eventually(WAIT, "health reads stopped", || async {
        let body = member.get(&format!("/resources/{id}/health")).await.ok();
        (body["overall"] == "stopped").then_some(body)
    })
    .await;
    assert_eq!(stopped["runtime"]["lifecycle"], "stopped", "{stopped}");
    assert_eq!(stopped["runtime"]["reasonCode"], "stopped_on_request");
    assert_eq!(stopped["publicAccess"]["reasonCode"], "runtime_stopped");
    // A repeat changes nothing and answers the same attempt.
    let again = control(&member, &id, "stop").await;
    assert_eq!(again["runtimeControlAttemptId"], stop.as_str());
    // Drift repair leaves it stopped, and stops it again when started by hand.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(container_state(&id).unwrap().0, "exited");
    let http = reqwest::Client::new();
    let (status, _) = fetch(&http, port, &host).await.unwrap();
    assert_ne!(status, 200, "a stopped app does not serve");
    let container = format!("label=berth.dev/resource={id}");
    let started_by_hand = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("docker start $(docker ps -aq --filter {container})"),
        ])
        .output()
        .unwrap();
    assert!(started_by_hand.status.success(), "{started_by_hand:?}");
    wait_container(&id, "exited").await;

    // Start: it serves through the edge again.
    let start = control(&member, &id, "start").await;
    assert_eq!(start["operation"], "start");
    let start_id = start["runtimeControlAttemptId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(start_id, stop);
    wait_body(port, &host, "sample-app v1").await;
    let health = wait_control(&member, &id, &start_id, "succeeded").await;
    assert_eq!(health["latestRuntimeControl"]["runtimeState"], "running");
    eventually(WAIT, "health healthy after start", || async {
        let body = member.get(&format!("/resources/{id}/health")).await.ok();
        (body["overall"] == "healthy").then_some(())
    })
    .await;

    // Restart: a new start time, and it serves.
    let (_, before) = container_state(&id).unwrap();
    let restart = control(&member, &id, "restart").await;
    let restart_id = restart["runtimeControlAttemptId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(restart["runtimeState"], "restarting");
    let health = wait_control(&member, &id, &restart_id, "succeeded").await;
    assert_eq!(
        phases(&health),
        [
            "validate:succeeded",
            "stop:succeeded",
            "start:succeeded",
            "verify:succeeded"
        ]
    );
    let (state, after) = container_state(&id).unwrap();
    assert_eq!(state, "running");
    assert_ne!(before, after, "the container started again");
    wait_body(port, &host, "sample-app v1").await;
    // Stops and restarts asked for are no crashes: no crash evidence in the timeline.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deployment = health["latestDeployment"]["id"].as_str().unwrap();
    let timeline = member
        .get(&format!(
            "/resources/{id}/deployments/{deployment}/timeline?limit=1000"
        ))
        .await
        .ok();
    assert!(
        !timeline.to_string().contains("stopped with exit code"),
        "{timeline}"
    );

    // An archived environment refuses, and the runtime is left as it is.
    admin
        .post(&format!("/environments/{prod}/archive"), json!({}))
        .await
        .ok();
    let refused = eventually(WAIT, "runtime control refused once archived", || async {
        let reply = member.post(&path, json!({"operation": "stop"})).await;
        (reply.status == 409).then_some(reply)
    })
    .await
    .error(409, "resource_archived");
    assert_eq!(refused["details"]["blockedReason"], "resource-archived");
    assert_eq!(container_state(&id).unwrap().0, "running");

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

/// The Resource manifest of the GitOps test, with `runtime` as given.
fn manifest(
    namespace: &str,
    id: &str,
    project: &str,
    env: &str,
    server: &str,
    runtime: Value,
) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": {"name": id, "namespace": namespace},
        "spec": {
            "projectId": project, "environmentId": env, "serverId": server,
            "name": id, "slug": id, "kind": "application",
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "networkProfile": {"internalPort": 8080},
            "runtime": runtime,
        },
    })
    .to_string()
}

fn apply(manifest: &str) {
    let output = kubectl(&["apply", "-f", "-"], Some(manifest));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

/// Waits until the Resource's status records an attempt of `operation` that reached `status`.
async fn wait_status(api: &Api<Resource>, id: &str, operation: &str, status: &str) -> Resource {
    eventually(WAIT, &format!("{operation} {status} in status"), || async {
        let resource = api.get(id).await.ok()?;
        let latest = resource
            .status
            .as_ref()?
            .runtime_control
            .as_ref()?
            .latest
            .clone();
        let value = serde_json::to_value(&latest).ok()?;
        (value["operation"] == operation && value["status"] == status).then_some(resource)
    })
    .await
}

#[tokio::test]
async fn spec_runtime_applied_with_kubectl_stops_blocks_a_restart_and_starts() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let id = format!("gitrtc{}", random_suffix());
    let host = format!("{id}.localhost");
    let ns = org.namespace.clone();
    let running = json!({"desiredState": "running"});
    apply(&manifest(&ns, &id, &shop, &prod, &server, running.clone()));
    wait_listed_with(&member, &id, "succeeded").await;
    wait_body(port, &host, "sample-app v1").await;

    let api = Api::<Resource>::namespaced(client.clone(), &ns);
    apply(&manifest(
        &ns,
        &id,
        &shop,
        &prod,
        &server,
        json!({"desiredState": "stopped"}),
    ));
    wait_container(&id, "exited").await;
    let stopped = wait_status(&api, &id, "stop", "succeeded").await;
    let status = stopped.status.unwrap();
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.reason, "Stopped", "a deliberate stop is no failure");
    assert_eq!(
        serde_json::to_value(status.runtime_control.unwrap().applied_state).unwrap(),
        "stopped"
    );

    // A restart asked for while it is to stay stopped waits, visibly.
    let restart_while_stopped = json!({"desiredState": "stopped", "restartRequestedAt": "r1"});
    apply(&manifest(
        &ns,
        &id,
        &shop,
        &prod,
        &server,
        restart_while_stopped,
    ));
    let health = eventually(WAIT, "blocked restart in health", || async {
        let body = member.get(&format!("/resources/{id}/health")).await.ok();
        (body["latestRuntimeControl"]["status"] == "blocked").then_some(body)
    })
    .await;
    assert_eq!(
        health["latestRuntimeControl"]["blockedReason"],
        "runtime-stopped"
    );
    assert_eq!(container_state(&id).unwrap().0, "exited");

    apply(&manifest(&ns, &id, &shop, &prod, &server, running));
    wait_status(&api, &id, "start", "succeeded").await;
    wait_body(port, &host, "sample-app v1").await;

    delete_resource(&admin, &id, &id).await;
    remove_server(&admin, &server).await;
}
