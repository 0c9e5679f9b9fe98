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
    Contributor, DeploymentMarker, MonitoringWarning, Point, ResourceMetrics, Series, SourceError,
};
use berth_crds::deployment::DeploymentState;
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{ScopeKind, Signal, wire_metric};
use berth_observations::{Detail, RollupQuery, RollupRow, SampleQuery, Tier};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    MISSING_SAMPLES, Retention, STORE_SOURCE, STORE_UNAVAILABLE, Scope, UNKNOWN, check_scope,
    echoed, millis, parse_selection, retention, signal_values, with_scope_params,
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

#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Rollup {
    pub schema_version: &'static str,
    pub scope: Scope,
    pub from: String,
    pub to: String,
    /// `minute`, `five-minute` or `hour`.
    pub bucket: &'static str,
    pub generated_at: String,
    /// `live`: the newest bucket holds a sample of the last two collection intervals; `stale`:
    /// older; `unknown`: no samples in the window.
    pub freshness: &'static str,
    pub partial: bool,
    pub retention: Retention,
    /// One per signal measured in the window, its buckets oldest first.
    pub series: Vec<Series>,
    /// Every figure averaged over the window.
    pub totals: ResourceMetrics,
    /// Resources using the most CPU (then memory), with `includeTopContributors`.
    pub top_contributors: Vec<Contributor>,
    /// Attempts started in the window, with `includeDeploymentMarkers`.
    pub deployment_markers: Vec<DeploymentMarker>,
    /// `missing-samples`: one per gap of a bucket or more in a series.
    pub warnings: Vec<MonitoringWarning>,
    pub source_errors: Vec<SourceError>,
}

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

