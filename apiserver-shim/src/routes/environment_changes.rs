//! Changing an environment (Appaloft 1.10.5's routes): its variables, name and lock, cloning it,
//! promoting its variables into another environment, and the diff of two environments'
//! variables. A locked environment refuses every change but its unlock, and its resources take
//! no deployments (`resources::lifecycle::require_writable`).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::IdResponse;
use berth_api::environments::{
    CloneEnvironment, LockEnvironment, PromoteEnvironment, RenameEnvironment,
    SetEnvironmentVariable, UnlockEnvironment, UnsetEnvironmentVariable, VariableChange,
    VariableDiff,
};
use berth_crds::environment::{Environment, EnvironmentSpec};
use berth_crds::limits::{NAME_MAX, OBJECT_NAME_MAX};
use berth_crds::member::OrganizationRole;
use berth_crds::variable::PlainVariable;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};

use super::Endpoint;

mod variables;

use self::variables::save_variables;
use crate::auth::Caller;
use crate::domain::environment_secrets;
use crate::domain::environments::{lookup, masked, validate_kind};
use crate::domain::fields::{bounded, confirm};
use crate::domain::objects::all_in;
use crate::domain::variables::exposure_name;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};
use crate::token::new_id;
use crate::write::{apply, only_owned};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<SetEnvironmentVariable, (), _, _>(
            "/environments/{environmentId}/variables",
            "Set a variable every resource of the environment inherits (key, value, exposure, \
             isSecret; answers JSON null). A secret value is kept in a Secret the environment \
             owns and shown masked; a resource's own variable of the same key wins",
            variables::set_variable,
        ),
        Endpoint::delete::<UnsetEnvironmentVariable, (), _, _>(
            "/environments/{environmentId}/variables/{key}",
            "Remove an environment variable (exposure, default runtime; answers JSON null)",
            variables::unset_variable,
        ),
        Endpoint::post::<RenameEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/rename",
            "Rename an environment",
            rename,
        ),
        Endpoint::post::<LockEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/lock",
            "Lock an environment (admin; reason?): it and its resources refuse deployments \
             and changes, with the reason, until unlocked",
            lock,
        ),
        Endpoint::post::<UnlockEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/unlock",
            "Unlock an environment (admin)",
            unlock,
        ),
        Endpoint::post::<CloneEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/clone",
            "A new environment of the same project with a copy of this one's variables \
             (targetName, targetKind?)",
            clone,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<PromoteEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/promote",
            "Copy this environment's variables into another: an existing one \
             (targetEnvironmentId, confirmation.environmentId; its other variables stay) or \
             a new one (targetName, targetKind)",
            promote,
        )
        .success(&[StatusCode::OK, StatusCode::CREATED]),
        Endpoint::get::<Vec<VariableDiff>, _, _>(
            "/environments/{environmentId}/diff/{otherEnvironmentId}",
            "How two environments' variables differ (added, removed, changed, unchanged), \
             secret-looking values masked",
            diff,
        ),
    ]
}

/// 409 for an archived environment, saying what it refuses and why it was archived.
fn archived(environment: &Environment, refused: &str) -> ApiError {
    let id = environment.name_any();
    let reason = environment.spec.archive_reason.as_deref();
    let because = reason.map(|r| format!(" ({r})")).unwrap_or_default();
    let error = ApiError::conflict_code(
        "environment_archived",
        format!("environment {id} is archived{because} and {refused}"),
    )
    .with_detail("environmentId", id);
    match reason {
        Some(reason) => error.with_detail("archiveReason", reason),
        None => error,
    }
}

/// Refuses a change of a locked (or archived) environment.
pub fn require_unlocked(environment: &Environment) -> ApiResult<()> {
    let id = environment.name_any();
    if environment.spec.archived {
        return Err(archived(environment, "takes no change"));
    }
    if environment.spec.locked {
        return Err(ApiError::environment_locked(
            &id,
            environment.spec.lock_reason.as_deref(),
            "unlock it first",
        ));
    }
    Ok(())
}

fn api(state: &AppState, caller: &Caller) -> ApiResult<Api<Environment>> {
    let namespace = &caller.organization()?.namespace;
    Ok(Api::namespaced(state.client.clone(), namespace))
}

/// The environment's spec as the shim writes it back: other managers' variables left out.
fn desired(environment: &Environment) -> Environment {
    let mut desired = Environment::new(&environment.name_any(), environment.spec.clone());
    desired.spec.variables = only_owned(
        &environment.metadata,
        FIELD_MANAGER,
        &environment.spec.variables,
    );
    desired
}

