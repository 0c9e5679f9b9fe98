//! `POST /deployments/{deploymentId}/cleanup-runtime` (Appaloft's `deployments.cleanup-runtime`,
//! owner, `confirm` = the id): ends what one deployment runs on its server and nothing else —
//! an attempt still in progress is cancelled, the one serving its resource is stopped (runtime
//! control), and a superseded one has nothing left (Berth removes replaced containers). Never
//! a broad prune.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use berth_crds::member::OrganizationRole;
use serde_json::json;

use super::dispatch::Dispatcher;
use super::{authorization, namespace};
use crate::auth::Caller;
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::routes::Endpoint;
use crate::state::AppState;

pub use berth_api::migrations::{CleanupRuntime, RuntimeCleaned};

pub fn endpoint() -> Endpoint {
    Endpoint::post::<CleanupRuntime, RuntimeCleaned, _, _>(
        "/deployments/{deploymentId}/cleanup-runtime",
        "End what one deployment runs (owner; confirm = the deployment id): an attempt in \
         progress is cancelled, the one serving its resource is stopped; never a broad prune",
        cleanup_runtime,
    )
}

async fn cleanup_runtime(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CleanupRuntime>,
) -> ApiResult<Json<RuntimeCleaned>> {
    caller.require_role(OrganizationRole::Owner)?;
    if body.confirm != id {
        return Err(ApiError::validation(
            "confirm",
            "confirm must repeat the deployment's id",
        ));
    }
    let namespace = namespace(&caller)?;
    let deployment = find_in(&state.caches.deployments, &namespace, &id, "deployment")?;
    let resource_id = deployment.spec.resource_id.clone();
    if body
        .resource_id
        .as_ref()
        .is_some_and(|given| *given != resource_id)
    {
        return Err(ApiError::validation(
            "resourceId",
            format!("resourceId must be the deployment's ({resource_id})"),
        ));
    }
    let running = deployment
        .status
        .as_ref()
        .and_then(|s| s.status)
        .is_none_or(|s| !s.is_terminal());
    let serving = find_in(
        &state.caches.resources,
        &namespace,
        &resource_id,
        "resource",
    )
    .ok()
    .and_then(|r| r.status.clone()?.runtime?.deployment_id)
    .is_some_and(|serving| serving == id);
    let dispatcher = Dispatcher::new(state.clone(), authorization(&headers)?);
    let (path, body, action) = match (running, serving) {
        (true, _) => (
            format!("/deployments/{id}/cancel"),
            json!({"confirm": id}),
            "cancelled",
        ),
        (false, true) => (
            format!("/resources/{resource_id}/runtime-control"),
            json!({"operation": "stop"}),
            "stopped",
        ),
        (false, false) => return Ok(Json(answer(id, "none"))),
    };
    dispatcher
        .call(Method::POST, &path, Some(&body))
        .await
        .map_err(|refusal| {
            let mut error = ApiError::conflict(refusal.message);
            error.body.retriable = refusal.retriable;
            error
        })?;
    Ok(Json(answer(id, action)))
}

fn answer(id: String, action: &'static str) -> RuntimeCleaned {
    RuntimeCleaned {
        id,
        runtime_cleaned: true,
        action: action.into(),
    }
}
