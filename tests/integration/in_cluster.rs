//! Berth installed into the cluster as pods (issue 29), on the stack's real node
//! (`hack/stack.sh node up`: kubelet, kube-scheduler, kube-proxy): `kubectl apply -k` of the
//! overlay `hack/in-cluster/` with the locally built images brings both Deployments up; the
//! controller's standby replica is Ready and one replica holds the Lease; the shim answers
//! through its Service and through `kubectl port-forward`; an app deploys through the edge
//! proxy; the leader's pod killed mid-deploy hands over and the deploy completes with one
//! container; a rolling update completes and the leader's eviction is allowed under the
//! PodDisruptionBudget (its standby counts as available); a shim pod
//! deleted under kept-alive load loses no write; the pods run locked down and each
//! ServiceAccount can do only what it needs. The first administrator is created in Chromium
//! through the Service (`in_cluster_first_admin.rs`); the controller writes the PodDisruptionBudgets in the policy version 1.20 serves;
//! the evaluation overlay (one pod, SQLite on a PersistentVolumeClaim) comes up in place of
//! the two-replica install and its store outlives its pod. The
//! pods reach the observation store with `sslmode=verify-full` against the authority in its
//! Secret, and the server sees every one of their connections encrypted.
//!
//! hack/test.sh runs this module alone, after the rest of the suite, with the node up, the
//! images built (`hack/images.sh berth debug`), the process controller and shim stopped and
//! `BERTH_URL` pointing at the shim's Service. It prints the figures of the note.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::{
    TestNamespace, client, eventually, eventually_explained, kubectl, random_suffix, repo_root,
    stack_env,
};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, docker_names, wait_body};
use crate::deployments::{apply, ready_server, resource_yaml, set_image, teardown, wait_ended};
use crate::shim_projects_envs::{environment, project};

pub(crate) const NS: &str = "berth-system";
const CONTROLLER: &str = "berth-controller";
const SHIM: &str = "berth-shim";
const ROLLOUT: Duration = Duration::from_secs(240);

pub(crate) fn kubectl_ok(args: &[&str]) -> String {
    let output = kubectl(args, None);
    assert!(output.status.success(), "kubectl {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json_of(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl_ok(&args)).expect("kubectl -o json")
}

/// The pods of Deployment `app`, by name, with whether each is Ready.
fn pods(app: &str) -> Vec<(String, bool)> {
    let selector = format!("app.kubernetes.io/name={app}");
    let list = json_of(&["-n", NS, "get", "pods", "-l", &selector]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
        .map(|pod| {
            let ready = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (pod["metadata"]["name"].as_str().unwrap().to_string(), ready)
        })
        .collect()
}

fn lease_holder() -> String {
    let lease = json_of(&["-n", NS, "get", "lease", CONTROLLER]);
    lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The pod holding the Lease, once one of the current pods does: right after a rollout the
/// old leader has released it and nobody holds it for a moment.
async fn current_leader() -> String {
    eventually(Duration::from_secs(60), "a current pod leading", || async {
        let holder = lease_holder();
        pods(CONTROLLER)
            .iter()
            .any(|(name, _)| *name == holder)
            .then_some(holder)
    })
    .await
}

fn rollout(app: &str) {
    let timeout = format!("--timeout={}s", ROLLOUT.as_secs());
    kubectl_ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        &format!("deploy/{app}"),
        &timeout,
    ]);
}

/// Seconds from each pod's creation to its Ready condition.
fn seconds_to_ready(app: &str) -> Vec<i64> {
    let selector = format!("app.kubernetes.io/name={app}");
    let list = json_of(&["-n", NS, "get", "pods", "-l", &selector]);
    let time = |v: &Value| {
        let text = v.as_str().unwrap_or_default();
        text.parse::<k8s_openapi::jiff::Timestamp>()
            .map(|t| t.as_second())
            .ok()
    };
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|pod| {
            let created = time(&pod["metadata"]["creationTimestamp"])?;
            let ready = pod["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Ready" && c["status"] == "True")?;
            Some(time(&ready["lastTransitionTime"])? - created)
        })
        .collect()
}

