//! A resource's dependency bindings over REST (Appaloft's routes and shapes): `POST
//! /resources/{resourceId}/dependency-bindings` (bind), `DELETE …/{bindingId}` (unbind) and
//! the two reads. A binding is an entry of the Resource's `spec.dependencyBindings`, keyed by
//! its target name (its id); the controller puts the dependency's connection URL into that
//! variable when it deploys. `POST …/{bindingId}/secret-rotations` rotates the login of the
//! binding's managed PostgreSQL (every binding of that database follows it: a binding reads its
//! dependency's connection).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::IdResponse;
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{DependencyBinding, Resource};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::cache::catch_up;
use crate::domain::dependency_resources::{
    ask_rotation, bindable, binding_summary, rotation_unsupported,
};
use crate::domain::objects::find_in;
use crate::domain::resource_access::{lookup, require_writable, resources_api};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::write::actor_annotations;

pub use berth_api::dependencies::{
    BINDING_SHOW_SCHEMA, BINDINGS_LIST_SCHEMA, BindDependency, BindingSecretRotated,
    DependencyBindingList, DependencyBindingShow, RotateBindingSecret, UnbindDependency,
};

/// The field manager of binding writes: a manager of its own, so the shim's full-spec applies
/// of other settings never remove a binding they did not read.
const BINDINGS_FIELD_MANAGER: &str = "berth-shim-dependency-bindings";
/// How often a write is tried again when another writer changed the Resource in between.
const CONFLICT_RETRIES: u32 = 5;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<BindDependency, IdResponse, _, _>(
            "/resources/{resourceId}/dependency-bindings",
            "Bind a dependency resource of the resource's environment: its connection URL \
             becomes the variable targetName at the next deployment",
            bind,
        ),
        Endpoint::get::<DependencyBindingList, _, _>(
            "/resources/{resourceId}/dependency-bindings",
            "List the resource's dependency bindings (connections masked)",
            list,
        ),
        Endpoint::get::<DependencyBindingShow, _, _>(
            "/resources/{resourceId}/dependency-bindings/{bindingId}",
            "Show one dependency binding (its id is its target name)",
            show,
        ),
        Endpoint::post::<RotateBindingSecret, BindingSecretRotated, _, _>(
            "/resources/{resourceId}/dependency-bindings/{bindingId}/secret-rotations",
            "Rotate the secret of a binding to a managed PostgreSQL (202): Berth issues a new \
             login beside the old one, redeploys the bound apps that auto-deploy on it and \
             revokes the old one once they serve (every binding of that database follows it). \
             secretRef and secretValue are refused: Berth generates the credentials",
            rotate_secret,
        )
        .success(&[StatusCode::ACCEPTED]),
        Endpoint::delete::<UnbindDependency, IdResponse, _, _>(
            "/resources/{resourceId}/dependency-bindings/{bindingId}",
            "Unbind a dependency resource (the dependency and its data are kept)",
            unbind,
        ),
    ]
}

/// The resource for a binding change: visible, writable, and in a deploy token's scope.
fn for_write(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<Resource>> {
    let resource = lookup(state, caller, id)?;
    caller.require_role(OrganizationRole::Member)?;
    caller.require_in_scope(ScopeDimension::Resource, id)?;
    require_writable(state, &resource)?;
    Ok(resource)
}

/// What a change does to the current list: the new list, or the error that refuses it.
type Change<'a> =
    dyn Fn(&[DependencyBinding]) -> ApiResult<Vec<DependencyBinding>> + Send + Sync + 'a;

/// Writes `change` of the resource's bindings over the version just read (a merge patch with
/// its resourceVersion), reading again when another writer came in between.
async fn write_bindings(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    change: &Change<'_>,
) -> ApiResult<()> {
    let api = resources_api(state, resource);
    let name = resource.name_any();
    let params = PatchParams {
        field_manager: Some(BINDINGS_FIELD_MANAGER.into()),
        ..Default::default()
    };
    let mut tries = 0;
    loop {
        let current = api.get(&name).await?;
        let bindings = change(&current.spec.dependency_bindings)?;
        // An empty list rather than `null`: the schema refuses `null`.
        let patch = json!({
            "metadata": {
                "resourceVersion": current.resource_version(),
                "annotations": actor_annotations(caller),
            },
            "spec": { "dependencyBindings": bindings },
        });
        match api.patch(&name, &params, &Patch::Merge(&patch)).await {
            Ok(written) => return catch_up(&state.caches.resources, &written).await,
            Err(kube::Error::Api(e)) if e.code == 409 && tries < CONFLICT_RETRIES => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 * u64::from(tries))).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The list with `binding` added: refused when its target name is taken.
fn added(
    current: &[DependencyBinding],
    binding: &DependencyBinding,
) -> ApiResult<Vec<DependencyBinding>> {
    if let Some(taken) = current.iter().find(|b| b.id() == binding.id()) {
        return Err(ApiError::conflict(format!(
            "the resource already binds {} to dependency resource {}; unbind it first",
            taken.target_name, taken.dependency_resource_id
        ))
        .with_detail("field", "targetName"));
    }
    let mut bindings = current.to_vec();
    bindings.push(binding.clone());
    Ok(bindings)
}

async fn bind(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<BindDependency>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    body.validate()?;
    bindable(&state, &caller, &resource, &body.dependency_resource_id)?;
    let binding = DependencyBinding {
        dependency_resource_id: body.dependency_resource_id,
        target_name: body.target_name,
        scope: body.scope.unwrap_or_default(),
        injection_mode: body.injection_mode.unwrap_or_default(),
    };
    // Checked on the cached list first, so a plain duplicate costs no read.
    added(&resource.spec.dependency_bindings, &binding)?;
    write_bindings(&state, &caller, &resource, &|current| {
        added(current, &binding)
    })
    .await?;
    let dependency = &binding.dependency_resource_id;
    tracing::info!(resource = %id, binding = %binding.id(), %dependency, "dependency bound");
    Ok(Json(IdResponse {
        id: binding.target_name,
    }))
}

async fn unbind(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, binding_id)): Path<(String, String)>,
    JsonBody(_): JsonBody<UnbindDependency>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    let without = |current: &[DependencyBinding]| {
        let kept: Vec<DependencyBinding> = current
            .iter()
            .filter(|b| b.id() != binding_id)
            .cloned()
            .collect();
        if kept.len() == current.len() {
            return Err(ApiError::not_found("dependency binding", &binding_id));
        }
        Ok(kept)
    };
    without(&resource.spec.dependency_bindings)?;
    write_bindings(&state, &caller, &resource, &without).await?;
    tracing::info!(resource = %id, binding = %binding_id, "dependency unbound");
    Ok(Json(IdResponse { id: binding_id }))
}

