//! Deployments against the real stack (issue 5): a Resource applied with kubectl runs behind the
//! edge proxy, a redeploy under load loses no request, a failing health check keeps the old
//! version serving, a container removed by hand comes back, deletion removes containers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use berth_crds::condition::{ConditionStatus, READY};
use berth_crds::deployment::{Deployment, DeploymentPhase, DeploymentState};
use berth_crds::resource::Resource;
use berth_crds::storage_volume::StorageVolume;
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix, stack_env};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::{Value, json};

use crate::deploy_support::{docker_names, fetch, wait_body};
use crate::servers::support::{create_credential, create_server, stack_key, wait_condition};

const WAIT: Duration = Duration::from_secs(90);

/// A Server `local` with its own edge proxy on a random port; returns that HTTP port.
pub(crate) async fn ready_server(ns: &TestNamespace) -> u16 {
    let (private_key, _) = stack_key();
    create_credential(ns, "key", &private_key).await;
    let http_port: u16 = 18100 + rand::rng().random_range(0..800);
    let servers = create_server(
        ns,
        "local",
        &stack_env("BERTH_SSH_HOST"),
        stack_env("BERTH_SSH_PORT").parse().unwrap(),
        "key",
        json!({ "proxy": { "kind": "caddy", "httpPort": http_port, "httpsPort": http_port + 1000 } }),
    )
    .await;
    wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
    http_port
}

/// The sample app's Resource manifest, auto-deploy on, probing `health_path`.
pub(crate) fn resource_yaml(
    ns: &TestNamespace,
    name: &str,
    image: &str,
    health_path: &str,
) -> String {
    resource_yaml_with_retries(ns, name, image, health_path, 2)
}

/// The same, with `retries` failed probes (1 s apart) before verify gives up.
fn resource_yaml_with_retries(
    ns: &TestNamespace,
    name: &str,
    image: &str,
    health_path: &str,
    retries: u32,
) -> String {
    let manifest = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": name, "kind": "application",
            "source": { "kind": "docker-image", "locator": image },
            "runtimeProfile": { "healthCheck": { "path": health_path, "intervalSeconds": 1, "retries": retries } },
            "networkProfile": { "internalPort": 8080 },
            "autoDeploy": { "enabled": true },
            "variables": [{ "key": "GREETING", "value": "hello" }],
        },
    });
    manifest.to_string()
}

