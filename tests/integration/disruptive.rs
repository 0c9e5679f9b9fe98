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
        .args(["rm", "-fv", &container])
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

/// SIGKILLs berth-controller, as a crashed process or a lost node would end it.
fn kill_controller() {
    let pid = controller_pid();
    let pid = pid
        .split_whitespace()
        .next()
        .expect("berth-controller's pid");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", pid])
        .status()
        .expect("kill");
    assert!(killed.success(), "kill -KILL {pid}");
}

/// Starts berth-controller again as hack/test.sh does, and waits until it leads.
fn start_controller() {
    // The integration lock (fd 9) must not pass to the controller, or it would outlive the run.
    let script = r#"exec 9>&-; HACK_DIR=$PWD/hack; source hack/lib/common.sh
        eval "$(hack/stack.sh env)"; source hack/lib/berth.sh
        berth_start_controller "$BERTH_CONTROLLER_LOG""#;
    let started = std::process::Command::new("bash")
        .args(["-c", script])
        .current_dir(repo_root())
        .status()
        .expect("bash");
    assert!(started.success(), "berth-controller did not start again");
}

/// Seconds until the next whole minute, and that minute (Unix seconds).
fn next_minute() -> (u64, i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let next = (now.as_secs() / 60 + 1) * 60;
    (next - now.as_secs(), next as i64)
}

/// The runs of `task` by their slot's Unix second, with their status.
async fn task_runs(
    ns: &TestNamespace,
    task: &str,
) -> Vec<(i64, berth_crds::scheduled_task::ScheduledTaskRun)> {
    use berth_crds::scheduled_task::ScheduledTaskRun;
    let params =
        kube::api::ListParams::default().labels(&format!("berth.dev/scheduled-task={task}"));
    let runs = ns.api::<ScheduledTaskRun>().list(&params).await.unwrap();
    runs.items
        .into_iter()
        .filter_map(|run| {
            let slot = run.spec.scheduled_for.as_deref()?;
            let slot: k8s_openapi::jiff::Timestamp = slot.parse().ok()?;
            Some((slot.as_second(), run))
        })
        .collect()
}

#[tokio::test]
async fn a_killed_controller_runs_its_slot_once_and_a_slot_it_missed_is_recorded() {
    use berth_crds::scheduled_task::TaskRunStatus;
    let client = client().await;
    let ns = TestNamespace::new(&client, "fault-tasks").await;
    ready_server(&ns).await;
    apply(&resource_yaml(&ns, "web", "berth/sample-app:1", "/healthz"));
    crate::deployments::wait_ended(&ns, "dep-web-1").await;
    let task = serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "ScheduledTask",
        "metadata": { "name": "tick", "namespace": ns.name },
        "spec": { "resourceId": "web", "schedule": "* * * * *", "command": "echo tick",
                  "runMissed": true },
    });
    // Leave time for the task to be seen before the slot the controller dies at.
    if next_minute().0 < 15 {
        tokio::time::sleep(Duration::from_secs(next_minute().0 + 1)).await;
    }
    apply(&task.to_string());

    // Killed two seconds before a slot and started again at once: that slot runs once.
    let (wait, slot) = next_minute();
    tokio::time::sleep(Duration::from_secs(wait.saturating_sub(2))).await;
    kill_controller();
    start_controller();
    let runs = eventually(WAIT, "the slot's run ended", || async {
        let runs: Vec<_> = task_runs(&ns, "tick")
            .await
            .into_iter()
            .filter(|(at, _)| *at == slot)
            .collect();
        runs.iter()
            .all(|(_, run)| run.run_status().is_final())
            .then_some(runs)
            .filter(|runs| !runs.is_empty())
    })
    .await;
    assert_eq!(runs.len(), 1, "one run for the slot the controller died at");
    assert_eq!(runs[0].1.run_status(), TaskRunStatus::Succeeded);

    // Stopped across the next slot for longer than a slot may be late: recorded missed, and
    // (runMissed) run once, late, when the controller is back.
    let (wait, missed) = next_minute();
    tokio::time::sleep(Duration::from_secs(wait.saturating_sub(3))).await;
    kill_controller();
    tokio::time::sleep(Duration::from_secs(3 + 40)).await;
    start_controller();
    let runs = eventually(WAIT, "the missed slot recorded and run late", || async {
        let runs: Vec<_> = task_runs(&ns, "tick")
            .await
            .into_iter()
            .filter(|(at, _)| *at == missed)
            .collect();
        let ended = runs.len() == 2 && runs.iter().all(|(_, run)| run.run_status().is_final());
        ended.then_some(runs)
    })
    .await;
    let statuses: Vec<TaskRunStatus> = runs.iter().map(|(_, run)| run.run_status()).collect();
    assert!(statuses.contains(&TaskRunStatus::Missed), "{statuses:?}");
    assert!(statuses.contains(&TaskRunStatus::Succeeded), "{statuses:?}");
    let recorded = events(&ns);
    assert!(
        recorded.iter().any(|(reason, _)| reason == "TaskRunMissed"),
        "{recorded:?}"
    );
    teardown(&ns, "web").await;
}

