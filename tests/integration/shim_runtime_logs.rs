//! `GET /resources/{resourceId}/runtime-logs` (spec §4.7) against the running shim, controller
//! and a real server: the lines a deployed app printed come back through Docker's logs API over
//! SSH, a secret value it printed reads `****` with `masked: true` and is never returned, the
//! query is checked, and `follow=true` is a live tail as `text/event-stream`.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::{client, eventually, random_suffix};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::deploy_support::{
    WAIT, assert_never_shown, delete_resource, ready_server, remove_server, wait_listed_with,
};
use crate::deployments_build::Scratch;
use crate::shim_deployments_stream::parse_events;
use crate::shim_projects_envs::{environment, invalid, project};

/// The sample app, printing its secret token and a line on stderr at start, then a tick a
/// second (so a live tail has something new to show).
const DOCKERFILE: &str = r#"FROM berth/sample-app:1
CMD ["/bin/sh", "-c", "echo \"api token is $API_TOKEN\"; echo 'warming up' >&2; (i=0; while sleep 1; do i=$((i+1)); echo \"tick $i\"; done) & exec /bin/sample-app"]
"#;

/// The lines of a runtime-logs answer.
fn lines(body: &Value) -> Vec<Value> {
    body["logs"].as_array().expect("logs is a list").clone()
}

fn with_message<'a>(logs: &'a [Value], message: &str) -> Option<&'a Value> {
    logs.iter().find(|line| line["message"] == message)
}

/// Asserts the Runtime log line shape of spec §2.2 on every line and numbering from 1.
fn assert_lines(logs: &[Value], resource: &str, deployment: &str) {
    for (i, line) in logs.iter().enumerate() {
        assert_eq!(line["resourceId"], resource, "{line}");
        assert_eq!(line["deploymentId"], deployment, "{line}");
        assert_eq!(line["runtimeKind"], "docker-container", "{line}");
        let instance = line["runtimeInstanceId"]
            .as_str()
            .expect("runtimeInstanceId");
        assert!(
            instance.len() == 12 && instance.chars().all(|c| c.is_ascii_hexdigit()),
            "{line}"
        );
        assert!(
            line["stream"] == "stdout" || line["stream"] == "stderr",
            "{line}"
        );
        let timestamp = line["timestamp"].as_str().expect("timestamp");
        assert!(
            timestamp.contains('T') && timestamp.ends_with('Z'),
            "{line}"
        );
        assert_eq!(line["cursor"], timestamp, "{line}");
        assert_eq!(line["sequence"], i as u64 + 1, "{line}");
        assert!(
            line["message"].is_string() && line["masked"].is_boolean(),
            "{line}"
        );
    }
}