/// A name free among the project's active environments (but `except`'s own).
fn name_free(
    state: &AppState,
    caller: &Caller,
    project: &str,
    name: &str,
    field: &str,
    except: Option<&str>,
) -> ApiResult<()> {
    let namespace = &caller.organization()?.namespace;
    let taken = all_in(&state.caches.environments, namespace)
        .iter()
        .any(|e| {
            e.spec.project_id == project
                && !e.spec.archived
                && Some(e.name_any().as_str()) != except
                && e.spec.name.eq_ignore_ascii_case(name)
        });
    if taken {
        return Err(ApiError::conflict(format!(
            "the project already has an active environment named {name}"
        ))
        .with_detail("field", field));
    }
    Ok(())
}

async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RenameEnvironment>,
) -> ApiResult<Json<IdResponse>> {
    body.validate()?;
    let name = body.name.trim().to_string();
    caller.require_role(OrganizationRole::Member)?;
    let environment = lookup(&state, &caller, &id)?;
    require_unlocked(&environment)?;
    name_free(
        &state,
        &caller,
        &environment.spec.project_id,
        &name,
        "name",
        Some(&id),
    )?;
    let mut changed = desired(&environment);
    changed.spec.name = name;
    apply(
        &api(&state, &caller)?,
        &state.caches.environments,
        Some(&caller),
        changed,
    )
    .await?;
    Ok(Json(IdResponse { id }))
}

async fn set_lock(
    state: &AppState,
    caller: &Caller,
    id: &str,
    lock: Option<Option<String>>,
) -> ApiResult<()> {
    caller.require_role(OrganizationRole::Admin)?;
    let environment = lookup(state, caller, id)?;
    let locked = lock.is_some();
    if locked && environment.spec.archived {
        // An archived environment takes no change; a lock would say it could.
        return Err(archived(&environment, "cannot be locked"));
    }
    if environment.spec.locked == locked {
        // Locking twice keeps the first reason; unlocking twice changes nothing.
        return Ok(());
    }
    let mut changed = desired(&environment);
    changed.spec.locked = locked;
    changed.spec.lock_reason = lock.flatten();
    // The time goes with the lock itself, so every answer from now on carries it.
    changed.spec.locked_at = locked.then(|| Time(Timestamp::now()));
    apply(
        &api(state, caller)?,
        &state.caches.environments,
        Some(caller),
        changed,
    )
    .await?;
    tracing::info!(environment = %id, locked, "environment lock changed");
    Ok(())
}

async fn lock(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<LockEnvironment>,
) -> ApiResult<Json<IdResponse>> {
    body.validate()?;
    let reason = body.reason.map(|r| r.trim().to_string());
    set_lock(&state, &caller, &id, Some(reason)).await?;
    Ok(Json(IdResponse { id }))
}

async fn unlock(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<UnlockEnvironment>,
) -> ApiResult<Json<IdResponse>> {
    set_lock(&state, &caller, &id, None).await?;
    Ok(Json(IdResponse { id }))
}

/// A new environment of `source`'s project named `name` with `source`'s variables and secret
/// values.
async fn create_copy(
    state: &AppState,
    caller: &Caller,
    source: &Environment,
    name: String,
    kind: String,
) -> ApiResult<String> {
    let id = new_id("env");
    let copy = Environment::new(
        &id,
        EnvironmentSpec {
            project_id: source.spec.project_id.clone(),
            name,
            kind,
            parent_environment_id: None,
            variables: source.spec.variables.clone(),
            locked: false,
            lock_reason: None,
            locked_at: None,
            archived: false,
            archive_reason: None,
        },
    );
    let created = apply(
        &api(state, caller)?,
        &state.caches.environments,
        Some(caller),
        copy,
    )
    .await?;
    environment_secrets::copy(state, source, &created).await?;
    Ok(id)
}

/// Checks the name and kind of a new environment.
fn new_target(
    state: &AppState,
    caller: &Caller,
    source: &Environment,
    name: &str,
    kind: Option<&str>,
) -> ApiResult<(String, String)> {
    let name = name.trim().to_string();
    bounded("targetName", &name, NAME_MAX)?;
    let kind = kind.unwrap_or(&source.spec.kind).to_string();
    validate_kind(&kind).map_err(|e| e.with_detail("field", "targetKind"))?;
    name_free(
        state,
        caller,
        &source.spec.project_id,
        &name,
        "targetName",
        None,
    )?;
    Ok((name, kind))
}