/// The backups of `policy` by name, with their status.
async fn policy_backups(
    ns: &TestNamespace,
    policy: &str,
) -> Vec<berth_crds::backup::DependencyResourceBackup> {
    use berth_crds::backup::DependencyResourceBackup;
    let params =
        kube::api::ListParams::default().labels(&format!("berth.dev/backup-policy={policy}"));
    let backups = ns
        .api::<DependencyResourceBackup>()
        .list(&params)
        .await
        .unwrap();
    backups.items
}

#[tokio::test]
async fn a_controller_killed_during_a_scheduled_backup_takes_it_once_and_a_missed_slot_late() {
    use crate::backups::{database_and_store, ended, event_notes, policy, target, target_ready};
    use crate::dependency_resources::psql;
    use berth_crds::backup::BackupStatus;
    use berth_crds::condition::ConditionStatus;
    let client = client().await;
    let ns = TestNamespace::new(&client, "fault-backups").await;
    let container = database_and_store(&ns).await;
    let (written, out) = psql(
        &container,
        // Some 30 MB, so the backup takes long enough to be killed in.
        "create table t (id int, body text); insert into t select g, \
         repeat(md5(g::text), 9) from generate_series(1, 100000) g",
    );
    assert!(written, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    target_ready(&ns, "offsite", ConditionStatus::True).await;
    if next_minute().0 < 15 {
        tokio::time::sleep(Duration::from_secs(next_minute().0 + 1)).await;
    }
    apply(&policy(
        &ns,
        "nightly",
        "db",
        serde_json::json!({ "schedule": "* * * * *", "retention": { "keepLast": 10 } }),
    ));

    // Killed while the slot's backup is being taken, started again at once: one backup for
    // the slot, taken again from the start, ready, and no partial upload left.
    let (_, slot) = next_minute();
    let name = format!("nightly-{slot}");
    eventually(WAIT, "the slot's backup under way", || async {
        let backups = policy_backups(&ns, "nightly").await;
        backups
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some(&*name))
            .and_then(|b| b.status.as_ref())
            .filter(|s| s.status == BackupStatus::Pending && s.step.is_some())
            .map(drop)
    })
    .await;
    kill_controller();
    start_controller();
    let taken = ended(&ns, &name).await;
    assert_eq!(
        taken.status.as_ref().unwrap().status,
        BackupStatus::Ready,
        "{taken:?}"
    );
    let for_slot = policy_backups(&ns, "nightly")
        .await
        .into_iter()
        .filter(|b| b.spec.slot.scheduled_for == taken.spec.slot.scheduled_for)
        .count();
    assert_eq!(
        for_slot, 1,
        "one backup for the slot the controller died in"
    );
    let folder = format!("{directory}/{}/db", ns.name);
    let partial = std::fs::read_dir(&folder)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| f.ends_with(".partial"))
        .count();
    assert_eq!(partial, 0, "no partial upload left in {folder}");

    // Stopped across the next slot for longer than a slot may be late: backed up once, late.
    let (wait, missed) = next_minute();
    tokio::time::sleep(Duration::from_secs(wait.saturating_sub(3))).await;
    kill_controller();
    tokio::time::sleep(Duration::from_secs(3 + 40)).await;
    start_controller();
    let late = eventually(WAIT, "the missed slot backed up late", || async {
        policy_backups(&ns, "nightly")
            .await
            .into_iter()
            .find(|b| b.metadata.name.as_deref() == Some(&*format!("nightly-{missed}")))
    })
    .await;
    assert!(late.spec.slot.late, "{late:?}");
    let late = ended(&ns, &format!("nightly-{missed}")).await;
    assert_eq!(late.status.unwrap().status, BackupStatus::Ready);
    let notes = event_notes(&ns, "nightly");
    assert!(
        notes
            .iter()
            .any(|(reason, note)| reason == "BackupLate" && note.contains("taken late")),
        "{notes:?}"
    );
    ns.api::<berth_crds::backup_policy::DependencyResourceBackupPolicy>()
        .delete("nightly", &Default::default())
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&directory);
}

/// `redis-cli` in the managed Redis `container`, with its password from the container's env.
fn redis_cli(container: &str, command: &str) -> String {
    let script = format!("REDISCLI_AUTH=\"$REDIS_PASSWORD\" redis-cli {command}");
    let (_, out) = crate::dependency_resources::docker(&["exec", container, "sh", "-c", &script]);
    out
}

