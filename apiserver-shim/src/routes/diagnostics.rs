//! Spec §4.7 `GET /resources/{resourceId}/diagnostic-summary`
//! (`resources.diagnostic-summary/v1`): everything Berth knows about why a resource does or
//! does not serve, in one record — its context, the deployment in focus with its error, access
//! and proxy (optionally the route as the proxy holds it), the tails of the deployment timeline
//! and of the runtime logs, and `copy` texts ready to paste into a support ticket. Secret values
//! of the resource's configuration are masked everywhere; a part that cannot be read becomes a
//! `sourceErrors` entry, never a failed answer.

mod build;
mod copy;
mod proxy;

use axum::extract::{Path, State};
use berth_crds::deployment::Deployment;
use berth_crds::health::{Inputs, ResourceHealth, build};
use berth_crds::masking::Masker;
use berth_crds::resource::Resource;
use berth_observations::TimelineKey;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::bounded;
use crate::domain::objects::{find_deployment, find_in};
use crate::domain::previews::read_subject;
use crate::domain::resource_access::{lookup, masker};
use crate::domain::runtime_logs;
use crate::domain::time::utc_range;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::services::recent_access_failures;
use crate::state::AppState;
use berth_api::diagnostics::{
    DeploymentBlock, Focus, LogLine, Proxy, Redaction, SourceError, System, Tail, Window,
};
use berth_api::wire::name_of;

pub use berth_api::diagnostics::DiagnosticSummary;

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::get::<DiagnosticSummary, _, _>(
        "/resources/{resourceId}/diagnostic-summary",
        "Why the resource does or does not serve, in one record with copy texts for a support \
         ticket; secret values masked (query: deploymentId (default the latest), \
         observationFrom, observationTo (UTC, ending in Z), includeDeploymentTimelineTail and \
         includeRuntimeLogTail (true|false, default true), includeProxyConfiguration (default \
         false: reads the route from the server's edge proxy), tailLines 0..50 default 20, \
         locale (default en), previewEnvironmentId: a preview environment of the resource, \
         whose copy of it is then summarized)",
        show,
    )]
}

/// `tailLines` bounds and default (spec §8).
pub const TAIL_LINES: (u64, u64) = (0, 50);
const DEFAULT_TAIL_LINES: u64 = 20;
const REDACTION_POLICY: &str = "deployment-environment-secrets";

/// The query, checked.
#[derive(Debug, PartialEq)]
struct DiagnosticQuery {
    preview_environment_id: Option<String>,
    deployment_id: Option<String>,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
    timeline_tail: bool,
    log_tail: bool,
    proxy_configuration: bool,
    tail_lines: u64,
    locale: String,
}

