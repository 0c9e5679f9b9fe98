//! Berth heals itself (issues 10 and 11): the quickstart applied at once converges while its
//! server comes up, a fault of the infrastructure is retried until it passes, a redeploy drops
//! no kept-alive client connection (a retired container takes no new one), and old attempts
//! leave etcd while their timelines stay.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::TestOrg;
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix, repo_root};
use kube::Api;
use kube::api::ListParams;
use rand::Rng;
use serde_json::json;

use crate::deploy_support::{
    delete_resource, docker_lines, remove_server, wait_body, wait_listed_with,
};
use crate::deployments::{apply, ready_server, resource_yaml, set_image, teardown, wait_ended};
use crate::servers::support::{events, stack_key};
use crate::shim_deployments_stream::{assert_envelope, parse_events, stream};
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(180);

/// The quickstart's manifests for another organization and proxy port, as one YAML stream.
fn quickstart_for(organization: &str, http_port: u16) -> String {
    let dir = repo_root().join("examples/quickstart");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
        .replace("name: acme", &format!("name: {organization}"))
        .replace("slug: acme", &format!("slug: {organization}"))
        .replace("org-acme", &format!("org-{organization}"))
        .replace("httpPort: 8080", &format!("httpPort: {http_port}"))
        .replace(
            "httpsPort: 8443",
            &format!("httpsPort: {}", http_port + 1000),
        )
}

/// Splits a YAML stream into the Organization and everything else.
fn organization_first(yaml: &str) -> (String, String) {
    let (organization, rest): (Vec<&str>, Vec<&str>) = yaml
        .split("\n---\n")
        .partition(|doc| doc.contains("kind: Organization"));
    (organization.join("\n---\n"), rest.join("\n---\n"))
}

#[tokio::test]
async fn the_quickstart_applied_at_once_converges_while_its_server_comes_up() {
    let organization = format!("qs{}", random_suffix());
    let port: u16 = 21000 + rand::rng().random_range(0..800);
    let (org_yaml, rest) = organization_first(&quickstart_for(&organization, port));
    apply(&org_yaml);
    let namespace = format!("org-{organization}");
    eventually(WAIT, "the organization's namespace", || async {
        let output = kubectl(&["get", "namespace", &namespace], None);
        output.status.success().then_some(())
    })
    .await;
    // Everything else in one apply, as a GitOps tool syncs a folder: the sample app's first
    // attempt starts long before the server's edge proxy runs, and must wait for it.
    let (private_key, _) = stack_key();
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "local-server-key", "namespace": namespace },
        "stringData": { "privateKey": private_key },
    });
    apply(&format!("{rest}\n---\n{secret}"));

    let client = client().await;
    let ns = TestNamespace::adopt(&client, &namespace);
    let deployment = wait_ended(&ns, "dep-sample-app-1").await;
    let status = deployment.status.clone().unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    wait_body(port, "sample-app.localhost", "sample-app v1").await;
    let output = kubectl(
        &["wait", "--for=condition=Ready", "--timeout=60s", "-f", "-"],
        Some(&rest),
    );
    assert!(
        output.status.success(),
        "not every object Ready: {output:?}"
    );

    teardown(&ns, "sample-app").await;
    let output = kubectl(
        &[
            "delete",
            "organization.berth.dev",
            &organization,
            "--wait=false",
        ],
        None,
    );
    assert!(output.status.success(), "{output:?}");
}

#[tokio::test]
async fn a_route_switch_that_fails_for_a_passing_reason_is_retried_until_it_succeeds() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "heal-retry").await;
    let port = ready_server(&ns).await;
    // A frozen edge proxy answers no admin request: the route switch times out.
    let proxy = format!("berth-edge-proxy.{}.local", ns.name);
    docker(&["pause", &proxy]);
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    let deployments = ns.api::<Deployment>();
    let retry = eventually(WAIT, "a retry scheduled", || {
        let deployments = deployments.clone();
        async move {
            let status = deployments.get_opt("dep-web-1").await.ok()??.status?;
            status.retry
        }
    })
    .await;
    assert_eq!(retry.count, 1);
    assert_eq!(retry.last_error.code, "route_switch_failed", "{retry:?}");
    let recorded = events(&ns);
    assert!(
        recorded
            .iter()
            .any(|(reason, _)| reason == "RetryScheduled"),
        "{recorded:?}"
    );
    docker(&["unpause", &proxy]);

    let deployment = wait_ended(&ns, "dep-web-1").await;
    let status = deployment.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    assert!(status.retry.is_none(), "{status:?}");
    wait_body(port, "web.localhost", "sample-app v1").await;
    teardown(&ns, "web").await;
}

