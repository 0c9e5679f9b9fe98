//! Backups over REST (Appaloft's `/dependency-resources/{id}/backups` routes, Berth's
//! `/backup-targets`): bad input is refused by field and creates nothing; a backup asked for
//! over REST is taken, stored sealed and proven, and its record shows what the test restore
//! counted; it restores in place (after more rows were written) and into a clone (the source
//! untouched), each only with both acknowledgements; another organization cannot see it. A
//! Redis's snapshot is backed up, proven by its keys and restored in place and into a clone.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::TestOrg;
use berth_tests::{client, eventually};
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::dependency_resources::{docker, psql, registry_image};
use crate::shim_dependency_resources::{Setup, setup};
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(240);
/// Rows of the `payload` table (about 300 bytes each).
const PAYLOAD_ROWS: i64 = 120_000;

#[tokio::test]
async fn shim_backup_is_refused_by_field_then_taken_and_proven_over_rest() {
    registry_image("berth/postgres:15");
    let s = setup().await;
    let db = s.provision("postgres", "Orders DB").await;
    s.wait_ready(&db).await;
    let (written, out) = psql(
        &s.container(&db),
        "create table orders (id int); insert into orders select generate_series(1, 250)",
    );
    assert!(written, "{out}");
    // About 36 MB of random text (a dump of some 17 MB), far beyond an SSH channel's window:
    // the dump and the upload share the server (the target is on it too) and must not hold
    // each other up.
    let random = ["md5(random()::text)"; 9].join(" || ");
    let (written, out) = psql(
        &s.container(&db),
        &format!(
            "create table payload (body text); insert into payload select {random} \
             from generate_series(1, {PAYLOAD_ROWS})"
        ),
    );
    assert!(written, "{out}");
    let backups = format!("/dependency-resources/{db}/backups");

    // No target yet: blocked, saying what to do.
    let error = s
        .member
        .post(&backups, json!({}))
        .await
        .error(409, "dependency_resource_backup_blocked");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("POST /backup-targets"),
        "{error}"
    );

    // Targets: administrators add them; a bad path or server is named.
    let directory = format!("/tmp/berth-test-backups/{}", s.org.namespace);
    let target = |path: &str, server: &str| json!({"name": "Offsite", "kind": "server-directory", "serverId": server, "path": path});
    s.member
        .post("/backup-targets", target(&directory, &s.server))
        .await
        .error(403, "forbidden");
    invalid(
        s.admin
            .post("/backup-targets", target("relative/dir", &s.server))
            .await,
        "path",
    );
    let unknown = s
        .admin
        .post("/backup-targets", target(&directory, "srv-nope"))
        .await;
    assert_eq!(
        unknown.error(404, "not_found")["details"]["field"],
        "serverId"
    );
    let created = s
        .admin
        .post("/backup-targets", target(&directory, &s.server))
        .await
        .expect(201);
    let target_id = created["id"].as_str().unwrap().to_string();
    let listed = eventually(WAIT, "the target checked writable", || async {
        let list = s.member.get("/backup-targets").await.ok();
        (list["items"][0]["ready"] == true).then_some(list)
    })
    .await;
    assert_eq!(listed["schemaVersion"], "backup-targets.list/v1");
    assert_eq!(listed["items"][0]["id"], target_id.as_str());

    // Bad backup requests name their field and create nothing.
    invalid(
        s.member.post(&backups, json!({"providerKey": "s3"})).await,
        "providerKey",
    );
    invalid(
        s.member
            .post(&backups, json!({"targetId": "bkt-nope"}))
            .await,
        "targetId",
    );
    invalid(
        s.member.post(&backups, json!({"when": "now"})).await,
        "when",
    );
    let empty = s.member.get(&backups).await.ok();
    assert_eq!(empty["items"], json!([]), "{empty}");

    // Taken, stored and proven.
    let created = s
        .member
        .post(&backups, json!({"description": "before the migration"}))
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let shown: Value = eventually(WAIT, "the backup ready", || async {
        let shown = s
            .member
            .get(&format!("/dependency-resources/backups/{id}"))
            .await
            .ok();
        (shown["backup"]["status"] != "pending").then_some(shown)
    })
    .await;
    assert_eq!(
        shown["schemaVersion"],
        "dependency-resources.backups.show/v1"
    );
    let backup = &shown["backup"];
    assert_eq!(backup["status"], "ready", "{shown}");
    assert_eq!(backup["dependencyResourceId"], db.as_str());
    assert_eq!(backup["dependencyKind"], "postgres");
    assert_eq!(backup["providerKey"], "berth-sealed-pg-dump");
    assert_eq!(backup["targetId"], target_id.as_str());
    assert_eq!(backup["description"], "before the migration");
    assert_eq!(backup["verification"]["tables"], 2, "{shown}");
    assert_eq!(
        backup["verification"]["rows"],
        250 + PAYLOAD_ROWS,
        "{shown}"
    );
    assert!(
        backup["artifact"]["bytes"].as_i64().unwrap() > 8_000_000,
        "{shown}"
    );
    let handle = backup["providerArtifactHandle"].as_str().unwrap();
    assert!(handle.ends_with(&format!("{id}.berth-backup")), "{handle}");
    assert!(backup["completedAt"].as_str().is_some() && backup["failureCode"].is_null());

    let list = s.member.get(&backups).await.ok();
    assert_eq!(
        list["schemaVersion"],
        "dependency-resources.backups.list/v1"
    );
    assert_eq!(list["items"][0]["id"], id.as_str());
    let failed_only = s.member.get(&format!("{backups}?status=failed")).await.ok();
    assert_eq!(failed_only["items"], json!([]));
    invalid(
        s.member.get(&format!("{backups}?status=done")).await,
        "status",
    );

    listed_by_the_cli(&s, &db, &id).await;
    restored_in_place_and_into_a_clone(&s, &db, &id).await;

    // Another organization sees nothing of it.
    let mut other = TestOrg::new(&client().await).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("/dependency-resources/backups/{id}"))
        .await
        .error(404, "not_found");
    outsider.get(&backups).await.error(404, "not_found");
    let _ = std::fs::remove_dir_all(&directory);
}

