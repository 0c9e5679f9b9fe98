//! Network, access and runtime profiles and storage attachments. Each profile POST replaces
//! that part of the Resource spec.

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_crds::resource::{Resource, StorageAttachment};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::super::Endpoint;
use super::variables::require_writer;
use super::{lookup, save};
use crate::auth::Caller;
use crate::domain::resource_input as convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;

pub use berth_api::profiles::{SetAccessProfile, SetNetworkProfile, SetRuntimeProfile};
pub use berth_api::storage::{AttachStorage, DetachStorage};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<SetNetworkProfile, IdResponse, _, _>(
            "/resources/{resourceId}/network-profile",
            "Set the network profile (port, protocol, exposure)",
            network_profile,
        ),
        Endpoint::post::<SetAccessProfile, IdResponse, _, _>(
            "/resources/{resourceId}/access-profile",
            "Set the access profile (generated access, path prefix)",
            access_profile,
        ),
        Endpoint::post::<SetRuntimeProfile, IdResponse, _, _>(
            "/resources/{resourceId}/runtime-profile",
            "Set the runtime profile (strategy, commands, publish directory, health check)",
            runtime_profile,
        ),
        Endpoint::post::<AttachStorage, IdResponse, _, _>(
            "/resources/{resourceId}/storage-attachments",
            "Attach a storage volume of the resource's environment at a path",
            attach,
        ),
        Endpoint::delete::<DetachStorage, IdResponse, _, _>(
            "/resources/{resourceId}/storage-attachments/{attachmentId}",
            "Detach a storage volume (the volume is kept)",
            detach,
        ),
    ]
}

/// Loads the resource for a write: visible to the caller, and in a deploy token's scope.
pub(super) fn for_write(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<std::sync::Arc<Resource>> {
    let resource = lookup(state, caller, id)?;
    require_writer(caller, id)?;
    Ok(resource)
}

async fn network_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetNetworkProfile>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let input = body.network_profile;
    input.validate(resource.spec.services.iter().map(|s| s.name.as_str()))?;
    let mut spec = resource.spec.clone();
    spec.network_profile = Some(convert::network_profile(input));
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id }))
}

async fn access_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetAccessProfile>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let input = body.access_profile;
    input.validate()?;
    let mut spec = resource.spec.clone();
    spec.access_profile = Some(convert::access_profile(input));
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id }))
}

async fn runtime_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetRuntimeProfile>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let input = body.runtime_profile;
    input.validate()?;
    let mut spec = resource.spec.clone();
    let current_health_check = spec
        .runtime_profile
        .as_ref()
        .and_then(|p| p.health_check.clone());
    spec.runtime_profile = Some(convert::runtime_profile(input, current_health_check)?);
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id }))
}

async fn attach(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AttachStorage>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    body.validate()?;
    crate::domain::storage_volumes::attachable(
        &state,
        &caller,
        &resource,
        &body.storage_volume_id,
    )?;
    let mut spec = resource.spec.clone();
    if spec
        .storage_attachments
        .iter()
        .any(|a| a.destination_path == body.destination_path)
    {
        return Err(ApiError::conflict(format!(
            "a volume is already attached at {}",
            body.destination_path
        ))
        .with_detail("field", "destinationPath"));
    }
    let attachment_id = new_id("att");
    spec.storage_attachments.push(StorageAttachment {
        attachment_id: attachment_id.clone(),
        storage_volume_id: body.storage_volume_id,
        destination_path: body.destination_path,
        attached_at: Some(Time(Timestamp::now())),
    });
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id: attachment_id }))
}

async fn detach(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, attachment_id)): Path<(String, String)>,
    JsonBody(_): JsonBody<DetachStorage>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let mut spec = resource.spec.clone();
    let before = spec.storage_attachments.len();
    spec.storage_attachments
        .retain(|a| a.attachment_id != attachment_id);
    if spec.storage_attachments.len() == before {
        return Err(ApiError::not_found("storage attachment", &attachment_id));
    }
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id: attachment_id }))
}
