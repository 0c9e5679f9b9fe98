//! `POST /deployments/stream` (spec §4.8, events §6) against the running shim, controller and
//! a real server: every event has the spec's envelope, the stream ends with the attempt's
//! outcome, the deployed version answers through the edge proxy, and no secret value is shown.

use std::time::Duration;

use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::{client, random_suffix};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::deploy_support::{
    assert_never_shown, delete_resource, docker_names, ready_server, remove_server, wait_body,
    wait_listed_with,
};
use crate::shim_projects_envs::{environment, invalid, project};

/// One event of the stream: `event`, `id` and the parsed `data`.
#[derive(Debug)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) id: String,
    pub(crate) data: Value,
}

/// Splits an event-stream body into events; comment-only blocks (keep-alives) are skipped.
pub(crate) fn parse_events(body: &str) -> Vec<SseEvent> {
    body.split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .filter_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                    .map(|value| value.strip_prefix(' ').unwrap_or(value))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let data = field("data");
            if data.is_empty() {
                return None;
            }
            Some(SseEvent {
                event: field("event"),
                id: field("id"),
                data: serde_json::from_str(&data).expect("data is JSON"),
            })
        })
        .collect()
}

/// Opens the stream and reads it to its end: (status, content type, body).
pub(crate) async fn stream(rest: &Rest, body: &Value) -> (u16, String, String) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let mut request = http
        .post(format!("{}/deployments/stream", base_url()))
        .json(body);
    if let Some(token) = &rest.token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the shim answers");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (
        status,
        content_type,
        response.text().await.expect("the stream ends"),
    )
}

fn one_of(value: &Value, allowed: &[&str]) -> bool {
    value.as_str().is_some_and(|v| allowed.contains(&v))
}

/// Asserts the spec §6 envelope on every event, increasing ids, one deployment, `running`
/// until the last event; returns the events' data.
pub(crate) fn assert_envelope(events: &[SseEvent]) -> Vec<Value> {
    assert!(
        events.len() >= 3,
        "created, steps and an outcome: {events:#?}"
    );
    let deployment = events[0].data["deploymentId"].clone();
    let mut previous_id = 0u64;
    for (i, event) in events.iter().enumerate() {
        let data = &event.data;
        assert_eq!(event.event, "message", "{event:?}");
        let id: u64 = event.id.parse().expect("a numeric id");
        assert!(id > previous_id, "ids increase: {events:#?}");
        previous_id = id;
        let timestamp = data["timestamp"].as_str().expect("timestamp");
        assert!(
            timestamp.contains('T') && timestamp.ends_with('Z'),
            "{timestamp}"
        );
        assert!(
            one_of(&data["source"], &["platform", "application"]),
            "{data}"
        );
        let phases = ["detect", "plan", "package", "deploy", "verify", "rollback"];
        assert!(one_of(&data["phase"], &phases), "{data}");
        assert!(
            one_of(&data["level"], &["debug", "info", "warn", "error"]),
            "{data}"
        );
        assert!(!data["message"].as_str().expect("message").is_empty());
        assert_eq!(data["deploymentId"], deployment);
        assert!(
            one_of(&data["status"], &["running", "succeeded", "failed"]),
            "{data}"
        );
        let step = &data["step"];
        let (current, total) = (
            step["current"].as_i64().unwrap(),
            step["total"].as_i64().unwrap(),
        );
        assert!(total >= current && current >= 1, "{step}");
        assert!(step["label"].is_string(), "{step}");
        if i + 1 < events.len() {
            assert_eq!(
                data["status"], "running",
                "only the last event ends: {data}"
            );
        }
    }
    events.iter().map(|e| e.data.clone()).collect()
}

#[tokio::test]
async fn stream_needs_a_token_and_valid_ids() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let anonymous = Rest::anonymous();
    anonymous
        .post("/deployments/stream", json!({}))
        .await
        .error(401, "unauthenticated");

    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": "srv-x", "resourceId": "res-missing",
    });
    let with = |patch: Value| {
        let mut body = body.clone();
        for (key, value) in patch.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let post = |body: Value| member.post("/deployments/stream", body);
    invalid(
        post(json!({"projectId": shop, "environmentId": prod, "serverId": "s"})).await,
        "resourceId",
    );
    invalid(post(with(json!({"projectId": ""}))).await, "projectId");
    invalid(
        post(with(json!({"destinationId": ""}))).await,
        "destinationId",
    );
    invalid(post(with(json!({"branch": "main"}))).await, "branch");
    let missing = post(body.clone()).await.error(404, "not_found");
    assert_eq!(missing["details"]["field"], "resourceId");
}

