//! Faults that disturb the whole stack (restarting the shared dockerd and sshd). `hack/test.sh`
//! runs this module alone, after every other test, one test at a time.

use std::time::{Duration, Instant};

use berth_tests::{TestNamespace, client, eventually, repo_root};

use crate::deploy_support::{fetch, wait_body};
use crate::deployments::{apply, ready_server, resource_yaml, teardown};
use crate::servers::support::events;

const WAIT: Duration = Duration::from_secs(120);

/// `hack/stack.sh restart WHAT`.
fn restart(what: &str) {
    let output = std::process::Command::new(repo_root().join("hack/stack.sh"))
        .args(["restart", what])
        .output()
        .expect("hack/stack.sh");
    assert!(
        output.status.success(),
        "restart {what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn controller_pid() -> String {
    let path = format!(
        "{}/berth-controller.pid",
        berth_tests::stack_env("BERTH_STACK_DIR")
    );
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `host` answers 200 through the proxy again; returns how long that took.
async fn serving_again(port: u16, host: &str) -> Duration {
    let started = Instant::now();
    let http = reqwest::Client::new();
    eventually(WAIT, &format!("{host} serving again"), || {
        let http = http.clone();
        async move {
            fetch(&http, port, host)
                .await
                .filter(|(code, body)| *code == 200 && body.contains("v1"))
        }
    })
    .await;
    started.elapsed()
}

#[tokio::test]
async fn the_server_observer_survives_dockerd_and_sshd_restarts() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "fault-observer").await;
    let port = ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    let host = "web.localhost";
    wait_body(port, host, "v1").await;
    let controller = controller_pid();

    // Docker restarts: the proxy comes back without routes, the app by its restart policy.
    restart("docker");
    let after_docker = serving_again(port, host).await;
    // sshd restarts and drops every connection: the observer reconnects by itself.
    restart("sshd");
    let after_sshd = serving_again(port, host).await;
    eprintln!(
        "serving again after a Docker restart in {after_docker:?}, after sshd in {after_sshd:?}"
    );

    let container = format!("berth-{}-web-dep-web-1", ns.name);
    let removed = std::process::Command::new("docker")
        .args(["rm", "-f", &container])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    let repaired = serving_again(port, host).await;
    eprintln!("a removed container served again in {repaired:?}");
    let recorded = events(&ns);
    assert!(
        recorded.iter().any(|(reason, _)| reason == "DriftRepaired"),
        "{recorded:?}"
    );
    assert_eq!(
        controller_pid(),
        controller,
        "berth-controller was restarted"
    );
    teardown(&ns, "web").await;
}
