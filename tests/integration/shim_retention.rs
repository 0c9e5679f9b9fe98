//! Retention defaults (spec §4.5) against the real stack: the system defaults berth-controller
//! creates, an organization's own policy set through `POST /retention-defaults`, and its
//! scheduled runs over the observation store: a dry run reports what it would delete and
//! deletes nothing; a destructive run deletes the old rows and keeps the recent ones.

use std::path::PathBuf;
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{
    MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};
use berth_observations::{History, ObservationStore, SampleRecord, StoreLocation};
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

/// The organization's policy once a run of `mode` for its current spec is in `lastRun`.
async fn wait_run(rest: &Rest, mode: &str, generation_changed_after: &str) -> Value {
    let path = format!("/retention-defaults/{CATEGORY}?scope=organization");
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
    let policy = wait_run(&admin.rest, "dry-run", &before).await;
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
    let policy = wait_run(&admin.rest, "destructive", &before).await;
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
