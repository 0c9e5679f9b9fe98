//! `GET /resource-access-failures/{requestId}` (spec §4.7) against the running shim, controller
//! and a real server's Caddy: a request to an unknown host, to a path no route claims and to an
//! app whose upstream refuses connections each get a request id and a reason from the edge; the
//! controller captures the evidence from the proxy's log, and the lookup by that id returns it,
//! with its filters, to those who may see it and to no one else.
//!
//! "Upstream down" is made deterministic with a route to a port nothing listens on (the health
//! check probes the right one, so the deployment succeeds): a container stopped by hand is
//! started again by drift repair within about a second, so a request may or may not meet it.

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, delete_resource, ready_server, remove_server};
use crate::shim_projects_envs::{environment, invalid, project};

/// One request through the edge proxy: (status, `X-Request-Id`, body as JSON).
pub(crate) async fn through_edge(
    http: &reqwest::Client,
    port: u16,
    host: &str,
    path: &str,
) -> (u16, String, Value) {
    let response = http
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", host)
        .send()
        .await
        .expect("the edge proxy answers");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, id, body)
}

/// Asserts the edge answered `status` with evidence of `code` carrying its own request id.
#[track_caller]
fn assert_answer(answer: &(u16, String, Value), status: u16, code: &str) -> String {
    let (got, id, body) = answer;
    assert_eq!(*got, status, "{body}");
    assert!(!id.is_empty(), "no X-Request-Id: {body}");
    assert_eq!(body["requestId"], id.as_str(), "{body}");
    assert_eq!(body["schemaVersion"], "resource-access-failure/v1");
    assert_eq!(body["code"], code, "{body}");
    id.clone()
}

/// The lookup of `id` once the controller captured it.
pub(crate) async fn lookup(rest: &Rest, id: &str) -> Value {
    let path = format!("/resource-access-failures/{id}");
    eventually(WAIT, &format!("evidence of {id}"), || async {
        let reply = rest.get(&path).await;
        (reply.status == 200).then_some(reply.body)
    })
    .await
}

#[track_caller]
fn assert_evidence(found: &Value, id: &str, host: &str, path: &str, code: &str, status: u16) {
    assert_eq!(
        found["schemaVersion"],
        "resources.access-failure-evidence.lookup/v1"
    );
    assert_eq!(found["requestId"], id);
    assert_eq!(found["status"], "found");
    assert_eq!(
        found["matchedSource"],
        "short-retention-evidence-read-model"
    );
    let evidence = &found["evidence"];
    assert_eq!(evidence["requestId"], id, "{found}");
    assert_eq!(evidence["code"], code, "{found}");
    assert_eq!(evidence["httpStatus"], status, "{found}");
    assert_eq!(evidence["affected"]["hostname"], host, "{found}");
    assert_eq!(evidence["affected"]["path"], path, "{found}");
    assert_eq!(found["nextAction"], evidence["nextAction"]);
    for field in ["capturedAt", "expiresAt", "generatedAt"] {
        assert!(
            found[field].as_str().is_some_and(|t| t.ends_with('Z')),
            "{field}: {found}"
        );
    }
}

