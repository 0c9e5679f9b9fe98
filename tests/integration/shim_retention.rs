//! Retention defaults (spec §4.5) against the real stack: the system defaults berth-controller
//! creates, an organization's own policy set through `POST /retention-defaults`, and its
//! scheduled runs over the observation store: a dry run reports what it would delete and
//! deletes nothing; a destructive run deletes the old rows and keeps the recent ones, for
//! monitoring samples and for the audit events the REST API lists.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{
    MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};
use berth_observations::{AuditRecord, History, ObservationStore, SampleRecord, StoreLocation};
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, kubectl};
use serde_json::{Value, json};

use crate::shim_projects_envs::invalid;
use crate::shim_tokens::create_token;

const CATEGORY: &str = "runtime-monitoring-samples";
const RUN: Duration = Duration::from_secs(60);
const HOUR_MS: i64 = 3_600_000;

/// The store berth-controller writes (`hack/test.sh` runs it on the data directory's SQLite).
fn store() -> std::sync::Arc<dyn ObservationStore> {
    let dir = std::env::var("BERTH_DATA_DIR").expect("BERTH_DATA_DIR (hack/test.sh sets it)");
    berth_observations::open(&StoreLocation::in_data_dir(&PathBuf::from(dir))).expect("open store")
}

/// A host sample of `namespace` observed `hours_ago`.
fn sample(namespace: &str, hours_ago: i64) -> SampleRecord {
    let at = berth_observations::now_ms() - hours_ago * HOUR_MS;
    let stamp = k8s_openapi::jiff::Timestamp::from_millisecond(at)
        .unwrap()
        .to_string();
    SampleRecord {
        namespace: namespace.into(),
        observed_ms: at,
        sample: MonitoringSample {
            sample_id: format!("{namespace}/retention:{at}"),
            observed_at: stamp.clone(),
            collected_at: stamp,
            scope_evidence: ScopeEvidence {
                scope: Some(ScopeKind::Server),
                server_id: "retention-test".into(),
                ..ScopeEvidence::default()
            },
            totals: Totals {
                load1: Some(0.5),
                ..Totals::default()
            },
            freshness: "live".into(),
            partial: false,
            labels: SampleLabels {
                provider_key: PROVIDER_KEY.into(),
                artifact_kind: "host".into(),
                runtime_id: None,
            },
            warnings: Vec::new(),
            source_errors: Vec::new(),
        },
    }
}

/// The organization's policy of `category` once a run of `mode` for its current spec is in
/// `lastRun`.
async fn wait_run(
    rest: &Rest,
    category: &str,
    mode: &str,
    generation_changed_after: &str,
) -> Value {
    let path = format!("/retention-defaults/{category}?scope=organization");
    eventually(RUN, &format!("a {mode} run"), || async {
        let policy = rest.get(&path).await.ok()["policy"].clone();
        let run = &policy["lastRun"];
        let fresh = run["at"]
            .as_str()
            .is_some_and(|at| at > generation_changed_after);
        (run["mode"] == mode && fresh).then_some(policy)
    })
    .await
}

/// A REST write of project `project` in `namespace` made `hours_ago`, as the shim records one
/// (`crate::audit` of berth-shim): what `GET /audit-events` lists as a `project.updated`.
fn audit_record(namespace: &str, project: &str, hours_ago: i64) -> AuditRecord {
    AuditRecord {
        id: format!("aud-{namespace}-{hours_ago}h"),
        namespace: namespace.into(),
        occurred_ms: berth_observations::now_ms() - hours_ago * HOUR_MS,
        object_kind: "Project".into(),
        object_id: project.into(),
        resource: String::new(),
        actor_kind: "user".into(),
        actor_id: "usr-retention-test".into(),
        action: "POST /projects/{projectId}/rename".into(),
        detail: json!({
            "verb": "updated",
            "created": false,
            "deleted": false,
            "changes": [{"field": "spec.name"}],
        })
        .to_string(),
    }
}

