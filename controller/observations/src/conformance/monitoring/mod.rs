//! Monitoring samples on both backends. The fixtures every check shares live here: a host's
//! and a container's sample, two ticks of two servers, the query of the whole window. The
//! checks themselves are grouped by what they read: `samples` (recorded samples, their window,
//! pruning and retention), `rollups` (buckets and scope totals) and `disk` (servers' disk
//! artifacts).

mod disk;
mod rollups;
mod samples;

use berth_crds::monitoring::{
    MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};

use super::Fixture;

use self::disk::a_servers_disk_artifacts_are_replaced_by_its_next_read;
use self::rollups::{
    a_scopes_totals_sum_up_its_series, forgetting_a_resource_removes_its_samples_and_rollups,
    resource_usage_sums_each_resources_window,
    rollups_aggregate_each_series_per_bucket_and_count_a_sample_once,
};
use self::samples::{
    pruning_deletes_samples_observed_before_the_cutoff,
    retention_counts_and_deletes_one_namespaces_old_samples,
    samples_come_back_as_recorded_oldest_first_and_filtered,
    stored_ids_are_skipped_and_a_tick_goes_in_one_call,
    the_window_bounds_both_ends_and_a_limit_keeps_the_latest,
};
use crate::{SampleQuery, SampleRecord};

on_both_backends!(
    samples_come_back_as_recorded_oldest_first_and_filtered,
    the_window_bounds_both_ends_and_a_limit_keeps_the_latest,
    stored_ids_are_skipped_and_a_tick_goes_in_one_call,
    pruning_deletes_samples_observed_before_the_cutoff,
    rollups_aggregate_each_series_per_bucket_and_count_a_sample_once,
    forgetting_a_resource_removes_its_samples_and_rollups,
    a_scopes_totals_sum_up_its_series,
    resource_usage_sums_each_resources_window,
    retention_counts_and_deletes_one_namespaces_old_samples,
    a_servers_disk_artifacts_are_replaced_by_its_next_read,
);

const T0: i64 = 1_900_000_000_000;

fn host(server: &str, at: i64) -> SampleRecord {
    let sample = MonitoringSample {
        sample_id: format!("{server}:host:{at}"),
        observed_at: format!("@{at}"),
        collected_at: format!("@{at}"),
        scope_evidence: ScopeEvidence {
            scope: Some(ScopeKind::Server),
            server_id: server.into(),
            ..ScopeEvidence::default()
        },
        totals: Totals {
            logical_cores: Some(4.0),
            host_cpu_percent: Some(12.5),
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
    };
    SampleRecord {
        namespace: "org-a".into(),
        observed_ms: at,
        sample,
    }
}

/// A container of `resource` (in project `shop`, environment `production` or `staging` for
/// resource `api`) on `server`.
fn container(server: &str, resource: &str, deployment: Option<&str>, at: i64) -> SampleRecord {
    let mut record = host(server, at);
    let runtime = format!("{resource}-container");
    record.sample.sample_id = format!("{server}:{runtime}:{at}");
    record.sample.scope_evidence = ScopeEvidence {
        scope: Some(ScopeKind::Resource),
        server_id: server.into(),
        project_id: Some("shop".into()),
        environment_id: Some(
            if resource == "api" {
                "staging"
            } else {
                "production"
            }
            .into(),
        ),
        resource_id: Some(resource.into()),
        deployment_id: deployment.map(str::to_string),
    };
    record.sample.totals = Totals {
        container_cpu_percent: Some(3.0),
        memory_used_bytes: Some(1_048_576.0),
        ..Totals::default()
    };
    record.sample.labels.artifact_kind = "container".into();
    record.sample.labels.runtime_id = Some(runtime);
    record
}

fn query() -> SampleQuery {
    SampleQuery {
        namespace: "org-a".into(),
        from_ms: T0 - 3_600_000,
        to_ms: T0 + 3_600_000,
        limit: 720,
        ..SampleQuery::default()
    }
}

fn ids(samples: &[MonitoringSample]) -> Vec<String> {
    samples.iter().map(|s| s.sample_id.clone()).collect()
}

/// One tick of two servers: `edge` runs `web` (two deployments' containers at once, mid
/// switch) and `api`; `db` runs nothing.
fn two_ticks() -> Vec<SampleRecord> {
    let mut records = Vec::new();
    for at in [T0, T0 + 30_000] {
        records.push(host("edge", at));
        records.push(host("db", at));
        records.push(container("edge", "web", Some("dep-web-1"), at));
        records.push(container("edge", "api", None, at));
    }
    records
}

/// [`two_ticks`], `web` working harder in the second tick (30 s later: the same five minutes,
/// the next minute).
fn two_ticks_web_busier() -> Vec<SampleRecord> {
    let mut records = two_ticks();
    records[6].sample.totals.container_cpu_percent = Some(5.0);
    records
}

/// [`query`] as `change` narrows it.
fn scoped(change: impl FnOnce(&mut SampleQuery)) -> SampleQuery {
    let mut query = query();
    change(&mut query);
    query
}