fn parse_query(query: &QueryParams) -> ApiResult<DiagnosticQuery> {
    known_params(
        query,
        &[
            "previewEnvironmentId",
            "deploymentId",
            "observationFrom",
            "observationTo",
            "includeDeploymentTimelineTail",
            "includeRuntimeLogTail",
            "includeProxyConfiguration",
            "tailLines",
            "locale",
        ],
    )?;
    let (from, to) = utc_range(query, "observationFrom", "observationTo")?;
    let deployment_id = query.string("deploymentId")?.map(str::to_string);
    if let Some(id) = &deployment_id {
        bounded("deploymentId", id, 253)?;
    }
    let locale = query.string("locale")?.unwrap_or("en").to_string();
    bounded("locale", &locale, 35)?;
    let (min, max) = TAIL_LINES;
    Ok(DiagnosticQuery {
        preview_environment_id: query.string("previewEnvironmentId")?.map(str::to_string),
        deployment_id,
        from,
        to,
        timeline_tail: query.boolean_or("includeDeploymentTimelineTail", true)?,
        log_tail: query.boolean_or("includeRuntimeLogTail", true)?,
        proxy_configuration: query.boolean("includeProxyConfiguration")?,
        tail_lines: query.integer("tailLines", min, max, DEFAULT_TAIL_LINES)?,
        locale,
    })
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<DiagnosticSummary>> {
    let query = parse_query(&query)?;
    let resource = lookup(&state, &caller, &id)?;
    let preview = query.preview_environment_id.as_deref();
    let resource = read_subject(&state, &caller, resource, preview)?.resource;
    let id = resource.name_any();
    let masker = masker(&state, &caller, &resource).await?;
    let mut errors = Vec::new();
    let deployment = focus_deployment(&state, &resource, &query, &mut errors).await?;
    // Nothing read from here on fails the answer: what cannot be read is a `sourceErrors` entry.
    let focus = deployment.as_ref();
    let parts = read_parts(&state, &caller, &resource, focus, &query, &masker, errors).await;
    let system = system(&state, &query);
    let mut summary = summary(id, &resource, focus, &query, parts, system, &masker);
    summary.copy = copy::texts(&summary, &masker);
    Ok(Json(summary))
}

/// The parts of a summary read now from the caches, the stores and the server, with the
/// sources that could not be read.
struct Parts {
    now: String,
    health: ResourceHealth,
    proxy: Proxy,
    timeline: Tail,
    timeline_count: i64,
    logs: Tail,
    /// Secret values masked in the timeline, the logs and the proxy block together.
    masked_value_count: usize,
    errors: Vec<SourceError>,
}

/// Reads the resource's health, the tails and the proxy block (masked), adding a
/// `sourceErrors` entry for each that cannot be read.
async fn read_parts(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    deployment: Option<&Deployment>,
    query: &DiagnosticQuery,
    masker: &Masker,
    mut errors: Vec<SourceError>,
) -> Parts {
    let namespace = resource.namespace().unwrap_or_default();
    let server = resource
        .spec
        .server_id
        .as_ref()
        .and_then(|s| find_in(&state.caches.servers, &namespace, s, "server").ok());
    let now = Timestamp::now().to_string();
    let mut health = build(&Inputs {
        resource,
        latest: deployment,
        server: server.as_deref(),
        now: now.clone(),
    });
    match recent_access_failures::latest_of(&state.observations, resource).await {
        Ok(latest) => health.public_access.latest_access_failure = latest,
        Err(_) => errors.push(source_error(
            "access",
            "access_failure_evidence_unreadable",
            "access-failure-read",
            None,
            "the latest access-failure evidence could not be read".into(),
        )),
    }
    let (timeline, timeline_count, timeline_masked) =
        timeline_tail(state, resource, deployment, query, masker, &mut errors).await;
    let (logs, logs_masked) = log_tail(state, caller, resource, query, &mut errors).await;
    let (proxy, proxy_masked) = proxy::block(
        state,
        resource,
        server.as_deref(),
        &health,
        query.proxy_configuration,
        masker,
        &mut errors,
    )
    .await;
    Parts {
        now,
        health,
        proxy,
        timeline,
        timeline_count,
        logs,
        masked_value_count: timeline_masked + logs_masked + proxy_masked,
        errors,
    }
}

/// The record of what was read, with no I/O of its own; the caller adds the `copy` texts,
/// which are made from the rest of it.
fn summary(
    id: String,
    resource: &Resource,
    deployment: Option<&Deployment>,
    query: &DiagnosticQuery,
    parts: Parts,
    system: System,
    masker: &Masker,
) -> DiagnosticSummary {
    let masked_value_count = parts.masked_value_count;
    let window = window(resource, query, &parts.now);
    DiagnosticSummary {
        schema_version: berth_api::diagnostics::SCHEMA_VERSION.into(),
        generated_at: parts.now,
        focus: Focus {
            resource_id: id,
            requested_deployment_id: query.deployment_id.clone(),
            deployment_id: deployment.map(|d| d.name_any()),
        },
        context: build::context(resource, window),
        deployment: deployment
            .map(|d| mask_error(build::deployment_block(d, parts.timeline_count), masker)),
        access: build::access(resource, &parts.health),
        proxy: parts.proxy,
        deployment_timeline: parts.timeline,
        runtime_logs: parts.logs,
        system,
        source_errors: parts.errors,
        redaction: Redaction {
            policy: REDACTION_POLICY.into(),
            masked: masked_value_count > 0,
            masked_value_count,
        },
        copy: Default::default(),
    }
}

/// The deployment asked for (404 when it is not one of the resource's), else the latest.
async fn focus_deployment(
    state: &AppState,
    resource: &Resource,
    query: &DiagnosticQuery,
    errors: &mut Vec<SourceError>,
) -> ApiResult<Option<Deployment>> {
    let namespace = resource.namespace().unwrap_or_default();
    let latest = resource
        .status
        .as_ref()
        .and_then(|s| s.last_deployment_id.clone());
    let Some(name) = query.deployment_id.clone().or(latest) else {
        return Ok(None);
    };
    let read = find_deployment(state, &namespace, &name).await;
    match read {
        Ok(found) => {
            let own = found.filter(|d| d.spec.resource_id == resource.name_any());
            if own.is_none() && query.deployment_id.is_some() {
                return Err(
                    ApiError::not_found("deployment", &name).with_detail("field", "deploymentId")
                );
            }
            Ok(own)
        }
        Err(error) => {
            tracing::warn!(%error, deployment = %name, "diagnostics: reading the deployment failed");
            errors.push(source_error(
                "deployment",
                "deployment_unreadable",
                "deployment-read",
                Some(name),
                "the deployment could not be read".into(),
            ));
            Ok(None)
        }
    }
}

/// The last entries of the deployment's timeline, masked; and its length and masked count.
async fn timeline_tail(
    state: &AppState,
    resource: &Resource,
    deployment: Option<&Deployment>,
    query: &DiagnosticQuery,
    masker: &Masker,
    errors: &mut Vec<SourceError>,
) -> (Tail, i64, usize) {
    let Some(deployment) = deployment else {
        return (Tail::lines(query.tail_lines, Vec::new()), 0, 0);
    };
    let key = TimelineKey::new(
        resource.namespace().unwrap_or_default(),
        resource.name_any(),
        deployment.name_any(),
    );
    let read = store_call(&state.observations, "deployment timelines", move |store| {
        store.read(&key, 0, usize::MAX)
    })
    .await;
    let entries = match read {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(source_error(
                "deployment-timeline",
                "observation_store_unavailable",
                "timeline-read",
                Some(deployment.name_any()),
                error.body.message,
            ));
            return (
                Tail::unavailable(
                    query.tail_lines,
                    "observation_store_unavailable",
                    "timeline-read",
                ),
                0,
                0,
            );
        }
    };
    let count = entries.len() as i64;
    if !query.timeline_tail {
        return (Tail::not_requested(query.tail_lines), count, 0);
    }
    let skip = entries.len().saturating_sub(query.tail_lines as usize);
    let mut masked = 0;
    let lines = entries
        .into_iter()
        .skip(skip)
        .map(|entry| {
            let (message, replaced) = masker.mask_counted(&entry.event.message);
            masked += replaced;
            LogLine::of_event(&entry.event, message, replaced > 0)
        })
        .collect();
    (Tail::lines(query.tail_lines, lines), count, masked)
}

