//! The berth-controller process as an operator sees it: a second replica is ready but stays on
//! standby while the first holds the Lease, serves health and metrics, and exits promptly on
//! SIGTERM.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use berth_tests::eventually;

/// The running controller's address (hack/test.sh starts it there).
const LEADER_ADDR: &str = "127.0.0.1:9464";
const STANDBY_ADDR: &str = "127.0.0.1:9475";

fn controller_binary() -> String {
    let dir = std::env::var("BERTH_BIN_DIR").expect("BERTH_BIN_DIR (hack/test.sh sets it)");
    format!("{dir}/berth-controller")
}

async fn get(url: &str) -> Option<(u16, String)> {
    let response = reqwest::get(url).await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?))
}

struct Standby(Child);

impl Drop for Standby {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_second_replica_waits_on_standby_and_stops_on_sigterm() {
    let kubeconfig =
        std::env::var("BERTH_CONTROLLER_KUBECONFIG").expect("BERTH_CONTROLLER_KUBECONFIG");
    let child = Command::new(controller_binary())
        .args([
            "run",
            "--listen",
            STANDBY_ADDR,
            "--identity",
            "standby-under-test",
        ])
        .env("KUBECONFIG", kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a second controller");
    let mut standby = Standby(child);

    eventually(Duration::from_secs(30), "standby /readyz", || async {
        let (status, _) = get(&format!("http://{STANDBY_ADDR}/readyz")).await?;
        (status == 200).then_some(())
    })
    .await;
    // It is ready (able to lead: a rolling update and a PodDisruptionBudget count it as
    // available) but keeps waiting: the first replica holds the Lease and renews it.
    for _ in 0..10 {
        let (status, _) = get(&format!("http://{STANDBY_ADDR}/readyz"))
            .await
            .expect("readyz answers");
        assert_eq!(status, 200, "a standby replica able to lead is ready");
        let (_, metrics) = get(&format!("http://{STANDBY_ADDR}/metrics"))
            .await
            .unwrap();
        assert!(
            metrics.contains("berth_leader 0"),
            "a standby replica took the Lease while another holds it: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (_, leader_metrics) = get(&format!("http://{LEADER_ADDR}/metrics"))
        .await
        .expect("leader metrics");
    assert!(leader_metrics.contains("berth_leader 1"));
    assert!(leader_metrics.contains("berth_reconcile_duration_seconds"));

    // SIGTERM ends it promptly (it releases nothing it does not hold).
    let pid = standby.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let exited = eventually(
        Duration::from_secs(10),
        "standby exit after SIGTERM",
        || {
            let status = standby.0.try_wait().ok().flatten();
            async move { status }
        },
    )
    .await;
    assert!(exited.success(), "exit status {exited:?}");
}