/// The audit events of `aggregate` as `GET /audit-events` lists them: id → event.
async fn audit_events(rest: &Rest, aggregate: &str) -> BTreeMap<String, Value> {
    let list = rest
        .get(&format!("/audit-events?aggregateId={aggregate}&limit=100"))
        .await
        .ok();
    assert_eq!(list["schemaVersion"], "audit-events.list/v1");
    assert_eq!(
        list["nextCursor"],
        Value::Null,
        "one page holds them: {list}"
    );
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["auditEventId"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

fn policy_event_reasons(namespace: &str) -> Vec<String> {
    let output = kubectl(
        &["get", "events.events.k8s.io", "-n", namespace, "-o", "json"],
        None,
    );
    assert!(output.status.success(), "kubectl get events failed");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["regarding"]["kind"] == "RetentionPolicy")
        .filter_map(|e| e["reason"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn every_category_has_a_system_default_and_bad_input_is_refused() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let list = admin
        .rest
        .get("/retention-defaults?scope=system")
        .await
        .ok();
    assert_eq!(list["schemaVersion"], "retention-defaults.list/v1");
    let categories: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["category"].as_str().unwrap())
        .collect();
    assert_eq!(
        categories,
        [
            "audit-rows",
            "domain-event-streams",
            "process-attempts",
            "provider-job-logs",
            "resource-runtime-log-archives",
            "runtime-monitoring-samples",
        ]
    );
    let shown = admin
        .rest
        .get(&format!("/retention-defaults/{CATEGORY}"))
        .await
        .ok();
    assert_eq!(shown["schemaVersion"], "retention-defaults.show/v1");
    let policy = &shown["policy"];
    assert_eq!(policy["schemaVersion"], "retention-defaults.policy/v1");
    assert_eq!(policy["scope"], "system");
    assert_eq!(policy["id"], format!("system.{CATEGORY}"));
    // Seeded from berth-controller's `--monitoring-retention-hours` (168): samples are deleted
    // after 7 days, by this policy and nothing else.
    assert_eq!(policy["retentionDays"], 7);
    assert_eq!(policy["destructiveSchedulingEnabled"], true);
    assert_eq!(policy["enabled"], true);
    // Nothing of the organization's own yet: the system default applies.
    let own = admin
        .rest
        .get(&format!(
            "/retention-defaults/{CATEGORY}?scope=organization"
        ))
        .await;
    own.error(404, "not_found");

    let post = |body: Value| admin.rest.post("/retention-defaults", body);
    invalid(
        post(json!({"category": "logs", "retentionDays": 1})).await,
        "category",
    );
    invalid(
        post(json!({"category": CATEGORY, "retentionDays": 0})).await,
        "retentionDays",
    );
    invalid(post(json!({"category": CATEGORY})).await, "retentionDays");
    invalid(
        post(json!({"category": CATEGORY, "retentionDays": 1, "scope": "global"})).await,
        "scope",
    );
    invalid(admin.rest.get("/retention-defaults/logs").await, "category");
    invalid(
        admin
            .rest
            .get("/retention-defaults?enabledOnly=maybe")
            .await,
        "enabledOnly",
    );
    // System defaults are the first administrator's to change, not an organization admin's.
    let system = json!({"category": "audit-rows", "retentionDays": 400, "scope": "system"});
    admin
        .rest
        .post("/retention-defaults", system)
        .await
        .error(403, "forbidden");
    let list = admin
        .rest
        .get("/retention-defaults?scope=organization")
        .await
        .ok();
    assert_eq!(list["items"], json!([]), "a refused write changed nothing");

    let first_admin = Rest::admin().await;
    let answer = first_admin
        .post(
            "/retention-defaults",
            json!({"category": "audit-rows", "retentionDays": 400, "scope": "system"}),
        )
        .await
        .ok();
    assert_eq!(answer["id"], "system.audit-rows");
    assert_eq!(answer["policy"]["retentionDays"], 400);
    assert_eq!(answer["policy"]["updatedByActorKind"], "user");
    first_admin
        .post(
            "/retention-defaults",
            json!({"category": "audit-rows", "retentionDays": 365, "scope": "system"}),
        )
        .await
        .ok();
}

#[tokio::test]
async fn a_dry_run_reports_old_samples_and_a_destructive_run_deletes_only_them() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let store = store();
    let old: Vec<SampleRecord> = (0..5).map(|n| sample(&org.namespace, 72 + n)).collect();
    let recent: Vec<SampleRecord> = (1..4).map(|n| sample(&org.namespace, n)).collect();
    store.record_samples(&old).unwrap();
    store.record_samples(&recent).unwrap();
    let cutoff = berth_observations::now_ms() - 48 * HOUR_MS;
    let samples = History::MonitoringSamples;

    let before = k8s_openapi::jiff::Timestamp::now().to_string();
    let answer = admin
        .rest
        .post(
            "/retention-defaults",
            json!({"category": CATEGORY, "retentionDays": 2, "dryRunSchedulingEnabled": true}),
        )
        .await
        .ok();
    assert_eq!(answer["id"], format!("{}.{CATEGORY}", org.id));
    assert_eq!(answer["policy"]["scope"], "organization");
    assert_eq!(answer["policy"]["organizationId"], org.id);
    assert_eq!(answer["policy"]["updatedByActorKind"], "user");
    let policy = wait_run(&admin.rest, CATEGORY, "dry-run", &before).await;
    let run = &policy["lastRun"];
    assert_eq!(run["matchedRows"]["monitoring-samples"], 5, "{run}");
    assert_eq!(run["deletedRows"], 0);
    assert_eq!(run["namespaces"], json!([org.namespace]));
    assert_eq!(
        store.count_before(&org.namespace, samples, cutoff).unwrap(),
        5,
        "a dry run deletes nothing"
    );
    assert!(policy_event_reasons(&org.namespace).contains(&"RetentionDryRun".to_string()));

    // Changed by a deploy token: the record says so. Omitted flags keep their values.
    let (_, token) = create_token(&admin.rest, &org.id, json!({})).await;
    let automation = admin.rest.with_token(&token);
    let before = k8s_openapi::jiff::Timestamp::now().to_string();
    let answer = automation
        .post(
            "/retention-defaults",
            json!({"category": CATEGORY, "retentionDays": 2, "destructiveSchedulingEnabled": true}),
        )
        .await
        .ok();
    assert_eq!(answer["policy"]["updatedByActorKind"], "deploy-token");
    assert_eq!(answer["policy"]["dryRunSchedulingEnabled"], true);
    let policy = wait_run(&admin.rest, CATEGORY, "destructive", &before).await;
    assert_eq!(policy["lastRun"]["deletedRows"], 5, "{policy}");
    assert_eq!(
        store.count_before(&org.namespace, samples, cutoff).unwrap(),
        0
    );
    let now = berth_observations::now_ms();
    assert_eq!(
        store.count_before(&org.namespace, samples, now).unwrap(),
        3,
        "the recent samples stay"
    );
    assert!(policy_event_reasons(&org.namespace).contains(&"RetentionPruned".to_string()));
    let listed = admin
        .rest
        .get("/retention-defaults?scope=organization&enabledOnly=true")
        .await
        .ok();
    assert_eq!(listed["items"][0]["id"], format!("{}.{CATEGORY}", org.id));
}

/// Issue 45: the `audit-rows` policy prunes the audit events a user reads through
/// `GET /audit-events`. Records older than the window (written into the store backdated, as the
/// shim records a REST write) are counted by a dry run and still listed, then deleted by a
/// destructive run and no longer listed; records inside the window, and the policy write's own
/// audit event, stay listed.
#[tokio::test]
async fn the_audit_rows_policy_prunes_old_audit_events_and_keeps_recent_ones() {
    const AUDIT_ROWS: &str = "audit-rows";
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let store = store();
    let project = format!("prj-{}-retention", org.id);
    // A window of 2 days: three changes from 3 days ago and older go, yesterday's and the last
    // hour's stay.
    let old: Vec<AuditRecord> = (72..75)
        .map(|h| audit_record(&org.namespace, &project, h))
        .collect();
    let recent: Vec<AuditRecord> = [24, 1]
        .into_iter()
        .map(|h| audit_record(&org.namespace, &project, h))
        .collect();
    store.record_audit(&old).unwrap();
    store.record_audit(&recent).unwrap();
    let old_ids: Vec<&str> = old.iter().map(|r| r.id.as_str()).collect();
    let recent_ids: Vec<&str> = recent.iter().map(|r| r.id.as_str()).collect();

    // Before any run the user sees all five, at the times they were made.
    let listed = audit_events(&admin.rest, &project).await;
    for record in old.iter().chain(&recent) {
        let event = listed
            .get(&record.id)
            .unwrap_or_else(|| panic!("{} is not listed: {listed:#?}", record.id));
        let created_at = k8s_openapi::jiff::Timestamp::from_millisecond(record.occurred_ms)
            .unwrap()
            .to_string();
        assert_eq!(event["createdAt"], created_at, "{event}");
        assert_eq!(event["eventType"], "project.updated", "{event}");
        assert_eq!(event["source"], "rest", "{event}");
    }

    // A dry run counts the old records and deletes none: all five are still listed.
    let before = k8s_openapi::jiff::Timestamp::now().to_string();
    let answer = admin
        .rest
        .post(
            "/retention-defaults",
            json!({"category": AUDIT_ROWS, "retentionDays": 2, "dryRunSchedulingEnabled": true}),
        )
        .await
        .ok();
    assert_eq!(answer["id"], format!("{}.{AUDIT_ROWS}", org.id));
    assert_eq!(answer["policy"]["scope"], "organization");
    let policy = wait_run(&admin.rest, AUDIT_ROWS, "dry-run", &before).await;
    let run = &policy["lastRun"];
    assert_eq!(run["matchedRows"], json!({"audit-records": 3}), "{run}");
    assert_eq!(run["deletedRows"], 0, "{run}");
    assert_eq!(run["namespaces"], json!([org.namespace]), "{run}");
    let listed = audit_events(&admin.rest, &project).await;
    for id in old_ids.iter().chain(&recent_ids) {
        assert!(
            listed.contains_key(*id),
            "a dry run deletes nothing: {id} is gone"
        );
    }
    assert!(policy_event_reasons(&org.namespace).contains(&"RetentionDryRun".to_string()));

    // A destructive run deletes them: the user no longer sees the old changes, and still sees
    // the recent ones.
    let before = k8s_openapi::jiff::Timestamp::now().to_string();
    admin
        .rest
        .post(
            "/retention-defaults",
            json!({"category": AUDIT_ROWS, "retentionDays": 2, "destructiveSchedulingEnabled": true}),
        )
        .await
        .ok();
    let policy = wait_run(&admin.rest, AUDIT_ROWS, "destructive", &before).await;
    let run = &policy["lastRun"];
    assert_eq!(run["deletedRows"], 3, "{run}");
    assert_eq!(run["matchedRows"], json!({"audit-records": 3}), "{run}");
    assert_eq!(run["namespaces"], json!([org.namespace]), "{run}");
    let listed = audit_events(&admin.rest, &project).await;
    let mut ids: Vec<&str> = listed.keys().map(String::as_str).collect();
    ids.sort_unstable();
    let mut kept = recent_ids.clone();
    kept.sort_unstable();
    assert_eq!(ids, kept, "only the changes inside the window are listed");
    assert!(policy_event_reasons(&org.namespace).contains(&"RetentionPruned".to_string()));

    // The audit event of the policy's own change, made through REST just now, stays too.
    let own = audit_events(&admin.rest, AUDIT_ROWS).await;
    let created = own
        .values()
        .find(|e| e["source"] == "rest" && e["eventType"] == "retention-policy.created")
        .unwrap_or_else(|| panic!("the policy write is not listed: {own:#?}"));
    assert_eq!(created["action"], "POST /retention-defaults", "{created}");
    assert_eq!(created["actor"]["id"], admin.user_id.as_str(), "{created}");
}
