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
mod variables;
mod webhook_secret;

use berth_crds::resource::{Resource, ResourceSpec};
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::resource_access::{lookup, lookup_writable, require_writable, resources_api};
use crate::error::ApiResult;
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
/// to their owners: only entries this field manager already owns are sent. Its dependency
/// bindings are never sent: they have a writer of their own (a merge patch over the version
/// read), and an apply from the cache must neither claim one nor bring back one just unbound.
pub async fn save_object(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    mut desired: Resource,
) -> ApiResult<Resource> {
    desired.spec.variables = only_owned(&resource.metadata, FIELD_MANAGER, &desired.spec.variables);
    desired.spec.dependency_bindings = Vec::new();
    apply(
        &resources_api(state, resource),
        &state.caches.resources,
        Some(caller),
        desired,
    )
    .await
}
