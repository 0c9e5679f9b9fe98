//! Every failed deploy says why, on the real stack: an app that exits printing a line, a start
//! command that does not exist, an app listening on another port than `internalPort`, a health
//! path answering 500 with a body (holding a secret), one that never answers in time. Each
//! attempt fails with its own code and a one-line cause, the timeline keeps the evidence, the
//! serving version keeps serving with no failed request, nothing secret shows, and `berth
//! deploy` exits non-zero printing the same line. A worker (no port) deploys without a route,
//! checked by staying up or by a command; one that crashes says so. (A failing `RUN` step and
//! an image that cannot be pulled are `deployments_build` and `deployments_registry`.)

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, random_suffix};
use serde_json::{Value, json};

use crate::cli::Berth;
use crate::deploy_support::{Load, delete_resource, ready_server, remove_server, wait_body};
use crate::shim_deployment_attempts::{deployed, ended, start};
use crate::shim_projects_envs::{environment, project};

/// Fast checks: the failures come within seconds.
fn runtime(start_command: &str, path: &str) -> Value {
    json!({"runtimeProfile": {
        "startCommand": start_command,
        "healthCheck": {"path": path, "intervalSeconds": 1, "timeoutSeconds": 1, "retries": 2},
    }})
}

/// Sets the resource's runtime profile, starts an attempt and returns it once it ended.
async fn attempt_with(rest: &Rest, id: &str, profile: Value) -> (String, Value) {
    rest.post(&format!("/resources/{id}/runtime-profile"), profile)
        .await
        .ok();
    let attempt = start(rest, id).await;
    let record = ended(rest, &attempt).await;
    assert_eq!(record["status"], "failed", "{record}");
    (attempt, record)
}

/// The attempt's timeline as text, for the evidence it must hold.
async fn timeline_text(rest: &Rest, attempt: &str) -> String {
    let page = rest
        .get(&format!("/deployments/{attempt}/timeline?limit=500"))
        .await
        .ok();
    page["entries"].to_string()
}

fn error_of(record: &Value) -> (String, String) {
    let error = &record["lastError"];
    let text = |field: &str| error[field].as_str().unwrap_or_default().to_string();
    (text("code"), text("message"))
}

#[tokio::test]
async fn a_failed_deploy_names_its_cause_while_the_serving_version_keeps_serving() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member_user = org.user(OrganizationRole::Member).await;
    let member = member_user.rest.clone();
    let (server, port) = ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, host) = deployed(&member, &server, source, "/healthz").await;
    let secret = format!("s3cr3t-{}", random_suffix());
    member
        .post(
            &format!("/resources/{id}/variables"),
            json!({"key": "API_KEY", "value": secret}),
        )
        .await
        .ok();
    wait_body(port, &host, "sample-app v1").await;
    let load = Load::start(port, &host, 2);

    // Exits at start, printing why: the exit code and the line.
    let exits = runtime("echo 'fatal: cannot bind' >&2; exit 3", "/healthz");
    let (attempt, record) = attempt_with(&member, &id, exits).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "container_exited", "{message}");
    assert!(
        message.contains("exited with code 3") && message.contains("fatal: cannot bind"),
        "{message}"
    );
    let timeline = timeline_text(&member, &attempt).await;
    assert!(timeline.contains("exit code 3"), "{timeline}");
    assert!(timeline.contains("fatal: cannot bind"), "{timeline}");

    // `berth deploy` of the same: exits non-zero printing the same line.
    let berth = Berth::new();
    berth.login(&member_user).await;
    let slug = host.trim_end_matches(".localhost");
    let failed = berth.run(&["deploy", slug]).await;
    assert_ne!(failed.code, 0, "{failed:#?}");
    assert!(
        failed
            .stderr
            .contains(&format!("{message} (container_exited)")),
        "{failed:#?}"
    );

    // A start command that does not exist.
    let missing = runtime("berth-no-such-server --port 8080", "/healthz");
    let (_, record) = attempt_with(&member, &id, missing).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "start_command_not_found", "{message}");
    assert!(
        message.contains("berth-no-such-server --port 8080") && message.contains("exit 127"),
        "{message}"
    );

    // Answers 500 with a body quoting a secret: the status and the body, the secret masked.
    let script = r#"mkdir -p /tmp/w/cgi-bin && printf '#!/bin/sh\nprintf "HTTP/1.0 500 Internal Server Error\\r\\n\\r\\ndatabase is down, key %%s\\n" "$API_KEY"\n' > /tmp/w/cgi-bin/health && chmod +x /tmp/w/cgi-bin/health && exec httpd -f -p 8080 -h /tmp/w"#;
    let (attempt, record) = attempt_with(&member, &id, runtime(script, "/cgi-bin/health")).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "health_check_unexpected_status", "{message}");
    assert!(
        message.contains("GET /cgi-bin/health on port 8080 answered 500, expected 200")
            && message.contains("database is down, key ****"),
        "{message}"
    );
    assert!(!message.contains(&secret), "{message}");
    assert!(!timeline_text(&member, &attempt).await.contains(&secret));

    // Listens, but never answers within the timeout.
    let slow = r#"mkdir -p /tmp/w/cgi-bin && printf '#!/bin/sh\nsleep 60\n' > /tmp/w/cgi-bin/slow && chmod +x /tmp/w/cgi-bin/slow && exec httpd -f -p 8080 -h /tmp/w"#;
    let (_, record) = attempt_with(&member, &id, runtime(slow, "/cgi-bin/slow")).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "health_check_timed_out", "{message}");
    assert!(
        message.contains("got no answer within 1s") && message.contains("still running"),
        "{message}"
    );

    // Through all of it the first version served every request.
    wait_body(port, &host, "sample-app v1").await;
    let (answered, failures) = load.finish().await;
    assert!(answered > 0);
    assert!(
        failures.is_empty(),
        "{failures:#?}\nthe edge proxies said: {:#?}",
        crate::deploy_support::edge_proxy_errors(120)
    );
    let listed = member.get("/deployments").await.ok().to_string();
    assert!(!listed.contains(&secret));

    // An app listening on another port than declared (its first deploy): the ports it uses.
    let other = other_port_resource(&member, &server).await;
    let record = ended(&member, &other.1).await;
    assert_eq!(record["status"], "failed", "{record}");
    let (code, message) = error_of(&record);
    assert_eq!(code, "port_not_listening", "{message}");
    assert_eq!(
        message,
        "nothing listens on 9090; the app listens on 8080 — set networkProfile.internalPort to 8080"
    );
    delete_resource(&admin, &other.0, &other.2).await;
    delete_resource(&admin, &id, slug).await;
    remove_server(&admin, &server).await;
}