/// `kubectl apply -k hack/in-cluster/` and both Deployments rolled out.
fn install() {
    let overlay = repo_root().join("hack/in-cluster");
    kubectl_ok(&["apply", "--server-side", "-k", overlay.to_str().unwrap()]);
    rollout(CONTROLLER);
    rollout(SHIM);
}

/// The Docker container of a pod's main container, as the kubelet started it.
fn container_of(pod: &str) -> Value {
    let filter = format!("label=io.kubernetes.pod.name={pod}");
    let output = Command::new("docker")
        .args(["ps", "-q", "--filter", &filter, "--filter"])
        .arg("label=io.kubernetes.docker.type=container")
        .output()
        .expect("docker ps");
    let id = String::from_utf8_lossy(&output.stdout)
        .trim()
        .lines()
        .next()
        .expect("a running container of the pod")
        .to_string();
    let output = Command::new("docker")
        .args(["inspect", &id])
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&output.stdout).unwrap()[0].clone()
}

fn assert_locked_down(app: &str) {
    for (pod, _) in pods(app) {
        let container = container_of(&pod);
        let user = container["Config"]["User"].as_str().unwrap_or_default();
        assert!(user.starts_with("65532"), "{pod} runs as {user:?}");
        assert_eq!(
            container["HostConfig"]["ReadonlyRootfs"], true,
            "{pod}: root file system writable"
        );
        let dropped = &container["HostConfig"]["CapDrop"];
        assert!(
            dropped.to_string().contains("ALL"),
            "{pod}: drops {dropped}"
        );
    }
}

fn can_i(account: &str, args: &[&str]) -> bool {
    let who = format!("--as=system:serviceaccount:{NS}:{account}");
    let mut full = vec!["auth", "can-i", who.as_str()];
    full.extend(args);
    let output = kubectl(&full, None);
    String::from_utf8_lossy(&output.stdout).trim() == "yes"
}

fn assert_least_privilege() {
    assert!(can_i(CONTROLLER, &["update", "leases", "-n", NS]));
    assert!(
        !can_i(SHIM, &["update", "leases", "-n", NS]),
        "the shim may lead"
    );
    assert!(
        !can_i(SHIM, &["list", "secrets", "-A"]),
        "the shim lists Secrets"
    );
    assert!(!can_i(CONTROLLER, &["delete", "secrets", "-A"]));
    // Its own PodDisruptionBudgets, in its own namespace only.
    assert!(can_i(
        CONTROLLER,
        &["patch", "poddisruptionbudgets", "-n", NS]
    ));
    assert!(!can_i(
        CONTROLLER,
        &["patch", "poddisruptionbudgets", "-n", "default"]
    ));
    assert!(!can_i(CONTROLLER, &["patch", "deployments", "-n", NS]));
    assert!(!can_i(SHIM, &["patch", "poddisruptionbudgets", "-n", NS]));
    for account in [CONTROLLER, SHIM] {
        assert!(!can_i(account, &["create", "pods", "-n", NS]), "{account}");
        assert!(
            !can_i(account, &["create", "clusterrolebindings"]),
            "{account}"
        );
    }
}

