//! Backups over REST (Appaloft's `/dependency-resources/{id}/backups` routes, Berth's
//! `/backup-targets`): bad input is refused by field and creates nothing; a backup asked for
//! over REST is taken, stored sealed and proven, and its record shows what the test restore
//! counted; it restores in place (after more rows were written) and into a clone (the source
//! untouched), each only with both acknowledgements; another organization cannot see it.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::TestOrg;
use berth_tests::{client, eventually};
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::dependency_resources::{psql, registry_image};
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
async fn restore_ended(s: &Setup, shown: &str, attempt: &str) -> Value {
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