pub(crate) fn apply(yaml: &str) {
    let output = kubectl(&["apply", "-f", "-"], Some(yaml));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

/// Waits until Deployment `name` has ended and returns it.
pub(crate) async fn wait_ended(ns: &TestNamespace, name: &str) -> Deployment {
    let api = ns.api::<Deployment>();
    eventually(WAIT, &format!("deployment {name} ended"), || {
        let api = api.clone();
        async move {
            let d = api.get_opt(name).await.ok()??;
            let ended = d.status.as_ref()?.status?.is_terminal();
            ended.then_some(d)
        }
    })
    .await
}

/// Deletes the resource and waits until its containers are gone, so no test leaves containers
/// behind when its namespace goes.
pub(crate) async fn teardown(ns: &TestNamespace, name: &str) {
    let output = kubectl(
        &["delete", "resource.berth.dev", name, "-n", &ns.name],
        None,
    );
    assert!(output.status.success(), "{output:?}");
    let filter = format!("label=berth.dev/namespace={}", ns.name);
    eventually(WAIT, "containers removed", || {
        let filter = filter.clone();
        async move { docker_names(&filter).is_empty().then_some(()) }
    })
    .await;
}

pub(crate) async fn set_image(ns: &TestNamespace, name: &str, image: &str, health_path: &str) {
    let patch = json!({ "spec": {
        "source": { "kind": "docker-image", "locator": image },
        "runtimeProfile": { "healthCheck": { "path": health_path, "intervalSeconds": 1, "retries": 2 } },
    }});
    ns.api::<Resource>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch resource");
}

#[tokio::test]
async fn kubectl_apply_serves_the_sample_app_through_the_edge_proxy_and_delete_cleans_up() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-apply").await;
    let port = ready_server(&ns).await;
    let started = Instant::now();
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));

    let deployment = wait_ended(&ns, "dep-web-1").await;
    let status = deployment.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    let step = status.current_step.unwrap();
    assert_eq!((step.current, step.total), (5, 5));
    assert!(status.started_at.is_some() && status.finished_at.is_some());
    wait_body(port, "web.localhost", "hello from berth sample-app v1").await;
    eprintln!(
        "apply → first 200 through the proxy: {:?}",
        started.elapsed()
    );

    let resources = ns.api::<Resource>();
    let resource = eventually(WAIT, "resource status", || {
        let resources = resources.clone();
        async move {
            let r = resources.get("web").await.ok()?;
            let s = r.status.clone()?;
            (s.last_deployment_status == Some(DeploymentState::Succeeded)).then_some(s)
        }
    })
    .await;
    assert_eq!(resource.deployment_count, 1);
    assert_eq!(resource.last_deployment_id.as_deref(), Some("dep-web-1"));
    let summary = resource.access_summary.unwrap();
    let planned = summary.planned_generated_access_route.unwrap();
    assert_eq!(planned.hostname, "web.localhost");
    assert_eq!(planned.url, format!("http://web.localhost:{port}/"));
    assert_eq!(planned.target_port, 8080);
    assert_eq!(
        summary.latest_generated_access_route.unwrap().deployment_id,
        "dep-web-1"
    );

    // The container carries Berth's labels and the resource's variables.
    let name = format!("berth-{}-web-dep-web-1", ns.name);
    let output = std::process::Command::new("docker")
        .args(["inspect", &name])
        .output()
        .unwrap();
    let inspected: Value = serde_json::from_slice(&output.stdout).unwrap();
    let labels = &inspected[0]["Config"]["Labels"];
    assert_eq!(labels["berth.dev/managed"], "true");
    assert_eq!(labels["berth.dev/resource"], "web");
    assert_eq!(labels["berth.dev/deployment"], "dep-web-1");
    assert_eq!(labels["berth.dev/project"], "prj-demo");
    assert_eq!(labels["berth.dev/environment"], "env-prod");
    let env = inspected[0]["Config"]["Env"].to_string();
    assert!(env.contains("GREETING=hello"), "{env}");

    // A second attempt, so the history to forget holds more than the new resource's first.
    set_image(&ns, "web", "berth/sample-app:2", "/healthz").await;
    wait_ended(&ns, "dep-web-2").await;

    // Deleting the resource removes its containers and its route.
    teardown(&ns, "web").await;
    let http = reqwest::Client::new();
    let (code, _) = fetch(&http, port, "web.localhost").await.unwrap();
    assert_eq!(code, 404);

    // Created again under the same name, it starts with no history of the one deleted.
    eventually(WAIT, "the resource gone", || {
        let resources = resources.clone();
        async move { resources.get_opt("web").await.ok()?.is_none().then_some(()) }
    })
    .await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    let again = eventually(WAIT, "the new resource's status", || {
        let resources = resources.clone();
        async move {
            let s = resources.get("web").await.ok()?.status?;
            (s.last_deployment_status == Some(DeploymentState::Succeeded)).then_some(s)
        }
    })
    .await;
    assert_eq!(again.deployment_count, 1, "{again:?}");
    teardown(&ns, "web").await;
}

