//! Spec §4.7, resource configuration: profiles, source, auto-deploy, storage attachments,
//! variables, secrets and the effective configuration. Plain settings live in the Resource
//! spec; secret values live only in a Secret the Resource owns.

mod effective;
pub mod import;
mod profiles;
mod runtime_control;
mod secret_store;
mod secrets;
mod source;
pub mod spec_variables;
mod variables;
mod webhook_secret;

use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::variable::VariableExposure;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::resource_access::{lookup, lookup_writable, require_writable};
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};
use crate::write::{apply, only_owned};

pub fn endpoints() -> Vec<Endpoint> {
    [
        profiles::endpoints(),
        source::endpoints(),
        variables::endpoints(),
        secrets::endpoints(),
        effective::endpoints(),
        runtime_control::endpoints(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Annotations the shim keeps on a Resource across its own writes (a server-side apply drops
/// every field of ours the new object leaves out).
const KEPT_ANNOTATIONS: &[&str] = &[source::SOURCE_IDEMPOTENCY_ANNOTATION];

/// Writes `spec` as the resource's desired spec and returns the stored object.
pub async fn save(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    spec: ResourceSpec,
) -> ApiResult<Resource> {
    require_writable(state, resource)?;
    // Every field the resource declares takes effect, or the write is refused naming it.
    spec.check_support()?;
    let mut desired = Resource::new(&resource.name_any(), spec);
    for key in KEPT_ANNOTATIONS {
        if let Some(value) = resource.annotations().get(*key) {
            desired
                .annotations_mut()
                .insert((*key).to_string(), value.clone());
        }
    }
    save_object(state, caller, resource, desired).await
}

/// Writes a prepared desired object (spec and the shim's annotations). Its variables are left
/// to their owners: only entries this field manager already owns are sent.
pub async fn save_object(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    mut desired: Resource,
) -> ApiResult<Resource> {
    desired.spec.variables = only_owned(&resource.metadata, FIELD_MANAGER, &desired.spec.variables);
    apply(
        &resources_api(state, resource),
        &state.caches.resources,
        Some(caller),
        desired,
    )
    .await
}

pub(super) fn resources_api(state: &AppState, resource: &Resource) -> Api<Resource> {
    let namespace = resource.namespace().unwrap_or_default();
    Api::namespaced(state.client.clone(), &namespace)
}

/// The exposure as the REST API spells it.
pub fn exposure_name(exposure: VariableExposure) -> &'static str {
    exposure.as_str()
}

/// Parses an `exposure` value (query or body), defaulting to `runtime` (spec §8).
pub fn parse_exposure(value: Option<&str>) -> ApiResult<VariableExposure> {
    match value {
        None | Some("runtime") => Ok(VariableExposure::Runtime),
        Some("build-time") => Ok(VariableExposure::BuildTime),
        Some(_) => Err(ApiError::validation(
            "exposure",
            "exposure must be one of: build-time, runtime",
        )
        .with_detail("allowed", vec!["build-time", "runtime"])),
    }
}

/// Checks a variable key: the CRD's pattern, so the API server never sees a bad one.
pub fn validate_key(field: &str, key: &str) -> ApiResult<()> {
    if is_valid_key(key) {
        Ok(())
    } else {
        Err(ApiError::validation(
            field,
            format!(
                "{field} must start with a letter or _ and hold only letters, digits, _ . - (at most 256)"
            ),
        ))
    }
}

/// `^[A-Za-z_][A-Za-z0-9_.-]*$`, at most 256 characters.
pub fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 256
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}