/// A Redis restore deleted while the controller was down, its target replicating the
/// throwaway server: the controller, back, makes the target a primary again (it takes writes),
/// removes the throwaway server, says so in an event, and only then lets the restore go.
#[tokio::test]
async fn a_redis_restore_deleted_while_the_controller_was_down_leaves_its_target_a_primary() {
    use crate::backups::{ended, event_notes, store_server, target, target_ready};
    use crate::dependency_resources::{create, docker, local_server, registry_image, wait_ready};
    use berth_crds::backup::{BackupStatus, DependencyResourceRestore, RestoreStatus};
    use berth_crds::condition::ConditionStatus;
    use berth_crds::dependency_resource::DependencyResource;
    let client = client().await;
    let ns = TestNamespace::new(&client, "fault-restore").await;
    local_server(&ns).await;
    store_server(&ns).await;
    create(&ns, "cache", "redis", &registry_image("berth/redis:7")).await;
    wait_ready(&ns.api::<DependencyResource>(), "cache").await;
    let container = format!("berth-dep-{}-cache", ns.name);
    // Some 60 MB, so that the target takes a while to replicate.
    let populate = "EVAL \"for i=1,500000 do redis.call('SET','k'..i,string.rep('x',100)) end\" 0";
    redis_cli(&container, populate);
    assert_eq!(redis_cli(&container, "DBSIZE"), "500000");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    target_ready(&ns, "offsite", ConditionStatus::True).await;
    let backup = serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceBackup",
        "metadata": { "name": "b1", "namespace": ns.name },
        "spec": { "dependencyResourceId": "cache", "targetId": "offsite" },
    });
    apply(&backup.to_string());
    let taken = ended(&ns, "b1").await;
    assert_eq!(taken.status.unwrap().status, BackupStatus::Ready);

    let restore = serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceRestore",
        "metadata": { "name": "r1", "namespace": ns.name },
        "spec": { "backupId": "b1", "targetDependencyResourceId": "cache",
                  "acknowledgeDataOverwrite": true },
    });
    apply(&restore.to_string());
    // The controller dies once the throwaway server holds the snapshot, about to make the
    // target its replica; the test takes that step itself (the password and address of the
    // throwaway server are its own), leaving the target as a controller that died right after
    // it would: a replica of a server only the restore knows of.
    let scratch = format!("berth-verify-{}-r1", ns.name);
    let deadline = Instant::now() + WAIT;
    while redis_cli(&scratch, "DBSIZE") != "500000" {
        assert!(
            Instant::now() < deadline,
            "the throwaway Redis never held the snapshot"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill_controller();
    let restores = ns.api::<DependencyResourceRestore>();
    let pending = restores.get("r1").await.unwrap().status.unwrap_or_default();
    assert_eq!(
        pending.status,
        RestoreStatus::Pending,
        "killed before the restore ended"
    );
    let (_, address) = docker(&[
        "inspect",
        "-f",
        &format!("{{{{(index .NetworkSettings.Networks \"{container}\").IPAddress}}}}"),
        &scratch,
    ]);
    let (_, scratch_password) = docker(&["exec", &scratch, "sh", "-c", "echo \"$REDIS_PASSWORD\""]);
    redis_cli(
        &container,
        &format!("CONFIG SET masterauth {scratch_password}"),
    );
    // "OK", or "OK Already connected…" when the controller took that step before it died.
    let replicating = redis_cli(&container, &format!("REPLICAOF {address} 6379"));
    assert!(replicating.starts_with("OK"), "{replicating}");
    assert!(redis_cli(&container, "INFO replication").contains("role:slave"));
    let restores = ns.api::<DependencyResourceRestore>();
    restores.delete("r1", &Default::default()).await.unwrap();
    let held = restores.get_opt("r1").await.unwrap();
    assert!(
        held.is_some_and(|r| r.metadata.deletion_timestamp.is_some()),
        "a restore under way waits for the controller to put its target right"
    );
    start_controller();
    eventually(WAIT, "the abandoned restore gone", || async {
        matches!(restores.get_opt("r1").await, Ok(None)).then_some(())
    })
    .await;
    assert!(redis_cli(&container, "INFO replication").contains("role:master"));
    assert_eq!(
        redis_cli(&container, "SET after restore"),
        "OK",
        "takes writes"
    );
    assert!(!docker(&["inspect", &scratch]).0, "throwaway Redis removed");
    let notes = event_notes(&ns, "r1");
    assert!(
        notes
            .iter()
            .any(|(reason, note)| reason == "RestoreAbandoned" && note.contains("primary again")),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&directory);
}