/// Opens the live tail and reads until `count` events arrived: (status, content type, events'
/// data, the raw text read). The connection is dropped afterwards, as a client that leaves.
pub(crate) async fn follow(
    rest: &Rest,
    path: &str,
    count: usize,
) -> (u16, String, Vec<Value>, String) {
    let mut request = reqwest::Client::new().get(format!("{}{path}", base_url()));
    if let Some(token) = &rest.token {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.expect("the shim answers");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut text = String::new();
    let read = async {
        loop {
            // Only whole events: everything up to the last blank line.
            let complete = text.rfind("\n\n").map_or("", |end| &text[..end + 2]);
            let events = parse_events(complete);
            if events.len() >= count {
                return events;
            }
            match response.chunk().await.expect("the stream reads") {
                Some(bytes) => text.push_str(&String::from_utf8_lossy(&bytes)),
                None => return events,
            }
        }
    };
    let events = tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("live tail events within 30 s");
    for event in &events {
        assert_eq!(event.event, "message", "{event:?}");
        assert!(event.id.parse::<u64>().is_ok(), "{event:?}");
    }
    let data = events.into_iter().map(|e| e.data).collect();
    (status, content_type, data, text)
}

#[tokio::test]
async fn runtime_logs_return_what_the_app_printed_with_its_secret_masked() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let folder = Scratch::new();
    folder.write("Dockerfile", DOCKERFILE);
    let slug = format!("logs{}", random_suffix());

    // No server yet, so the secret is in place before the first (and only) deployment.
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Logs", "slug": slug,
                "kind": "application",
                "source": {"kind": "local-folder", "locator": folder.path().to_str().unwrap()},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let base = format!("/resources/{id}/runtime-logs");
    let secret = format!("tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "API_TOKEN", "value": secret}),
        )
        .await
        .ok();

    // Nothing runs yet: no lines and no deployment.
    let empty = member.get(&base).await.ok();
    assert_eq!(empty["resourceId"], id.as_str());
    assert_eq!(lines(&empty), Vec::<Value>::new());
    assert!(empty.get("deploymentId").is_none(), "{empty}");

    // The query is checked before anything is read.
    for bad in ["0", "5001", "ten"] {
        let error = member
            .get(&format!("{base}?tailLines={bad}"))
            .await
            .error(422, "validation_error");
        assert_eq!(error["details"]["field"], "tailLines", "{error}");
        assert_eq!(error["details"]["min"], 1);
        assert_eq!(error["details"]["max"], 5000);
    }
    invalid(member.get(&format!("{base}?lines=5")).await, "lines");
    invalid(member.get(&format!("{base}?stream=both")).await, "stream");
    invalid(
        member.get(&format!("{base}?since=yesterday")).await,
        "since",
    );

    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let patch = json!({ "spec": { "serverId": server } });
    resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("set the resource's server");
    let item = wait_listed_with(&member, &id, "succeeded").await;
    let deployment = item["lastDeploymentId"].as_str().unwrap().to_string();

    // The lines the app printed, with the secret masked in the one that carried it.
    let body = eventually(
        WAIT,
        "the app's first ticks in its runtime logs",
        || async {
            let body = member.get(&base).await.ok();
            with_message(&lines(&body), "tick 2")
                .is_some()
                .then_some(body)
        },
    )
    .await;
    assert_eq!(body["resourceId"], id.as_str());
    assert_eq!(body["deploymentId"], deployment.as_str());
    let logs = lines(&body);
    assert_lines(&logs, &id, &deployment);
    let token = with_message(&logs, "api token is ****").expect("the token line, masked");
    assert_eq!(token["masked"], true, "{token}");
    assert_eq!(token["stream"], "stdout");
    let warning = with_message(&logs, "warming up").expect("the stderr line");
    assert_eq!(warning["stream"], "stderr");
    assert_eq!(warning["masked"], false);
    assert_eq!(
        with_message(&logs, "tick 1").expect("a tick")["masked"],
        false
    );

    // tailLines, stream and since narrow the answer.
    let two = lines(&member.get(&format!("{base}?tailLines=2")).await.ok());
    assert_eq!(two.len(), 2, "{two:?}");
    assert!(
        two.iter()
            .all(|l| l["message"].as_str().unwrap().starts_with("tick "))
    );
    let errors = lines(&member.get(&format!("{base}?stream=stderr")).await.ok());
    assert!(!errors.is_empty() && errors.iter().all(|l| l["stream"] == "stderr"));
    assert!(with_message(&errors, "warming up").is_some(), "{errors:?}");
    let cursor = token["cursor"].as_str().unwrap();
    let after = lines(&member.get(&format!("{base}?since={cursor}")).await.ok());
    assert!(
        with_message(&after, "api token is ****").is_none(),
        "{after:?}"
    );
    assert!(with_message(&after, "tick 1").is_some(), "{after:?}");
    let at = |line: &Value| {
        line["timestamp"]
            .as_str()
            .unwrap()
            .parse::<Timestamp>()
            .unwrap()
    };
    let cursor_at: Timestamp = cursor.parse().unwrap();
    assert!(after.iter().all(|l| at(l) > cursor_at), "{after:?}");

    // An attempt of the resource by id; an unknown one is a 404 naming the field.
    let same = member
        .get(&format!("{base}?deploymentId={deployment}"))
        .await
        .ok();
    assert_eq!(same["deploymentId"], deployment.as_str());
    let missing = member
        .get(&format!("{base}?deploymentId=dep-nope"))
        .await
        .error(404, "not_found");
    assert_eq!(missing["details"]["field"], "deploymentId");

    // Another organization cannot see the resource at all.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider.get(&base).await.error(404, "not_found");

    // The live tail: the last line now, then lines as the app prints them.
    let (status, content_type, events, text) =
        follow(&member, &format!("{base}?follow=true&tailLines=1"), 3).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert_eq!(events.len(), 3, "{text}");
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(sequences, [1, 2, 3], "{text}");
    for event in &events {
        assert_eq!(event["resourceId"], id.as_str(), "{event}");
        assert_eq!(event["deploymentId"], deployment.as_str(), "{event}");
        assert!(
            event["message"].as_str().unwrap().starts_with("tick "),
            "{event}"
        );
    }

    assert_never_shown(&secret, &[&text]);
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
