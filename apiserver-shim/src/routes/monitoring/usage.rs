//! Spec §4.5 `GET /runtime-usage/inspect/stream`: Runtime usage snapshots
//! (`runtime-usage.inspect/v1`) as an event stream, the first at once and then one per
//! interval, until the client leaves. Each is built from the latest monitoring sample of every
//! host and container in scope (the collector's, read from the observation store; nothing is
//! measured on request), attributed through Berth's labels to project, environment, resource
//! and deployment, with the artifacts behind them: running containers with their writable
//! layers, and each server's images, volumes and build cache with their bytes ([`disk`]).
//!
//! Not measured, and said so in every snapshot (`partial`, a `partial-diagnostic` warning):
//! inode counts of images, containers and the build cache (those of local volumes are).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use berth_api::monitoring::{ResourceMetrics, SourceError};
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{MonitoringSample, ScopeKind};
use berth_observations::{DiskRecord, SampleQuery, StoreError};
use futures::Stream;
use k8s_openapi::jiff::Timestamp;

use super::disk::disk_artifacts;
use super::{
    LIVE_FACTOR, Scope, check_scope, echoed, freshness, millis, observed_ms, parse_scope,
    scope_query, visible, with_scope_params,
};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::state::AppState;
use berth_api::monitoring::{Artifact, Evidence, Usage, UsageSnapshot, UsageWarning};

pub const SCHEMA_VERSION: &str = "runtime-usage.inspect/v1";
/// `sourceErrors[].source` when the servers' latest measurements cannot be read.
const RUNTIME_TARGET: &str = "runtime-target";
const PARTIAL_DIAGNOSTIC: &str = "partial-diagnostic";
/// `intervalSeconds` bounds.
const INTERVAL: (u64, u64) = (5, 3600);
/// Most samples one snapshot reads: a container's latest among a few ticks of every series.
const READ_LIMIT: usize = 720;

/// Beside the scope's.
const PARAMS: &[&str] = &["intervalSeconds"];

/// A group's key: its project, environment, resource and deployment ids, down to its kind.
type GroupKey = [Option<String>; 4];

/// The newest sample of each host and each container, oldest first.
fn latest_per_series(samples: Vec<MonitoringSample>) -> Vec<MonitoringSample> {
    let mut latest: BTreeMap<(bool, String), MonitoringSample> = BTreeMap::new();
    for sample in samples {
        let series = match &sample.labels.runtime_id {
            Some(id) => id.clone(),
            None => sample.scope_evidence.server_id.clone(),
        };
        let key = (sample.is_host(), series);
        let newer = latest
            .get(&key)
            .is_none_or(|kept| observed_ms(kept) <= observed_ms(&sample));
        if newer {
            latest.insert(key, sample);
        }
    }
    let mut samples: Vec<MonitoringSample> = latest.into_values().collect();
    samples.sort_by_key(observed_ms);
    samples
}

/// The groups of one kind, each container counted in the group its labels name.
fn usage_by(containers: &[&MonitoringSample], kind: ScopeKind, depth: usize) -> Vec<Usage> {
    let mut groups: BTreeMap<GroupKey, Usage> = BTreeMap::new();
    for sample in containers {
        let e = &sample.scope_evidence;
        let ids = [
            &e.project_id,
            &e.environment_id,
            &e.resource_id,
            &e.deployment_id,
        ];
        if ids[depth].is_none() {
            continue;
        }
        let key: GroupKey = std::array::from_fn(|n| ids[n].clone().filter(|_| n <= depth));
        let usage = groups.entry(key.clone()).or_insert_with(|| Usage {
            scope: Scope {
                kind: Some(kind),
                server_id: None,
                project_id: key[0].clone(),
                environment_id: key[1].clone(),
                resource_id: key[2].clone(),
                deployment_id: key[3].clone(),
            },
            ownership: "attributed".into(),
            totals: ResourceMetrics::default(),
            current_deployment_id: None,
            current_runtime_id: None,
            artifact_count: 0,
            warnings: Vec::new(),
        });
        usage.totals.add_all(&sample.metrics());
        // Oldest first: the last one counted is the newest.
        usage.current_deployment_id = sample.scope_evidence.deployment_id.clone();
        usage.current_runtime_id = sample.labels.runtime_id.clone();
        usage.artifact_count += 1;
    }
    groups.into_values().collect()
}