/// The code of a rotation refused for what the binding's dependency is (Appaloft's).
const ROTATION_BLOCKED: &str = "resource_dependency_binding_rotation_blocked";
/// Appaloft's phase of a rotation's errors.
const ROTATION_PHASE: &str = "resource-dependency-binding-secret-rotation";

async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, binding_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<RotateBindingSecret>,
) -> ApiResult<(StatusCode, Json<BindingSecretRotated>)> {
    let resource = for_write(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Admin)?;
    let binding = binding_of(&resource, &binding_id)?;
    body.validate()
        .map_err(|e| ApiError::from(e).with_detail("phase", ROTATION_PHASE))?;
    let blocked = |why: String| {
        ApiError::conflict_code(ROTATION_BLOCKED, why)
            .with_detail("phase", ROTATION_PHASE)
            .with_detail("field", "bindingId")
    };
    let dependency_id = &binding.dependency_resource_id;
    let dependency = dependency_of(&state, &resource, dependency_id).ok_or_else(|| {
        blocked(format!(
            "the binding's dependency resource {dependency_id} no longer exists"
        ))
    })?;
    if let Some(why) = rotation_unsupported(&dependency) {
        return Err(blocked(why));
    }
    let rotation = ask_rotation(&state, &caller, &dependency).await?;
    tracing::info!(resource = %id, binding = %binding_id, "binding secret rotation asked for");
    Ok((
        StatusCode::ACCEPTED,
        Json(BindingSecretRotated {
            id: binding_id,
            rotated_at: rotation.clone(),
            secret_version: rotation,
        }),
    ))
}

/// The resource's binding `id` (its target name), or 404.
fn binding_of<'a>(resource: &'a Resource, id: &str) -> ApiResult<&'a DependencyBinding> {
    resource
        .spec
        .dependency_bindings
        .iter()
        .find(|b| b.id() == id)
        .ok_or_else(|| ApiError::not_found("dependency binding", id))
}

/// The binding's dependency, when it still exists.
fn dependency_of(
    state: &AppState,
    resource: &Resource,
    id: &str,
) -> Option<Arc<DependencyResource>> {
    let namespace = resource.namespace().unwrap_or_default();
    find_in(
        &state.caches.dependency_resources,
        &namespace,
        id,
        "dependency resource",
    )
    .ok()
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DependencyBindingList>> {
    let resource = lookup(&state, &caller, &id)?;
    let items = resource
        .spec
        .dependency_bindings
        .iter()
        .map(|binding| {
            let dependency = dependency_of(&state, &resource, &binding.dependency_resource_id);
            binding_summary(&resource, binding, dependency.as_deref())
        })
        .collect();
    Ok(Json(DependencyBindingList {
        schema_version: BINDINGS_LIST_SCHEMA.into(),
        items,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, binding_id)): Path<(String, String)>,
) -> ApiResult<Json<DependencyBindingShow>> {
    let resource = lookup(&state, &caller, &id)?;
    let binding = binding_of(&resource, &binding_id)?;
    let dependency = dependency_of(&state, &resource, &binding.dependency_resource_id);
    Ok(Json(DependencyBindingShow {
        schema_version: BINDING_SHOW_SCHEMA.into(),
        binding: binding_summary(&resource, binding, dependency.as_deref()),
        generated_at: Timestamp::now().to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(target: &str, dependency: &str) -> DependencyBinding {
        DependencyBinding {
            dependency_resource_id: dependency.into(),
            target_name: target.into(),
            scope: Default::default(),
            injection_mode: Default::default(),
        }
    }

    #[test]
    fn a_target_name_is_bound_once() {
        let current = [binding("DATABASE_URL", "dep-1")];
        let error = added(&current, &binding("DATABASE_URL", "dep-2")).unwrap_err();
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert_eq!(error.body.details["field"], "targetName");
        let both = added(&current, &binding("CACHE_URL", "dep-2")).unwrap();
        assert_eq!(both.len(), 2);
    }
}
