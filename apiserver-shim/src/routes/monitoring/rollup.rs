//! Spec §4.5 `GET /runtime-monitoring/rollup` (`runtime-monitoring.rollup/v1`): the samples of a
//! scope and window summed up per bucket (`minute`, `five-minute`, `hour`). It reads the store's
//! rollup tiers, kept as samples are recorded, so a window of weeks reads a few rows per series;
//! `totals` over the whole window, `topContributors` (resources by CPU, in cores, and memory, in
//! bytes) and `deploymentMarkers` (attempts started in the window, from the Deployment cache).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::json::Json;
use axum::extract::{RawQuery, State};
use berth_crds::deployment::DeploymentState;
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{SampleSourceError, SampleWarning, ScopeKind, Signal, metric_signal};
use berth_timeline::{Detail, RollupQuery, RollupRow, SampleQuery, Tier};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    MISSING_SAMPLES, Retention, STORE_SOURCE, STORE_UNAVAILABLE, Scope, check_scope, millis,
    parse_selection, retention, signal_values, with_scope_params,
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
    /// older; `none`: no samples in the window.
    pub freshness: &'static str,
    pub partial: bool,
    pub retention: Retention,
    /// One per metric measured in the window, its buckets oldest first.
    pub series: Vec<Series>,
    /// Per metric, over the whole window.
    pub totals: BTreeMap<String, Aggregate>,
    /// Resources using the most CPU (then memory), with `includeTopContributors`.
    pub top_contributors: Vec<Contributor>,
    /// Attempts started in the window, with `includeDeploymentMarkers`.
    pub deployment_markers: Vec<DeploymentMarker>,
    /// `missing-samples`: one per gap of a bucket or more in a series.
    pub warnings: Vec<SampleWarning>,
    pub source_errors: Vec<SampleSourceError>,
}

#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Series {
    pub signal: Signal,
    /// A `totals` name of the samples, e.g. `containerCpuPercent`.
    pub metric: String,
    pub points: Vec<Point>,
}

/// One bucket of a series: over every sample of the scope in it (one per container or host
/// and collection tick).
#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub bucket_start: String,
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub samples: i64,
}

#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Aggregate {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub samples: i64,
}

/// A resource's average use over the window, in absolute units.
#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Contributor {
    pub resource_id: String,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    /// Cores kept busy on average.
    pub container_cpu_cores: Option<f64>,
    pub memory_used_bytes: Option<f64>,
}

#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentMarker {
    pub deployment_id: String,
    pub resource_id: String,
    pub server_id: String,
    /// When the attempt was created.
    pub at: String,
    pub status: Option<DeploymentState>,
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

/// Series per metric (of `signals`), buckets oldest first, and the window's totals.
fn series_and_totals(
    rows: &[RollupRow],
    signals: &[Signal],
) -> (Vec<Series>, BTreeMap<String, Aggregate>) {
    let mut per_metric: BTreeMap<&str, BTreeMap<i64, Sum>> = BTreeMap::new();
    for row in rows {
        let wanted = metric_signal(&row.metric).is_some_and(|s| signals.contains(&s));
        if wanted {
            let buckets = per_metric.entry(&row.metric).or_default();
            buckets.entry(row.bucket_ms).or_default().add(row);
        }
    }
    let mut series = Vec::new();
    let mut totals = BTreeMap::new();
    for (metric, buckets) in per_metric {
        let mut window = Sum::default();
        let points = buckets
            .iter()
            .map(|(start, sum)| {
                window.merge(*sum);
                Point {
                    bucket_start: rfc3339(*start),
                    avg: sum.avg(),
                    min: sum.min,
                    max: sum.max,
                    samples: sum.count,
                }
            })
            .collect();
        let aggregate = Aggregate {
            avg: window.avg(),
            min: window.min,
            max: window.max,
            samples: window.count,
        };
        totals.insert(metric.to_string(), aggregate);
        let signal = metric_signal(metric).expect("filtered to known metrics");
        series.push(Series {
            signal,
            metric: metric.to_string(),
            points,
        });
    }
    (series, totals)
}