/// The last lines the focus attempt's container wrote, else the serving one's (already
/// masked); and how many were masked.
async fn log_tail(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    query: &DiagnosticQuery,
    errors: &mut Vec<SourceError>,
) -> (Tail, usize) {
    if !query.log_tail {
        return (Tail::not_requested(query.tail_lines), 0);
    }
    if query.tail_lines == 0 {
        return (Tail::lines(0, Vec::new()), 0);
    }
    let tail = |deployment_id| {
        runtime_logs::tail(state, caller, resource, deployment_id, query.tail_lines)
    };
    let mut read = tail(query.deployment_id.clone()).await;
    // An attempt that never ran (a failed build) has no output: show the serving one's.
    if query.deployment_id.is_some() && read.as_ref().is_ok_and(|logs| logs.logs.is_empty()) {
        read = tail(None).await;
    }
    match read {
        Ok(logs) => {
            let masked = logs.logs.iter().filter(|line| line.masked).count();
            let lines: Vec<LogLine> = logs.logs.iter().map(runtime_line).collect();
            (Tail::lines(query.tail_lines, lines), masked)
        }
        Err(error) => {
            errors.push(source_error(
                "runtime-logs",
                "runtime_logs_unavailable",
                "runtime-log-read",
                resource.spec.server_id.clone(),
                error.body.message,
            ));
            (
                Tail::unavailable(
                    query.tail_lines,
                    "runtime_logs_unavailable",
                    "runtime-log-read",
                ),
                0,
            )
        }
    }
}