#[tokio::test]
async fn redeploy_under_continuous_requests_fails_none() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-zero").await;
    let port = ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    wait_body(port, "web.localhost", "v1").await;

    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let load = {
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        tokio::spawn(async move {
            // A fresh connection per request, as from many independent visitors. A reused idle
            // keep-alive connection can be closed by Caddy's graceful config reload just as the
            // client writes on it; browsers retry that transparently, so it is not downtime.
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("http client");
            // Run-length record of what the client saw, to show when failures happened.
            let mut seen: Vec<(String, u32)> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let outcome = match fetch(&http, port, "web.localhost").await {
                    Some((200, body)) if body.contains("sample-app v") => {
                        ok.fetch_add(1, Ordering::Relaxed);
                        body.trim().to_string()
                    }
                    other => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        format!("{other:?}")
                    }
                };
                match seen.last_mut() {
                    Some((last, count)) if *last == outcome => *count += 1,
                    _ => seen.push((outcome, 1)),
                }
            }
            seen
        })
    };
    set_image(&ns, "web", "berth/sample-app:2", "/healthz").await;
    let second = wait_ended(&ns, "dep-web-2").await;
    assert_eq!(
        second.status.as_ref().unwrap().status,
        Some(DeploymentState::Succeeded),
        "{:?}",
        second.status
    );
    wait_body(port, "web.localhost", "v2").await;
    // Keep the load on while the old container drains and stops.
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::Relaxed);
    let seen = load.await.unwrap();
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("redeploy under load: {ok} ok, {failed} failed");
    assert!(ok > 50, "too few requests to mean anything: {ok}");
    if failed > 0 {
        let proxy = format!("berth-edge-proxy.{}.local", ns.name);
        let logs = std::process::Command::new("docker")
            .args(["logs", "--tail", "5", &proxy])
            .output()
            .unwrap();
        eprintln!("proxy log: {}", String::from_utf8_lossy(&logs.stderr));
        let new = format!("berth-{}-web-dep-web-2", ns.name);
        let ip = std::process::Command::new("docker")
            .args(["inspect", "-f", "{{json .NetworkSettings.Networks}}", &new])
            .output()
            .unwrap();
        eprintln!(
            "new container networks: {}",
            String::from_utf8_lossy(&ip.stdout)
        );
        let events = std::process::Command::new("docker")
            .args([
                "events",
                "--since",
                "40s",
                "--until",
                "0s",
                "--filter",
                "type=container",
                "--format",
                "{{.Time}} {{.Action}} {{.Actor.Attributes.name}}",
            ])
            .output()
            .unwrap();
        eprintln!("docker events: {}", String::from_utf8_lossy(&events.stdout));
        for (reason, note) in crate::servers::support::events(&ns) {
            eprintln!("k8s event: {reason}: {note}");
        }
        let out = kubectl(&["get", "bdep", "-n", &ns.name, "-o", "yaml"], None);
        eprintln!("deployments: {}", String::from_utf8_lossy(&out.stdout));
    }
    assert_eq!(failed, 0, "responses in order: {seen:?}");
    let old = format!("name=berth-{}-web-dep-web-1", ns.name);
    assert!(docker_names(&old).is_empty(), "old container still there");
    teardown(&ns, "web").await;
}

#[tokio::test]
async fn failing_health_check_keeps_the_old_version_serving() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-fail").await;
    let port = ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    wait_body(port, "web.localhost", "v1").await;

    set_image(&ns, "web", "berth/sample-app:2", "/nope").await;
    let failed = wait_ended(&ns, "dep-web-2").await;
    let status = failed.status.unwrap();
    assert_eq!(status.status, Some(DeploymentState::Failed), "{status:?}");
    // The app's own fault: nothing is retried until the spec changes.
    assert!(status.retry.is_none(), "{status:?}");
    let recorded = crate::servers::support::events(&ns);
    assert!(
        !recorded
            .iter()
            .any(|(reason, _)| reason == "RetryScheduled"),
        "{recorded:?}"
    );
    let error = status.last_error.expect("lastError");
    assert_eq!(error.phase, DeploymentPhase::Verify);
    assert_eq!(error.code, "health_check_unexpected_status");
    assert!(error.message.contains("/nope"), "{}", error.message);

    let http = reqwest::Client::new();
    let (code, body) = fetch(&http, port, "web.localhost").await.unwrap();
    assert_eq!(code, 200);
    assert!(body.contains("v1"), "{body}");
    let new = format!("name=berth-{}-web-dep-web-2", ns.name);
    assert!(
        docker_names(&new).is_empty(),
        "failed container left behind"
    );
    teardown(&ns, "web").await;
}