/// `kubectl port-forward svc/berth-shim` reaches a replica.
async fn assert_port_forward() {
    let port = 17000 + (std::process::id() % 900) as u16;
    let mut forward = Command::new("kubectl")
        .args([
            "-n",
            NS,
            "port-forward",
            "svc/berth-shim",
            &format!("{port}:80"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl port-forward");
    let url = format!("http://127.0.0.1:{port}/api/bootstrap/auth/status");
    let status = eventually(Duration::from_secs(30), "port-forward answering", || {
        let url = url.clone();
        async move { reqwest::get(&url).await.ok().map(|r| r.status().as_u16()) }
    })
    .await;
    let _ = forward.kill();
    let _ = forward.wait();
    assert_eq!(status, 200);
}

/// The controller writes a PodDisruptionBudget for each of Berth's Deployments, in the policy
/// version this API server serves (policy/v1beta1 on 1.20), owned by the Deployment.
async fn budgets_written(apps: &[&str]) {
    for app in apps {
        let budget = eventually(
            WAIT,
            "the controller's PodDisruptionBudget",
            || async move {
                let output = kubectl(
                    &["-n", NS, "get", "poddisruptionbudget", app, "-o", "json"],
                    None,
                );
                output
                    .status
                    .success()
                    .then(|| serde_json::from_slice::<Value>(&output.stdout).unwrap())
            },
        )
        .await;
        assert_eq!(budget["spec"]["maxUnavailable"], 1, "{budget}");
        let owner = &budget["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Deployment", "{budget}");
        assert_eq!(owner["name"], *app, "{budget}");
    }
}

/// Waits until the disruption controller counts `app`'s two replicas, both healthy: one
/// disruption allowed (right after a rollout it may still count the pods it replaced).
async fn budget_settled(app: &str) {
    eventually_explained(
        Duration::from_secs(60),
        "the budget counting 2 pods",
        || async {
            let budget = json_of(&["-n", NS, "get", "poddisruptionbudget", app]);
            let status = &budget["status"];
            let settled = status["expectedPods"] == 2
                && status["currentHealthy"] == 2
                && status["disruptionsAllowed"] == 1;
            if settled {
                Ok(())
            } else {
                Err(status.to_string())
            }
        },
    )
    .await;
}

/// POSTs an Eviction (policy/v1beta1: Kubernetes 1.20) for `pod`; the HTTP status.
async fn evict(client: &Client, pod: &str) -> u16 {
    let body = json!({"apiVersion": "policy/v1beta1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": NS}});
    let request = http::Request::post(format!("/api/v1/namespaces/{NS}/pods/{pod}/eviction"))
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    match client.request_text(request).await {
        Ok(_) => 201,
        Err(kube::Error::Api(status)) => status.code,
        Err(error) => panic!("eviction of {pod}: {error}"),
    }
}

/// The Lease holder's pod killed while a redeploy runs: the standby takes over and the deploy
/// completes with one container. Returns the seconds from the kill to the new holder.
async fn failover_mid_deploy(ns: &TestNamespace, port: u16) -> f64 {
    set_image(ns, "web", "berth/sample-app:2", "/healthz").await;
    let deployments = ns.api::<berth_crds::deployment::Deployment>();
    eventually(WAIT, "the redeploy started", || {
        let deployments = deployments.clone();
        async move { deployments.get_opt("dep-web-2").await.ok()?.map(|_| ()) }
    })
    .await;
    let holder = current_leader().await;
    let killed = Instant::now();
    kubectl_ok(&["-n", NS, "delete", "pod", &holder, "--wait=false"]);
    let successor = eventually(Duration::from_secs(60), "a new Lease holder", || async {
        let now = lease_holder();
        (!now.is_empty() && now != holder).then_some(now)
    })
    .await;
    let seconds = killed.elapsed().as_secs_f64();
    assert!(
        pods(CONTROLLER).iter().any(|(name, _)| *name == successor),
        "{successor} is not a controller pod"
    );
    let ended = wait_ended(ns, "dep-web-2").await;
    let state = ended.status.and_then(|s| s.status);
    assert_eq!(
        state,
        Some(berth_crds::deployment::DeploymentState::Succeeded)
    );
    wait_body(port, "web.localhost", "sample-app v2").await;
    let running = docker_names(&format!("label=berth.dev/namespace={}", ns.name))
        .into_iter()
        .filter(|name| !name.contains("edge-proxy"))
        .count();
    assert_eq!(
        running, 1,
        "one container serves the resource after the failover"
    );
    seconds
}

/// Writes by kept-alive and fresh-connection clients while `disrupt` runs; every write is
/// retried at most once. Returns (acknowledged keys, writes that failed even when retried,
/// with what each attempt got).
async fn writes_during(
    rest: &Rest,
    environment: &str,
    disrupt: impl std::future::Future<Output = ()>,
) -> (Vec<String>, Vec<String>) {
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for (index, fresh) in [(0, false), (1, true)] {
        let http = if fresh {
            reqwest::Client::builder().pool_max_idle_per_host(0)
        } else {
            reqwest::Client::builder()
        }
        // A write is not lost by being slow: while a replica starts and the other fills in
        // for it, an answer can take seconds on this shared 2-core machine.
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
        let url = format!("{}/environments/{environment}/variables", base_url());
        let token = rest.token.clone().unwrap();
        let (stop, failed) = (stop.clone(), failed.clone());
        writers.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("LOAD_{index}_{n}");
                let body = json!({"key": key, "value": n.to_string()});
                let mut outcomes = Vec::new();
                for _attempt in 0..2 {
                    let sent = http.post(&url).bearer_auth(&token).json(&body).send().await;
                    match sent {
                        Ok(reply) if reply.status().is_success() => {
                            outcomes.clear();
                            break;
                        }
                        Ok(reply) => outcomes.push(format!(
                            "{}: {}",
                            reply.status(),
                            reply.text().await.unwrap_or_default()
                        )),
                        Err(error) => outcomes.push(format!("{error:?}")),
                    }
                }
                if outcomes.is_empty() {
                    acknowledged.push(key);
                } else {
                    failed.lock().unwrap().push(format!("{key}: {outcomes:?}"));
                }
                n += 1;
            }
            acknowledged
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    disrupt.await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.unwrap());
    }
    let failed = std::mem::take(&mut *failed.lock().unwrap());
    (acknowledged, failed)
}

