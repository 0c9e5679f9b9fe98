//! Network, access and runtime profiles and storage attachments. Each profile POST replaces
//! that part of the Resource spec.

use axum::Json;
use axum::extract::{Path, State};
use berth_crds::resource::{
    AccessProfile, ExposureMode, GeneratedAccessMode, HealthCheck, MAX_PORT_NUMBER, NetworkProfile,
    Resource, RestartPolicy, RuntimeProfile, StorageAttachment, UpstreamProtocol,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::Endpoint;
use super::super::common::{IdResponse, bounded};
use super::variables::require_writer;
use super::{lookup, save};
use crate::auth::Caller;
use crate::auth::token::new_id;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::state::AppState;

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
            "Set the runtime profile (strategy, commands, publish directory)",
            runtime_profile,
        ),
        Endpoint::post::<AttachStorage, IdResponse, _, _>(
            "/resources/{resourceId}/storage-attachments",
            "Attach a storage volume at a path",
            attach,
        ),
        Endpoint::delete::<DetachStorage, IdResponse, _, _>(
            "/resources/{resourceId}/storage-attachments/{attachmentId}",
            "Detach a storage volume (the volume is kept)",
            detach,
        ),
    ]
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetNetworkProfile {
    pub network_profile: NetworkProfileInput,
}

/// Network profile of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkProfileInput {
    /// Port the application listens on (1..9007199254740991).
    pub internal_port: i64,
    /// `http` (default) or `tcp`.
    pub upstream_protocol: Option<UpstreamProtocol>,
    /// `reverse-proxy` (default), `direct-port` or `none`.
    pub exposure_mode: Option<ExposureMode>,
    /// Service that receives traffic (>= 1 character).
    pub target_service_name: Option<String>,
    /// Host port for `direct-port` exposure (1..9007199254740991).
    pub host_port: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetAccessProfile {
    pub access_profile: AccessProfileInput,
}

/// Access profile of spec §2.2.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccessProfileInput {
    /// `inherit` (default) or `disabled`.
    pub generated_access_mode: Option<GeneratedAccessMode>,
    /// Path prefix, default `/`.
    pub path_prefix: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetRuntimeProfile {
    pub runtime_profile: RuntimeProfileInput,
}

/// How the resource is built and run; fields left out are unset.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeProfileInput {
    /// e.g. `dockerfile`, `docker-image`, `static`.
    pub strategy: Option<String>,
    pub install_command: Option<String>,
    pub build_command: Option<String>,
    pub start_command: Option<String>,
    /// Directory a static site serves, relative to the source.
    pub publish_directory: Option<String>,
    /// `unless-stopped` (default), `always`, `on-failure` or `never`.
    pub restart_policy: Option<RestartPolicy>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachStorage {
    /// Id of the storage volume (>= 1 character).
    pub storage_volume_id: String,
    /// Absolute path inside the container.
    pub destination_path: String,
}

/// A body with no fields (an empty body is accepted too).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct DetachStorage {}

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

fn port(field: &str, value: i64) -> ApiResult<()> {
    if (1..=MAX_PORT_NUMBER).contains(&value) {
        return Ok(());
    }
    Err(ApiError::validation(
        field,
        format!("{field} must be from 1 to {MAX_PORT_NUMBER}"),
    )
    .with_detail("min", 1)
    .with_detail("max", MAX_PORT_NUMBER))
}

pub(super) fn optional_text(field: &str, value: &Option<String>, max: usize) -> ApiResult<()> {
    match value {
        Some(text) => bounded(field, text, max),
        None => Ok(()),
    }
}

/// Checks a network profile against spec §8 and the resource's services.
pub fn validate_network(input: &NetworkProfileInput, resource: &Resource) -> ApiResult<()> {
    port("networkProfile.internalPort", input.internal_port)?;
    if let Some(host_port) = input.host_port {
        port("networkProfile.hostPort", host_port)?;
    }
    let field = "networkProfile.targetServiceName";
    optional_text(field, &input.target_service_name, 253)?;
    if let Some(name) = &input.target_service_name {
        let services = &resource.spec.services;
        if !services.is_empty() && !services.iter().any(|s| &s.name == name) {
            return Err(ApiError::validation(
                field,
                format!("{field} must name one of the resource's services"),
            ));
        }
    }
    Ok(())
}

async fn network_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetNetworkProfile>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let input = body.network_profile;
    validate_network(&input, &resource)?;
    let mut spec = resource.spec.clone();
    spec.network_profile = Some(NetworkProfile {
        internal_port: input.internal_port,
        upstream_protocol: input.upstream_protocol.unwrap_or_default(),
        exposure_mode: input.exposure_mode.unwrap_or_default(),
        target_service_name: input.target_service_name,
        host_port: input.host_port,
    });
    save(&state, &caller, &resource, spec).await?;
    Ok(Json(IdResponse { id }))
}

/// Checks an access profile: the path prefix is a non-empty absolute path.
pub fn validate_access(input: &AccessProfileInput) -> ApiResult<()> {
    if let Some(prefix) = &input.path_prefix {
        bounded("accessProfile.pathPrefix", prefix, 1024)?;
        if !prefix.starts_with('/') {
            return Err(ApiError::validation(
                "accessProfile.pathPrefix",
                "accessProfile.pathPrefix must start with /",
            ));
        }
    }
    Ok(())
}

async fn access_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetAccessProfile>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let input = body.access_profile;
    validate_access(&input)?;
    let mut spec = resource.spec.clone();
    spec.access_profile = Some(AccessProfile {
        generated_access_mode: input.generated_access_mode.unwrap_or_default(),
        path_prefix: input.path_prefix.unwrap_or_else(|| "/".into()),
    });
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
    for (field, value) in [
        ("runtimeProfile.strategy", &input.strategy),
        ("runtimeProfile.installCommand", &input.install_command),
        ("runtimeProfile.buildCommand", &input.build_command),
        ("runtimeProfile.startCommand", &input.start_command),
        ("runtimeProfile.publishDirectory", &input.publish_directory),
    ] {
        optional_text(field, value, 4096)?;
    }
    let mut spec = resource.spec.clone();
    // The health check has its own settings; a runtime profile write keeps it.
    let health_check: Option<HealthCheck> = spec
        .runtime_profile
        .as_ref()
        .and_then(|p| p.health_check.clone());
    spec.runtime_profile = Some(RuntimeProfile {
        strategy: input.strategy,
        install_command: input.install_command,
        build_command: input.build_command,
        start_command: input.start_command,
        publish_directory: input.publish_directory,
        health_check,
        restart_policy: input.restart_policy.unwrap_or_default(),
    });
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
    bounded("storageVolumeId", &body.storage_volume_id, 253)?;
    bounded("destinationPath", &body.destination_path, 4096)?;
    if !body.destination_path.starts_with('/') {
        return Err(ApiError::validation(
            "destinationPath",
            "destinationPath must be an absolute path inside the container",
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_prefixes_are_absolute() {
        let input = |p: &str| AccessProfileInput {
            generated_access_mode: None,
            path_prefix: Some(p.into()),
        };
        assert!(validate_access(&input("/api")).is_ok());
        assert_eq!(
            validate_access(&input("")).unwrap_err().body.details["field"],
            "accessProfile.pathPrefix"
        );
        assert!(validate_access(&input("api")).is_err());
    }
}
