//! `POST /resources/{resourceId}/archive` and `/restore`, and the rule every write obeys: an
//! archived resource (itself, or in an archived project or environment) and a resource in a
//! locked environment take no deployments and no changes, with a 409 saying why. A resource's
//! archive lives in annotations written under a field manager of its own, so the shim's
//! server-side applies of the spec leave it in place.

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_api::resources::ArchiveResource;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

use crate::auth::Caller;
use crate::cache::catch_up;
use crate::domain::resource_access::{ARCHIVE_REASON, ARCHIVED_AT, archived, lookup};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

/// Field manager of the archive annotations.
const LIFECYCLE_MANAGER: &str = "berth-shim-lifecycle";
/// Writes (or, with `None`, removes) the archive annotations.
async fn set_archive(
    state: &AppState,
    resource: &Resource,
    archive: Option<(String, Option<String>)>,
) -> ApiResult<()> {
    let (at, reason) = match archive {
        Some((at, reason)) => (
            serde_json::Value::String(at),
            reason.map_or(serde_json::Value::Null, serde_json::Value::String),
        ),
        None => (serde_json::Value::Null, serde_json::Value::Null),
    };
    let patch = serde_json::json!({
        "metadata": { "annotations": { ARCHIVED_AT: at, ARCHIVE_REASON: reason } }
    });
    let api = Api::<Resource>::namespaced(
        state.client.clone(),
        &resource.namespace().unwrap_or_default(),
    );
    let params = PatchParams {
        field_manager: Some(LIFECYCLE_MANAGER.into()),
        ..Default::default()
    };
    let written = api
        .patch(&resource.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    catch_up(&state.caches.resources, &written).await
}

pub async fn archive(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ArchiveResource>,
) -> ApiResult<Json<IdResponse>> {
    body.validate()?;
    caller.require_role(OrganizationRole::Member)?;
    let resource = lookup(&state, &caller, &id)?;
    // Archiving again changes nothing (the first archive's time stays).
    if resource.annotations().contains_key(ARCHIVED_AT) {
        return Ok(Json(IdResponse { id }));
    }
    let at = Timestamp::now().to_string();
    set_archive(&state, &resource, Some((at, body.reason.clone()))).await?;
    tracing::info!(resource = %id, "resource archived");
    Ok(Json(IdResponse { id }))
}

pub async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<berth_api::resources::RestoreResource>,
) -> ApiResult<Json<IdResponse>> {
    caller.require_role(OrganizationRole::Member)?;
    let resource = lookup(&state, &caller, &id)?;
    if !resource.annotations().contains_key(ARCHIVED_AT) {
        // Archived only through its project or environment: restore that instead.
        if let Some(archived) = archived(&state, &resource) {
            return Err(ApiError::resource_archived(format!(
                "resource {id} is not archived itself, but {}: restore that first",
                archived.reason.unwrap_or_default()
            )));
        }
        return Ok(Json(IdResponse { id }));
    }
    set_archive(&state, &resource, None).await?;
    tracing::info!(resource = %id, "resource restored");
    Ok(Json(IdResponse { id }))
}