/// A line the runtime wrote, as a diagnostic log line: the application's, with no deployment
/// phase or level.
fn runtime_line(line: &runtime_logs::RuntimeLogLine) -> LogLine {
    LogLine {
        timestamp: line.timestamp.clone(),
        source: "application".into(),
        phase: None,
        level: None,
        stream: line.stream.and_then(name_of),
        service_name: line.service_name.clone(),
        message: line.message.clone(),
        masked: line.masked,
    }
}

/// The observation window asked for: `observationFrom` (else the resource's creation) to
/// `observationTo` (else now); none when neither is given.
fn window(resource: &Resource, query: &DiagnosticQuery, now: &str) -> Option<Window> {
    if query.from.is_none() && query.to.is_none() {
        return None;
    }
    let created = resource
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    Some(Window {
        from: query
            .from
            .map(|t| t.to_string())
            .or(created)
            .unwrap_or_default(),
        to: query.to.map_or_else(|| now.to_string(), |t| t.to_string()),
    })
}

/// The deployment's error message masked like everything else shown.
fn mask_error(mut block: DeploymentBlock, masker: &Masker) -> DeploymentBlock {
    if let Some(error) = &mut block.last_error {
        error.message = masker.mask(&error.message);
    }
    block
}

fn system(state: &AppState, query: &DiagnosticQuery) -> System {
    let driver = state.config.observation_store_driver;
    System {
        // The REST API.
        entrypoint: "http".into(),
        request_id: format!("diag-{:016x}", rand::random::<u64>()),
        locale: query.locale.clone(),
        readiness_status: "ready".into(),
        database_driver: driver.into(),
        database_mode: if driver == "sqlite" {
            "embedded".into()
        } else {
            "shared".into()
        },
    }
}

fn source_error(
    source: &'static str,
    code: &'static str,
    phase: &'static str,
    related: Option<String>,
    message: String,
) -> SourceError {
    SourceError {
        source: source.into(),
        code: code.into(),
        category: "infra".into(),
        phase: phase.into(),
        retryable: true,
        related_entity_id: related,
        related_state: None,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> QueryParams {
        QueryParams::from_pairs(pairs)
    }

    #[test]
    fn tails_are_included_by_default_and_the_proxy_configuration_on_request() {
        let parsed = parse_query(&query(&[])).unwrap();
        assert!(parsed.timeline_tail && parsed.log_tail && !parsed.proxy_configuration);
        assert_eq!(parsed.tail_lines, 20);
        assert_eq!(parsed.locale, "en");
        let asked = parse_query(&query(&[
            ("includeProxyConfiguration", "true"),
            ("includeRuntimeLogTail", "false"),
            ("tailLines", "0"),
        ]))
        .unwrap();
        assert!(asked.proxy_configuration && !asked.log_tail);
        assert_eq!(asked.tail_lines, 0);
    }

    #[test]
    fn bad_values_name_their_field() {
        for (pairs, field) in [
            (vec![("tailLines", "51")], "tailLines"),
            (
                vec![("includeRuntimeLogTail", "yes")],
                "includeRuntimeLogTail",
            ),
            (
                vec![("observationFrom", "2030-01-01T00:00:00+01:00")],
                "observationFrom",
            ),
            (
                vec![
                    ("observationFrom", "2030-01-02T00:00:00Z"),
                    ("observationTo", "2030-01-01T00:00:00Z"),
                ],
                "observationFrom",
            ),
            (vec![("verbose", "1")], "verbose"),
        ] {
            let error = parse_query(&query(&pairs)).unwrap_err();
            assert_eq!(error.status, 422, "{pairs:?}");
            assert_eq!(error.body.details["field"], field, "{pairs:?}");
        }
    }
}
