//! Spec §4.4, projects: count, list, create, show, archive (DELETE), rename.

use axum::extract::{Path, State};
use berth_api::common::{CountResponse, IdResponse};
use berth_crds::lifecycle::LifecycleStatus;
use berth_crds::limits::{LIST_LIMIT_MAX, PROJECTS_OFFSET_MAX};
use berth_crds::member::OrganizationRole;
use berth_crds::project::{Project, ProjectSpec};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::fields::{confirm, slugify};
use crate::domain::objects::all_in;
use crate::domain::projects::lookup;
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};
use crate::token::new_id;
use crate::write::{apply, only_owned};

pub use berth_api::projects::{
    ArchiveProject, CreateProject, ProjectList, ProjectRecord, RenameProject,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<CountResponse, _, _>("/projects/count", "Count active projects", count),
        Endpoint::get::<ProjectList, _, _>("/projects", "List projects", list),
        Endpoint::post::<CreateProject, IdResponse, _, _>("/projects", "Create a project", create),
        Endpoint::get::<ProjectRecord, _, _>("/projects/{projectId}", "Show a project", show),
        Endpoint::delete::<ArchiveProject, IdResponse, _, _>(
            "/projects/{projectId}",
            "Archive a project (history stays readable)",
            archive,
        ),
        Endpoint::post::<berth_api::resources::RestoreResource, IdResponse, _, _>(
            "/projects/{projectId}/restore",
            "Restore an archived project (admin): its environments and resources take \
             deployments and changes again",
            restore,
        ),
        Endpoint::post::<RenameProject, ProjectRecord, _, _>(
            "/projects/{projectId}/rename",
            "Rename a project",
            rename,
        ),
    ]
}

/// Largest `limit` of `GET /projects` (spec §8).
pub const MAX_LIMIT: u64 = LIST_LIMIT_MAX;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest `offset` (spec §8): 2^53 - 1.
pub const MAX_OFFSET: u64 = PROJECTS_OFFSET_MAX;

/// Converts the custom resource to the REST record.
pub fn record(project: &Project, organization_id: &str) -> ProjectRecord {
    let status = project.status.clone().unwrap_or_default();
    // The spec's flag is the truth the moment it is written; status adds the timestamp.
    let lifecycle = LifecycleStatus::from_archived(project.spec.archived);
    ProjectRecord {
        id: project.name_any(),
        organization_id: organization_id.to_string(),
        name: project.spec.name.clone(),
        slug: project
            .spec
            .slug
            .clone()
            .unwrap_or_else(|| slugify(&project.spec.name)),
        description: project.spec.description.clone(),
        lifecycle_status: lifecycle.as_str().to_string(),
        archived_at: status
            .archived_at
            .as_ref()
            .filter(|_| project.spec.archived)
            .map(timestamp),
        archive_reason: project
            .spec
            .archive_reason
            .clone()
            .filter(|_| project.spec.archived),
        display_order: project.spec.display_order,
        created_at: created_at(&project.metadata),
    }
}

/// The caller's projects, filtered by a deploy token's scope, in display order.
fn visible(state: &AppState, caller: &Caller, namespace: &str) -> Vec<std::sync::Arc<Project>> {
    let mut projects: Vec<_> = all_in(&state.caches.projects, namespace)
        .into_iter()
        .filter(|p| caller.sees(ScopeDimension::Project, &p.name_any()))
        .collect();
    projects.sort_by(|a, b| {
        (a.spec.display_order, created_at(&a.metadata), a.name_any()).cmp(&(
            b.spec.display_order,
            created_at(&b.metadata),
            b.name_any(),
        ))
    });
    projects
}