#[tokio::test]
async fn edge_failures_carry_a_request_id_whose_evidence_the_lookup_returns() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let http = reqwest::Client::new();

    // An unknown host: the server's evidence, no route; the query string is not kept.
    let stranger = format!("nobody{}.localhost", random_suffix());
    let answer = through_edge(&http, port, &stranger, "/missing?token=s3cret").await;
    let unknown_host = assert_answer(&answer, 404, "resource_access_route_not_found");
    let found = lookup(&member, &unknown_host).await;
    assert_evidence(
        &found,
        &unknown_host,
        &stranger,
        "/missing",
        "resource_access_route_not_found",
        404,
    );
    assert_eq!(found["relatedIds"]["serverId"], server.as_str(), "{found}");
    assert!(found["relatedIds"]["resourceId"].is_null(), "{found}");
    assert!(!found.to_string().contains("s3cret"), "{found}");

    // Filters: each one given must match; a misspelt one is a 422 naming it.
    let base = format!("/resource-access-failures/{unknown_host}");
    let filtered = member
        .get(&format!("{base}?hostname={stranger}&path=/missing"))
        .await
        .ok();
    assert_eq!(filtered["filters"]["hostname"], stranger.as_str());
    member
        .get(&format!("{base}?path=/elsewhere"))
        .await
        .error(404, "not_found");
    invalid(member.get(&format!("{base}?host={stranger}")).await, "host");
    invalid(member.get(&format!("{base}?path=missing")).await, "path");
    let unknown = format!("/resource-access-failures/{}", uuid_like());
    member.get(&unknown).await.error(404, "not_found");

    // An app whose route dials a port nothing listens on, while the app listens (PORT) and its
    // health check probes on 8080. The server comes last, so PORT is set before it deploys.
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("down{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Down", "slug": slug,
                "kind": "application",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 9},
                "accessProfile": {"pathPrefix": "/app"},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "port": 8080, "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    member
        .post(
            &format!("/resources/{id}/variables"),
            json!({"key": "PORT", "value": "8080"}),
        )
        .await
        .ok();
    let patch = json!({ "spec": { "serverId": server } });
    Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("set the resource's server");
    let deployment = deployed(&member, &id).await;
    let host = format!("{slug}.localhost");
    let answer = eventually(WAIT, "the route answers 502", || async {
        let answer = through_edge(&http, port, &host, "/app/orders").await;
        (answer.0 == 502).then_some(answer)
    })
    .await;
    let down = assert_answer(&answer, 502, "resource_access_upstream_unavailable");
    assert_eq!(answer.2["route"]["resourceId"], id.as_str(), "{}", answer.2);
    let found = lookup(&member, &down).await;
    assert_evidence(
        &found,
        &down,
        &host,
        "/app/orders",
        "resource_access_upstream_unavailable",
        502,
    );
    let related = &found["relatedIds"];
    assert_eq!(related["resourceId"], id.as_str(), "{found}");
    assert_eq!(related["deploymentId"], deployment.as_str(), "{found}");
    assert_eq!(related["serverId"], server.as_str(), "{found}");
    assert_eq!(found["evidence"]["route"]["pathPrefix"], "/app", "{found}");
    assert_eq!(found["evidence"]["causeCode"], "upstream_connection_failed");
    let base = format!("/resource-access-failures/{down}");
    member.get(&format!("{base}?resourceId={id}")).await.ok();
    member
        .get(&format!("{base}?resourceId=other"))
        .await
        .error(404, "not_found");

    // The app's host, a path its route does not claim.
    let answer = through_edge(&http, port, &host, "/elsewhere").await;
    let unclaimed = assert_answer(&answer, 404, "resource_access_route_not_found");
    let found = lookup(&member, &unclaimed).await;
    assert_evidence(
        &found,
        &unclaimed,
        &host,
        "/elsewhere",
        "resource_access_route_not_found",
        404,
    );
    assert_eq!(
        found["evidence"]["causeCode"], "no_route_for_path",
        "{found}"
    );
    assert_eq!(found["evidence"]["category"], "not-found", "{found}");
    assert_eq!(found["relatedIds"]["resourceId"], id.as_str(), "{found}");
    // Health and the diagnostic summary name the resource's latest failure.
    let health = member.get(&format!("/resources/{id}/health")).await.ok();
    let latest = &health["publicAccess"]["latestAccessFailure"];
    assert_eq!(latest["requestId"], unclaimed.as_str(), "{health}");
    assert_eq!(
        latest["code"], "resource_access_route_not_found",
        "{health}"
    );
    let summary = member
        .get(&format!("/resources/{id}/diagnostic-summary"))
        .await
        .ok();
    let latest = &summary["access"]["latestAccessFailure"];
    assert_eq!(latest["requestId"], unclaimed.as_str(), "{summary}");

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    for request_id in [&unknown_host, &down, &unclaimed] {
        let path = format!("/resource-access-failures/{request_id}");
        outsider.get(&path).await.error(404, "not_found");
    }

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

/// Waits until the resource's deployment ended, asserts it succeeded (showing its timeline if
/// not) and returns its id.
async fn deployed(rest: &Rest, id: &str) -> String {
    let item = eventually(WAIT, &format!("a deployment of {id} ended"), || async {
        let list = rest.get("/resources").await.ok();
        let item = list["items"]
            .as_array()?
            .iter()
            .find(|i| i["id"] == id)?
            .clone();
        let status = item["lastDeploymentStatus"].as_str()?;
        ["succeeded", "failed", "rolled-back", "canceled"]
            .contains(&status)
            .then_some(item)
    })
    .await;
    let deployment = item["lastDeploymentId"].as_str().unwrap().to_string();
    if item["lastDeploymentStatus"] != "succeeded" {
        let timeline = rest
            .get(&format!(
                "/resources/{id}/deployments/{deployment}/timeline"
            ))
            .await;
        panic!("deployment {deployment} ended {item}: {}", timeline.body);
    }
    deployment
}

/// A request id no proxy handed out, shaped like one.
fn uuid_like() -> String {
    let digits = format!("{:032x}", rand::random::<u128>());
    format!(
        "{}-{}-{}-{}-{}",
        &digits[..8],
        &digits[8..12],
        &digits[12..16],
        &digits[16..20],
        &digits[20..]
    )
}