#[tokio::test]
async fn a_container_removed_by_hand_and_a_lost_route_are_restored_within_30_seconds() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-drift").await;
    let port = ready_server(&ns).await;
    let name = format!("drift{}", random_suffix());
    apply(&resource_yaml(&ns, &name, "berth/sample-app:1", "/healthz"));
    let host = format!("{name}.localhost");
    wait_body(port, &host, "v1").await;

    let container = format!("berth-{}-{name}-dep-{name}-1", ns.name);
    let removed = std::process::Command::new("docker")
        .args(["rm", "-fv", &container])
        .output()
        .unwrap();
    assert!(removed.status.success());
    wait_restored(&ns, port, &host, "container restored", "DriftRepaired").await;

    // A restarted edge proxy (a server reboot, a Docker restart) starts without routes; the
    // route comes back by itself.
    let proxy = format!("berth-edge-proxy.{}.local", ns.name);
    let restarted = std::process::Command::new("docker")
        .args(["restart", "-t", "1", &proxy])
        .output()
        .unwrap();
    assert!(restarted.status.success(), "{restarted:?}");
    wait_restored(&ns, port, &host, "route restored", "RouteRestored").await;
    teardown(&ns, &name).await;
}

/// Waits (30 s at most) until `host` serves v1 again, then checks an Event `reason` says why.
async fn wait_restored(ns: &TestNamespace, port: u16, host: &str, what: &str, reason: &str) {
    let started = Instant::now();
    let http = reqwest::Client::new();
    eventually(Duration::from_secs(30), what, || {
        let http = http.clone();
        async move {
            fetch(&http, port, host)
                .await
                .filter(|(code, body)| *code == 200 && body.contains("v1"))
        }
    })
    .await;
    eprintln!("{what} in {:?}", started.elapsed());
    let events = crate::servers::support::events(ns);
    assert!(events.iter().any(|(r, _)| r == reason), "{events:?}");
}

