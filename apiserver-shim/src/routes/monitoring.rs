//! Spec §4.5 `GET /runtime-monitoring/samples` (`runtime-monitoring.samples.list/v1`): the
//! Monitoring samples berth-controller's server observer recorded in the observation store,
//! for a server's host and for each managed container, read back by scope and window.
//! Read-only: it collects nothing fresh; how fresh the answer is says `freshness`.
//!
//! A failing store read is no error: the answer is `partial`, with no samples and a
//! `monitoring-store` entry in `sourceErrors`. Gaps longer than
//! [`GAP_FACTOR`] collection intervals between a series' consecutive samples are reported as
//! `missing-samples` warnings, one per gap.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use berth_api::monitoring::{MonitoringWarning, SourceError};
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{MonitoringSample, SAMPLES_SCHEMA_VERSION, ScopeKind, Signal};
use berth_crds::retention_policy::RetentionCategory;
use berth_observations::{SampleQuery, StoreError};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::fields::bounded;
use crate::domain::monitoring_scope::{ScopeIds, check_scope_ids, with_scope_params};
use crate::domain::time::utc_window;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::validate;

pub use berth_api::monitoring::{Retention, SamplesList, Scope};

mod disk;
mod rollup;
mod usage;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<SamplesList, _, _>(
            "/runtime-monitoring/samples",
            "Monitoring samples the server observer recorded (host totals per server, usage per \
         managed container), the latest `limit` of a window, oldest first; read-only, collects \
         nothing fresh (query: scope.kind, scope.serverId, scope.projectId, \
         scope.environmentId, scope.resourceId, scope.deploymentId, window.from, window.to \
         (UTC, ending in Z; default the last hour), signals (cpu, memory, disk, inode, docker, \
         network; comma-separated or repeated; default all), limit 1..720 default 300)",
            list,
        ),
        Endpoint::get::<berth_api::monitoring::Rollup, _, _>(
            "/runtime-monitoring/rollup",
            "Monitoring samples summed up per bucket from the store's rollup tiers: series per \
             signal (each bucket's average totals and sample count), totals over the window, \
             topContributors (resources by CPU share and memory bytes) and deploymentMarkers \
             (query: the scope, window and signals of /runtime-monitoring/samples; bucket: \
             minute, five-minute or hour, required, at most 1440 buckets; \
             includeDeploymentMarkers, includeTopContributors: true|false)",
            rollup::show,
        ),
        Endpoint::get::<berth_api::monitoring::UsageSnapshot, _, _>(
            "/runtime-usage/inspect/stream",
            "Runtime usage snapshots as an event stream: the first at once, then one per \
             interval until the client leaves; totals and usage by project, environment, \
             resource and deployment from the latest monitoring samples, and the artifacts \
             (running containers) with their label evidence (query: scope.kind, \
             scope.serverId, scope.projectId, scope.environmentId, scope.resourceId, \
             scope.deploymentId; intervalSeconds 5..3600, default the collection interval)",
            usage::stream,
        )
        .event_stream(),
    ]
}

/// `limit` bounds and default (spec §8).
pub const LIMIT: (u64, u64) = (1, 720);
const DEFAULT_LIMIT: u64 = 300;
/// The window when `window.from` is not given: the hour before `window.to`.
const DEFAULT_WINDOW: SignedDuration = SignedDuration::from_hours(1);
/// The longest scope filter (a Kubernetes object name).
const ID_MAX: usize = 253;
/// `sourceErrors[].source` of a failed store read, and its code.
pub const STORE_SOURCE: &str = "monitoring-store";
pub const STORE_UNAVAILABLE: &str = "monitoring_store_unavailable";
/// `freshness` of an answer without samples.
pub const UNKNOWN: &str = "unknown";
/// `warnings[].code` of a gap in a series.
pub const MISSING_SAMPLES: &str = "missing-samples";
/// A gap longer than this many collection intervals is reported (a tick late is not).
pub const GAP_FACTOR: f64 = 2.5;
/// Samples younger than this many collection intervals are `live`.
const LIVE_FACTOR: u32 = 2;

