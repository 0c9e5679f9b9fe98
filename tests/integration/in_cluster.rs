//! Berth installed into the cluster as pods (issue 29), on the stack's real node
//! (`hack/stack.sh node up`: kubelet, kube-scheduler, kube-proxy): `kubectl apply -k` of the
//! overlay `hack/in-cluster/` with the locally built images brings both Deployments up; the
//! controller's standby replica is Ready and one replica holds the Lease; the shim answers
//! through its Service and through `kubectl port-forward`; an app deploys through the edge
//! proxy; the leader's pod killed mid-deploy hands over and the deploy completes with one
//! container; a rolling update completes and the leader's eviction is allowed under the
//! PodDisruptionBudget (its standby counts as available); a shim pod
//! deleted under kept-alive load loses no write; the pods run locked down and each
//! ServiceAccount can do only what it needs.
//!
//! hack/test.sh runs this module alone, after the rest of the suite, with the node up, the
//! images built (`hack/images.sh berth debug`), the process controller and shim stopped and
//! `BERTH_URL` pointing at the shim's Service. It prints the figures of the issue's note.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::{
    TestNamespace, client, eventually, eventually_explained, kubectl, random_suffix, repo_root,
};
use kube::Client;
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, docker_names, wait_body};
use crate::deployments::{apply, ready_server, resource_yaml, set_image, teardown, wait_ended};
use crate::shim_projects_envs::{environment, project};

const NS: &str = "berth-system";
const CONTROLLER: &str = "berth-controller";
const SHIM: &str = "berth-shim";
const ROLLOUT: Duration = Duration::from_secs(240);

fn kubectl_ok(args: &[&str]) -> String {
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
    let holder = lease_holder();
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
/// retried at most once. Returns (acknowledged keys, writes that failed even when retried).
async fn writes_during(
    rest: &Rest,
    environment: &str,
    disrupt: impl std::future::Future<Output = ()>,
) -> (Vec<String>, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for (index, fresh) in [(0, false), (1, true)] {
        let http = if fresh {
            reqwest::Client::builder().pool_max_idle_per_host(0)
        } else {
            reqwest::Client::builder()
        }
        .timeout(Duration::from_secs(10))
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
                let mut ok = false;
                for _attempt in 0..2 {
                    let sent = http.post(&url).bearer_auth(&token).json(&body).send().await;
                    if sent.is_ok_and(|r| r.status().is_success()) {
                        ok = true;
                        break;
                    }
                }
                if ok {
                    acknowledged.push(key);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
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
    (acknowledged, failed.load(Ordering::Relaxed))
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
        failed,
        lost.len()
    );
    assert!(
        acknowledged.len() > 20,
        "the load ran: {}",
        acknowledged.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert_eq!(failed, 0, "writes failed even when retried once");
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
    eventually_explained(
        Duration::from_secs(60),
        "a controller pod leads",
        || async {
            let holder = lease_holder();
            match controllers.iter().any(|(name, _)| *name == holder) {
                true => Ok(()),
                false => Err(format!("holder {holder:?}")),
            }
        },
    )
    .await;
    assert_locked_down(CONTROLLER);
    assert_locked_down(SHIM);
    assert_least_privilege();

    // The shim through its Service (BERTH_URL) and through a port-forward.
    let status = reqwest::get(format!("{}/bootstrap/auth/status", base_url()))
        .await
        .expect("the shim's Service answers");
    assert_eq!(status.status().as_u16(), 200);
    assert_port_forward().await;
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

    // A rolling update of the controller completes under its PodDisruptionBudget, which then
    // counts both replicas healthy: the standby is Ready, so the leader may be evicted (a node
    // drain goes on) and the standby takes over.
    let rolled = format!(
        r#"{{"spec":{{"template":{{"metadata":{{"annotations":{{"berth.dev/rolled":"{}"}}}}}}}}}}"#,
        random_suffix()
    );
    kubectl_ok(&["-n", NS, "patch", "deploy", CONTROLLER, "-p", &rolled]);
    rollout(CONTROLLER);
    budget_settled(CONTROLLER).await;
    let leader = lease_holder();
    assert_eq!(evict(&client, &leader).await, 201, "evicting the leader");
    eventually(Duration::from_secs(60), "the standby leading", || async {
        let now = lease_holder();
        (!now.is_empty() && now != leader).then_some(())
    })
    .await;
    rollout(CONTROLLER);

    shim_replaced_under_load(&client).await;
    teardown(&ns, "web").await;
}
