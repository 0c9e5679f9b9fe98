//! Spec §4.7 `GET /resources/{resourceId}/health-history` (`resources.health-history/v1`): the
//! health records berth-controller recorded in the observation store, on every change and
//! periodically while unchanged, read back by time window.

use axum::extract::{Path, State};
use berth_api::health_history::{HealthHistory, Observation};
use berth_crds::health::stored_to_wire;
use berth_observations::{HealthObservation, HealthQuery};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use serde_json::Value;

use crate::auth::Caller;
use crate::domain::previews::{PREVIEW_PARAM, read_subject};
use crate::domain::resource_access::lookup;
use crate::domain::time::utc_window;
use crate::error::ApiResult;
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

pub use berth_api::health_history::SCHEMA_VERSION;
/// `limit` bounds and default (spec §8).
pub const LIMIT: (u64, u64) = (1, 720);
const DEFAULT_LIMIT: u64 = 200;
/// The window when `window.from` is not given: the day before `window.to`.
const DEFAULT_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// An observation as the wire has it, with its summary record brought to today's rules.
fn observation(stored: HealthObservation) -> Observation {
    let summary = stored_to_wire(stored.summary);
    let text = |pointer: &str| {
        summary
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let state = |pointer: &str| text(pointer).unwrap_or_else(|| "unknown".into());
    Observation {
        observation_id: stored.id.to_string(),
        observed_at: millis_to_utc(stored.observed_ms),
        overall: stored.overall.clone(),
        runtime_lifecycle: state("/runtime/lifecycle"),
        runtime_health: state("/runtime/health"),
        public_access_status: state("/publicAccess/status"),
        proxy_status: state("/proxy/status"),
        health_policy_status: text("/healthPolicy/status")
            .unwrap_or_else(|| "not-configured".into()),
        latest_deployment_id: text("/latestDeployment/id"),
        summary,
    }
}

/// The query, checked: a window (UTC) and a limit.
#[derive(Debug, PartialEq)]
struct Window {
    from: Timestamp,
    to: Timestamp,
    limit: usize,
}

fn parse_query(query: &QueryParams, now: Timestamp) -> ApiResult<Window> {
    known_params(
        query,
        &["window.from", "window.to", "limit", "previewEnvironmentId"],
    )?;
    let (from, to) = utc_window(query, "window.from", "window.to", now, DEFAULT_WINDOW)?;
    let limit = query.integer("limit", LIMIT.0, LIMIT.1, DEFAULT_LIMIT)?;
    Ok(Window {
        from,
        to,
        limit: limit as usize,
    })
}

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<HealthHistory>> {
    let now = Timestamp::now();
    let window = parse_query(&query, now)?;
    let resource = lookup(&state, &caller, &id)?;
    let preview = query.string(PREVIEW_PARAM)?;
    let resource = read_subject(&state, &caller, resource, preview)?.resource;
    let store_query = HealthQuery {
        namespace: resource.namespace().unwrap_or_default(),
        resource: resource.name_any(),
        from_ms: window.from.as_millisecond(),
        to_ms: window.to.as_millisecond(),
        limit: window.limit,
    };
    let stored = store_call(&state.observations, "health observations", move |store| {
        store.health_history(&store_query)
    })
    .await?;
    Ok(Json(HealthHistory {
        schema_version: SCHEMA_VERSION.into(),
        resource_id: resource.name_any(),
        from: window.from.to_string(),
        to: window.to.to_string(),
        generated_at: now.to_string(),
        observations: stored.into_iter().map(observation).collect(),
        source_errors: Vec::new(),
    }))
}

fn millis_to_utc(millis: i64) -> String {
    Timestamp::from_millisecond(millis)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> QueryParams {
        QueryParams::from_pairs(pairs)
    }

    fn now() -> Timestamp {
        "2030-01-02T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn the_window_defaults_to_the_last_day_and_the_limit_to_200() {
        let window = parse_query(&query(&[]), now()).unwrap();
        assert_eq!(window.to, now());
        assert_eq!(window.from.to_string(), "2030-01-01T00:00:00Z");
        assert_eq!(window.limit, 200);
    }

    #[test]
    fn bad_windows_and_limits_name_their_field() {
        for (pairs, field) in [
            (
                vec![("window.from", "2030-01-01T00:00:00+02:00")],
                "window.from",
            ),
            (vec![("window.to", "yesterday")], "window.to"),
            (
                vec![
                    ("window.from", "2030-01-02T00:00:00Z"),
                    ("window.to", "2030-01-01T00:00:00Z"),
                ],
                "window.from",
            ),
            (vec![("limit", "0")], "limit"),
            (vec![("limit", "721")], "limit"),
            (vec![("window", "1h")], "window"),
        ] {
            let error = parse_query(&query(&pairs), now()).unwrap_err();
            assert_eq!(error.status, 422, "{pairs:?}");
            assert_eq!(error.body.details["field"], field, "{pairs:?}");
        }
    }

    #[test]
    fn an_observation_lists_its_summary_fields() {
        let summary = serde_json::json!({
            "overall": "unhealthy",
            "runtime": { "lifecycle": "exited", "health": "unknown" },
            "publicAccess": { "status": "not-ready" },
            "proxy": { "status": "ready" },
            "healthPolicy": { "status": "configured" },
            "latestDeployment": { "id": "dep-1", "status": "failed" },
            "sourceErrors": [],
        });
        let observation = observation(stored(summary.clone()));
        assert_eq!(observation.observation_id, "7");
        assert_eq!(observation.observed_at, "1970-01-01T00:00:01Z");
        assert_eq!(observation.runtime_lifecycle, "exited");
        assert_eq!(observation.public_access_status, "not-ready");
        assert_eq!(observation.latest_deployment_id.as_deref(), Some("dep-1"));
        assert_eq!(observation.summary, summary);
    }

    fn stored(summary: Value) -> HealthObservation {
        HealthObservation {
            id: 7,
            namespace: "org-a".into(),
            resource: "web".into(),
            observed_ms: 1_000,
            overall: "unhealthy".into(),
            summary,
        }
    }

    /// Records kept before the wire's rules had `null`s and the controller's own names; they
    /// are served as a strict client reads them.
    #[test]
    fn a_summary_stored_before_the_wire_rules_is_served_by_them() {
        let summary = serde_json::json!({
            "observedAt": null,
            "runtime": { "lifecycle": "missing", "health": "starting", "reasonCode": null },
            "latestDeployment": { "id": "dep-1", "status": null, "lastError": null },
            "publicAccess": {
                "status": "ready", "kind": "generated", "latestAccessFailure": null,
                "routeIntentStatus": {
                    "proxy": { "applied": "configured" },
                    "copySafeSummary": { "status": "ready", "code": null },
                },
            },
            "proxy": { "status": "disabled" },
            "healthPolicy": { "status": "not-configured", "type": null },
            "sourceErrors": [{"source": "server", "code": "probe_timeout", "message": "m",
                "retryable": true}],
        });
        let observation = observation(stored(summary));
        assert_eq!(observation.runtime_lifecycle, "unknown");
        assert_eq!(observation.runtime_health, "unknown");
        assert_eq!(observation.proxy_status, "not-configured");
        assert_eq!(
            observation.summary,
            serde_json::json!({
                "runtime": { "lifecycle": "unknown", "health": "unknown",
                    "reasonCode": "runtime_missing" },
                "latestDeployment": { "id": "dep-1", "status": "created" },
                "publicAccess": {
                    "status": "ready", "kind": "generated-latest",
                    "routeIntentStatus": {
                        "proxy": { "applied": "ready" },
                        "copySafeSummary": { "status": "available" },
                    },
                },
                "proxy": { "status": "not-configured" },
                "healthPolicy": { "status": "not-configured" },
                "sourceErrors": [{"source": "runtime", "code": "probe_timeout", "message": "m",
                    "retriable": true, "category": "infra", "phase": "health-read"}],
            })
        );
    }
}
