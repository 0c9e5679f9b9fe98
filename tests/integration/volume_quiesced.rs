//! A quiesced storage volume backup (issue 42) of a volume a running app writes: the app's
//! container is stopped only while the volume's files are copied on the server, and held
//! meanwhile, so drift repair neither starts it again mid-copy nor records a restart, and its
//! runtime never reads `exited`; it runs and answers again after. The backup goes to the
//! stack's bucket and is proven like any other; the snapshot volume is gone after.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use berth_crds::backup::BackupStatus;
use berth_crds::condition::ConditionStatus;
use berth_crds::resource::Resource;
use berth_crds::volume_backup::StorageVolumeBackup;
use berth_tests::{TestNamespace, client, eventually, stack_env};
use serde_json::json;

use crate::backups::{event_notes, target_ready};
use crate::backups_s3::{bucket_target, keys};
use crate::dependency_resources::docker;
use crate::deploy_support::wait_body;
use crate::deployments::{app_with_volume, apply, ready_server};

const WAIT: Duration = Duration::from_secs(240);

fn started_at(container: &str) -> String {
    docker(&["inspect", "-f", "{{.State.StartedAt}}", container]).1
}

#[tokio::test]
async fn a_quiesced_volume_backup_stops_the_app_only_for_the_copy_and_drift_repair_leaves_it() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "quiesce").await;
    let port = ready_server(&ns).await;
    let container = app_with_volume(&ns).await;
    let (wrote, out) = docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "mkdir -p /www/data/orders && for i in 1 2 3 4 5; do echo order-$i > /www/data/orders/$i; done",
    ]);
    assert!(wrote, "{out}");
    let before = started_at(&container);
    apply(&keys(
        &ns,
        "bucket-keys",
        &stack_env("BERTH_S3_SECRET_ACCESS_KEY"),
    ));
    apply(&bucket_target(&ns, "bucket", "bucket-keys"));
    target_ready(&ns, "bucket", ConditionStatus::True).await;

    // What the app's runtime reads while the backup runs.
    let seen = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn({
        let (resources, seen, done) = (ns.api::<Resource>(), seen.clone(), done.clone());
        async move {
            while !done.load(Ordering::Relaxed) {
                let runtime = resources
                    .get("files")
                    .await
                    .ok()
                    .and_then(|r| r.status?.runtime);
                if let Some(runtime) = runtime {
                    let reason = runtime.reason_code.unwrap_or_default();
                    let state = format!("{:?}/{reason}", runtime.lifecycle);
                    seen.lock().unwrap().insert(state);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    apply(
        &json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "StorageVolumeBackup",
            "metadata": { "name": "uploads-1", "namespace": ns.name },
            "spec": { "storageVolumeId": "uploads", "serverId": "local", "targetId": "bucket",
                      "consistency": "quiesced" },
        })
        .to_string(),
    );
    let backups = ns.api::<StorageVolumeBackup>();
    let status = eventually(WAIT, "the quiesced backup ended", || async {
        let status = backups.get_opt("uploads-1").await.ok()??.status?;
        (status.status != BackupStatus::Pending).then_some(status)
    })
    .await;
    done.store(true, Ordering::Relaxed);
    watcher.await.unwrap();
    assert_eq!(status.status, BackupStatus::Ready, "{status:?}");
    let window = status.quiesced.expect("what quiescing cost");
    assert_eq!(window.containers, 1, "{window:?}");
    let tree = status.verification.and_then(|v| v.tree).expect("the tree");
    assert!(tree.files >= 5, "{tree:?}");
    assert!(
        status.artifact.unwrap().location.starts_with("s3://"),
        "in the bucket"
    );

    // The app was stopped and started again by the backup, and by nothing else.
    let (_, running) = docker(&["inspect", "-f", "{{.State.Running}}", &container]);
    assert_eq!(running, "true");
    assert_ne!(started_at(&container), before, "stopped for the copy");
    wait_body(port, "files.localhost", "sample-app v1").await;
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|s| !s.starts_with("Exited") && !s.starts_with("Missing")),
        "the runtime never read exited: {seen:?}"
    );
    let notes = event_notes(&ns, "files");
    assert!(
        !notes
            .iter()
            .any(|(r, _)| r == "DriftRepaired" || r == "DriftRepairFailed"),
        "drift repair left the held container: {notes:?}"
    );
    let snapshot = format!("berth-snapshot-{}-uploads-1", ns.name);
    assert!(
        !docker(&["volume", "inspect", &snapshot]).0,
        "the snapshot volume is gone"
    );
}
