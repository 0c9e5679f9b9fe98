//! Spec §4.5 `GET /runtime-monitoring/rollup` (`runtime-monitoring.rollup/v1`): the samples of a
//! scope and window summed up per bucket (`minute`, `five-minute`, `hour`). It reads the store's
//! rollup tiers, kept as samples are recorded, so a window of weeks reads a few rows per series;
//! per signal a series of buckets, each the average of its samples as `resourceMetrics`;
//! `totals` over the whole window, `topContributors` (resources by CPU share, then memory) and
//! `deploymentMarkers` (attempts started in the window, from the Deployment cache).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::json::Json;
use axum::extract::{RawQuery, State};
use berth_api::monitoring::{
    Contributor, DeploymentMarker, MonitoringWarning, Point, ResourceMetrics, Rollup, Series,
    SourceError,
};
use berth_crds::deployment::DeploymentState;
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{ScopeKind, Signal, wire_metric};
use berth_observations::{Detail, RollupQuery, RollupRow, StoreError, Tier};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::{
    MISSING_SAMPLES, Scope, Selection, UNKNOWN, check_scope, echoed, millis, parse_selection,
    samples_retention, scope_query, signal_values, store_unavailable, with_scope_params,
};
use crate::auth::{Caller, ScopeDimension};
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::state::AppState;

pub const SCHEMA_VERSION: &str = "runtime-monitoring.rollup/v1";

/// The most buckets one answer holds: a day of minutes, five days of five minutes, two months
/// of hours.
pub const MAX_BUCKETS: i64 = 1440;
/// Resources listed in `topContributors`.
const TOP: usize = 10;
/// `correlation` of every deployment marker: placed by time.
const BY_TIME: &str = "time";

/// Beside the scope's.
const PARAMS: &[&str] = &[
    "window.from",
    "window.to",
    "signals",
    "bucket",
    "includeDeploymentMarkers",
    "includeTopContributors",
];

/// `bucket`: required, one of the tiers, and few enough buckets for the window.
fn parse_bucket(query: &QueryParams, from: Timestamp, to: Timestamp) -> ApiResult<Tier> {
    let names: Vec<&str> = Tier::ALL.iter().map(|t| t.as_str()).collect();
    let Some(name) = query.one_of("bucket", &names, None)? else {
        return Err(ApiError::validation(
            "bucket",
            "bucket is required: minute, five-minute or hour",
        ));
    };
    let tier = Tier::parse(name).expect("one of the tiers");
    let buckets = (to.as_millisecond() - from.as_millisecond()) / tier.millis();
    if buckets > MAX_BUCKETS {
        return Err(ApiError::validation(
            "bucket",
            format!(
                "a window of {buckets} {} buckets is more than {MAX_BUCKETS}: use a coarser \
                 bucket or a shorter window",
                tier.as_str()
            ),
        ));
    }
    Ok(tier)
}

/// Whether a deploy token's scope covers the row (users see their whole organization).
fn visible(caller: &Caller, row: &RollupRow) -> bool {
    let sees = |dimension, id: &Option<String>| caller.sees(dimension, id.as_deref().unwrap_or(""));
    if row.of_hosts() {
        return caller.sees(ScopeDimension::Target, &row.server);
    }
    sees(ScopeDimension::Resource, &row.resource)
        && sees(ScopeDimension::Project, &row.project)
        && sees(ScopeDimension::Environment, &row.environment)
}

