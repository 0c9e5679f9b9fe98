//! Deployment timelines: a build's output reaches the progress stream as `application` events
//! (masked, each before the step that follows it), a container that fails its health check
//! leaves its last output there, and the attempt's whole timeline (steps, output, outcome)
//! stays readable from the observation store after the stream ends and after the Deployment
//! object is gone.

use std::time::Duration;

use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_tests::rest::TestOrg;
use berth_tests::{client, eventually, eventually_explained, random_suffix};
use kube::Api;
use serde_json::{Value, json};

use crate::deploy_support::{
    assert_never_shown, delete_resource, ready_server, remove_server, wait_body, wait_listed_with,
};
use crate::deployments_build::Scratch;
use crate::shim_deployments_stream::{assert_envelope, parse_events, stream};
use crate::shim_projects_envs::{environment, invalid, project};

/// A busybox web app whose build prints a marker and the `BUILD_TOKEN` build arg, and which
/// prints the `RUNTIME_TOKEN` variable and a line on stderr when it starts.
const DOCKERFILE: &str = r#"FROM berth/busybox:1
ARG BUILD_TOKEN=unset
RUN echo "timeline-marker-$((6*7)) token=${BUILD_TOKEN}"
COPY www/ /www/
EXPOSE 8080
CMD ["/bin/sh", "-c", "echo \"starting with token=${RUNTIME_TOKEN}\"; echo 'warming up' >&2; httpd -f -p 8080 -h /www & trap 'exit 0' TERM; wait"]
"#;