fn docker(args: &[&str]) {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    assert!(output.status.success(), "docker {args:?}: {output:?}");
}

/// Outcomes a load client saw: answers from the app, and failures (no answer at all, or the
/// proxy's own 502/503/504).
#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    failed: AtomicU64,
}

/// A client on one kept-alive connection, alternating GET and POST until `stop`.
async fn kept_alive_client(port: u16, stop: Arc<AtomicBool>, tally: Arc<Tally>) -> Vec<String> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .http1_only()
        .build()
        .expect("http client");
    let url = format!("http://127.0.0.1:{port}/");
    let mut failures = Vec::new();
    let mut post = false;
    while !stop.load(Ordering::Relaxed) {
        let request = if post {
            http.post(&url).body("greeting=hello")
        } else {
            http.get(&url)
        };
        post = !post;
        match request.header("Host", "web.localhost").send().await {
            Ok(response) if ![502, 503, 504].contains(&response.status().as_u16()) => {
                let _ = response.bytes().await;
                tally.answered.fetch_add(1, Ordering::Relaxed);
            }
            outcome => {
                tally.failed.fetch_add(1, Ordering::Relaxed);
                failures.push(format!("{outcome:?}"));
            }
        }
    }
    failures
}

#[tokio::test]
async fn a_redeploy_drops_no_request_of_kept_alive_clients() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "heal-keepalive").await;
    let port = ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    wait_body(port, "web.localhost", "v1").await;

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = (0..8)
        .map(|_| tokio::spawn(kept_alive_client(port, stop.clone(), tally.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    set_image(&ns, "web", "berth/sample-app:2", "/healthz").await;
    let second = wait_ended(&ns, "dep-web-2").await;
    assert_eq!(
        second.status.as_ref().unwrap().status,
        Some(DeploymentState::Succeeded)
    );
    wait_body(port, "web.localhost", "v2").await;
    // Keep the load on while the old container stops.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    for client in clients {
        failures.extend(client.await.unwrap());
    }
    let answered = tally.answered.load(Ordering::Relaxed);
    eprintln!("kept-alive clients through a redeploy: {answered} answered, {failures:?} failed");
    assert!(
        answered > 100,
        "too few requests to mean anything: {answered}"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    teardown(&ns, "web").await;
}

/// What one look at a retiring container saw: whether its server process still ran before and
/// after, and what a new connection to it got.
struct Look {
    serving_throughout: bool,
    connection: Result<(), std::io::ErrorKind>,
}

impl Look {
    fn refused(&self) -> bool {
        self.connection == Err(std::io::ErrorKind::ConnectionRefused)
    }
}

/// An app that keeps listening for a while after SIGTERM (a drain delay: the sample app's
/// `DRAIN_SECONDS`) gets no new connection once Berth retires it: they are refused while its
/// server still runs, so the edge proxy dials the new container instead of one that is going.
#[tokio::test]
async fn a_retired_container_refuses_new_connections_while_it_still_listens() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "heal-retire").await;
    let port = ready_server(&ns).await;
    let mut manifest: serde_json::Value =
        serde_json::from_str(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz")).unwrap();
    manifest["spec"]["variables"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "key": "DRAIN_SECONDS", "value": "3" }));
    apply(&manifest.to_string());
    wait_body(port, "web.localhost", "v1").await;
    let of_namespace = format!("label=berth.dev/namespace={}", ns.name);
    let old = docker_lines(&[
        "ps",
        "--filter",
        &of_namespace,
        "--filter",
        "label=berth.dev/deployment=dep-web-1",
        "--format",
        "{{.Names}}",
    ]);
    let [old] = old.as_slice() else {
        panic!("one container of dep-web-1: {old:?}");
    };
    let address = container_address(old);
    assert!(
        connect(&address).await.is_ok(),
        "the serving container takes connections at {address}"
    );

    set_image(&ns, "web", "berth/sample-app:2", "/healthz").await;
    let mut looks = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline && is_running(old) {
        let before = runs_httpd(old);
        let connection = connect(&address).await;
        looks.push(Look {
            serving_throughout: before && runs_httpd(old),
            connection,
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second = wait_ended(&ns, "dep-web-2").await;
    assert_eq!(
        second.status.as_ref().unwrap().status,
        Some(DeploymentState::Succeeded)
    );
    wait_body(port, "web.localhost", "v2").await;
    let refused_while_serving = looks
        .iter()
        .filter(|l| l.serving_throughout && l.refused())
        .count();
    let accepted_after_refusal = looks
        .iter()
        .skip_while(|l| !l.refused())
        .filter(|l| l.connection.is_ok())
        .count();
    eprintln!(
        "retiring container: {} looks, {refused_while_serving} refused while its server ran",
        looks.len()
    );
    assert!(
        refused_while_serving > 0,
        "a new connection reached the retiring container while it still listened"
    );
    assert_eq!(
        accepted_after_refusal, 0,
        "once refused, the retiring container took a connection again"
    );
    teardown(&ns, "web").await;
}

/// The container's address on its network, with the sample app's port.
fn container_address(name: &str) -> String {
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}";
    let ips = docker_lines(&["inspect", "-f", format, name]).join(" ");
    let ip = ips
        .split_whitespace()
        .next()
        .expect("the container has an address");
    format!("{ip}:8080")
}

fn is_running(name: &str) -> bool {
    docker_lines(&["inspect", "-f", "{{.State.Running}}", name]) == ["true"]
}

/// Whether the container's httpd (its server) still runs.
fn runs_httpd(name: &str) -> bool {
    docker_lines(&["top", name])
        .iter()
        .any(|l| l.contains("httpd"))
}

/// A new TCP connection to `address`, or how it failed.
async fn connect(address: &str) -> Result<(), std::io::ErrorKind> {
    let attempt = tokio::net::TcpStream::connect(address);
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.kind()),
        Err(_) => Err(std::io::ErrorKind::TimedOut),
    }
}

