//! Spec §4.7 `GET /resources/{resourceId}/health-history` (`resources.health-history/v1`): the
//! health records berth-controller recorded in the observation store, on every change and
//! periodically while unchanged, read back by time window.

use crate::json::Json;
use axum::extract::{Path, State};
use berth_timeline::{HealthObservation, HealthQuery};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::QueryParams;
use crate::routes::common::{known_params, store_call, utc_window};
use crate::routes::environments;
use crate::routes::resource_config::lookup;
use crate::state::AppState;

pub const SCHEMA_VERSION: &str = "resources.health-history/v1";
/// `limit` bounds and default (spec §8).
pub const LIMIT: (u64, u64) = (1, 720);
const DEFAULT_LIMIT: u64 = 200;
/// The window when `window.from` is not given: the day before `window.to`.
const DEFAULT_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// Spec §2.2 "Health history".
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct HealthHistory {
    pub schema_version: &'static str,
    pub resource_id: String,
    pub from: String,
    pub to: String,
    pub generated_at: String,
    /// Oldest first; the latest `limit` of the window.
    pub observations: Vec<Observation>,
}

#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub observation_id: String,
    pub observed_at: String,
    pub overall: String,
    pub runtime_lifecycle: Option<String>,
    pub runtime_health: Option<String>,
    pub public_access_status: Option<String>,
    pub proxy_status: Option<String>,
    pub health_policy_status: Option<String>,
    pub latest_deployment_id: Option<String>,
    /// The Resource health record (`resources.health/v1`) as it was then.
    pub summary: Value,
}

impl Observation {
    fn of(stored: HealthObservation) -> Self {
        let text = |pointer: &str| {
            stored
                .summary
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            observation_id: stored.id.to_string(),
            observed_at: millis_to_utc(stored.observed_ms),
            overall: stored.overall.clone(),
            runtime_lifecycle: text("/runtime/lifecycle"),
            runtime_health: text("/runtime/health"),
            public_access_status: text("/publicAccess/status"),
            proxy_status: text("/proxy/status"),
            health_policy_status: text("/healthPolicy/status"),
            latest_deployment_id: text("/latestDeployment/id"),
            summary: stored.summary,
        }
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
    if let Some(preview) = query.string("previewEnvironmentId")? {
        environments::lookup(&state, &caller, preview)?;
    }
    let store_query = HealthQuery {
        namespace: resource.namespace().unwrap_or_default(),
        resource: resource.name_any(),
        from_ms: window.from.as_millisecond(),
        to_ms: window.to.as_millisecond(),
        limit: window.limit,
    };
    let stored = store_call(&state.timelines, "health observations", move |store| {
        store.health_history(&store_query)
    })
    .await?;
    Ok(Json(HealthHistory {
        schema_version: SCHEMA_VERSION,
        resource_id: resource.name_any(),
        from: window.from.to_string(),
        to: window.to.to_string(),
        generated_at: now.to_string(),
        observations: stored.into_iter().map(Observation::of).collect(),
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
            "latestDeployment": { "id": "dep-1" },
        });
        let observation = Observation::of(HealthObservation {
            id: 7,
            namespace: "org-a".into(),
            resource: "web".into(),
            observed_ms: 1_000,
            overall: "unhealthy".into(),
            summary: summary.clone(),
        });
        assert_eq!(observation.observation_id, "7");
        assert_eq!(observation.observed_at, "1970-01-01T00:00:01Z");
        assert_eq!(observation.runtime_lifecycle.as_deref(), Some("exited"));
        assert_eq!(
            observation.public_access_status.as_deref(),
            Some("not-ready")
        );
        assert_eq!(observation.latest_deployment_id.as_deref(), Some("dep-1"));
        assert_eq!(observation.summary, summary);
    }
}
