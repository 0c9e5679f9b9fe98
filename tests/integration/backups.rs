//! Backups of a managed PostgreSQL on the real stack (issue 42): a backup taken on
//! server `local` is stored sealed in a directory of server 2, proven by a test restore that
//! counts the same tables and rows as the source, and is plaintext nowhere at the target; once
//! a byte of it is changed there, a restore of it fails and changes nothing; a
//! backup whose target does not exist or cannot be written fails with the cause in one line, a
//! Warning event and a `backup-failed` webhook, never `ready`. A backup policy backs up each
//! slot once and keeps only what its rules keep, objects and artifacts alike.

use std::time::Duration;

use berth_crds::backup::{
    BackupStatus, BackupTarget, DependencyResourceBackup, DependencyResourceRestore,
    DependencyResourceRestoreStatus, RestoreStatus,
};
use berth_crds::backup_policy::DependencyResourceBackupPolicy;
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::DependencyResource;
use berth_tests::{TestNamespace, client, eventually, kubectl, stack_env};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::dependency_resources::{
    assert_not_shown, create, docker, local_server, password, psql, registry_image, wait_ready,
};
use crate::deployments::apply;
use crate::notifications::{Receiver, hook, webhook_channel};
use crate::servers::support::{create_server, wait_condition};

/// A dump, upload, test restore and count on two busy cores.
const WAIT: Duration = Duration::from_secs(240);

/// Server 2 (its own network namespace and sshd; the same file system as this machine).
pub async fn store_server(ns: &TestNamespace) {
    let servers = create_server(
        ns,
        "store",
        &stack_env("BERTH_SSH2_HOST"),
        stack_env("BERTH_SSH2_PORT").parse().unwrap(),
        "key",
        json!({ "dockerSocketPath": stack_env("BERTH_SSH2_DOCKER_SOCKET") }),
    )
    .await;
    wait_condition(&servers, "store", READY, ConditionStatus::True, None, WAIT).await;
}

pub fn target(ns: &TestNamespace, name: &str, path: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "BackupTarget",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": { "name": name, "kind": "server-directory",
                  "serverDirectory": { "serverId": "store", "path": path } },
    })
    .to_string()
}

/// A backup of the dependency `db` to `target`, as YAML for `kubectl apply`.
pub(crate) fn backup(ns: &TestNamespace, name: &str, target: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceBackup",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": { "dependencyResourceId": "db", "targetId": target },
    })
    .to_string()
}

/// Waits until backup `name` is no longer pending.
pub async fn ended(ns: &TestNamespace, name: &str) -> DependencyResourceBackup {
    let api = ns.api::<DependencyResourceBackup>();
    eventually(WAIT, &format!("backup {name} ended"), || async {
        let backup = api.get_opt(name).await.ok()??;
        let status = backup.status.as_ref()?;
        (status.status != BackupStatus::Pending).then_some(backup)
    })
    .await
}

/// Waits until target `name`'s `Ready` is `status`; its message.
pub async fn target_ready(ns: &TestNamespace, name: &str, status: ConditionStatus) -> String {
    let api = ns.api::<BackupTarget>();
    eventually(WAIT, &format!("target {name} Ready={status:?}"), || async {
        let target = api.get_opt(name).await.ok()??;
        let ready = condition::find(&target.status?.conditions, READY)?.clone();
        (ready.status == status).then_some(ready.message)
    })
    .await
}