/// Rows of `orders` in dependency `id`'s database.
fn orders(s: &Setup, id: &str) -> String {
    let (ok, rows) = psql(&s.container(id), "select count(*) from orders");
    assert!(ok, "{rows}");
    rows
}

/// Restores `backup` (250 orders) in place after more rows were written, then into a new
/// database while the source moves on: each ends with the backup's rows, the source untouched.
async fn restored_in_place_and_into_a_clone(s: &Setup, db: &str, backup: &str) {
    let shown = format!("/dependency-resources/backups/{backup}");
    let path = format!("{shown}/restore");
    let acknowledged =
        json!({"acknowledgeDataOverwrite": true, "acknowledgeRuntimeNotRestarted": true});
    invalid(
        s.member.post(&path, json!({})).await,
        "acknowledgeDataOverwrite",
    );
    let half = json!({"acknowledgeDataOverwrite": true});
    invalid(
        s.member.post(&path, half).await,
        "acknowledgeRuntimeNotRestarted",
    );
    let unknown = json!({"acknowledgeDataOverwrite": true, "acknowledgeRuntimeNotRestarted": true,
                         "targetDependencyResourceId": "dep-nope"});
    let error = s.member.post(&path, unknown).await.error(404, "not_found");
    assert_eq!(error["details"]["field"], "targetDependencyResourceId");
    let untouched = s.member.get(&shown).await.ok();
    assert!(
        untouched["backup"]["latestRestoreAttempt"].is_null(),
        "{untouched}"
    );

    let (written, out) = psql(
        &s.container(db),
        "insert into orders select generate_series(251, 300)",
    );
    assert!(written, "{out}");
    assert_eq!(orders(s, db), "300");
    let attempt = s.member.post(&path, acknowledged.clone()).await.expect(202);
    let ended = restore_ended(s, &shown, attempt["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["targetDependencyResourceId"], db);
    assert_eq!(ended["report"]["tables"], 2, "{ended}");
    assert_eq!(ended["report"]["rows"], 250 + PAYLOAD_ROWS, "{ended}");
    assert_eq!(orders(s, db), "250", "restored in place");

    // Into a clone: the source moves on and is not touched.
    let copy = s.provision("postgres", "Orders Copy").await;
    s.wait_ready(&copy).await;
    let (written, out) = psql(&s.container(db), "insert into orders values (999)");
    assert!(written, "{out}");
    let mut into_copy = acknowledged;
    into_copy["targetDependencyResourceId"] = json!(copy);
    let attempt = s.member.post(&path, into_copy).await.expect(202);
    let ended = restore_ended(s, &shown, attempt["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["targetDependencyResourceId"], copy.as_str());
    assert_eq!(orders(s, &copy), "250", "the clone holds the backup");
    assert_eq!(orders(s, db), "251", "the source is untouched");
}

/// Waits until the backup's latest restore is `attempt` and has ended; returns it.
pub(crate) async fn restore_ended(s: &Setup, shown: &str, attempt: &str) -> Value {
    eventually(WAIT, &format!("restore {attempt} ended"), || async {
        let latest = s.member.get(shown).await.ok()["backup"]["latestRestoreAttempt"].clone();
        (latest["attemptId"] == attempt && latest["status"] != "pending").then_some(latest)
    })
    .await
}

/// `berth backups list` shows the backup ready with its counts; a restore without `--yes`
/// is refused before anything is sent.
async fn listed_by_the_cli(s: &Setup, db: &str, backup: &str) {
    let berth = Berth::new();
    let token = s.member.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let table = berth
        .run_with(&binary(), &["backups", "list", db], None, &env)
        .await
        .ok();
    let line = table
        .lines()
        .find(|l| l.contains(backup))
        .unwrap_or_default();
    let rows = (250 + PAYLOAD_ROWS).to_string();
    assert!(line.contains("ready") && line.contains(&rows), "{table}");
    let refused = berth
        .run_with(&binary(), &["backups", "restore", backup], None, &env)
        .await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("--yes"), "{refused:?}");
}

/// Backup policies over REST (Appaloft's `/dependency-resources/backup-policies`) and the CLI:
/// bad input is refused by field and stores nothing; a policy is created, shown with its next
/// run, changed in the fields given (the rest kept), and hidden from another organization.
#[tokio::test]
async fn shim_backup_policy_is_refused_by_field_then_configured_over_rest_and_the_cli() {
    registry_image("berth/postgres:15");
    let s = setup().await;
    let db = s.provision("postgres", "Ledger DB").await;
    let directory = format!("/tmp/berth-test-backups/{}", s.org.namespace);
    let target = json!({"name": "Offsite", "kind": "server-directory", "serverId": s.server,
                        "path": directory});
    s.admin.post("/backup-targets", target).await.expect(201);
    let policies = "/dependency-resources/backup-policies";
    let with = |fields: Value| {
        let mut body = json!({"dependencyResourceId": db});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        body
    };
    for (fields, field) in [
        (json!({}), "scheduleIntervalHours"),
        (json!({"scheduleIntervalHours": 0}), "scheduleIntervalHours"),
        (
            json!({"scheduleIntervalHours": 6, "schedule": "@daily"}),
            "scheduleIntervalHours",
        ),
        (json!({"schedule": "every night"}), "schedule"),
        (
            json!({"schedule": "0 3 * * *", "timezone": "Mars/Olympus"}),
            "timezone",
        ),
        (
            json!({"scheduleIntervalHours": 6, "keepLast": 0}),
            "keepLast",
        ),
        (
            json!({"scheduleIntervalHours": 6, "retryOnFailure": false}),
            "retryOnFailure",
        ),
        (
            json!({"scheduleIntervalHours": 6, "nextRunAt": "2026-12-04T00:00:00Z"}),
            "nextRunAt",
        ),
        (
            json!({"scheduleIntervalHours": 6, "targetId": "bkt-nope"}),
            "targetId",
        ),
    ] {
        invalid(s.member.post(policies, with(fields)).await, field);
    }
    let unknown = s
        .member
        .post(
            policies,
            json!({"dependencyResourceId": "dep-nope", "scheduleIntervalHours": 6}),
        )
        .await;
    assert_eq!(
        unknown.error(404, "not_found")["details"]["field"],
        "dependencyResourceId"
    );
    let empty = s.member.get(policies).await.ok();
    assert_eq!(empty["items"], json!([]), "nothing stored: {empty}");

    // Created (Appaloft's fields), then scheduled by the controller.
    let created = s
        .member
        .post(
            policies,
            with(json!({"scheduleIntervalHours": 24, "retentionDays": 7})),
        )
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let shown_path = format!("{policies}/{id}");
    let shown = eventually(WAIT, "the policy scheduled", || async {
        let shown = s.member.get(&shown_path).await.ok();
        shown["policy"]["nextRunAt"].is_string().then_some(shown)
    })
    .await;
    assert_eq!(
        shown["schemaVersion"],
        "dependency-resource-backup-policies.show/v1"
    );
    let policy = &shown["policy"];
    assert_eq!(
        policy["schemaVersion"],
        "dependency-resource-backup-policies.policy/v1"
    );
    assert_eq!(policy["dependencyResourceId"], db.as_str());
    assert_eq!(policy["scheduleIntervalHours"], 24);
    assert_eq!(policy["retentionDays"], 7);
    assert_eq!(policy["providerKey"], "berth-sealed-pg-dump");
    assert_eq!(policy["enabled"], true);
    assert_eq!(policy["ready"], true, "{shown}");
    let next: k8s_openapi::jiff::Timestamp = policy["nextRunAt"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        next.as_second() % 86_400,
        0,
        "every 24 h counts from midnight UTC"
    );

    // Changed in the fields given, the rest kept; the same policy, not a second.
    let changed = s
        .member
        .post(policies, with(json!({"keepLast": 3, "enabled": false})))
        .await
        .expect(200);
    assert_eq!(changed["id"], id.as_str());
    let shown = eventually(WAIT, "the change seen", || async {
        let shown = s.member.get(&shown_path).await.ok();
        (shown["policy"]["enabled"] == false && shown["policy"]["nextRunAt"].is_null())
            .then_some(shown)
    })
    .await;
    assert_eq!(shown["policy"]["keepLast"], 3);
    assert_eq!(shown["policy"]["retentionDays"], 7);
    assert_eq!(shown["policy"]["scheduleIntervalHours"], 24);
    let list = s
        .member
        .get(&format!("{policies}?dependencyResourceId={db}"))
        .await
        .ok();
    assert_eq!(
        list["schemaVersion"],
        "dependency-resource-backup-policies.list/v1"
    );
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    let enabled = s
        .member
        .get(&format!("{policies}?enabledOnly=true"))
        .await
        .ok();
    assert_eq!(enabled["items"], json!([]));

    // The CLI sets and lists it.
    let berth = Berth::new();
    let token = s.member.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let saved = berth
        .run_with(
            &binary(),
            &[
                "backups",
                "policy",
                &db,
                "--schedule",
                "30 2 * * *",
                "--timezone",
                "Europe/Berlin",
                "--enable",
            ],
            None,
            &env,
        )
        .await
        .ok();
    assert!(saved.contains(&id), "{saved}");
    let table = eventually(WAIT, "the CLI lists the cron schedule", || async {
        let table = berth
            .run_with(&binary(), &["backups", "policies"], None, &env)
            .await
            .ok();
        table
            .contains("30 2 * * * (Europe/Berlin)")
            .then_some(table)
    })
    .await;
    assert!(table.contains(&id), "{table}");
    let refused = berth
        .run_with(
            &binary(),
            &["backups", "policy", &db, "--keep-last", "0"],
            None,
            &env,
        )
        .await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("keepLast"), "{refused:?}");

    let mut other = TestOrg::new(&client().await).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider.get(&shown_path).await.error(404, "not_found");
    assert_eq!(outsider.get(policies).await.ok()["items"], json!([]));
    let _ = std::fs::remove_dir_all(&directory);
}

/// A managed Redis over REST: its snapshot is taken from the live server, stored sealed (no
/// `REDIS` magic, no value in clear at the target) and proven by loading it into a throwaway
/// Redis whose keys are counted over every logical database; the PostgreSQL provider is
/// refused for it by field. It restores in place (keys changed since are back as they were,
/// with the server's own password) and into a second Redis (the source untouched); never into
/// a PostgreSQL.
#[tokio::test]
async fn shim_redis_backup_is_proven_by_its_keys_and_restored_in_place_and_into_a_clone() {
    registry_image("berth/redis:7");
    registry_image("berth/postgres:15");
    let s = setup().await;
    let cache = s.provision("redis", "Sessions").await;
    let copy = s.provision("redis", "Sessions copy").await;
    let ledger = s.provision("postgres", "Ledger").await;
    s.wait_ready(&cache).await;
    let container = s.container(&cache);
    let (filled, out) = redis_cli(&container, "0", &fill_script(1000));
    assert!(filled, "{out}");
    let (filled, out) = redis_cli(&container, "3", &fill_script(5));
    assert!(filled, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", s.org.namespace);
    let target = json!({"name": "Offsite", "kind": "server-directory", "serverId": s.server,
                        "path": directory});
    s.admin.post("/backup-targets", target).await.expect(201);
    let backups = format!("/dependency-resources/{cache}/backups");
    let refused = s
        .member
        .post(&backups, json!({"providerKey": "berth-sealed-pg-dump"}))
        .await;
    let error = refused.error(422, "validation_error");
    assert_eq!(error["details"]["field"], "providerKey", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("berth-sealed-redis-rdb"),
        "{error}"
    );
    assert_eq!(s.member.get(&backups).await.ok()["items"], json!([]));

    let created = s
        .member
        .post(&backups, json!({"providerKey": "berth-sealed-redis-rdb"}))
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let shown = ended_backup(&s, &id).await;
    let backup = &shown["backup"];
    assert_eq!(backup["status"], "ready", "{shown}");
    assert_eq!(backup["dependencyKind"], "redis");
    assert_eq!(backup["providerKey"], "berth-sealed-redis-rdb");
    assert_eq!(backup["verification"]["keys"], 1005, "{shown}");
    assert!(backup["verification"]["tables"].is_null(), "{shown}");
    let file = format!("{directory}/{}/{cache}/{id}.berth-backup", s.org.namespace);
    let stored = std::fs::read(&file).expect("the artifact at the target");
    assert_eq!(stored.len() as i64, backup["artifact"]["bytes"]);
    assert!(stored.starts_with(b"BERTHBK1"), "sealed");
    assert!(
        !stored.windows(5).any(|w| w == b"REDIS")
            && !stored.windows(17).any(|w| w == b"value-of-session-"),
        "no snapshot in clear at the target"
    );
    let scratch = format!("berth-verify-{}-{id}", s.org.namespace);
    assert!(
        !docker(&["container", "inspect", &scratch]).0,
        "the throwaway Redis is gone"
    );
    let berth = Berth::new();
    let token = s.member.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let table = berth
        .run_with(&binary(), &["backups", "list", &cache], None, &env)
        .await
        .ok();
    let line = table.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(
        line.contains("redis") && line.contains("1005 keys"),
        "{table}"
    );

    // Never into a PostgreSQL.
    let shown_path = format!("/dependency-resources/backups/{id}");
    let restore_path = format!("{shown_path}/restore");
    let acknowledged = |into: Option<&str>| {
        let mut body = json!({"acknowledgeDataOverwrite": true,
                              "acknowledgeRuntimeNotRestarted": true});
        if let Some(into) = into {
            body["targetDependencyResourceId"] = json!(into);
        }
        body
    };
    s.wait_ready(&ledger).await;
    let error = s
        .member
        .post(&restore_path, acknowledged(Some(&ledger)))
        .await
        .error(409, "dependency_resource_restore_blocked");
    assert!(
        error["message"].as_str().unwrap().contains("is a postgres"),
        "{error}"
    );

    // In place: a key changed, one removed, one added since the backup; all as they were after.
    let (changed, out) = redis_cli(
        &container,
        "0",
        "redis.call('SET', 'session:1', 'changed'); redis.call('DEL', 'session:2'); \
         redis.call('SET', 'written-later', 'x')",
    );
    assert!(changed, "{out}");
    let requested = s
        .member
        .post(&restore_path, acknowledged(None))
        .await
        .expect(202);
    let attempt = restore_ended(&s, &shown_path, requested["id"].as_str().unwrap()).await;
    assert_eq!(attempt["status"], "completed", "{attempt}");
    assert_eq!(attempt["report"]["keys"], 1005, "{attempt}");
    assert_eq!(redis_get(&container, "session:1"), "value-of-session-1");
    assert_eq!(redis_get(&container, "session:2"), "value-of-session-2");
    assert_eq!(redis_get(&container, "written-later"), "");
    let replication = docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "REDISCLI_AUTH=\"$REDIS_PASSWORD\" redis-cli INFO replication",
    ]);
    assert!(
        replication.1.contains("role:master"),
        "a primary again: {replication:?}"
    );

    // Into a clone: the copy holds the backup's keys; the source is untouched.
    s.wait_ready(&copy).await;
    let (written, out) = redis_cli(&container, "0", "redis.call('SET', 'after-restore', 'y')");
    assert!(written, "{out}");
    let requested = s
        .member
        .post(&restore_path, acknowledged(Some(&copy)))
        .await
        .expect(202);
    let attempt = restore_ended(&s, &shown_path, requested["id"].as_str().unwrap()).await;
    assert_eq!(attempt["status"], "completed", "{attempt}");
    assert_eq!(attempt["targetDependencyResourceId"], copy.as_str());
    let copied = s.container(&copy);
    assert_eq!(redis_get(&copied, "session:500"), "value-of-session-500");
    assert_eq!(redis_get(&copied, "after-restore"), "");
    assert_eq!(redis_get(&container, "after-restore"), "y");
    let _ = std::fs::remove_dir_all(&directory);
}

/// A Lua script that sets `count` keys `session:<i>`.
fn fill_script(count: u32) -> String {
    format!("for i=1,{count} do redis.call('SET', 'session:' .. i, 'value-of-session-' .. i) end")
}

/// Runs the Lua `script` in the Redis of `container`, logical database `database`, signed in
/// with the container's own password (never a command line here).
fn redis_cli(container: &str, database: &str, script: &str) -> (bool, String) {
    let command =
        format!("REDISCLI_AUTH=\"$REDIS_PASSWORD\" redis-cli -n {database} EVAL \"{script}\" 0");
    docker(&["exec", container, "sh", "-c", &command])
}

/// The value of `key` in database 0 of the Redis of `container` (empty when there is none).
fn redis_get(container: &str, key: &str) -> String {
    let (_, value) = redis_cli(
        container,
        "0",
        &format!("return redis.call('GET', '{key}')"),
    );
    value
}

/// Waits until backup `id` is no longer pending; its `show` answer.
async fn ended_backup(s: &Setup, id: &str) -> Value {
    eventually(WAIT, &format!("backup {id} ended"), || async {
        let shown = s
            .member
            .get(&format!("/dependency-resources/backups/{id}"))
            .await
            .ok();
        (shown["backup"]["status"] != "pending").then_some(shown)
    })
    .await
}
