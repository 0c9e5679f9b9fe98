//! Spec §4.7 `GET /resources/{resourceId}/health` (`resources.health/v1`). `mode=cached` (the
//! default) answers from what the controller recorded: the Resource's status, written when the
//! server observer saw its container change; no SSH round trip. `mode=live` also asks the
//! server now, within a deadline: the container's state (`includeRuntimeProbe`) and a request
//! through the edge proxy with the resource's hostname (`includePublicAccessProbe`). A part the
//! server cannot answer becomes a `sourceErrors` entry and `partial: true`, never a failed read.

mod history;
mod probes;

use axum::extract::{Path, State};
use berth_crds::health::{Inputs, SourceError, build, overall};
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::environments;
use crate::domain::objects::{find_deployment, find_in};
use crate::domain::resource_access::lookup;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::services::recent_access_failures;
use crate::state::AppState;

pub use berth_crds::health::{ResourceHealth, RuntimeControlBlock, runtime_control_block};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ResourceHealth, _, _>(
            "/resources/{resourceId}/health",
            "The resource's health (query: mode cached|live, default cached: from the controller's \
         observations without contacting the server; live: asks the server now. includeChecks, \
         includeRuntimeProbe, includePublicAccessProbe: true|false; previewEnvironmentId)",
            show,
        ),
        Endpoint::get::<history::HealthHistory, _, _>(
            "/resources/{resourceId}/health-history",
            "The resource's health records as berth-controller observed them: on every change and \
         every 15 minutes while unchanged (query: window.from, window.to: UTC date-times ending \
         in Z, default the last 24 hours; limit 1..720 default 200: the latest in the window, \
         oldest first)",
            history::show,
        ),
    ]
}

/// The query, checked.
#[derive(Debug, Default, PartialEq)]
pub struct HealthQuery {
    pub live: bool,
    pub checks: bool,
    pub runtime_probe: bool,
    pub public_access_probe: bool,
}

fn parse_query(query: &QueryParams) -> ApiResult<HealthQuery> {
    known_params(
        query,
        &[
            "mode",
            "includeChecks",
            "includeRuntimeProbe",
            "includePublicAccessProbe",
            "previewEnvironmentId",
        ],
    )?;
    let live = match query.string("mode")? {
        None | Some("cached") => false,
        Some("live") => true,
        Some(_) => {
            return Err(ApiError::validation(
                "mode",
                "mode must be `cached` or `live`",
            ));
        }
    };
    Ok(HealthQuery {
        live,
        checks: query.boolean("includeChecks")?,
        runtime_probe: query.boolean("includeRuntimeProbe")?,
        public_access_probe: query.boolean("includePublicAccessProbe")?,
    })
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<ResourceHealth>> {
    let parsed = parse_query(&query)?;
    let resource = lookup(&state, &caller, &id)?;
    if let Some(preview) = query.string("previewEnvironmentId")? {
        environments::lookup(&state, &caller, preview)?;
    }
    Ok(Json(assemble(&state, &resource, &parsed).await))
}

/// The resource's health as `parsed` asks for it: recorded, and with `live` probed now.
pub async fn assemble(
    state: &AppState,
    resource: &berth_crds::resource::Resource,
    parsed: &HealthQuery,
) -> ResourceHealth {
    let id = resource.name_any();
    let namespace = resource.namespace().unwrap_or_default();
    let latest_id = resource
        .status
        .as_ref()
        .and_then(|s| s.last_deployment_id.clone());
    let mut source_errors = Vec::new();
    let latest = match latest_id {
        Some(name) => match find_deployment(state, &namespace, &name).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(%error, resource = %id, "health: reading the latest deployment failed");
                source_errors.push(SourceError::infra(
                    "deployment",
                    "deployment_unreadable",
                    "deployment-read",
                    "the latest deployment could not be read".into(),
                ));
                None
            }
        },
        None => None,
    };
    let server = resource
        .spec
        .server_id
        .as_ref()
        .and_then(|s| find_in(&state.caches.servers, &namespace, s, "server").ok());
    let mut health = build(&Inputs {
        resource,
        latest: latest.as_ref(),
        server: server.as_deref(),
        now: probes::now(),
    });
    let latest_failure = if parsed.live {
        recent_access_failures::latest_of(&state.timelines, resource).await
    } else {
        state
            .recent_access_failures
            .latest_of(&state.timelines, resource)
            .await
    };
    match latest_failure {
        Ok(latest) => health.public_access.latest_access_failure = latest,
        Err(_) => source_errors.push(SourceError::infra(
            "public-access",
            "access_failure_evidence_unreadable",
            "access-failure-read",
            "the latest access-failure evidence could not be read".into(),
        )),
    }
    health.source_errors = source_errors;
    if parsed.checks {
        health.checks.push(probes::recorded_runtime_check(&health));
    }
    if parsed.live {
        probes::run(state, resource, server.as_deref(), parsed, &mut health).await;
    }
    health.partial = !health.source_errors.is_empty();
    health.overall = overall(&health);
    health
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> QueryParams {
        QueryParams::from_pairs(pairs)
    }

    #[test]
    fn mode_defaults_to_cached_and_is_checked() {
        assert_eq!(parse_query(&query(&[])).unwrap(), HealthQuery::default());
        let live =
            parse_query(&query(&[("mode", "live"), ("includeRuntimeProbe", "true")])).unwrap();
        assert!(live.live && live.runtime_probe && !live.public_access_probe);
        let bad = parse_query(&query(&[("mode", "fast")])).unwrap_err();
        assert_eq!(bad.status, 422);
        assert_eq!(bad.body.details["field"], "mode");
        assert_eq!(
            parse_query(&query(&[("verbose", "1")])).unwrap_err().status,
            422
        );
    }
}