/// A resource declaring port 9090 for the sample app (which listens on 8080): (id, its first
/// attempt, slug).
async fn other_port_resource(rest: &Rest, server: &str) -> (String, String, String) {
    let (project, environment) = project_and_environment(rest).await;
    let slug = format!("port{}", random_suffix());
    let created = rest
        .post(
            "/resources",
            json!({
                "projectId": project, "environmentId": environment, "name": slug, "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 9090},
                // Bound to 8080 whatever PORT (the declared port) says.
                "runtimeProfile": {
                    "startCommand": "exec httpd -f -p 8080 -h /www",
                    "healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2},
                },
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let attempt = first_attempt(rest, &id).await;
    (id, attempt, slug)
}

async fn project_and_environment(rest: &Rest) -> (String, String) {
    let project = project(rest, &format!("Fail {}", random_suffix())).await;
    let environment = environment(rest, &project, "prod").await;
    (project, environment)
}

/// The id of the resource's first attempt, once the controller started it.
async fn first_attempt(rest: &Rest, id: &str) -> String {
    berth_tests::eventually(crate::deploy_support::WAIT, "a first attempt", || async {
        let listed = rest
            .get(&format!("/deployments?resourceId={id}"))
            .await
            .ok();
        listed["items"][0]["id"].as_str().map(str::to_string)
    })
    .await
}

#[tokio::test]
async fn a_worker_without_a_port_deploys_without_a_route_and_a_crash_says_so() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _) = ready_server(&admin).await;
    let (project, environment) = project_and_environment(&member).await;
    let slug = format!("worker{}", random_suffix());
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": project, "environmentId": environment, "name": slug, "slug": slug,
                "kind": "worker", "serverId": server,
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "runtimeProfile": {"startCommand": "while true; do sleep 1; done"},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let first = first_attempt(&member, &id).await;
    let record = ended(&member, &first).await;
    assert_eq!(record["status"], "succeeded", "{record}");
    let shown = member.get(&format!("/resources/{id}")).await.ok();
    let text = shown.to_string();
    assert!(
        !text.contains(&format!("{slug}.localhost")),
        "no route: {text}"
    );

    // Checked by a command: ready once the file exists.
    let checked = json!({"runtimeProfile": {
        "startCommand": "sleep 2; touch /tmp/ready; exec sleep 100000",
        "healthCheck": {"type": "command", "command": "test -f /tmp/ready", "intervalSeconds": 1, "retries": 5},
    }});
    member
        .post(&format!("/resources/{id}/runtime-profile"), checked)
        .await
        .ok();
    let second = start(&member, &id).await;
    assert_eq!(ended(&member, &second).await["status"], "succeeded");
    let health = member.get(&format!("/resources/{id}/health")).await.ok();
    assert_eq!(health["healthPolicy"]["type"], "command", "{health}");

    // A command check that keeps failing, and a worker that crashes: each says why, and the
    // running worker stays.
    let never = json!({"runtimeProfile": {
        "startCommand": "exec sleep 100000",
        "healthCheck": {"type": "command", "command": "echo 'queue not reachable'; exit 1", "intervalSeconds": 1, "retries": 1},
    }});
    let (_, record) = attempt_with(&member, &id, never).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "health_check_failed", "{message}");
    assert!(
        message.contains("exited with code 1: \"queue not reachable\""),
        "{message}"
    );
    let crash =
        json!({"runtimeProfile": {"startCommand": "echo 'redis: connection refused' >&2; exit 2"}});
    let (_, record) = attempt_with(&member, &id, crash).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "container_exited", "{message}");
    assert!(
        message.contains("exited with code 2") && message.contains("redis: connection refused"),
        "{message}"
    );
    let serving =
        crate::deploy_support::docker_names(&format!("label=berth.dev/deployment={second}"));
    assert_eq!(
        serving.len(),
        1,
        "the verified worker still runs: {serving:?}"
    );

    // An http check on a worker has no port to ask: refused when planned, by name.
    let http = json!({"runtimeProfile": {"healthCheck": {"path": "/healthz"}}});
    let (_, record) = attempt_with(&member, &id, http).await;
    let (code, message) = error_of(&record);
    assert_eq!(code, "health_check_invalid", "{message}");
    assert!(message.contains("needs a port"), "{message}");
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