#[tokio::test]
async fn twelve_redeploys_keep_the_history_limit_and_every_timeline() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, port) = crate::deploy_support::ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("hist{}", random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "History", "slug": slug,
                "kind": "application", "serverId": server,
                "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
                "networkProfile": { "internalPort": 8080 },
                "runtimeProfile": { "healthCheck": { "path": "/healthz", "intervalSeconds": 1 } },
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    wait_listed_with(&admin, &id, "succeeded").await;
    let body = json!({
        "projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id,
    });
    let mut attempts = vec![format!("dep-{id}-1")];
    for _ in 0..12 {
        let (status, _, text) = stream(&admin, &body).await;
        assert_eq!(status, 200, "{text}");
        let events = assert_envelope(&parse_events(&text));
        let last = events.last().expect("a final event");
        assert_eq!(last["status"], "succeeded", "{text}");
        attempts.push(last["deploymentId"].as_str().unwrap().to_string());
    }
    wait_body(port, &format!("{slug}.localhost"), "sample-app v1").await;

    let deployments = Api::<Deployment>::namespaced(client.clone(), &org.namespace);
    let kept = eventually(WAIT, "attempts beyond the history limit removed", || {
        let deployments = deployments.clone();
        let id = id.clone();
        async move {
            let names: Vec<String> = deployments
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .filter(|d| d.spec.resource_id == id)
                .filter_map(|d| d.metadata.name)
                .collect();
            (names.len() <= 10).then_some(names)
        }
    })
    .await;
    let serving = attempts.last().unwrap();
    assert!(
        kept.contains(serving),
        "the serving attempt stays: {kept:?}"
    );
    assert!(
        !kept.contains(&attempts[0]),
        "the oldest attempt went: {kept:?}"
    );

    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    eventually(WAIT, "13 attempts counted", || {
        let resources = resources.clone();
        let id = id.clone();
        async move {
            let count = resources.get(&id).await.ok()?.status?.deployment_count;
            (count == 13).then_some(())
        }
    })
    .await;
    let listed = admin.get("/resources").await.ok();
    let item = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(item["deploymentCount"], 13, "{item}");
    let path = format!("/resources/{id}/deployments/{}/timeline", attempts[0]);
    let timeline = admin.get(&path).await.ok();
    let entries = timeline["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|e| e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("succeeded")),
        "{timeline}"
    );

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

#[tokio::test]
async fn a_key_still_held_for_a_credential_that_is_gone_is_released() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{DeleteParams, PostParams};

    let client = client().await;
    let ns = TestNamespace::new(&client, "orphankey").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    // What a hold that landed after its credential's cleanup leaves: the key Secret with the
    // credential's finalizer and no SshCredential naming it.
    let key: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": "ssh-gone-key",
            // berth-controller's `ssh_credential::KEY_FINALIZER`.
            "finalizers": ["berth.dev/ssh-credential-key"],
        },
        "stringData": {"privateKey": "not a key"},
    }))
    .unwrap();
    secrets.create(&PostParams::default(), &key).await.unwrap();
    secrets
        .delete("ssh-gone-key", &DeleteParams::default())
        .await
        .unwrap();
    // Without the release it would stay, being deleted, forever (and its namespace with it).
    eventually(WAIT, "the orphaned key released and deleted", || async {
        secrets
            .get_opt("ssh-gone-key")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}
