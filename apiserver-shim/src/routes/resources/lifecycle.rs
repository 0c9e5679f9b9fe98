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
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::routes::common::{bounded, find_in, timestamp};
use crate::routes::resource_config::lookup;
use crate::state::AppState;

/// When the resource was archived (its own archive).
pub const ARCHIVED_AT: &str = "berth.dev/archived-at";
/// Why, as given.
pub const ARCHIVE_REASON: &str = "berth.dev/archive-reason";
/// Field manager of the archive annotations.
const LIFECYCLE_MANAGER: &str = "berth-shim-lifecycle";
/// Longest archive reason (Appaloft's).
const REASON_MAX: usize = 280;

/// An archive in force: the resource's own, or its project's or environment's.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    pub archived_at: Option<String>,
    pub reason: Option<String>,
}

/// Whether `resource` is archived, and since when.
pub fn archived(state: &AppState, resource: &Resource) -> Option<Archived> {
    let annotations = resource.annotations();
    if let Some(at) = annotations.get(ARCHIVED_AT) {
        return Some(Archived {
            archived_at: Some(at.clone()),
            reason: annotations.get(ARCHIVE_REASON).cloned(),
        });
    }
    let namespace = resource.namespace().unwrap_or_default();
    let caches = &state.caches;
    let spec = &resource.spec;
    if let Ok(environment) = find_in(
        &caches.environments,
        &namespace,
        &spec.environment_id,
        "environment",
    ) && environment.spec.archived
    {
        let status = environment.status.clone().unwrap_or_default();
        return Some(Archived {
            archived_at: status.archived_at.as_ref().map(timestamp),
            reason: Some(format!("environment {} is archived", spec.environment_id)),
        });
    }
    if let Ok(project) = find_in(&caches.projects, &namespace, &spec.project_id, "project")
        && project.spec.archived
    {
        let status = project.status.clone().unwrap_or_default();
        return Some(Archived {
            archived_at: status.archived_at.as_ref().map(timestamp),
            reason: Some(format!("project {} is archived", spec.project_id)),
        });
    }
    None
}

/// Refuses a deployment or a change of a resource that is archived or in a locked
/// environment.
pub fn require_writable(state: &AppState, resource: &Resource) -> ApiResult<()> {
    if let Some(archived) = archived(state, resource) {
        let why = archived.reason.unwrap_or_else(|| "it was archived".into());
        return Err(ApiError::resource_archived(format!(
            "resource {} is archived ({why}): restore it first",
            resource.name_any()
        )));
    }
    let namespace = resource.namespace().unwrap_or_default();
    let environment_id = &resource.spec.environment_id;
    if let Ok(environment) = find_in(
        &state.caches.environments,
        &namespace,
        environment_id,
        "environment",
    ) && environment.spec.locked
    {
        let reason = environment.spec.lock_reason.clone();
        let why = reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        let mut error = ApiError::conflict_code(
            "environment_locked",
            format!(
                "environment {environment_id} is locked{why}; unlock it to deploy or change its resources"
            ),
        )
        .with_detail("blockedReason", "environment-locked")
        .with_detail("environmentId", environment_id.as_str());
        if let Some(reason) = reason {
            error = error.with_detail("lockReason", reason);
        }
        return Err(error);
    }
    Ok(())
}

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
    if let Some(reason) = &body.reason {
        bounded("reason", reason.trim(), REASON_MAX)?;
    }
    if let Some(key) = &body.idempotency_key {
        bounded("idempotencyKey", key, 255)?;
    }
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