/// The reasons of the namespace's Events about backup `name`.
pub fn event_notes(ns: &TestNamespace, name: &str) -> Vec<(String, String)> {
    let output = kubectl(
        &["get", "events.events.k8s.io", "-n", &ns.name, "-o", "json"],
        None,
    );
    let events: Value = serde_json::from_slice(&output.stdout).unwrap();
    events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["name"] == name)
        .map(|e| {
            let reason = e["reason"].as_str().unwrap_or_default().to_string();
            (reason, e["note"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// Servers `local` and `store` and a ready managed PostgreSQL `db` on `local`; its container.
pub async fn database_and_store(ns: &TestNamespace) -> String {
    local_server(ns).await;
    store_server(ns).await;
    create(ns, "db", "postgres", &registry_image("berth/postgres:15")).await;
    wait_ready(&ns.api::<DependencyResource>(), "db").await;
    format!("berth-dep-{}-db", ns.name)
}

#[tokio::test]
async fn a_backup_is_stored_sealed_on_another_server_and_proven_by_a_test_restore() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup").await;
    let container = database_and_store(&ns).await;
    let (written, out) = psql(
        &container,
        "create table orders (id int primary key, note text); \
         insert into orders select g, 'order ' || g from generate_series(1, 1000) g; \
         create schema audit; create table audit.entries (at text); \
         insert into audit.entries values ('a'), ('b')",
    );
    assert!(written, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    let writable = target_ready(&ns, "offsite", ConditionStatus::True).await;
    assert!(writable.contains("takes artifacts"), "{writable}");
    apply(&backup(&ns, "db-1", "offsite"));

    let taken = ended(&ns, "db-1").await;
    let status = taken.status.unwrap();
    assert_eq!(status.status, BackupStatus::Ready, "{status:?}");
    let verification = status.verification.expect("a test restore");
    assert_eq!(
        (verification.tables, verification.rows),
        (Some(2), Some(1002))
    );
    let artifact = status.artifact.expect("an artifact");
    let file = format!("{directory}/{}/db/db-1.berth-backup", ns.name);
    assert_eq!(artifact.location, format!("server-directory://store{file}"));
    let stored = std::fs::read(&file).expect("the artifact at the target");
    assert_eq!(stored.len() as i64, artifact.bytes);
    assert_eq!(hex::encode(Sha256::digest(&stored)), artifact.sha256);
    assert!(stored.starts_with(b"BERTHBK1"), "sealed");
    assert!(
        !stored.windows(5).any(|w| w == b"PGDMP") && !stored.windows(9).any(|w| w == b"order 500"),
        "no plaintext at the target"
    );
    assert!(verification.dump_bytes > 0 && verification.dump_bytes < artifact.bytes);
    assert!(!std::path::Path::new(&format!("{file}.partial")).exists());
    let scratch = format!("berth-verify-{}-db-1", ns.name);
    assert!(
        !docker(&["container", "inspect", &scratch]).0,
        "the throwaway database is gone"
    );
    let notes = event_notes(&ns, "db-1");
    assert!(
        notes
            .iter()
            .any(|(r, n)| r == "BackupVerified" && n.contains("2 tables, 1002 rows")),
        "{notes:?}"
    );
    let password = password(&ns, "db").await;
    assert_not_shown(
        &ns,
        "dependencyresourcebackups,backuptargets",
        "db-1",
        &password,
    );

    // A byte changed at the target: a restore of it is refused, and the database is untouched.
    let mut corrupted = stored.clone();
    corrupted[stored.len() / 2] ^= 0x40;
    std::fs::write(&file, &corrupted).unwrap();
    let (written, out) = psql(&container, "delete from orders where id > 10");
    assert!(written, "{out}");
    apply(&restore(&ns, "db-1-back", "db-1"));
    let failed = restore_ended(&ns, "db-1-back").await;
    assert_eq!(failed.status, RestoreStatus::Failed, "{failed:?}");
    let why = failed.failure_message.unwrap();
    assert!(why.starts_with("nothing was changed: frame"), "{why}");
    assert!(why.contains("does not open"), "{why}");
    assert_eq!(psql(&container, "select count(*) from orders").1, "10");
    let _ = std::fs::remove_dir_all(&directory);
}

fn restore(ns: &TestNamespace, name: &str, backup: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceRestore",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": { "backupId": backup, "targetDependencyResourceId": "db",
                  "acknowledgeDataOverwrite": true },
    })
    .to_string()
}

/// Waits until restore `name` is no longer pending; its status.
pub async fn restore_ended(ns: &TestNamespace, name: &str) -> DependencyResourceRestoreStatus {
    let api = ns.api::<DependencyResourceRestore>();
    eventually(WAIT, &format!("restore {name} ended"), || async {
        let status = api.get_opt(name).await.ok()??.status?;
        (status.status != RestoreStatus::Pending).then_some(status)
    })
    .await
}

#[tokio::test]
async fn a_backup_that_cannot_be_stored_fails_with_its_cause_and_a_person_hears_of_it() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup-fail").await;
    let receiver = Receiver::start().await;
    webhook_channel(&ns, "ops", &receiver, &["backup-failed"]).await;
    local_server(&ns).await;
    store_server(&ns).await;
    create(&ns, "db", "postgres", &registry_image("berth/postgres:15")).await;
    wait_ready(&ns.api::<DependencyResource>(), "db").await;

    // A target that does not exist: refused before anything runs.
    apply(&backup(&ns, "db-nowhere", "nowhere"));
    let refused = ended(&ns, "db-nowhere").await.status.unwrap();
    assert_eq!(refused.status, BackupStatus::Failed);
    assert_eq!(
        refused.failure_message.as_deref(),
        Some("backup target nowhere does not exist")
    );
    assert!(refused.artifact.is_none());

    // A directory the target's server cannot write: the upload fails, saying why.
    apply(&target(&ns, "readonly", "/proc/berth-cannot-write"));
    let why = target_ready(&ns, "readonly", ConditionStatus::False).await;
    assert!(
        why.contains("/proc/berth-cannot-write cannot be written"),
        "{why}"
    );
    apply(&backup(&ns, "db-readonly", "readonly"));
    let failed = ended(&ns, "db-readonly").await.status.unwrap();
    assert_eq!(failed.status, BackupStatus::Failed);
    assert_eq!(failed.failure_code.as_deref(), Some("upload-failed"));
    let message = failed.failure_message.unwrap();
    assert!(message.contains("mkdir"), "{message}");
    assert!(failed.verification.is_none() && failed.artifact.is_none());
    let notes = event_notes(&ns, "db-readonly");
    assert!(notes.iter().any(|(r, _)| r == "BackupFailed"), "{notes:?}");

    // Each failure reached the channel once, naming the backup and its cause.
    let (_, message) = hook(&receiver, "backup-failed").await;
    assert_eq!(message["subject"]["kind"], "DependencyResourceBackup");
    eventually(WAIT, "both failures on the webhook", || async {
        (receiver.hooks("backup-failed").len() == 2).then_some(())
    })
    .await;
    let summaries: Vec<String> = receiver
        .hooks("backup-failed")
        .iter()
        .map(|(_, body)| body["summary"].as_str().unwrap().to_string())
        .collect();
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("backup target nowhere does not exist")),
        "{summaries:?}"
    );
}