/// One shim pod deleted under load: the Service sends new connections to the other replica.
async fn shim_replaced_under_load(client: &Client) {
    let mut org = TestOrg::new(client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let shop = project(&admin, "Load").await;
    let env = environment(&admin, &shop, "load").await;
    let victim = pods(SHIM)[0].0.clone();
    let (acknowledged, failed) = writes_during(&admin, &env, async {
        kubectl_ok(&["-n", NS, "delete", "pod", &victim, "--wait=true"]);
        rollout(SHIM);
    })
    .await;
    // Each replica answers from its own cache, which may lag the other's writes a moment.
    let missing = |stored: &str| -> Vec<String> {
        acknowledged
            .iter()
            .filter(|key| !stored.contains(&format!("\"{key}\"")))
            .cloned()
            .collect()
    };
    let lost = eventually_explained(Duration::from_secs(20), "every write shown", || async {
        let stored = admin
            .get(&format!("/environments/{env}"))
            .await
            .ok()
            .to_string();
        let lost = missing(&stored);
        if lost.is_empty() {
            Ok(lost)
        } else {
            Err(format!("{} not shown: {lost:?}", lost.len()))
        }
    })
    .await;
    println!(
        "shim pod deleted under load: {} writes acknowledged, {} failed after a retry, {} lost",
        acknowledged.len(),
        failed.len(),
        lost.len()
    );
    assert!(
        acknowledged.len() > 20,
        "the load ran: {}",
        acknowledged.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert!(
        failed.is_empty(),
        "writes failed even when retried once: {failed:?}"
    );
}

/// The node folder behind the evaluation overlay's PersistentVolume
/// (hack/in-cluster/evaluation/berth-data-volume.yaml).
const EVALUATION_DATA: &str = "/var/lib/berth-evaluation-data";

/// An empty folder for the evaluation's volume, owned by the pods' user, and no claim or
/// volume left from an earlier run (a released volume would not bind again).
fn fresh_evaluation_volume() {
    kubectl_ok(&[
        "-n",
        NS,
        "delete",
        "pvc",
        "berth-data",
        "--ignore-not-found",
    ]);
    kubectl_ok(&[
        "delete",
        "pv",
        "berth-evaluation-data",
        "--ignore-not-found",
    ]);
    let _ = std::fs::remove_dir_all(EVALUATION_DATA);
    std::fs::create_dir_all(EVALUATION_DATA).expect("the evaluation's folder");
    let owned = Command::new("chown")
        .args(["65532:65532", EVALUATION_DATA])
        .status()
        .expect("chown");
    assert!(owned.success());
}

/// What the SQLite store holds survives the pod: an audit event recorded before the pod is
/// deleted is listed by the pod that replaces it.
async fn evaluation_data_outlives_the_pod() {
    let admin = Rest::admin().await;
    // A name of its own: the stack's cluster outlives a run, and with it an earlier one's.
    let kept = project(&admin, &format!("Outlives the pod {}", random_suffix())).await;
    // Signed in anew each time: the question is the store's rows, not the session's.
    let listed = |kept: String| async move {
        let events = Rest::admin()
            .await
            .get(&format!("/audit-events?aggregateId={kept}"))
            .await;
        events.status == 200
            && events.body["items"]
                .as_array()
                .is_some_and(|items| !items.is_empty())
    };
    assert!(listed(kept.clone()).await, "recorded before");
    let before = pods(CONTROLLER);
    kubectl_ok(&["-n", NS, "delete", "pod", &before[0].0, "--wait=true"]);
    rollout(CONTROLLER);
    service_answers().await;
    eventually(WAIT, "the event listed by the new pod", || {
        let kept = kept.clone();
        async move { listed(kept).await.then_some(()) }
    })
    .await;
    let bound = json_of(&["-n", NS, "get", "pvc", "berth-data"]);
    assert_eq!(bound["status"]["phase"], "Bound", "{bound}");
    let archive = json!({"confirmation": {"projectId": kept}});
    Rest::admin()
        .await
        .delete(&format!("/projects/{kept}"), archive)
        .await;
}

/// Waits until the shim's Service sends connections to a Ready pod: kube-proxy writes the new
/// pod's rules a moment after the pod is Ready, and until then a Service whose only pod was
/// replaced refuses connections (as any client would see right after a rollout).
async fn service_answers() {
    let ready = format!("{}/readyz", base_url().trim_end_matches("/api"));
    eventually_explained(WAIT, "the shim's Service answering", || async {
        match reqwest::get(&ready).await {
            Ok(answer) if answer.status().is_success() => Ok(()),
            Ok(answer) => Err(format!("{ready} answered {}", answer.status())),
            Err(error) => Err(format!("{ready}: {error}")),
        }
    })
    .await;
}

/// manifests/overlays/evaluation (one pod running both binaries on SQLite) in place of the
/// two-replica install: Ready, answering through the same Service, its budget letting a drain
/// evict its single pod.
async fn evaluation_overlay() {
    kubectl_ok(&[
        "-n",
        NS,
        "delete",
        "deployment",
        CONTROLLER,
        SHIM,
        "--cascade=foreground",
        "--wait=true",
        "--timeout=120s",
    ]);
    fresh_evaluation_volume();
    let overlay = repo_root().join("hack/in-cluster/evaluation");
    let started = Instant::now();
    kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-k",
        overlay.to_str().unwrap(),
    ]);
    rollout(CONTROLLER);
    let pods = pods(CONTROLLER);
    assert_eq!(pods.len(), 1, "{pods:?}");
    println!(
        "evaluation overlay Ready in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    service_answers().await;
    Rest::admin()
        .await
        .get("/organizations/current-context")
        .await
        .expect(200);
    budgets_written(&[CONTROLLER]).await;
    evaluation_data_outlives_the_pod().await;
    eventually_explained(WAIT, "one disruption allowed", || async {
        let budget = json_of(&["-n", NS, "get", "poddisruptionbudget", CONTROLLER]);
        match budget["status"]["disruptionsAllowed"] == 1 {
            true => Ok(()),
            false => Err(budget["status"].to_string()),
        }
    })
    .await;
}

/// The pods verify the observation store (the Secret asks for `verify-full` against its
/// authority: a pod that could not verify the server would never be Ready), and the server
/// sees each of their connections encrypted.
async fn assert_store_verified(client: &Client) {
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get("berth-observation-store")
        .await
        .expect("the store's Secret");
    let data = secret.data.unwrap_or_default();
    let url = String::from_utf8(data["url"].0.clone()).unwrap();
    assert!(
        url.contains("sslmode=verify-full"),
        "the store's URL asks for verify-full"
    );
    assert!(
        data.contains_key("ca.crt"),
        "the Secret holds the authority"
    );
    let (store, connection) =
        tokio_postgres::connect(&stack_env("BERTH_TEST_POSTGRES_URL"), tokio_postgres::NoTls)
            .await
            .expect("the stack's PostgreSQL");
    tokio::spawn(connection);
    let from_pods = "select s.ssl from pg_stat_activity a join pg_stat_ssl s using (pid) \
                     where a.client_addr is not null and host(a.client_addr) <> '127.0.0.1'";
    let rows = store.query(from_pods, &[]).await.unwrap();
    assert!(!rows.is_empty(), "the pods hold connections to the store");
    let encrypted = rows.iter().filter(|row| row.get::<_, bool>(0)).count();
    assert_eq!(
        encrypted,
        rows.len(),
        "every connection from a pod encrypted"
    );
    println!("observation store: {encrypted} connections from pods, all verify-full over TLS");
}

#[tokio::test]
async fn berth_runs_as_pods_fails_over_and_keeps_every_write() {
    let client = client().await;
    let installed = Instant::now();
    install();
    println!(
        "installed in {:.0} s; seconds to Ready: controller {:?}, shim {:?}",
        installed.elapsed().as_secs_f64(),
        seconds_to_ready(CONTROLLER),
        seconds_to_ready(SHIM)
    );
    // Both controller replicas are Ready (able to lead); exactly one holds the Lease.
    let controllers = pods(CONTROLLER);
    assert_eq!(controllers.len(), 2, "{controllers:?}");
    assert!(
        controllers.iter().all(|(_, ready)| *ready),
        "{controllers:?}"
    );
    current_leader().await;
    assert_locked_down(CONTROLLER);
    assert_locked_down(SHIM);
    assert_least_privilege();
    budgets_written(&[CONTROLLER, SHIM]).await;
    assert_store_verified(&client).await;

    // The shim through its Service (BERTH_URL) and through a port-forward.
    let status = reqwest::get(format!("{}/bootstrap/auth/status", base_url()))
        .await
        .expect("the shim's Service answers");
    assert_eq!(status.status().as_u16(), 200);
    assert_port_forward().await;
    crate::in_cluster_first_admin::first_admin_through_the_service().await;
    Rest::admin().await;

    // An app deployed by the in-cluster controller answers through the edge proxy.
    let ns = TestNamespace::new(&client, "in-cluster").await;
    let port = ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    wait_body(port, "web.localhost", "sample-app v1").await;
    let failover = failover_mid_deploy(&ns, port).await;
    println!("failover: {failover:.1} s from the leader's kill to the new Lease holder");
    assert!(failover <= 20.0, "failover took {failover:.1} s");
    rollout(CONTROLLER);

    // A rolling update of the controller to a new image tag completes under its
    // PodDisruptionBudget, which then counts both replicas healthy: the standby is Ready, so the
    // leader may be evicted (a node drain goes on) and the standby takes over.
    let rolled = "berth/controller:dev-rolled";
    let tagged = Command::new("docker")
        .args(["tag", "berth/controller:dev", rolled])
        .status()
        .expect("docker tag");
    assert!(tagged.success());
    let image = format!("controller={rolled}");
    kubectl_ok(&["-n", NS, "set", "image", "deploy/berth-controller", &image]);
    rollout(CONTROLLER);
    budget_settled(CONTROLLER).await;
    let leader = current_leader().await;
    assert_eq!(evict(&client, &leader).await, 201, "evicting the leader");
    eventually(Duration::from_secs(60), "the standby leading", || async {
        let now = lease_holder();
        (!now.is_empty() && now != leader).then_some(())
    })
    .await;
    rollout(CONTROLLER);

    shim_replaced_under_load(&client).await;
    teardown(&ns, "web").await;
    evaluation_overlay().await;
}