async fn count(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<CountResponse>> {
    let organization = caller.organization()?;
    let count = visible(&state, &caller, &organization.namespace)
        .iter()
        .filter(|p| !p.spec.archived)
        .count();
    Ok(Json(CountResponse { count }))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ProjectList>> {
    let organization = caller.organization()?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let offset = query.integer("offset", 0, MAX_OFFSET, 0)?;
    let lifecycle = query.one_of(
        "lifecycleStatus",
        &["active", "archived", "all"],
        Some("active"),
    )?;
    let matching: Vec<ProjectRecord> = visible(&state, &caller, &organization.namespace)
        .iter()
        .map(|p| record(p, &organization.id))
        .filter(|r| lifecycle == Some("all") || Some(r.lifecycle_status.as_str()) == lifecycle)
        .collect();
    let total = matching.len();
    let items = matching
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .collect();
    Ok(Json(ProjectList {
        items,
        total,
        limit,
        offset,
    }))
}

/// A slug already used by another project of the organization is a conflict.
fn ensure_slug_free(
    state: &AppState,
    namespace: &str,
    slug: &str,
    except: Option<&str>,
) -> ApiResult<()> {
    let taken = all_in(&state.caches.projects, namespace).iter().any(|p| {
        Some(p.name_any().as_str()) != except
            && p.spec.slug.clone().unwrap_or_else(|| slugify(&p.spec.name)) == slug
    });
    if taken {
        return Err(
            ApiError::conflict(format!("another project already uses the slug {slug}"))
                .with_detail("field", "slug"),
        );
    }
    Ok(())
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateProject>,
) -> ApiResult<Json<IdResponse>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    if matches!(caller.principal, crate::auth::Principal::DeployToken { .. }) {
        return Err(ApiError::forbidden("deploy tokens cannot create projects"));
    }
    body.validate()?;
    let slug = body.slug.unwrap_or_else(|| slugify(&body.name));
    ensure_slug_free(&state, &organization.namespace, &slug, None)?;
    let id = new_id("prj");
    let project = Project::new(
        &id,
        ProjectSpec {
            name: body.name,
            slug: Some(slug),
            description: body.description,
            display_order: i64::from(body.display_order.unwrap_or(0)),
            archived: false,
            archive_reason: None,
            variables: Vec::new(),
        },
    );
    let api = Api::<Project>::namespaced(state.client.clone(), &organization.namespace);
    apply(&api, &state.caches.projects, Some(&caller), project).await?;
    Ok(Json(IdResponse { id }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ProjectRecord>> {
    let project = lookup(&state, &caller, &id)?;
    Ok(Json(record(&project, &caller.organization()?.id)))
}

async fn archive(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ArchiveProject>,
) -> ApiResult<Json<IdResponse>> {
    let project = lookup(&state, &caller, &id)?;
    let organization = caller.require_role(OrganizationRole::Admin)?;
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.project_id.as_deref(),
        &id,
        "projectId",
        "project",
    )?;
    if project.spec.archived {
        return Ok(Json(IdResponse { id }));
    }
    let mut desired = Project::new(&id, project.spec.clone());
    // Variables other managers applied stay theirs (see `write::only_owned`).
    desired.spec.variables = only_owned(&project.metadata, FIELD_MANAGER, &project.spec.variables);
    desired.spec.archived = true;
    desired.spec.archive_reason = body.reason.filter(|r| !r.trim().is_empty());
    let api = Api::<Project>::namespaced(state.client.clone(), &organization.namespace);
    apply(&api, &state.caches.projects, Some(&caller), desired).await?;
    Ok(Json(IdResponse { id }))
}

async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<berth_api::resources::RestoreResource>,
) -> ApiResult<Json<IdResponse>> {
    let project = lookup(&state, &caller, &id)?;
    let organization = caller.require_role(OrganizationRole::Admin)?;
    if !project.spec.archived {
        return Ok(Json(IdResponse { id }));
    }
    let mut desired = Project::new(&id, project.spec.clone());
    desired.spec.variables = only_owned(&project.metadata, FIELD_MANAGER, &project.spec.variables);
    desired.spec.archived = false;
    desired.spec.archive_reason = None;
    let api = Api::<Project>::namespaced(state.client.clone(), &organization.namespace);
    apply(&api, &state.caches.projects, Some(&caller), desired).await?;
    tracing::info!(project = %id, "project restored");
    Ok(Json(IdResponse { id }))
}

async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RenameProject>,
) -> ApiResult<Json<ProjectRecord>> {
    let project = lookup(&state, &caller, &id)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let mut desired = Project::new(&id, project.spec.clone());
    // Variables other managers applied stay theirs (see `write::only_owned`).
    desired.spec.variables = only_owned(&project.metadata, FIELD_MANAGER, &project.spec.variables);
    desired.spec.name = body.name;
    if let Some(slug) = body.slug {
        ensure_slug_free(&state, &organization.namespace, &slug, Some(&id))?;
        desired.spec.slug = Some(slug);
    }
    let api = Api::<Project>::namespaced(state.client.clone(), &organization.namespace);
    let written = apply(&api, &state.caches.projects, Some(&caller), desired).await?;
    Ok(Json(record(&written, &organization.id)))
}