/// Resources by average CPU cores, then memory; the top [`TOP`].
fn top_contributors(rows: &[RollupRow]) -> Vec<Contributor> {
    type Key<'a> = (&'a str, Option<&'a str>, Option<&'a str>);
    let mut per_resource: BTreeMap<Key, (Sum, Sum)> = BTreeMap::new();
    for row in rows {
        let Some(resource) = row.resource.as_deref() else {
            continue;
        };
        let key = (resource, row.project.as_deref(), row.environment.as_deref());
        let (cpu, memory) = per_resource.entry(key).or_default();
        match row.metric.as_str() {
            "containerCpuCores" => cpu.add(row),
            "memoryUsedBytes" => memory.add(row),
            _ => {}
        }
    }
    let measured = |sum: &Sum| (sum.count > 0).then(|| sum.avg());
    let mut contributors: Vec<Contributor> = per_resource
        .into_iter()
        .map(
            |((resource, project, environment), (cpu, memory))| Contributor {
                resource_id: resource.to_string(),
                project_id: project.map(str::to_string),
                environment_id: environment.map(str::to_string),
                container_cpu_cores: measured(&cpu),
                memory_used_bytes: measured(&memory),
            },
        )
        .collect();
    let key = |c: &Contributor| {
        (
            c.container_cpu_cores.unwrap_or(0.0),
            c.memory_used_bytes.unwrap_or(0.0),
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
fn gaps(rows: &[RollupRow], tier: Tier) -> Vec<SampleWarning> {
    let mut buckets: BTreeMap<(&str, bool), Vec<i64>> = BTreeMap::new();
    for row in rows {
        let key = (row.series.as_str(), row.of_hosts());
        let seen = buckets.entry(key).or_default();
        if seen.last() != Some(&row.bucket_ms) {
            seen.push(row.bucket_ms);
        }
    }
    let mut warnings = Vec::new();
    for ((series, of_hosts), starts) in buckets {
        for pair in starts.windows(2) {
            let missing = (pair[1] - pair[0]) / tier.millis() - 1;
            if missing > 0 {
                let kind = if of_hosts {
                    ScopeKind::Server
                } else {
                    ScopeKind::Resource
                };
                warnings.push(SampleWarning {
                    code: MISSING_SAMPLES.into(),
                    message: format!(
                        "{series}: no samples in {missing} {} bucket(s) after {}",
                        tier.as_str(),
                        rfc3339(pair[0])
                    ),
                    signal: None,
                    scope: Some(kind),
                });
            }
        }
    }
    warnings
}

fn freshness(rows: &[RollupRow], tier: Tier, now: Timestamp, interval: Duration) -> &'static str {
    let Some(newest) = rows.iter().map(|r| r.bucket_ms).max() else {
        return "none";
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
                let marker = DeploymentMarker {
                    deployment_id: d.name_any(),
                    resource_id: spec.resource_id.clone(),
                    server_id: spec.server_id.clone(),
                    at: at.to_string(),
                    status: d.status.as_ref().and_then(|s| s.status),
                };
                (at, marker)
            })
        })
        .collect();
    markers.sort_by_key(|(at, _)| *at);
    markers.into_iter().map(|(_, marker)| marker).collect()
}

/// The rollup rows of the scope and, when asked for, each resource's usage over the window.
type Read = (Vec<RollupRow>, Vec<RollupRow>);

async fn read(
    state: &AppState,
    query: RollupQuery,
    contributors_wanted: bool,
) -> ApiResult<Result<Read, berth_timeline::TimelineError>> {
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
            let failed = SampleSourceError {
                source: STORE_SOURCE.into(),
                code: STORE_UNAVAILABLE.into(),
                message: "the monitoring rollup could not be read: the observation store failed"
                    .into(),
                retryable: true,
            };
            ((Vec::new(), Vec::new()), vec![failed])
        }
    };
    let rows: Vec<RollupRow> = rows.into_iter().filter(|r| visible(&caller, r)).collect();
    let usage: Vec<RollupRow> = usage.into_iter().filter(|r| visible(&caller, r)).collect();
    let (series, totals) = series_and_totals(&rows, &selection.signals);
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
        scope: selection.scope,
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
        ];
        let (series, totals) = series_and_totals(&rows, &[Signal::Cpu]);
        assert_eq!(series.len(), 1, "memory was not asked for");
        let points = &series[0].points;
        assert_eq!(points.len(), 2);
        assert_eq!(
            (
                points[0].avg,
                points[0].min,
                points[0].max,
                points[0].samples
            ),
            (4.0, 2.0, 6.0, 3)
        );
        assert_eq!(points[1].avg, 10.0);
        let cpu = &totals["containerCpuPercent"];
        assert_eq!(
            (cpu.avg, cpu.min, cpu.max, cpu.samples),
            (5.5, 2.0, 10.0, 4)
        );
    }

    #[test]
    fn top_contributors_rank_resources_by_cpu_cores_then_memory() {
        let rows = vec![
            row("a", Some("web"), 0, "containerCpuCores", &[0.1]),
            row("b", Some("api"), 0, "containerCpuCores", &[0.5]),
            row("b", Some("api"), 0, "memoryUsedBytes", &[2048.0]),
            row("host:edge", None, 0, "hostCpuPercent", &[50.0]),
        ];
        let top = top_contributors(&rows);
        let ids: Vec<&str> = top.iter().map(|c| c.resource_id.as_str()).collect();
        assert_eq!(ids, ["api", "web"]);
        assert_eq!(top[0].memory_used_bytes, Some(2048.0));
        assert_eq!(top[1].memory_used_bytes, None);
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