async fn read(
    state: &AppState,
    query: RollupQuery,
    contributors_wanted: bool,
) -> ApiResult<Result<Read, berth_observations::TimelineError>> {
    let store = Arc::clone(&state.timelines);
    tokio::task::spawn_blocking(move || {
        let rows = store.rollup(&query)?;
        let usage = if contributors_wanted {
            store.resource_usage(&query)?
        } else {
            Vec::new()
        };
        Ok((rows, usage))
    })
    .await
    .map_err(ApiError::internal)
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
    let scope = &selection.scope;
    let filters = SampleQuery {
        namespace: organization.namespace.clone(),
        kind: scope.kind,
        server: scope.server_id.clone(),
        project: scope.project_id.clone(),
        environment: scope.environment_id.clone(),
        resource: scope.resource_id.clone(),
        deployment: scope.deployment_id.clone(),
        from_ms: tier.bucket(selection.from.as_millisecond()),
        to_ms: selection.to.as_millisecond(),
        limit: 0,
    };
    // A deploy token limited to part of the organization reads every series and sees those in
    // its scope; everyone else reads the scope's totals.
    let detail = if caller.is_limited() {
        Detail::Series
    } else {
        Detail::Totals
    };
    let query = RollupQuery {
        filters,
        tier,
        detail,
    };
    let ((rows, usage), source_errors) = match read(&state, query, contributors_wanted).await? {
        Ok(read) => (read, Vec::new()),
        Err(error) => {
            tracing::warn!(%error, "observation store unavailable: monitoring rollup");
            let failed = SourceError {
                source: STORE_SOURCE.into(),
                code: STORE_UNAVAILABLE.into(),
                message: "the monitoring rollup could not be read: the observation store failed"
                    .into(),
                retriable: true,
            };
            ((Vec::new(), Vec::new()), vec![failed])
        }
    };
    let rows: Vec<RollupRow> = rows.into_iter().filter(|r| visible(&caller, r)).collect();
    let usage: Vec<RollupRow> = usage.into_iter().filter(|r| visible(&caller, r)).collect();
    let (series, totals) = series_and_totals(&rows, &selection.signals, tier);
    let markers = if markers_wanted {
        let namespace = &organization.namespace;
        deployment_markers(&state, namespace, scope, selection.from, selection.to)
    } else {
        Vec::new()
    };
    Ok(Json(Rollup {
        schema_version: SCHEMA_VERSION,
        from: selection.from.to_string(),
        to: selection.to.to_string(),
        bucket: tier.as_str(),
        generated_at: now.to_string(),
        freshness: freshness(&rows, tier, now, state.config.monitoring_interval),
        partial: !source_errors.is_empty(),
        retention: retention(state.config.monitoring_retention_hours, now),
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
mod tests {
    use super::*;

    fn row(
        series: &str,
        resource: Option<&str>,
        bucket_ms: i64,
        metric: &str,
        values: &[f64],
    ) -> RollupRow {
        RollupRow {
            series: series.into(),
            server: "edge".into(),
            scope: if resource.is_some() {
                "resource"
            } else {
                "server"
            }
            .into(),
            project: resource.map(|_| "shop".into()),
            environment: resource.map(|_| "prod".into()),
            resource: resource.map(str::to_string),
            deployment: None,
            bucket_ms,
            metric: metric.into(),
            count: values.len() as i64,
            total: values.iter().sum(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    #[test]
    fn buckets_average_every_series_and_totals_span_the_window() {
        let hour = Tier::Hour.millis();
        let rows = vec![
            row("a", Some("web"), 0, "containerCpuPercent", &[2.0, 4.0]),
            row("b", Some("api"), 0, "containerCpuPercent", &[6.0]),
            row("a", Some("web"), hour, "containerCpuPercent", &[10.0]),
            row("a", Some("web"), hour, "memoryUsedBytes", &[100.0]),
            row("host:edge", None, hour, "load1", &[0.5, 1.5]),
            row("host:edge", None, hour, "hostCpuPercent", &[50.0]),
        ];
        let (series, totals) = series_and_totals(&rows, &[Signal::Cpu], Tier::Hour);
        assert_eq!(series.len(), 1, "memory was not asked for");
        assert_eq!(series[0].signal, Signal::Cpu);
        let points = &series[0].points;
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].from, "1970-01-01T00:00:00Z");
        assert_eq!(points[0].to, "1970-01-01T01:00:00Z");
        assert_eq!(points[0].sample_count, 3);
        assert_eq!(
            points[0].totals.get(Signal::Cpu, "containerCpuPercent"),
            Some(4.0)
        );
        // A host's two samples and a container's one in the second hour.
        assert_eq!(points[1].sample_count, 3);
        assert_eq!(
            points[1].totals.get(Signal::Cpu, "loadAverage1m"),
            Some(1.0)
        );
        let json = berth_api::wire::to_value(&points[1].totals).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"cpu": {"loadAverage1m": 1.0, "containerCpuPercent": 10.0}}),
            "hostCpuPercent has no field on the wire"
        );
        assert_eq!(totals.get(Signal::Cpu, "containerCpuPercent"), Some(5.5));
        assert_eq!(totals.memory, None);
    }

    #[test]
    fn top_contributors_rank_resources_by_cpu_share_then_memory() {
        let rows = vec![
            row("a", Some("web"), 0, "containerCpuPercent", &[0.1]),
            row("b", Some("api"), 0, "containerCpuPercent", &[0.5]),
            row("b", Some("api"), 0, "memoryUsedBytes", &[2048.0]),
            row("host:edge", None, 0, "hostCpuPercent", &[50.0]),
        ];
        let top = top_contributors(&rows);
        let ids: Vec<Option<&str>> = top.iter().map(|c| c.scope.resource_id.as_deref()).collect();
        assert_eq!(ids, [Some("api"), Some("web")]);
        assert_eq!(top[0].scope.kind, Some(ScopeKind::Resource));
        assert_eq!(
            top[0].totals.get(Signal::Memory, "containerUsedBytes"),
            Some(2048.0)
        );
        assert_eq!(top[0].sample_count, 1);
        assert_eq!(top[1].totals.memory, None);
    }

    #[test]
    fn a_bucket_without_samples_in_a_series_is_a_gap() {
        let minute = Tier::Minute.millis();
        let rows = vec![
            row("a", Some("web"), 0, "containerCpuPercent", &[1.0]),
            row("a", Some("web"), 0, "memoryUsedBytes", &[1.0]),
            row("a", Some("web"), minute, "containerCpuPercent", &[1.0]),
            row("a", Some("web"), 4 * minute, "containerCpuPercent", &[1.0]),
        ];
        let warnings = gaps(&rows, Tier::Minute);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].message.contains("2 minute bucket(s)"),
            "{warnings:?}"
        );
    }

    #[test]
    fn the_bucket_is_required_and_bounded_by_the_window() {
        let query = |pairs: &[(&str, &str)]| QueryParams::from_pairs(pairs);
        let from: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
        let day: Timestamp = "2026-11-02T00:00:00Z".parse().unwrap();
        let month: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        let field = |result: ApiResult<Tier>| result.unwrap_err().body.details["field"].clone();
        assert_eq!(field(parse_bucket(&query(&[]), from, day)), "bucket");
        assert_eq!(
            field(parse_bucket(&query(&[("bucket", "week")]), from, day)),
            "bucket"
        );
        assert_eq!(
            parse_bucket(&query(&[("bucket", "minute")]), from, day).unwrap(),
            Tier::Minute
        );
        assert_eq!(
            field(parse_bucket(&query(&[("bucket", "minute")]), from, month)),
            "bucket"
        );
        assert_eq!(
            parse_bucket(&query(&[("bucket", "hour")]), from, month).unwrap(),
            Tier::Hour
        );
    }
}