async fn clone(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CloneEnvironment>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    caller.require_role(OrganizationRole::Member)?;
    let source = lookup(&state, &caller, &id)?;
    if source.spec.locked {
        return Err(ApiError::environment_locked(
            &id,
            source.spec.lock_reason.as_deref(),
            "unlock it to clone it",
        ));
    }
    let (name, kind) = new_target(
        &state,
        &caller,
        &source,
        &body.target_name,
        body.target_kind.as_deref(),
    )?;
    let created = create_copy(&state, &caller, &source, name, kind).await?;
    Ok((StatusCode::CREATED, Json(IdResponse { id: created })))
}

async fn promote(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PromoteEnvironment>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    caller.require_role(OrganizationRole::Member)?;
    let source = lookup(&state, &caller, &id)?;
    let Some(target_id) = body.target_environment_id.as_deref() else {
        let name = body.target_name.as_deref().ok_or_else(|| {
            ApiError::validation(
                "targetEnvironmentId",
                "give targetEnvironmentId (an existing environment) or targetName and targetKind",
            )
        })?;
        let kind = body.target_kind.as_deref().ok_or_else(|| {
            ApiError::validation("targetKind", "targetKind is required with targetName")
        })?;
        let (name, kind) = new_target(&state, &caller, &source, name, Some(kind))?;
        let created = create_copy(&state, &caller, &source, name, kind).await?;
        return Ok((StatusCode::CREATED, Json(IdResponse { id: created })));
    };
    bounded("targetEnvironmentId", target_id, OBJECT_NAME_MAX)?;
    if body.target_name.is_some() || body.target_kind.is_some() {
        return Err(ApiError::validation(
            "targetName",
            "targetName and targetKind create a new environment: leave them out with targetEnvironmentId",
        ));
    }
    if target_id == id {
        return Err(ApiError::validation(
            "targetEnvironmentId",
            "an environment cannot be promoted into itself",
        ));
    }
    let target = lookup(&state, &caller, target_id)
        .map_err(|e| e.with_detail("field", "targetEnvironmentId"))?;
    if target.spec.project_id != source.spec.project_id {
        return Err(ApiError::validation(
            "targetEnvironmentId",
            "the target environment must belong to the same project",
        ));
    }
    let given = body
        .confirmation
        .as_ref()
        .and_then(|c| c.environment_id.as_deref());
    confirm(given, target_id, "environmentId", "environment")?;
    require_unlocked(&target)?;
    let variables = promoted(&source.spec.variables, &target.spec.variables);
    save_variables(&state, &caller, &target, &variables).await?;
    environment_secrets::copy(&state, &source, &target).await?;
    tracing::info!(from = %id, into = %target_id, "environment promoted");
    Ok((
        StatusCode::OK,
        Json(IdResponse {
            id: target_id.to_string(),
        }),
    ))
}

/// The target's variables after a promotion: the source's entries replace the target's of the
/// same key and exposure; the target's others stay.
pub fn promoted(source: &[PlainVariable], target: &[PlainVariable]) -> Vec<PlainVariable> {
    let mut merged: BTreeMap<(String, String), PlainVariable> = target
        .iter()
        .map(|v| ((v.key.clone(), exposure_name(v.exposure).into()), v.clone()))
        .collect();
    for v in source {
        merged.insert((v.key.clone(), exposure_name(v.exposure).into()), v.clone());
    }
    merged.into_values().collect()
}

/// The diff of two variable lists, by key and exposure, in key order.
pub fn variable_diff(left: &[PlainVariable], right: &[PlainVariable]) -> Vec<VariableDiff> {
    let index = |list: &[PlainVariable]| -> BTreeMap<(String, String), PlainVariable> {
        list.iter()
            .map(|v| ((v.key.clone(), exposure_name(v.exposure).into()), v.clone()))
            .collect()
    };
    let (left, right) = (index(left), index(right));
    let mut keys: Vec<&(String, String)> = left.keys().chain(right.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|key| {
            let (l, r) = (left.get(key), right.get(key));
            let change = match (l, r) {
                (Some(_), None) => VariableChange::Removed,
                (None, Some(_)) => VariableChange::Added,
                (Some(l), Some(r)) if l.value == r.value => VariableChange::Unchanged,
                _ => VariableChange::Changed,
            };
            VariableDiff {
                key: key.0.clone(),
                exposure: key.1.clone(),
                left: l.map(masked),
                right: r.map(masked),
                change,
            }
        })
        .collect()
}

async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, other)): Path<(String, String)>,
) -> ApiResult<Json<Vec<VariableDiff>>> {
    caller.require_role(OrganizationRole::Member)?;
    let left = lookup(&state, &caller, &id)?;
    let right = lookup(&state, &caller, &other)?;
    Ok(Json(variable_diff(
        &left.spec.variables,
        &right.spec.variables,
    )))
}

#[cfg(test)]
mod tests;