#[tokio::test]
async fn stream_reports_each_step_and_success_and_the_new_version_serves() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let stage = environment(&member, &shop, "stage").await;
    let slug = format!("stream{}", random_suffix());
    let host = format!("{slug}.localhost");

    // Version 2 first (the controller's own first attempt), then the stream deploys version 1.
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Streamed", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:2"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&member, &id, "succeeded").await;
    wait_body(port, &host, "sample-app v2").await;
    let secret = format!("tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "API_TOKEN", "value": secret}),
        )
        .await
        .ok();
    let source = json!({"source": {"kind": "docker-image", "locator": "berth/sample-app:1"}});
    member
        .post(&format!("/resources/{id}/source"), source)
        .await
        .ok();

    // Ids that do not match the resource are refused before anything starts.
    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id,
    });
    let with = |patch: Value| {
        let mut body = body.clone();
        for (key, value) in patch.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let post = |body: Value| member.post("/deployments/stream", body);
    invalid(
        post(with(json!({"environmentId": stage}))).await,
        "environmentId",
    );
    invalid(
        post(with(json!({"projectId": "prj-other"}))).await,
        "projectId",
    );
    invalid(
        post(with(json!({"serverId": "srv-missing"}))).await,
        "serverId",
    );
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .post("/deployments/stream", body.clone())
        .await
        .error(404, "not_found");
    let deployments = Api::<Deployment>::namespaced(client.clone(), &org.namespace);
    assert_eq!(
        deployments
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let (status, content_type, text) = stream(&member, &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let events = assert_envelope(&parse_events(&text));
    let last = events.last().unwrap();
    assert_eq!(last["status"], "succeeded", "{events:#?}");
    assert_eq!(last["level"], "info");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("berth/sample-app:1"),
        "{last}"
    );
    assert_eq!(last["step"]["current"], last["step"]["total"]);
    let steps: Vec<i64> = events
        .iter()
        .map(|e| e["step"]["current"].as_i64().unwrap())
        .collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1]),
        "steps go forward: {steps:?}"
    );
    let verifying = |e: &&Value| e["status"] == "running" && e["phase"] == "verify";
    assert!(
        events.iter().any(|e| verifying(&e)),
        "a verify event: {events:#?}"
    );
    wait_body(port, &host, "hello from berth sample-app v1").await;

    // The attempt is a Deployment like the controller's own, started by hand.
    let name = last["deploymentId"].as_str().unwrap().to_string();
    let deployment = deployments.get(&name).await.unwrap();
    assert_eq!(deployment.spec.trigger.as_deref(), Some("manual"));
    assert_eq!(deployment.spec.server_id, server);
    assert_eq!(
        deployment.spec.source_snapshot.as_ref().unwrap().locator,
        "berth/sample-app:1"
    );
    assert_eq!(deployment.labels()["berth.dev/resource"], id);
    assert!(
        deployment
            .annotations()
            .contains_key("berth.dev/resource-generation")
    );
    let item = wait_listed_with(&member, &id, "succeeded").await;
    assert_eq!(item["deploymentCount"], 2);
    assert_eq!(item["lastDeploymentId"], name.as_str());

    assert_never_shown(&secret, &[&text]);
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

#[tokio::test]
async fn stream_ends_failed_with_the_health_check_error() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("broken{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Broken", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/nope", "intervalSeconds": 1, "retries": 1}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    // The controller's own first attempt fails the same way; the stream starts a second one.
    wait_listed_with(&member, &id, "failed").await;

    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id,
    });
    let (status, _, text) = stream(&member, &body).await;
    assert_eq!(status, 200, "{text}");
    let events = assert_envelope(&parse_events(&text));
    let last = events.last().unwrap();
    assert_eq!(last["status"], "failed", "{events:#?}");
    assert_eq!(last["level"], "error");
    assert_eq!(last["phase"], "verify");
    let message = last["message"].as_str().unwrap();
    assert!(
        message.contains("health check") && message.contains("/nope"),
        "{message}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["phase"] == "verify" && e["status"] == "running")
    );

    // The failed container is gone and nothing serves the host.
    let deployment = last["deploymentId"].as_str().unwrap();
    assert!(docker_names(&format!("label=berth.dev/deployment={deployment}")).is_empty());
    let http = reqwest::Client::new();
    let (code, _) = crate::deploy_support::fetch(&http, port, &format!("{slug}.localhost"))
        .await
        .unwrap();
    assert_ne!(code, 200);
    let stored = Api::<Deployment>::namespaced(client.clone(), &org.namespace)
        .get(deployment)
        .await
        .unwrap();
    assert_eq!(
        stored.status.unwrap().last_error.unwrap().code,
        "health_check_unexpected_status"
    );
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