fn groups(containers: &[&MonitoringSample]) -> [Vec<Usage>; 4] {
    [
        usage_by(containers, ScopeKind::Project, 0),
        usage_by(containers, ScopeKind::Environment, 1),
        usage_by(containers, ScopeKind::Resource, 2),
        usage_by(containers, ScopeKind::Deployment, 3),
    ]
}

/// The label keys a container sample was attributed by.
fn label_evidence(sample: &MonitoringSample) -> Vec<Evidence> {
    let e = &sample.scope_evidence;
    [
        (berth_crds::PROJECT_LABEL, e.project_id.is_some()),
        (berth_crds::ENVIRONMENT_LABEL, e.environment_id.is_some()),
        (berth_crds::RESOURCE_LABEL, e.resource_id.is_some()),
        (berth_crds::DEPLOYMENT_LABEL, e.deployment_id.is_some()),
    ]
    .into_iter()
    .filter(|(_, present)| *present)
    .map(|(key, _)| Evidence {
        source: "label".into(),
        key: key.to_string(),
    })
    .collect()
}

/// A running container as an artifact.
fn artifact_of_container(sample: &MonitoringSample) -> Artifact {
    let e = &sample.scope_evidence;
    Artifact {
        kind: "active-runtime".into(),
        ownership: "attributed".into(),
        server_id: e.server_id.clone(),
        project_id: e.project_id.clone(),
        environment_id: e.environment_id.clone(),
        resource_id: e.resource_id.clone(),
        deployment_id: e.deployment_id.clone(),
        destination_id: None,
        runtime_id: sample.labels.runtime_id.clone(),
        // Its writable layer, read every 10th collection tick.
        bytes: sample.totals.container_writable_bytes.map(|b| b as u64),
        inode_count: None,
        observed_at: sample.observed_at.clone(),
        evidence: label_evidence(sample),
        reclaimable: "no".into(),
        reclaim_blocked_reason: Some("the container is running".into()),
        warnings: Vec::new(),
    }
}

/// The latest samples `query` selects and every server's disk artifacts, in one blocking read.
async fn read_measurements(
    state: &AppState,
    query: SampleQuery,
) -> ApiResult<Result<(Vec<MonitoringSample>, Vec<DiskRecord>), StoreError>> {
    let store = Arc::clone(&state.observations);
    tokio::task::spawn_blocking(move || Ok((store.samples(&query)?, store.disk(&query.namespace)?)))
        .await
        .map_err(ApiError::internal)
}

/// One snapshot of the scope, now.
async fn snapshot(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    scope: &Scope,
) -> UsageSnapshot {
    let now = Timestamp::now();
    let interval = state.config.monitoring_interval;
    let recent = millis(interval).saturating_mul(i64::from(LIVE_FACTOR) + 1);
    let from_ms = now.as_millisecond() - recent;
    let query = scope_query(namespace, scope, from_ms, now.as_millisecond(), READ_LIMIT);
    let (samples, disk, source_errors) = match read_measurements(state, query).await {
        Ok(Ok((samples, disk))) => (samples, disk, Vec::new()),
        failed => {
            if let Ok(Err(error)) = failed {
                tracing::warn!(%error, "observation store unavailable: runtime usage");
            }
            let error = SourceError {
                source: RUNTIME_TARGET.into(),
                code: "runtime_measurements_unavailable".into(),
                message: "the servers' latest measurements could not be read".into(),
                retriable: true,
            };
            (Vec::new(), Vec::new(), vec![error])
        }
    };
    let samples: Vec<MonitoringSample> =
        samples.into_iter().filter(|s| visible(caller, s)).collect();
    let samples = latest_per_series(samples);
    let containers: Vec<&MonitoringSample> = samples.iter().filter(|s| !s.is_host()).collect();
    let mut totals = ResourceMetrics::default();
    for sample in &samples {
        totals.add_all(&sample.metrics());
    }
    let [by_project, by_environment, by_resource, by_deployment] = groups(&containers);
    let mut artifacts: Vec<Artifact> = containers
        .iter()
        .map(|s| artifact_of_container(s))
        .collect();
    artifacts.extend(disk_artifacts(state, caller, namespace, scope, &disk));
    let not_measured = UsageWarning {
        code: PARTIAL_DIAGNOSTIC.into(),
        message: "inode counts per artifact are not measured: Docker does not report them".into(),
        scope: None,
        resource: Some("inode".into()),
    };
    UsageSnapshot {
        schema_version: SCHEMA_VERSION.into(),
        scope: echoed(scope),
        generated_at: now.to_string(),
        observed_at: samples.last().map(|s| s.observed_at.clone()),
        freshness: freshness(&samples, now, interval).into(),
        partial: true,
        totals,
        by_project,
        by_environment,
        by_resource,
        by_deployment,
        artifacts,
        warnings: vec![not_measured],
        source_errors,
    }
}

pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    known_params(&query, &with_scope_params(PARAMS))?;
    let scope = parse_scope(&query)?;
    let default = state
        .config
        .monitoring_interval
        .as_secs()
        .clamp(INTERVAL.0, INTERVAL.1);
    let seconds = query.integer("intervalSeconds", INTERVAL.0, INTERVAL.1, default)?;
    let namespace = caller
        .require_role(OrganizationRole::Member)?
        .namespace
        .clone();
    check_scope(&state, &caller, &scope)?;
    let every = Duration::from_secs(seconds);
    // The first at once, then one per interval; dropped with the response when the client
    // leaves, which ends the loop.
    let events = futures::stream::unfold(0u64, move |sent| {
        let (state, caller, namespace, scope) = (
            state.clone(),
            caller.clone(),
            namespace.clone(),
            scope.clone(),
        );
        async move {
            if sent > 0 {
                tokio::time::sleep(every).await;
            }
            let snapshot = snapshot(&state, &caller, &namespace, &scope).await;
            let event = Event::default()
                .event("message")
                .id(sent.to_string())
                .json_data(berth_api::wire::Wire(&snapshot))
                .map_err(ApiError::internal);
            let event = event.unwrap_or_else(|_| Event::default().comment("snapshot not encoded"));
            Some((Ok(event), sent + 1))
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::monitoring::{PROVIDER_KEY, SampleLabels, ScopeEvidence, Signal, Totals};

    fn container(
        resource: &str,
        deployment: &str,
        runtime: &str,
        at: &str,
        cpu: f64,
    ) -> MonitoringSample {
        MonitoringSample {
            sample_id: format!("{runtime}:{at}"),
            observed_at: at.into(),
            collected_at: at.into(),
            scope_evidence: ScopeEvidence {
                scope: Some(ScopeKind::Resource),
                server_id: "edge".into(),
                project_id: Some("shop".into()),
                environment_id: Some("production".into()),
                resource_id: Some(resource.into()),
                deployment_id: Some(deployment.into()),
            },
            totals: Totals {
                container_cpu_percent: Some(cpu),
                ..Totals::default()
            },
            freshness: "live".into(),
            partial: false,
            labels: SampleLabels {
                provider_key: PROVIDER_KEY.into(),
                artifact_kind: "container".into(),
                runtime_id: Some(runtime.into()),
            },
            warnings: Vec::new(),
            source_errors: Vec::new(),
        }
    }

    #[test]
    fn the_latest_sample_of_each_container_is_grouped_by_what_its_labels_name() {
        let samples = latest_per_series(vec![
            container("web", "dep-web-1", "c1", "2030-01-01T00:00:00Z", 1.0),
            container("web", "dep-web-1", "c1", "2030-01-01T00:00:30Z", 2.0),
            container("api", "dep-api-3", "c2", "2030-01-01T00:00:30Z", 5.0),
        ]);
        assert_eq!(samples.len(), 2, "one per container");
        let containers: Vec<&MonitoringSample> = samples.iter().collect();
        let [projects, environments, resources, deployments] = groups(&containers);
        assert_eq!(projects.len(), 1);
        let cpu = |usage: &Usage| usage.totals.get(Signal::Cpu, "containerCpuPercent");
        assert_eq!(cpu(&projects[0]), Some(7.0));
        assert_eq!(projects[0].artifact_count, 2);
        assert_eq!(
            environments[0].scope.environment_id.as_deref(),
            Some("production")
        );
        let web = resources
            .iter()
            .find(|u| u.scope.resource_id.as_deref() == Some("web"))
            .unwrap();
        assert_eq!(cpu(web), Some(2.0), "the latest, not the sum of ticks");
        assert_eq!(web.current_runtime_id.as_deref(), Some("c1"));
        assert_eq!(web.scope.kind, Some(ScopeKind::Resource));
        assert_eq!(web.scope.project_id.as_deref(), Some("shop"));
        assert_eq!(web.scope.deployment_id, None);
        assert_eq!(deployments.len(), 2);
        assert_eq!(
            label_evidence(&samples[0]).len(),
            4,
            "project, environment, resource and deployment labels"
        );
    }
}
