//! Health history tells the truth during a rollout (issue 45): zero-downtime redeploys and a
//! rollback and a configuration change rolling out by itself, all under kept-alive load, record
//! no `unhealthy` observation (the old container leaving is planned), nor does a restart a
//! person asks for, while an unplanned exit of the serving container still does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use serde_json::{Value, json};

use crate::deploy_support::{delete_resource, ready_server, remove_server, wait_body};
use crate::shim_deployment_attempts::ended;
use crate::shim_deployments_stream::{assert_envelope, parse_events, stream};
use crate::shim_health::docker;
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(180);

/// A webhook channel for the health events of `namespace` (its receiver need not answer: the
/// deliveries made are what the test reads).
async fn watch_health_notices(
    client: &kube::Client,
    namespace: &str,
) -> kube::Api<berth_crds::notification::NotificationDelivery> {
    use kube::api::PostParams;
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": { "name": "health-hook" }, "stringData": { "url": "http://127.0.0.1:9/" },
    }))
    .unwrap();
    let channel: berth_crds::notification::NotificationChannel = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "NotificationChannel",
        "metadata": { "name": "health" },
        "spec": { "name": "Health", "kind": "webhook", "secretRef": "health-hook",
                  "events": ["resource-unhealthy", "resource-recovered"] },
    }))
    .unwrap();
    kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .expect("channel Secret");
    kube::Api::<berth_crds::notification::NotificationChannel>::namespaced(
        client.clone(),
        namespace,
    )
    .create(&PostParams::default(), &channel)
    .await
    .expect("channel");
    kube::Api::namespaced(client.clone(), namespace)
}

/// The deliveries made for `event`.
async fn notified(
    deliveries: &kube::Api<berth_crds::notification::NotificationDelivery>,
    event: &str,
) -> Vec<String> {
    deliveries
        .list(&Default::default())
        .await
        .expect("list deliveries")
        .items
        .into_iter()
        .filter(|d| d.spec.event.as_str() == event)
        .map(|d| d.spec.summary)
        .collect()
}
const REDEPLOYS: usize = 10;

/// Requests that got an answer from the app, and those that did not (no answer, or the proxy's
/// own 502/503/504).
#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    failures: std::sync::Mutex<Vec<String>>,
}

/// One kept-alive connection sending GETs to `host` until `stop`.
async fn kept_alive(port: u16, host: String, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .http1_only()
        .build()
        .expect("http client");
    let url = format!("http://127.0.0.1:{port}/");
    while !stop.load(Ordering::Relaxed) {
        match http.get(&url).header("Host", &host).send().await {
            Ok(response) if ![502, 503, 504].contains(&response.status().as_u16()) => {
                let _ = response.bytes().await;
                tally.answered.fetch_add(1, Ordering::Relaxed);
            }
            outcome => tally.failures.lock().unwrap().push(format!("{outcome:?}")),
        }
    }
}

async fn history(rest: &Rest, id: &str) -> Vec<Value> {
    let body = rest
        .get(&format!("/resources/{id}/health-history?limit=720"))
        .await
        .ok();
    body["observations"].as_array().cloned().unwrap_or_default()
}

fn overall(observations: &[Value]) -> Vec<String> {
    observations
        .iter()
        .filter_map(|o| o["overall"].as_str().map(str::to_string))
        .collect()
}

/// Rolls the resource back from its newest attempt to the one before; returns the new attempt.
async fn roll_back(rest: &Rest, id: &str) -> String {
    let listed = rest
        .get(&format!("/deployments?resourceId={id}&limit=2"))
        .await
        .ok();
    let (latest, earlier) = (&listed["items"][0]["id"], &listed["items"][1]["id"]);
    let started = rest
        .post(
            &format!("/deployments/{}/rollback", latest.as_str().unwrap()),
            json!({"rollbackCandidateDeploymentId": earlier, "confirmation": {"deploymentId": latest}}),
        )
        .await
        .expect(201);
    started["id"]
        .as_str()
        .expect("the rollback's attempt")
        .to_string()
}

/// The resource's newest attempt once it is not `after`: one its configuration started.
async fn next_attempt(rest: &Rest, id: &str, after: &str) -> String {
    eventually(WAIT, &format!("an attempt after {after}"), || async {
        let listed = rest
            .get(&format!("/deployments?resourceId={id}&limit=1"))
            .await
            .ok();
        let newest = listed["items"][0]["id"].as_str()?.to_string();
        (newest != after).then_some(newest)
    })
    .await
}