/// Waits until Deployment `name` reports `phase`.
async fn wait_phase(ns: &TestNamespace, name: &str, phase: DeploymentPhase) {
    let api = ns.api::<Deployment>();
    eventually(WAIT, &format!("deployment {name} in {phase:?}"), || {
        let api = api.clone();
        async move {
            let d = api.get_opt(name).await.ok()??;
            (d.status.as_ref()?.phase? == phase).then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn cancel_ends_a_verifying_attempt_and_a_newer_one_supersedes() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-cancel").await;
    let port = ready_server(&ns).await;
    // A health check that never passes keeps the attempt in verify for about 30 s.
    apply(&resource_yaml_with_retries(
        &ns,
        "web",
        "berth/sample-app:1",
        "/nope",
        30,
    ));
    wait_phase(&ns, "dep-web-1", DeploymentPhase::Verify).await;
    let patch = json!({ "spec": { "cancelRequested": true } });
    ns.api::<Deployment>()
        .patch("dep-web-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let started = Instant::now();
    let canceled = wait_ended(&ns, "dep-web-1").await.status.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        canceled.status,
        Some(DeploymentState::Canceled),
        "{canceled:?}"
    );
    assert_eq!(canceled.last_error.unwrap().code, "canceled");
    let first = format!("name=berth-{}-web-dep-web-1", ns.name);
    assert!(
        docker_names(&first).is_empty(),
        "canceled container left behind"
    );

    // A second bad attempt is superseded by a third, good one, which serves.
    set_image(&ns, "web", "berth/sample-app:1", "/nope").await;
    let second = eventually(WAIT, "second attempt", || {
        let api = ns.api::<Deployment>();
        async move {
            let list = api.list(&Default::default()).await.ok()?;
            list.items
                .into_iter()
                .find(|d| d.metadata.name.as_deref() != Some("dep-web-1"))
                .and_then(|d| d.metadata.name)
        }
    })
    .await;
    wait_phase(&ns, &second, DeploymentPhase::Verify).await;
    set_image(&ns, "web", "berth/sample-app:2", "/healthz").await;
    let superseded = wait_ended(&ns, &second).await.status.unwrap();
    assert_eq!(superseded.status, Some(DeploymentState::Canceled));
    assert_eq!(superseded.last_error.unwrap().code, "superseded");
    wait_body(port, "web.localhost", "v2").await;
    teardown(&ns, "web").await;
}

/// GET `/` on a port of this machine, no proxy: (status, body).
async fn fetch_direct(http: &reqwest::Client, port: u16) -> Option<(u16, String)> {
    let response = http
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?))
}

#[tokio::test]
async fn direct_port_publishes_on_the_server_and_none_exposes_nothing() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-expose").await;
    let proxy_port = ready_server(&ns).await;
    let host_port: u16 = 26100 + rand::rng().random_range(0..800);
    let manifest = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": { "name": "db", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "db", "kind": "service",
            "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
            "networkProfile": {
                "internalPort": 8080, "upstreamProtocol": "tcp",
                "exposureMode": "direct-port", "hostPort": host_port,
            },
            "autoDeploy": { "enabled": true },
        },
    });
    apply(&manifest.to_string());
    let deployment = wait_ended(&ns, "dep-db-1").await;
    let status = deployment.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    // The TCP health check passed; the server's port answers without any proxy.
    let http = reqwest::Client::new();
    eventually(WAIT, "the published port answers", || async {
        fetch_direct(&http, host_port)
            .await
            .filter(|(code, body)| *code == 200 && body.contains("sample-app v1"))
    })
    .await;
    let (code, _) = fetch(&http, proxy_port, "db.localhost").await.unwrap();
    assert_eq!(code, 404, "direct-port gets no proxy route");
    let resources = ns.api::<Resource>();
    let planned = eventually(WAIT, "direct access summary", || async {
        let status = resources.get("db").await.ok()?.status?;
        status.access_summary?.planned_generated_access_route
    })
    .await;
    assert_eq!(planned.url, format!("http://127.0.0.1:{host_port}/"));
    assert_eq!(planned.proxy_kind, berth_crds::server::ProxyKind::None);

    // `none`: the next attempt publishes nothing, and the old published port goes with the
    // retired container.
    let patch = json!({ "spec": { "networkProfile": {
        "internalPort": 8080, "upstreamProtocol": "tcp", "exposureMode": "none", "hostPort": null,
    }}});
    resources
        .patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let second = eventually(WAIT, "second attempt", || async {
        let id = resources.get("db").await.ok()?.status?.last_deployment_id?;
        (id != "dep-db-1").then_some(id)
    })
    .await;
    let deployment = wait_ended(&ns, &second).await;
    let status = deployment.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    eventually(WAIT, "the published port closed", || async {
        fetch_direct(&http, host_port).await.is_none().then_some(())
    })
    .await;
    let (code, _) = fetch(&http, proxy_port, "db.localhost").await.unwrap();
    assert_eq!(code, 404);
    teardown(&ns, "db").await;
}

/// GET `path` for `host` through the proxy: the body of a 200, if any.
async fn fetch_path(http: &reqwest::Client, port: u16, host: &str, path: &str) -> Option<String> {
    let response = http
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", host)
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    response.text().await.ok()
}

/// The sample app `files` deployed with the named volume `uploads` (applied first, as GitOps
/// would, and ready once checked) at /www/data: the serving container's id.
pub(crate) async fn app_with_volume(ns: &TestNamespace) -> String {
    let mut manifest: Value = serde_json::from_str(&resource_yaml(
        ns,
        "files",
        "berth/sample-app:1",
        "/healthz",
    ))
    .unwrap();
    manifest["spec"]["storageAttachments"] = json!([
        { "attachmentId": "a1", "storageVolumeId": "uploads", "destinationPath": "/www/data" },
    ]);
    let volume = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "StorageVolume",
        "metadata": { "name": "uploads", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "name": "Uploads",
            "kind": "named-volume",
        },
    });
    apply(&volume.to_string());
    let volumes = ns.api::<StorageVolume>();
    eventually(WAIT, "storage volume Ready", || {
        let volumes = volumes.clone();
        async move {
            let status = volumes.get("uploads").await.ok()?.status?;
            let ready = status.conditions.iter().find(|c| c.type_ == READY)?;
            (ready.status == ConditionStatus::True).then_some(())
        }
    })
    .await;
    apply(&manifest.to_string());
    let deployment = wait_ended(ns, "dep-files-1").await;
    let status = deployment.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{status:?}"
    );
    status.container_id.unwrap()
}

