//! Spec §4.4, environments: count, list, create, show, archive. Archiving is a status
//! transition; the environment and its deployment history stay readable.

use axum::extract::{Path, State};
use berth_api::common::{CountResponse, IdResponse};
use berth_crds::environment::{Environment, EnvironmentSpec};
use berth_crds::lifecycle::LifecycleStatus;
use berth_crds::limits::{LIST_LIMIT_MAX, OBJECT_NAME_MAX};
use berth_crds::member::OrganizationRole;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::environment_secrets;
use crate::domain::environments::{lookup, masked, visible};
use crate::domain::fields::bounded;
use crate::domain::objects::all_in;
use crate::domain::projects;
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};
use crate::token::new_id;
use crate::write::{apply, only_owned};

pub use berth_api::environments::{
    ArchiveEnvironment, CreateEnvironment, EnvironmentList, EnvironmentRecord, MaskedVariable,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<CountResponse, _, _>(
            "/environments/count",
            "Count active environments",
            count,
        ),
        Endpoint::get::<EnvironmentList, _, _>("/environments", "List environments", list),
        Endpoint::post::<CreateEnvironment, IdResponse, _, _>(
            "/environments",
            "Create an environment in a project",
            create,
        ),
        Endpoint::get::<EnvironmentRecord, _, _>(
            "/environments/{environmentId}",
            "Show an environment, variables masked",
            show,
        ),
        Endpoint::post::<ArchiveEnvironment, IdResponse, _, _>(
            "/environments/{environmentId}/archive",
            "Archive an environment (history stays readable)",
            archive,
        ),
    ]
}

/// Largest `limit` of `GET /environments` (spec §8).
pub const MAX_LIMIT: u64 = LIST_LIMIT_MAX;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 100;

/// Converts the custom resource to the REST record.
pub fn record(environment: &Environment) -> EnvironmentRecord {
    let spec = &environment.spec;
    let status = environment.status.clone().unwrap_or_default();
    EnvironmentRecord {
        id: environment.name_any(),
        project_id: spec.project_id.clone(),
        name: spec.name.clone(),
        kind: spec.kind.clone(),
        parent_environment_id: spec.parent_environment_id.clone(),
        // The spec's flag is the truth the moment it is written; status adds the timestamp.
        lifecycle_status: LifecycleStatus::from_archived(spec.archived)
            .as_str()
            .to_string(),
        // Written with the lock; the controller's stamp for a lock applied with kubectl.
        locked_at: spec
            .locked_at
            .as_ref()
            .or(status.locked_at.as_ref())
            .filter(|_| spec.locked)
            .map(timestamp),
        lock_reason: spec.lock_reason.clone().filter(|_| spec.locked),
        archived_at: status
            .archived_at
            .as_ref()
            .filter(|_| spec.archived)
            .map(timestamp),
        archive_reason: spec.archive_reason.clone().filter(|_| spec.archived),
        created_at: created_at(&environment.metadata),
        masked_variables: spec.variables.iter().map(masked).collect(),
    }
}

async fn count(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<CountResponse>> {
    known_params(&query, &["projectId"])?;
    let count = visible(&state, &caller, query.string("projectId")?)?
        .iter()
        .filter(|e| !e.spec.archived)
        .count();
    Ok(Json(CountResponse { count }))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<EnvironmentList>> {
    known_params(&query, &["projectId", "limit", "lifecycleStatus"])?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    // Same filter and default as projects: archived environments are listed on request.
    let lifecycle = query.one_of(
        "lifecycleStatus",
        &["active", "archived", "all"],
        Some("active"),
    )?;
    let items = visible(&state, &caller, query.string("projectId")?)?
        .iter()
        .map(|e| record(e))
        .filter(|r| lifecycle == Some("all") || Some(r.lifecycle_status.as_str()) == lifecycle)
        .take(limit as usize)
        .collect();
    Ok(Json(EnvironmentList { items }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateEnvironment>,
) -> ApiResult<Json<IdResponse>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    // Deploy tokens (CI previews) may create environments, but only in projects they cover.
    caller.require_in_scope(ScopeDimension::Project, &body.project_id)?;
    let project = projects::lookup(&state, &caller, &body.project_id)?;
    if project.spec.archived {
        return Err(ApiError::conflict(format!(
            "project {} is archived; environments cannot be added to it",
            body.project_id
        ))
        .with_detail("field", "projectId"));
    }
    let name = body.name.trim().to_string();
    let siblings = all_in(&state.caches.environments, &organization.namespace);
    if let Some(parent) = &body.parent_environment_id {
        bounded("parentEnvironmentId", parent, OBJECT_NAME_MAX)?;
        let parent_env = lookup(&state, &caller, parent)?;
        if parent_env.spec.project_id != body.project_id {
            return Err(ApiError::validation(
                "parentEnvironmentId",
                "the parent environment must belong to the same project",
            ));
        }
    }
    let taken = siblings.iter().any(|e| {
        e.spec.project_id == body.project_id
            && !e.spec.archived
            && e.spec.name.eq_ignore_ascii_case(&name)
    });
    if taken {
        return Err(ApiError::conflict(format!(
            "the project already has an active environment named {name}"
        ))
        .with_detail("field", "name"));
    }
    let id = new_id("env");
    let environment = Environment::new(
        &id,
        EnvironmentSpec {
            project_id: body.project_id,
            name,
            kind: body.kind,
            parent_environment_id: body.parent_environment_id,
            variables: vec![],
            locked: false,
            lock_reason: None,
            locked_at: None,
            archived: false,
            archive_reason: None,
        },
    );
    let api = Api::<Environment>::namespaced(state.client.clone(), &organization.namespace);
    apply(&api, &state.caches.environments, Some(&caller), environment).await?;
    Ok(Json(IdResponse { id }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<EnvironmentRecord>> {
    let environment = lookup(&state, &caller, &id)?;
    let mut shown = record(&environment);
    // Secret values live in the environment's Secret: shown here, masked (not in the list).
    let secrets = environment_secrets::masked_entries(&state, &environment).await?;
    shown.masked_variables.extend(secrets);
    Ok(Json(shown))
}

async fn archive(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ArchiveEnvironment>,
) -> ApiResult<Json<IdResponse>> {
    let environment = lookup(&state, &caller, &id)?;
    let organization = caller.require_role(OrganizationRole::Admin)?;
    body.validate()?;
    if environment.spec.archived {
        // Archiving twice changes nothing; the first reason and time stand.
        return Ok(Json(IdResponse { id }));
    }
    let mut desired = Environment::new(&id, environment.spec.clone());
    // Variables other managers applied stay theirs (see `write::only_owned`).
    desired.spec.variables = only_owned(
        &environment.metadata,
        FIELD_MANAGER,
        &environment.spec.variables,
    );
    desired.spec.archived = true;
    desired.spec.archive_reason = body.reason.map(|r| r.trim().to_string());
    let api = Api::<Environment>::namespaced(state.client.clone(), &organization.namespace);
    apply(&api, &state.caches.environments, Some(&caller), desired).await?;
    Ok(Json(IdResponse { id }))
}