fn messages(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn build_output_is_streamed_and_the_timeline_outlives_the_attempt() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let folder = Scratch::new();
    folder.write("app/Dockerfile", DOCKERFILE);
    folder.write("app/www/index.html", "<h1>timeline v1</h1>\n");
    let slug = format!("timeline{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Timeline", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {
                    "kind": "local-folder",
                    "locator": folder.path().to_str().unwrap(),
                    "baseDirectory": "app",
                },
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&member, &id, "succeeded").await;

    // A build-time secret: the build prints it, every reader sees it masked.
    let secret = format!("build-tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "BUILD_TOKEN", "value": secret, "exposure": "build-time"}),
        )
        .await
        .ok();
    folder.write("app/www/index.html", "<h1>timeline v2</h1>\n");
    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id,
    });
    let (status, _, text) = stream(&member, &body).await;
    assert_eq!(status, 200, "{text}");
    let events = assert_envelope(&parse_events(&text));
    let last = events.last().unwrap();
    assert_eq!(last["status"], "succeeded", "{events:#?}");
    wait_body(port, &format!("{slug}.localhost"), "timeline v2").await;

    let output: Vec<Value> = events
        .iter()
        .filter(|e| e["source"] == "application")
        .cloned()
        .collect();
    let lines = messages(&output);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("timeline-marker-42 token=****")),
        "the build's own line, masked: {lines:#?}"
    );
    for line in &output {
        assert_eq!(line["phase"], "package", "{line}");
        assert_eq!(line["stream"], "stdout", "{line}");
        assert_eq!(line["status"], "running", "{line}");
    }
    let first_deploy = events
        .iter()
        .position(|e| e["source"] == "platform" && e["phase"] == "deploy")
        .expect("a deploy step");
    let last_output = events
        .iter()
        .rposition(|e| e["source"] == "application")
        .unwrap();
    assert!(last_output < first_deploy, "output before the next step");
    let steps: Vec<i64> = events
        .iter()
        .map(|e| e["step"]["current"].as_i64().unwrap())
        .collect();
    let seen: Vec<String> = events
        .iter()
        .map(|e| format!("{} {} {}", e["step"]["current"], e["source"], e["message"]))
        .collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{seen:#?}");

    // The timeline as stored: steps, the same output lines, the outcome last.
    let deployment = last["deploymentId"].as_str().unwrap().to_string();
    let path = format!("/resources/{id}/deployments/{deployment}/timeline");
    let timeline = member.get(&path).await.ok();
    assert_eq!(timeline["schemaVersion"], "deployments.timeline/v1");
    assert_eq!(timeline["resourceId"], id.as_str());
    assert_eq!(timeline["deploymentId"], deployment.as_str());
    assert_eq!(timeline["status"], "succeeded");
    assert!(timeline.get("nextAfter").is_none(), "{timeline}");
    let entries = timeline["entries"].as_array().unwrap().clone();
    let sequences: Vec<i64> = entries
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");
    let stored_output: Vec<Value> = entries
        .iter()
        .filter(|e| e["source"] == "application")
        .cloned()
        .collect();
    assert_eq!(
        messages(&stored_output),
        lines,
        "the stream showed every line"
    );
    let platform = messages(
        &entries
            .iter()
            .filter(|e| e["source"] == "platform")
            .cloned()
            .collect::<Vec<_>>(),
    );
    for step in ["Detecting the source", "Planning the container and route"] {
        assert!(platform.iter().any(|m| m == step), "{platform:#?}");
    }
    let outcome = entries.last().unwrap();
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(outcome["source"], "platform");

    // Paging, and bad requests that change nothing.
    let page = member.get(&format!("{path}?limit=2")).await.ok();
    let paged = page["entries"].as_array().unwrap();
    assert_eq!(paged.len(), 2);
    assert_eq!(page["nextAfter"], paged[1]["sequence"]);
    let rest = member
        .get(&format!("{path}?after={}&limit=1", page["nextAfter"]))
        .await
        .ok();
    assert_eq!(rest["entries"][0]["sequence"], entries[2]["sequence"]);
    invalid(member.get(&format!("{path}?limit=0")).await, "limit");
    invalid(member.get(&format!("{path}?limit=1001")).await, "limit");
    invalid(member.get(&format!("{path}?tail=5")).await, "tail");
    member
        .get(&format!("/resources/{id}/deployments/dep-missing/timeline"))
        .await
        .error(404, "not_found");
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider.get(&path).await.error(404, "not_found");

    // A version without a home page fails its check: its output is in the stream and the
    // timeline, masked, before the outcome; the previous version keeps serving.
    let runtime_secret = format!("run-tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "RUNTIME_TOKEN", "value": runtime_secret}),
        )
        .await
        .ok();
    std::fs::remove_file(folder.path().join("app/www/index.html")).unwrap();
    folder.write("app/www/other.html", "<h1>no home page</h1>\n");
    let (_, _, failed_text) = stream(&member, &body).await;
    let failed = assert_envelope(&parse_events(&failed_text));
    let outcome = failed.last().unwrap();
    assert_eq!(outcome["status"], "failed", "{failed:#?}");
    assert_eq!(outcome["phase"], "verify");
    let said: Vec<&Value> = failed
        .iter()
        .filter(|e| e["source"] == "application" && e["phase"] == "verify")
        .collect();
    assert!(
        said.iter()
            .any(|e| e["message"] == "starting with token=****" && e["stream"] == "stdout"),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|e| e["message"] == "warming up" && e["stream"] == "stderr"),
        "{said:#?}"
    );
    let failed_id = outcome["deploymentId"].as_str().unwrap();
    // The stored status follows the Deployment through the shim's watch: it may trail the
    // stream's last event by a moment, never stay behind it.
    let stored = eventually(
        Duration::from_secs(5),
        "the stored timeline says failed",
        || async {
            let stored = member
                .get(&format!("/resources/{id}/deployments/{failed_id}/timeline"))
                .await
                .ok();
            (stored["status"] == "failed").then_some(stored)
        },
    )
    .await;
    let stored = stored["entries"].as_array().unwrap().clone();
    assert!(
        messages(&stored).contains(&"starting with token=****".to_string()),
        "{stored:#?}"
    );
    assert_eq!(stored.last().unwrap()["status"], "failed");
    wait_body(port, &format!("{slug}.localhost"), "timeline v2").await;

    // The Deployment object goes; its timeline stays.
    let deployments = Api::<Deployment>::namespaced(client.clone(), &org.namespace);
    deployments
        .delete(&deployment, &Default::default())
        .await
        .expect("delete the Deployment");
    eventually(Duration::from_secs(60), "the Deployment gone", || async {
        deployments
            .get_opt(&deployment)
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    // The shim learns of the deletion from its watch, a moment after the API server.
    let kept = eventually_explained(Duration::from_secs(30), "no status left", || async {
        let kept = member.get(&path).await.ok();
        match kept.get("status") {
            None => Ok(kept),
            Some(status) => Err(format!("status {status}")),
        }
    })
    .await;
    assert_eq!(kept["entries"].as_array().unwrap().len(), entries.len());

    assert_never_shown(&secret, &[&text, &failed_text]);
    assert_never_shown(&runtime_secret, &[&text, &failed_text]);
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