fn rfc3339(ms: i64) -> String {
    Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Running sums of one metric.
#[derive(Default, Clone, Copy)]
struct Sum {
    count: i64,
    total: f64,
    min: f64,
    max: f64,
}

impl Sum {
    fn add(&mut self, row: &RollupRow) {
        self.merge(Sum {
            count: row.count,
            total: row.total,
            min: row.min,
            max: row.max,
        });
    }

    fn merge(&mut self, other: Sum) {
        if self.count == 0 {
            *self = other;
            return;
        }
        self.count += other.count;
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn avg(&self) -> f64 {
        round(self.total / self.count.max(1) as f64)
    }
}

fn round(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Where a row's figure goes on the wire, if its signal is asked for.
fn wanted(row: &RollupRow, signals: &[Signal]) -> Option<(Signal, &'static str)> {
    wire_metric(&row.metric, row.of_hosts()).filter(|(signal, _)| signals.contains(signal))
}

/// Averages of the sums, as `resourceMetrics`.
fn averages<'a>(
    sums: impl IntoIterator<Item = (&'a (Signal, &'static str), &'a Sum)>,
) -> ResourceMetrics {
    let mut metrics = ResourceMetrics::default();
    for ((signal, name), sum) in sums {
        metrics.set(*signal, name, sum.avg());
    }
    metrics.derive_available();
    metrics
}

/// One bucket of one signal: the sums of each figure, and how many samples of hosts and of
/// containers gave each.
#[derive(Default)]
struct Bucket {
    figures: BTreeMap<(Signal, &'static str), Sum>,
    counts: BTreeMap<(bool, &'static str), i64>,
}

impl Bucket {
    fn add(&mut self, field: (Signal, &'static str), row: &RollupRow) {
        self.figures.entry(field).or_default().add(row);
        *self.counts.entry((row.of_hosts(), field.1)).or_default() += row.count;
    }

    /// The samples in the bucket: of hosts, the most any host figure counted, and the same of
    /// containers.
    fn sample_count(&self) -> u64 {
        let most = |host: bool| {
            self.counts
                .iter()
                .filter(|((of_hosts, _), _)| *of_hosts == host)
                .map(|(_, count)| *count)
                .max()
                .unwrap_or(0)
        };
        u64::try_from(most(true) + most(false)).unwrap_or(0)
    }
}

/// A series per signal (of `signals`), buckets oldest first, and the window's averages.
fn series_and_totals(
    rows: &[RollupRow],
    signals: &[Signal],
    tier: Tier,
) -> (Vec<Series>, ResourceMetrics) {
    let mut buckets: BTreeMap<(Signal, i64), Bucket> = BTreeMap::new();
    let mut window: BTreeMap<(Signal, &'static str), Sum> = BTreeMap::new();
    for row in rows {
        let Some(field) = wanted(row, signals) else {
            continue;
        };
        buckets
            .entry((field.0, row.bucket_ms))
            .or_default()
            .add(field, row);
        window.entry(field).or_default().add(row);
    }
    let mut series: Vec<Series> = Vec::new();
    for ((signal, start), bucket) in buckets {
        let point = Point {
            from: rfc3339(start),
            to: rfc3339(start + tier.millis()),
            sample_count: bucket.sample_count(),
            totals: averages(&bucket.figures),
        };
        match series.last_mut() {
            Some(last) if last.signal == signal => last.points.push(point),
            _ => series.push(Series {
                signal,
                points: vec![point],
            }),
        }
    }
    (series, averages(&window))
}

/// Resources by average CPU share, then memory; the top [`TOP`].
fn top_contributors(rows: &[RollupRow]) -> Vec<Contributor> {
    let mut per_resource: BTreeMap<&str, BTreeMap<(Signal, &'static str), Sum>> = BTreeMap::new();
    for row in rows {
        let (Some(resource), Some(field)) =
            (row.resource.as_deref(), wire_metric(&row.metric, false))
        else {
            continue;
        };
        let figures = per_resource.entry(resource).or_default();
        figures.entry(field).or_default().add(row);
    }
    let mut contributors: Vec<Contributor> = per_resource
        .into_iter()
        .map(|(resource, figures)| Contributor {
            scope: Scope::of(ScopeKind::Resource, resource),
            sample_count: figures.values().map(|s| s.count).max().unwrap_or(0) as u64,
            totals: averages(&figures),
        })
        .collect();
    let key = |c: &Contributor| {
        let figure = |signal, name| c.totals.get(signal, name).unwrap_or(0.0);
        (
            figure(Signal::Cpu, "containerCpuPercent"),
            figure(Signal::Memory, "containerUsedBytes"),
        )
    };
    contributors.sort_by(|a, b| {
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    contributors.truncate(TOP);
    contributors
}

/// A gap of more than one bucket between two buckets of one series: one warning each.
fn gaps(rows: &[RollupRow], tier: Tier) -> Vec<MonitoringWarning> {
    type Seen = (Vec<i64>, Option<Scope>);
    let mut buckets: BTreeMap<(&str, bool), Seen> = BTreeMap::new();
    for row in rows {
        let key = (row.series.as_str(), row.of_hosts());
        let (seen, _) = buckets
            .entry(key)
            .or_insert_with(|| (Vec::new(), series_scope(row)));
        if seen.last() != Some(&row.bucket_ms) {
            seen.push(row.bucket_ms);
        }
    }
    let mut warnings = Vec::new();
    for ((series, of_hosts), (starts, scope)) in buckets {
        for pair in starts.windows(2) {
            let missing = (pair[1] - pair[0]) / tier.millis() - 1;
            if missing > 0 {
                warnings.push(MonitoringWarning {
                    code: MISSING_SAMPLES.into(),
                    message: format!(
                        "{series}: no samples in {missing} {} bucket(s) after {}",
                        tier.as_str(),
                        rfc3339(pair[0])
                    ),
                    signal: None,
                    scope: scope.clone(),
                });
            }
        }
        let _ = of_hosts;
    }
    warnings
}

/// The scope a row's series measures: a server's host, a resource's container, or (for the
/// store's sums over a grouping) none.
fn series_scope(row: &RollupRow) -> Option<Scope> {
    let id = |id: &Option<String>| {
        id.as_deref()
            .filter(|id| !id.is_empty())
            .map(str::to_string)
    };
    match (row.of_hosts(), id(&row.resource)) {
        (false, Some(resource)) => Some(Scope::of(ScopeKind::Resource, &resource)),
        (true, _) if !row.server.is_empty() => Some(Scope::of(ScopeKind::Server, &row.server)),
        _ => None,
    }
}

fn freshness(rows: &[RollupRow], tier: Tier, now: Timestamp, interval: Duration) -> &'static str {
    let Some(newest) = rows.iter().map(|r| r.bucket_ms).max() else {
        return UNKNOWN;
    };
    let live_since = now.as_millisecond() - tier.millis() - 2 * millis(interval);
    if newest >= live_since {
        "live"
    } else {
        "stale"
    }
}

/// Attempts of the scope created in the window, oldest first.
fn deployment_markers(
    state: &AppState,
    namespace: &str,
    scope: &Scope,
    from: Timestamp,
    to: Timestamp,
) -> Vec<DeploymentMarker> {
    let resource_of = |name: &str| {
        let key = kube::runtime::reflector::ObjectRef::new(name).within(namespace);
        state.caches.resources.get(&key)
    };
    let mut markers: Vec<(Timestamp, DeploymentMarker)> = state
        .caches
        .deployments
        .state()
        .into_iter()
        .filter(|d| d.namespace().as_deref() == Some(namespace))
        .filter_map(|d| {
            let at = d.metadata.creation_timestamp.as_ref()?.0;
            let spec = &d.spec;
            let resource = resource_of(&spec.resource_id);
            let in_scope = scope
                .resource_id
                .as_ref()
                .is_none_or(|r| *r == spec.resource_id)
                && scope
                    .deployment_id
                    .as_ref()
                    .is_none_or(|id| *id == d.name_any())
                && scope
                    .server_id
                    .as_ref()
                    .is_none_or(|s| *s == spec.server_id)
                && scope
                    .project_id
                    .as_ref()
                    .is_none_or(|p| resource.as_ref().is_some_and(|r| r.spec.project_id == *p))
                && scope.environment_id.as_ref().is_none_or(|e| {
                    resource
                        .as_ref()
                        .is_some_and(|r| r.spec.environment_id == *e)
                });
            (in_scope && at >= from && at <= to).then(|| {
                let status = d.status.as_ref().and_then(|s| s.status);
                (at, marker(&d.name_any(), spec, status, at))
            })
        })
        .collect();
    markers.sort_by_key(|(at, _)| *at);
    markers.into_iter().map(|(_, marker)| marker).collect()
}

/// The marker of attempt `id`, created `at`.
fn marker(
    id: &str,
    spec: &berth_crds::deployment::DeploymentSpec,
    status: Option<DeploymentState>,
    at: Timestamp,
) -> DeploymentMarker {
    let status = status.unwrap_or(DeploymentState::Created);
    let status = serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    DeploymentMarker {
        deployment_id: id.to_string(),
        resource_id: spec.resource_id.clone(),
        environment_id: spec.environment_id.clone(),
        observed_at: at.to_string(),
        label: format!("Deployment {id} {status}"),
        status,
        correlation: BY_TIME.into(),
    }
}

/// The rollup rows of the scope and, when asked for, each resource's usage over the window.
type Read = (Vec<RollupRow>, Vec<RollupRow>);

/// What `query` reads, or nothing and the source error saying the store failed.
async fn read(
    state: &AppState,
    query: RollupQuery,
    contributors_wanted: bool,
) -> ApiResult<(Read, Vec<SourceError>)> {
    let store = Arc::clone(&state.observations);
    let read = tokio::task::spawn_blocking(move || -> Result<Read, StoreError> {
        let rows = store.rollup(&query)?;
        let usage = if contributors_wanted {
            store.resource_usage(&query)?
        } else {
            Vec::new()
        };
        Ok((rows, usage))
    })
    .await
    .map_err(ApiError::internal)?;
    Ok(match read {
        Ok(read) => (read, Vec::new()),
        Err(error) => {
            tracing::warn!(%error, "observation store unavailable: monitoring rollup");
            let failed = store_unavailable("the monitoring rollup");
            ((Vec::new(), Vec::new()), vec![failed])
        }
    })
}

/// The store's query of the selected scope and window, in whole buckets of `tier`.
fn rollup_query(
    caller: &Caller,
    namespace: &str,
    selection: &Selection,
    tier: Tier,
) -> RollupQuery {
    let from_ms = tier.bucket(selection.from.as_millisecond());
    let to_ms = selection.to.as_millisecond();
    // A deploy token limited to part of the organization reads every series and sees those in
    // its scope; everyone else reads the scope's totals.
    let detail = if caller.is_limited() {
        Detail::Series
    } else {
        Detail::Totals
    };
    RollupQuery {
        filters: scope_query(namespace, &selection.scope, from_ms, to_ms, 0),
        tier,
        detail,
    }
}

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Rollup>> {
    let now = Timestamp::now();
    let selection = parse_selection(
        &query,
        &with_scope_params(PARAMS),
        &signal_values(raw.as_deref())?,
        now,
    )?;
    let tier = parse_bucket(&query, selection.from, selection.to)?;
    let markers_wanted = query.boolean("includeDeploymentMarkers")?;
    let contributors_wanted = query.boolean("includeTopContributors")?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    check_scope(&state, &caller, &selection.scope)?;
    let namespace = &organization.namespace;
    let query = rollup_query(&caller, namespace, &selection, tier);
    let ((rows, usage), source_errors) = read(&state, query, contributors_wanted).await?;
    let rows: Vec<RollupRow> = rows.into_iter().filter(|r| visible(&caller, r)).collect();
    let usage: Vec<RollupRow> = usage.into_iter().filter(|r| visible(&caller, r)).collect();
    let (series, totals) = series_and_totals(&rows, &selection.signals, tier);
    let markers = if markers_wanted {
        let scope = &selection.scope;
        deployment_markers(&state, namespace, scope, selection.from, selection.to)
    } else {
        Vec::new()
    };
    Ok(Json(Rollup {
        schema_version: SCHEMA_VERSION.into(),
        from: selection.from.to_string(),
        to: selection.to.to_string(),
        bucket: tier.as_str().into(),
        generated_at: now.to_string(),
        freshness: freshness(&rows, tier, now, state.config.monitoring_interval).into(),
        partial: !source_errors.is_empty(),
        retention: samples_retention(&state, namespace, now),
        series,
        totals,
        top_contributors: top_contributors(&usage),
        deployment_markers: markers,
        warnings: gaps(&rows, tier),
        source_errors,
        scope: echoed(&selection.scope),
    }))
}

#[cfg(test)]
mod tests;