/// Beside [`SCOPE_PARAMS`](crate::domain::monitoring_scope::SCOPE_PARAMS).
const PARAMS: &[&str] = &["window.from", "window.to", "signals", "limit"];

/// The scope an answer echoes: the filters given, with the kind of the most specific id when
/// `scope.kind` was not given.
pub fn echoed(scope: &Scope) -> Scope {
    let kind = scope.kind.or_else(|| {
        [
            (ScopeKind::Deployment, &scope.deployment_id),
            (ScopeKind::Resource, &scope.resource_id),
            (ScopeKind::Environment, &scope.environment_id),
            (ScopeKind::Project, &scope.project_id),
            (ScopeKind::Server, &scope.server_id),
        ]
        .into_iter()
        .find_map(|(kind, id)| id.is_some().then_some(kind))
    });
    Scope {
        kind,
        ..scope.clone()
    }
}

/// The query, checked.
#[derive(Debug, PartialEq)]
struct Parsed {
    scope: Scope,
    from: Timestamp,
    to: Timestamp,
    signals: Vec<Signal>,
    limit: usize,
}

/// What samples and rollups both select: a scope, a window and signals.
#[derive(Debug, PartialEq)]
struct Selection {
    scope: Scope,
    from: Timestamp,
    to: Timestamp,
    signals: Vec<Signal>,
}

/// Checks the samples query; `signals` holds every `signals` value given (the parameter may
/// repeat).
fn parse_query(query: &QueryParams, signals: &[String], now: Timestamp) -> ApiResult<Parsed> {
    let selection = parse_selection(query, &with_scope_params(PARAMS), signals, now)?;
    let limit = query.integer("limit", LIMIT.0, LIMIT.1, DEFAULT_LIMIT)?;
    Ok(Parsed {
        scope: selection.scope,
        from: selection.from,
        to: selection.to,
        signals: selection.signals,
        limit: limit as usize,
    })
}

/// Checks the parameters both reads take; `known` lists every parameter the endpoint takes.
fn parse_selection(
    query: &QueryParams,
    known: &[&str],
    signals: &[String],
    now: Timestamp,
) -> ApiResult<Selection> {
    known_params(query, known)?;
    let scope = parse_scope(query)?;
    let (from, to) = utc_window(query, "window.from", "window.to", now, DEFAULT_WINDOW)?;
    let signals = parse_signals(signals)?;
    Ok(Selection {
        scope,
        from,
        to,
        signals,
    })
}

/// The `scope.*` filters.
fn parse_scope(query: &QueryParams) -> ApiResult<Scope> {
    let kinds: Vec<&str> = ScopeKind::ALL.iter().map(|k| k.as_str()).collect();
    let kind = query
        .one_of("scope.kind", &kinds, None)?
        .and_then(|name| ScopeKind::ALL.into_iter().find(|k| k.as_str() == name));
    let id = |field: &str| -> ApiResult<Option<String>> {
        let value = query.string(field)?;
        if let Some(value) = value {
            bounded(field, value, ID_MAX)?;
        }
        Ok(value.map(str::to_string))
    };
    let scope = Scope {
        kind,
        server_id: id("scope.serverId")?,
        project_id: id("scope.projectId")?,
        environment_id: id("scope.environmentId")?,
        resource_id: id("scope.resourceId")?,
        deployment_id: id("scope.deploymentId")?,
    };
    Ok(scope)
}

/// `signals`: names separated by commas, in one value or several; none given means all.
fn parse_signals(values: &[String]) -> ApiResult<Vec<Signal>> {
    if values.is_empty() {
        return Ok(Signal::ALL.to_vec());
    }
    let mut signals = Vec::new();
    for name in values.iter().flat_map(|value| value.split(',')) {
        let Some(signal) = Signal::parse(name.trim()) else {
            let allowed: Vec<&str> = Signal::ALL.iter().map(|s| s.as_str()).collect();
            return Err(ApiError::validation(
                "signals",
                format!(
                    "signals must name one or more of: {} (got `{name}`)",
                    allowed.join(", ")
                ),
            )
            .with_detail("allowed", allowed));
        };
        if !signals.contains(&signal) {
            signals.push(signal);
        }
    }
    Ok(signals)
}