#[tokio::test]
async fn storage_attachments_keep_data_across_deployments_and_detaching() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-store").await;
    let port = ready_server(&ns).await;
    let container = app_with_volume(&ns).await;
    let volume = format!("berth-{}-uploads", ns.name);
    let written = std::process::Command::new("docker")
        .args([
            "exec",
            &container,
            "sh",
            "-c",
            "echo kept-data > /www/data/note.txt",
        ])
        .output()
        .unwrap();
    assert!(written.status.success(), "{written:?}");

    // A new version runs in a new container: the file is still there.
    set_image(&ns, "files", "berth/sample-app:2", "/healthz").await;
    wait_body(port, "files.localhost", "sample-app v2").await;
    let http = reqwest::Client::new();
    let note = fetch_path(&http, port, "files.localhost", "/data/note.txt").await;
    assert_eq!(note.as_deref().map(str::trim), Some("kept-data"));

    // Detaching (and deleting the resource) keeps the volume and its data.
    let patch = json!({ "spec": { "storageAttachments": [] } });
    ns.api::<Resource>()
        .patch("files", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually(WAIT, "a deployment without the volume", || {
        let http = http.clone();
        async move {
            let note = fetch_path(&http, port, "files.localhost", "/data/note.txt").await;
            note.is_none().then_some(())
        }
    })
    .await;
    teardown(&ns, "files").await;
    let kept = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            "-v",
            &format!("{volume}:/v"),
            "berth/busybox:1",
            "cat",
            "/v/note.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&kept.stdout).trim(), "kept-data");
    let _ = std::process::Command::new("docker")
        .args(["volume", "rm", &volume])
        .output();
}

/// An attempt asked for while its Resource is being deleted starts nothing: the Resource's
/// cleanup may have cleared the server already, and a container started after it would
/// outlive the Resource (CI once saw one left 2 minutes after a delete).
#[tokio::test]
async fn an_attempt_for_a_resource_being_deleted_starts_no_container() {
    const HOLD: &str = "tests.berth.dev/hold";
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-deleting").await;
    ready_server(&ns).await;
    let name = format!("going{}", random_suffix());
    apply(&resource_yaml(&ns, &name, "berth/sample-app:1", "/healthz"));
    wait_ended(&ns, &format!("dep-{name}-1")).await;
    let on_server = format!("label=berth.dev/resource={name}");
    assert!(
        !docker_names(&on_server).is_empty(),
        "the first attempt serves"
    );

    // Held by a finalizer of the test's own, the Resource stays deleting after Berth's cleanup.
    let resources = ns.api::<Resource>();
    let hold = json!([{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]);
    let held = kubectl(
        &[
            "-n",
            &ns.name,
            "patch",
            "resources.berth.dev",
            &name,
            "--type",
            "json",
            "-p",
            &hold.to_string(),
        ],
        None,
    );
    assert!(held.status.success(), "{held:?}");
    resources
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let deleting = eventually(WAIT, "Berth's cleanup done", || {
        let resources = resources.clone();
        let name = name.clone();
        async move {
            let resource = resources.get(&name).await.ok()?;
            (resource.finalizers() == [HOLD]).then_some(resource)
        }
    })
    .await;
    assert!(
        docker_names(&on_server).is_empty(),
        "the cleanup removed the container"
    );

    // An attempt made now (as one created just before the delete would run after it).
    let late = format!("dep-{name}-late");
    let attempt = Deployment::of_resource(&late, &deleting, "local".into(), None, "manual");
    ns.api::<Deployment>()
        .create(&PostParams::default(), &attempt)
        .await
        .unwrap();
    let ended = wait_ended(&ns, &late).await.status.unwrap();
    assert_eq!(ended.status, Some(DeploymentState::Failed), "{ended:?}");
    let error = ended.last_error.unwrap();
    assert_eq!(error.code.as_str(), "resource_not_found", "{error:?}");
    assert!(error.message.contains("being deleted"), "{error:?}");
    assert!(docker_names(&on_server).is_empty(), "nothing was started");

    let release = json!({"metadata": {"finalizers": null}});
    resources
        .patch(&name, &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
}
