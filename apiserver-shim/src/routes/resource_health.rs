//! Spec §4.7 `GET /resources/{resourceId}/health` (`resources.health/v1`). `mode=cached` (the
//! default) answers from what the controller recorded: the Resource's status, written when the
//! server observer saw its container change; no SSH round trip. `mode=live` also asks the
//! server now, within a deadline: the container's state (`includeRuntimeProbe`) and a request
//! through the edge proxy with the resource's hostname (`includePublicAccessProbe`). A part the
//! server cannot answer becomes a `sourceErrors` entry and `partial: true`, never a failed read.

mod history;

use axum::extract::{Path, State};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::previews::{PREVIEW_PARAM, read_subject};
use crate::domain::resource_access::lookup;
use crate::domain::resource_health::{HealthQuery, assemble};
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub use berth_crds::health::ResourceHealth;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ResourceHealth, _, _>(
            "/resources/{resourceId}/health",
            "The resource's health (query: mode cached|live, default cached: from the controller's \
         observations without contacting the server; live: asks the server now. includeChecks, \
         includeRuntimeProbe, includePublicAccessProbe: true|false; previewEnvironmentId: a \
         preview environment of the resource, whose copy of it is then answered for)",
            show,
        ),
        Endpoint::get::<berth_api::health_history::HealthHistory, _, _>(
            "/resources/{resourceId}/health-history",
            "The resource's health records as berth-controller observed them: on every change and \
         every 15 minutes while unchanged (query: window.from, window.to: UTC date-times ending \
         in Z, default the last 24 hours; limit 1..720 default 200: the latest in the window, \
         oldest first; previewEnvironmentId: a preview environment of the resource, whose \
         copy's history is then answered)",
            history::show,
        ),
    ]
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
    let preview = query.string(PREVIEW_PARAM)?;
    let subject = read_subject(&state, &caller, resource, preview)?;
    Ok(Json(assemble(&state, &subject.resource, &parsed).await))
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