/// Every value of `signals` in the raw query string (the query map keeps only the last of a
/// repeated parameter).
fn signal_values(raw: Option<&str>) -> ApiResult<Vec<String>> {
    let decode = |text: &str| {
        validate::percent_decode(&text.replace('+', " ")).ok_or_else(|| {
            ApiError::malformed("the query has a broken percent-escape or is not UTF-8")
        })
    };
    let mut values = Vec::new();
    for pair in raw.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if decode(key)? == "signals" {
            values.push(decode(value)?);
        }
    }
    Ok(values)
}

/// Whether a deploy token's scope covers the sample (users see their whole organization).
fn visible(caller: &Caller, sample: &MonitoringSample) -> bool {
    let evidence = &sample.scope_evidence;
    let sees = |dimension, id: &Option<String>| caller.sees(dimension, id.as_deref().unwrap_or(""));
    if sample.is_host() {
        return caller.sees(ScopeDimension::Target, &evidence.server_id);
    }
    sees(ScopeDimension::Resource, &evidence.resource_id)
        && sees(ScopeDimension::Project, &evidence.project_id)
        && sees(ScopeDimension::Environment, &evidence.environment_id)
}

fn observed_ms(sample: &MonitoringSample) -> Option<i64> {
    sample
        .observed_at
        .parse::<Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// `live`, `stale` or `unknown`, from the newest sample's age at `now`.
fn freshness(samples: &[MonitoringSample], now: Timestamp, interval: Duration) -> &'static str {
    let Some(newest) = samples.iter().filter_map(observed_ms).max() else {
        return UNKNOWN;
    };
    let age = now.as_millisecond().saturating_sub(newest);
    if age < millis(interval).saturating_mul(i64::from(LIVE_FACTOR)) {
        "live"
    } else {
        "stale"
    }
}