pub fn policy(ns: &TestNamespace, name: &str, dependency: &str, spec: Value) -> String {
    let mut spec = spec;
    spec["dependencyResourceId"] = json!(dependency);
    spec["targetId"] = json!("offsite");
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceBackupPolicy",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": spec,
    })
    .to_string()
}

/// Waits until policy `name`'s `Ready` is `status`; the policy.
async fn policy_ready(
    ns: &TestNamespace,
    name: &str,
    status: ConditionStatus,
    wait: Duration,
) -> DependencyResourceBackupPolicy {
    let api = ns.api::<DependencyResourceBackupPolicy>();
    eventually(wait, &format!("policy {name} Ready={status:?}"), || async {
        let policy = api.get_opt(name).await.ok()??;
        let ready = condition::find(&policy.status.as_ref()?.conditions, READY)?;
        (ready.status == status).then_some(policy)
    })
    .await
}

/// The artifacts in a target directory's folder for dependency `db`.
fn artifacts(directory: &str, ns: &TestNamespace) -> Vec<String> {
    let folder = format!("{directory}/{}/db", ns.name);
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_policy_backs_up_each_slot_once_and_keeps_only_what_its_rules_keep_at_the_target() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup-policy").await;
    let container = database_and_store(&ns).await;
    let (written, out) = psql(
        &container,
        "create table ticks (id int); insert into ticks select generate_series(1, 50)",
    );
    assert!(written, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    target_ready(&ns, "offsite", ConditionStatus::True).await;

    // What cannot run says why on the policy.
    apply(&policy(
        &ns,
        "both",
        "db",
        json!({ "schedule": "* * * * *", "intervalHours": 1 }),
    ));
    let both = policy_ready(&ns, "both", ConditionStatus::False, WAIT).await;
    let why = condition::find(&both.status.unwrap().conditions, READY)
        .unwrap()
        .clone();
    assert_eq!(why.reason, "InvalidSpec");
    assert!(why.message.contains("not both"), "{}", why.message);
    apply(&policy(
        &ns,
        "ghost",
        "nothing",
        json!({ "intervalHours": 1 }),
    ));
    let ghost = policy_ready(&ns, "ghost", ConditionStatus::False, WAIT).await;
    let why = condition::find(&ghost.status.unwrap().conditions, READY)
        .unwrap()
        .clone();
    assert!(
        why.message.contains("nothing does not exist"),
        "{}",
        why.message
    );

    // Every minute, keep the newest 2: after the third backup, two remain, objects and files.
    apply(&policy(
        &ns,
        "minutely",
        "db",
        json!({ "schedule": "* * * * *", "retention": { "keepLast": 2 } }),
    ));
    let scheduled = policy_ready(&ns, "minutely", ConditionStatus::True, WAIT).await;
    assert!(scheduled.status.unwrap().next_run_at.is_some());
    let backups = ns.api::<DependencyResourceBackup>();
    let params = kube::api::ListParams::default().labels("berth.dev/backup-policy=minutely");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let kept = eventually(
        Duration::from_secs(420),
        "three slots backed up, two kept",
        || {
            let backups = backups.clone();
            let params = params.clone();
            let seen = seen.clone();
            async move {
                let items = backups.list(&params).await.ok()?.items;
                let slots_seen = {
                    let mut slots_seen = seen.lock().unwrap();
                    for backup in &items {
                        slots_seen.insert(backup.metadata.name.clone()?);
                    }
                    slots_seen.len()
                };
                let ready = items
                    .iter()
                    .filter(|b| b.status.as_ref().map(|s| s.status) == Some(BackupStatus::Ready))
                    .count();
                let settled = items.iter().all(|b| {
                    b.metadata.deletion_timestamp.is_none()
                        && b.status.as_ref().map(|s| s.status) == Some(BackupStatus::Ready)
                });
                (slots_seen >= 3 && ready == 2 && settled && items.len() == 2).then_some(items)
            }
        },
    )
    .await;
    let mut kept_names: Vec<String> = kept
        .iter()
        .map(|b| b.metadata.name.clone().unwrap())
        .collect();
    kept_names.sort();
    let slots_seen = seen.lock().unwrap().clone();
    let newest: Vec<String> = slots_seen.iter().rev().take(2).rev().cloned().collect();
    assert_eq!(kept_names, newest, "the newest two are kept");
    for backup in &kept {
        let slot = backup.spec.slot.scheduled_for.as_deref().expect("its slot");
        let slot: k8s_openapi::jiff::Timestamp = slot.parse().unwrap();
        assert_eq!(
            backup.metadata.name.as_deref(),
            Some(&*format!("minutely-{}", slot.as_second()))
        );
        assert!(!backup.spec.slot.late, "taken on time");
        let verification = backup
            .status
            .as_ref()
            .unwrap()
            .verification
            .as_ref()
            .unwrap();
        assert_eq!(
            (verification.tables, verification.rows),
            (Some(1), Some(50))
        );
    }
    // The policy runs on every minute: its objects, files and count are compared when a
    // next slot is not in flight (one could start between two reads).
    let status = eventually(
        WAIT,
        "two kept: the objects, the files at the target and the policy's count agree",
        || async {
            let items = backups.list(&params).await.ok()?.items;
            let settled = items.len() == 2
                && items.iter().all(|b| {
                    b.metadata.deletion_timestamp.is_none()
                        && b.status.as_ref().map(|s| s.status) == Some(BackupStatus::Ready)
                });
            let mut expected: Vec<String> = items
                .iter()
                .map(|b| format!("{}.berth-backup", b.metadata.name.clone().unwrap()))
                .collect();
            expected.sort();
            let files = artifacts(&directory, &ns);
            let policy = ns
                .api::<DependencyResourceBackupPolicy>()
                .get("minutely")
                .await
                .ok()?;
            let status = policy.status?;
            let verified_kept = status
                .last_verified
                .as_ref()
                .is_some_and(|v| expected.contains(&format!("{}.berth-backup", v.name)));
            (settled && files == expected && status.backups_kept == 2 && verified_kept)
                .then_some(status)
        },
    )
    .await;
    let verified = status.last_verified.expect("a proven restore point");
    assert_eq!(verified.rows, Some(50));

    // Deleting the policy keeps its restore points.
    let names = |list: kube::core::ObjectList<DependencyResourceBackup>| -> Vec<String> {
        let standing = list.items.into_iter();
        let standing = standing.filter(|b| b.metadata.deletion_timestamp.is_none());
        standing.filter_map(|b| b.metadata.name).collect()
    };
    let before = names(backups.list(&params).await.unwrap());
    ns.api::<DependencyResourceBackupPolicy>()
        .delete("minutely", &Default::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = names(backups.list(&params).await.unwrap());
    assert!(
        before.iter().all(|b| after.contains(b)),
        "{before:?} {after:?}"
    );
    let _ = std::fs::remove_dir_all(&directory);
}

/// The backups of dependency `dependency` whose names mark them final.
async fn final_backups(ns: &TestNamespace, dependency: &str) -> Vec<DependencyResourceBackup> {
    let all = ns
        .api::<DependencyResourceBackup>()
        .list(&Default::default())
        .await
        .unwrap();
    let prefix = format!("{dependency}-final-");
    all.items
        .into_iter()
        .filter(|b| {
            b.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect()
}

/// Deleting a database a backup policy covers takes a last backup first and removes the
/// database only once that backup is proven; a final backup that fails keeps the database,
/// saying how to let it go, until its name is typed into `berth.dev/skip-final-backup`.
#[tokio::test]
async fn a_database_a_policy_covers_is_backed_up_once_more_before_it_goes() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup-final").await;
    let container = database_and_store(&ns).await;
    let (written, out) = psql(
        &container,
        "create table orders (id int); insert into orders select generate_series(1, 10)",
    );
    assert!(written, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    target_ready(&ns, "offsite", ConditionStatus::True).await;
    let nightly = json!({ "schedule": "0 3 * * *", "retention": { "keepLast": 3 } });
    apply(&policy(&ns, "nightly", "db", nightly));

    let dependencies = ns.api::<DependencyResource>();
    dependencies
        .delete("db", &Default::default())
        .await
        .unwrap();
    eventually(WAIT, "db deleted after its final backup", || async {
        matches!(dependencies.get_opt("db").await, Ok(None)).then_some(())
    })
    .await;
    let finals = final_backups(&ns, "db").await;
    assert_eq!(finals.len(), 1, "one final backup: {finals:?}");
    let status = finals[0].status.clone().unwrap();
    assert_eq!(status.status, BackupStatus::Ready, "{status:?}");
    assert_eq!(status.verification.unwrap().rows, Some(10));
    assert!(
        !docker(&["inspect", &container]).0,
        "the container went after it"
    );
    assert_eq!(artifacts(&directory, &ns).len(), 1, "its artifact is kept");

    // A policy whose target cannot be written: the final backup fails, the database stays.
    create(&ns, "cache", "redis", &registry_image("berth/redis:7")).await;
    wait_ready(&dependencies, "cache").await;
    apply(&target(&ns, "readonly", "/proc/berth-cannot-write"));
    let mut daily = json!({ "intervalHours": 24 });
    daily["dependencyResourceId"] = json!("cache");
    daily["targetId"] = json!("readonly");
    let daily = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceBackupPolicy",
        "metadata": { "name": "cache-daily", "namespace": ns.name }, "spec": daily,
    });
    apply(&daily.to_string());
    dependencies
        .delete("cache", &Default::default())
        .await
        .unwrap();
    let why = eventually(WAIT, "cache kept after its final backup failed", || async {
        let cache = dependencies.get_opt("cache").await.ok()??;
        let blocked = condition::find(&cache.status?.conditions, "DeletionBlocked")?.clone();
        blocked
            .message
            .contains("failed")
            .then_some(blocked.message)
    })
    .await;
    assert!(why.contains("berth.dev/skip-final-backup=cache"), "{why}");
    let cache_container = format!("berth-dep-{}-cache", ns.name);
    assert!(
        docker(&["inspect", &cache_container]).0,
        "the database is kept"
    );
    let typed = json!({"metadata": {"annotations": {"berth.dev/skip-final-backup": "cache"}}});
    dependencies
        .patch(
            "cache",
            &Default::default(),
            &kube::api::Patch::Merge(&typed),
        )
        .await
        .unwrap();
    eventually(WAIT, "cache deleted once its name was typed", || async {
        matches!(dependencies.get_opt("cache").await, Ok(None)).then_some(())
    })
    .await;
    assert!(!docker(&["inspect", &cache_container]).0);
    let _ = std::fs::remove_dir_all(&directory);
}