/// Restarts the runtime over REST and waits until its health shows the restart succeeded.
async fn restart_on_request(rest: &Rest, id: &str) {
    let accepted = rest
        .post(
            &format!("/resources/{id}/runtime-control"),
            json!({"operation": "restart"}),
        )
        .await
        .expect(202);
    let attempt = accepted["runtimeControlAttemptId"].clone();
    eventually(WAIT, "the restart succeeded", || async {
        let health = rest.get(&format!("/resources/{id}/health")).await.ok();
        let control = &health["latestRuntimeControl"];
        (control["runtimeControlAttemptId"] == attempt && control["status"] == "succeeded")
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn redeploys_record_no_unhealthy_observation_and_a_killed_container_does() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("roll{}", random_suffix());
    let host = format!("{slug}.localhost");
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Rollout", "slug": slug,
                "kind": "application", "serverId": server,
                "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
                "networkProfile": { "internalPort": 8080 },
                "runtimeProfile": { "healthCheck": { "path": "/healthz", "intervalSeconds": 1 } },
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let deliveries = watch_health_notices(&client, &org.namespace).await;
    wait_body(port, &host, "sample-app v1").await;
    eventually(WAIT, "a healthy observation in the history", || async {
        overall(&history(&admin, &id).await)
            .contains(&"healthy".to_string())
            .then_some(())
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = (0..4)
        .map(|_| tokio::spawn(kept_alive(port, host.clone(), stop.clone(), tally.clone())))
        .collect();
    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id,
    });
    for _ in 0..REDEPLOYS {
        let (status, _, text) = stream(&admin, &body).await;
        assert_eq!(status, 200, "{text}");
        let events = assert_envelope(&parse_events(&text));
        assert_eq!(events.last().unwrap()["status"], "succeeded", "{text}");
    }
    // A rollback is a planned replacement too.
    let rolled_back = roll_back(&admin, &id).await;
    assert_eq!(ended(&admin, &rolled_back).await["status"], "succeeded");
    // So is a configuration change rolling out by itself: a variable set while auto-deploy is
    // off waits; turning auto-deploy on deploys it, and the next change deploys by itself.
    let set_variable = |value: &'static str| {
        let admin = &admin;
        let path = format!("/resources/{id}/variables");
        async move {
            let body = json!({"key": "ROLLOUT_NOTE", "value": value});
            admin.post(&path, body).await.ok();
        }
    };
    set_variable("waiting").await;
    let enabled = admin
        .post(
            &format!("/resources/{id}/auto-deploy"),
            json!({"mode": "enable"}),
        )
        .await
        .ok();
    assert_eq!(enabled["status"], "enabled");
    let enabling = next_attempt(&admin, &id, &rolled_back).await;
    assert_eq!(ended(&admin, &enabling).await["status"], "succeeded");
    set_variable("changed under load").await;
    let changed = next_attempt(&admin, &id, &enabling).await;
    let change = ended(&admin, &changed).await;
    assert_eq!(change["status"], "succeeded", "{change}");
    // A resource's own variable is in its spec: the change deploys as auto-deploy.
    assert_eq!(change["trigger"]["kind"], "auto-deploy", "{change}");
    // The last old container drains and exits while the load goes on.
    tokio::time::sleep(Duration::from_secs(7)).await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let answered = tally.answered.load(Ordering::Relaxed);
    let failures = tally.failures.lock().unwrap().clone();
    eprintln!("{REDEPLOYS} redeploys under load: {answered} answered, {failures:?} failed");
    assert!(
        answered > 100,
        "too few requests to mean anything: {answered}"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    // Oldest first: everything from the first healthy observation on.
    let observed = history(&admin, &id).await;
    let during: Vec<String> = overall(&observed)
        .into_iter()
        .skip_while(|o| o != "healthy")
        .collect();
    let failing: Vec<&Value> = observed
        .iter()
        .filter(|o| o["overall"] == "unhealthy" || o["overall"] == "unknown")
        .collect();
    assert!(
        !during.iter().any(|o| o == "unhealthy" || o == "unknown"),
        "a planned replacement is no failure: {during:?}; the failing ones: {failing:#?}"
    );
    assert!(
        during.iter().filter(|o| *o == "healthy").count() > REDEPLOYS,
        "{during:?}"
    );
    // A restart a person asks for stops the container on purpose: never a failure.
    let before_restart = history(&admin, &id).await.len();
    restart_on_request(&admin, &id).await;
    wait_body(port, &host, "sample-app v1").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after_restart = history(&admin, &id).await;
    let restarted = overall(after_restart.get(before_restart..).unwrap_or_default());
    assert!(
        !restarted.iter().any(|o| o == "unhealthy" || o == "unknown"),
        "a restart asked for is no failure: {restarted:?}"
    );
    // Nobody is told the app went down: it did not.
    assert!(
        notified(&deliveries, "resource-unhealthy").await.is_empty(),
        "a zero-downtime redeploy notified resource-unhealthy"
    );

    // An unplanned exit of the serving container is one.
    let container = docker(&[
        "ps",
        "-q",
        "--filter",
        &format!("label=berth.dev/namespace={}", org.namespace),
        "--filter",
        &format!("label=berth.dev/resource={id}"),
    ]);
    assert_eq!(
        container.lines().count(),
        1,
        "one serving container: {container}"
    );
    docker(&["kill", &container]);
    eventually(WAIT, "the kill in the history", || async {
        overall(&history(&admin, &id).await)
            .contains(&"unhealthy".to_string())
            .then_some(())
    })
    .await;
    // This one is told, and so is the recovery once drift repair brought it back.
    for event in ["resource-unhealthy", "resource-recovered"] {
        eventually(WAIT, &format!("a {event} notification"), || async {
            let told = notified(&deliveries, event).await;
            (!told.is_empty()).then_some(())
        })
        .await;
    }

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