/// A length in words: `2m30s`, `1h5m0s`, `45s`.
fn length(ms: i64) -> String {
    let seconds = ms / 1000;
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

/// One `missing-samples` warning per gap longer than [`GAP_FACTOR`] intervals between
/// consecutive samples of a series: a server's host samples, or one container's (its
/// `labels.runtimeId`). `samples` are oldest first.
fn missing_samples(samples: &[MonitoringSample], interval: Duration) -> Vec<MonitoringWarning> {
    let longest = (millis(interval) as f64 * GAP_FACTOR) as i64;
    let mut previous: HashMap<(bool, String), (i64, &str)> = HashMap::new();
    let mut warnings = Vec::new();
    for sample in samples {
        let Some(at) = observed_ms(sample) else {
            continue;
        };
        let host = sample.is_host();
        let evidence = &sample.scope_evidence;
        let series = if host {
            evidence.server_id.clone()
        } else {
            sample
                .labels
                .runtime_id
                .clone()
                .or_else(|| evidence.resource_id.clone())
                .unwrap_or_default()
        };
        let key = (host, series);
        if let Some((before, started)) = previous.get(&key).copied()
            && at - before > longest
        {
            let what = if host {
                format!("server {}", evidence.server_id)
            } else {
                let resource = evidence.resource_id.as_deref().unwrap_or("unattributed");
                format!("container {} of resource {resource}", key.1)
            };
            warnings.push(MonitoringWarning {
                code: MISSING_SAMPLES.into(),
                message: format!(
                    "no samples of {what} for {} after {started} (one is expected every {})",
                    length(at - before),
                    length(millis(interval)),
                ),
                signal: None,
                scope: Some(sample.scope()),
            });
        }
        previous.insert(key, (at, sample.observed_at.as_str()));
    }
    warnings
}

fn check_scope(state: &AppState, caller: &Caller, scope: &Scope) -> ApiResult<()> {
    let ids = ScopeIds {
        server: scope.server_id.as_deref(),
        project: scope.project_id.as_deref(),
        environment: scope.environment_id.as_deref(),
        resource: scope.resource_id.as_deref(),
        deployment: None,
    };
    check_scope_ids(state, caller, ids)
}

/// The samples of `query`, or why the store could not say.
async fn read(
    state: &AppState,
    query: SampleQuery,
) -> ApiResult<Result<Vec<MonitoringSample>, StoreError>> {
    let store = Arc::clone(&state.observations);
    tokio::task::spawn_blocking(move || store.samples(&query))
        .await
        .map_err(ApiError::internal)
}

/// The store's query of `scope`'s samples in `namespace`, observed from `from_ms` to `to_ms`.
fn scope_query(
    namespace: &str,
    scope: &Scope,
    from_ms: i64,
    to_ms: i64,
    limit: usize,
) -> SampleQuery {
    SampleQuery {
        namespace: namespace.to_string(),
        kind: scope.kind,
        server: scope.server_id.clone(),
        project: scope.project_id.clone(),
        environment: scope.environment_id.clone(),
        resource: scope.resource_id.clone(),
        deployment: scope.deployment_id.clone(),
        from_ms,
        to_ms,
        limit,
    }
}

/// The `sourceErrors` entry of a store read that failed: `what` could not be read.
fn store_unavailable(what: &str) -> SourceError {
    SourceError {
        source: STORE_SOURCE.into(),
        code: STORE_UNAVAILABLE.into(),
        message: format!("{what} could not be read: the observation store failed"),
        retriable: true,
    }
}

/// How long the organization's samples are kept: what its governing `runtime-monitoring-samples`
/// RetentionPolicy deletes them after (the one mechanism that prunes them).
fn samples_retention(state: &AppState, namespace: &str, now: Timestamp) -> Retention {
    let category = RetentionCategory::RuntimeMonitoringSamples;
    let days = crate::domain::retention::deleted_after_days(state, namespace, category);
    retention(days, now)
}

/// Samples kept `days` (`None`: no policy deletes them, so all since the epoch are kept).
fn retention(days: Option<i64>, now: Timestamp) -> Retention {
    let retained_from = match days {
        Some(days) => now
            .checked_sub(SignedDuration::from_hours(days.saturating_mul(24)))
            .unwrap_or(Timestamp::UNIX_EPOCH),
        None => Timestamp::UNIX_EPOCH,
    };
    let span = now.duration_since(retained_from);
    Retention {
        raw_retention_hours: u64::try_from(span.as_hours()).unwrap_or_default(),
        retained_from: retained_from.to_string(),
        retained_to: now.to_string(),
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SamplesList>> {
    let now = Timestamp::now();
    let parsed = parse_query(&query, &signal_values(raw.as_deref())?, now)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    check_scope(&state, &caller, &parsed.scope)?;
    let store_query = scope_query(
        &organization.namespace,
        &parsed.scope,
        parsed.from.as_millisecond(),
        parsed.to.as_millisecond(),
        parsed.limit,
    );
    let (samples, source_errors) = match read(&state, store_query).await? {
        Ok(samples) => (samples, Vec::new()),
        Err(error) => {
            tracing::warn!(%error, "observation store unavailable: monitoring samples");
            (Vec::new(), vec![store_unavailable("monitoring samples")])
        }
    };
    let samples: Vec<MonitoringSample> = samples
        .into_iter()
        .filter(|sample| visible(&caller, sample))
        .collect();
    let interval = state.config.monitoring_interval;
    Ok(Json(SamplesList {
        schema_version: SAMPLES_SCHEMA_VERSION.into(),
        scope: echoed(&parsed.scope),
        from: parsed.from.to_string(),
        to: parsed.to.to_string(),
        generated_at: now.to_string(),
        freshness: freshness(&samples, now, interval).into(),
        partial: !source_errors.is_empty(),
        retention: samples_retention(&state, &organization.namespace, now),
        warnings: missing_samples(&samples, interval),
        samples: samples.iter().map(|s| s.to_wire(&parsed.signals)).collect(),
        source_errors,
    }))
}

#[cfg(test)]
mod tests;
