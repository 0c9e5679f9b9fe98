//! Dependency resources over REST (Appaloft's routes and shapes): `POST
//! /dependency-resources/provision`, `GET /dependency-resources[/count|/{id}]`, `POST
//! /dependency-resources/{id}/rename` and `DELETE /dependency-resources/{id}`. A dependency is
//! a DependencyResource object the controller runs as a container on its server; reads come
//! from the watch caches, the bindings from the resources' `spec.dependencyBindings`.
//! `POST /dependency-resources/import` records an external one: its URL, checked for its kind
//! here, goes into a Secret, and the controller checks from the named server that it answers.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::{CountResponse, IdResponse};
use berth_crds::dependency_resource::{
    ConnectionSecretRef, DELETE_DATA_ANNOTATION, DependencyKind, DependencyResource,
    DependencyResourceSpec, DependencySource, SKIP_FINAL_BACKUP_ANNOTATION,
};
use berth_crds::dependency_url::checked_connection;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::cache::wait_deleted;
use crate::domain::dependency_resources::{
    WHAT, ask_rotation, bindings_of, delete_blockers, lookup, require_free_port, require_open_for,
    rotation_unsupported, summary, visible_to,
};
use crate::domain::fields::slugify;
use crate::domain::objects::all_in;
use crate::domain::{database_authority, dependency_imports, environments, projects, servers};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::dependencies::{
    CredentialRotationStarted, DeleteDependencyResource, DependencyCaCertificate,
    DependencyResourceList, DependencyResourceShow, ImportDependencyResource, LIST_SCHEMA,
    ProvisionDependencyResource, RenameDependencyResource, RotateDependencyCredentials,
    SHOW_SCHEMA,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<ProvisionDependencyResource, IdResponse, _, _>(
            "/dependency-resources/provision",
            "Provision a managed PostgreSQL or Redis on a server of the environment (201)",
            provision,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<ImportDependencyResource, IdResponse, _, _>(
            "/dependency-resources/import",
            "Import an external PostgreSQL or Redis by its connection URL (201): kept in a Secret, \
             shown masked, checked from serverId by the kind's own client before it is ready",
            import,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<DependencyResourceList, _, _>(
            "/dependency-resources",
            "List dependency resources (projectId, environmentId, kind filters)",
            list,
        ),
        Endpoint::get::<CountResponse, _, _>(
            "/dependency-resources/count",
            "Count dependency resources (projectId, environmentId, kind filters)",
            count,
        ),
        Endpoint::get::<DependencyResourceShow, _, _>(
            "/dependency-resources/{dependencyResourceId}",
            "Show a dependency resource: lifecycle, masked connection, delete blockers",
            show,
        ),
        Endpoint::get::<DependencyCaCertificate, _, _>(
            "/dependency-resources/{dependencyResourceId}/ca-certificate",
            "The certificate of the authority that issued a managed PostgreSQL's server \
             certificate (Berth), to verify it with sslmode=verify-full; 409 for another kind",
            ca_certificate,
        ),
        Endpoint::post::<RenameDependencyResource, IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}/rename",
            "Rename a dependency resource",
            rename,
        ),
        Endpoint::post::<RotateDependencyCredentials, CredentialRotationStarted, _, _>(
            "/dependency-resources/{dependencyResourceId}/credential-rotations",
            "Rotate a managed PostgreSQL's login (Berth; 202): a new login beside the old one, \
             the bound apps that auto-deploy redeployed on it, then the old one revoked; the \
             dependency's `credentials` follow it. Redis and imported dependencies are refused",
            rotate_credentials,
        )
        .success(&[StatusCode::ACCEPTED]),
        Endpoint::delete::<DeleteDependencyResource, IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}",
            "Delete an unbound dependency resource (409 while bound); its data volume is kept \
             unless deleteDataConfirmation repeats its name; one a backup policy covers is backed up \
             once more first, unless skipFinalBackupConfirmation repeats its name",
            delete,
        ),
    ]
}

/// Where a dependency goes: its project, environment and server.
struct Placement<'a> {
    project_id: &'a str,
    environment_id: &'a str,
    server_id: &'a str,
}

/// The project, environment and server a dependency goes on: all visible, the environment
/// the project's, neither archived nor locked. Each refusal names its field.
fn placement(state: &AppState, caller: &Caller, wanted: Placement<'_>) -> ApiResult<()> {
    let field = |name: &'static str| move |error: ApiError| error.with_detail("field", name);
    caller.require_in_scope(ScopeDimension::Project, wanted.project_id)?;
    caller.require_in_scope(ScopeDimension::Environment, wanted.environment_id)?;
    let project = projects::lookup(state, caller, wanted.project_id).map_err(field("projectId"))?;
    let environment = environments::lookup(state, caller, wanted.environment_id)
        .map_err(field("environmentId"))?;
    servers::lookup(state, caller, wanted.server_id).map_err(field("serverId"))?;
    if environment.spec.project_id != wanted.project_id {
        return Err(ApiError::validation(
            "environmentId",
            format!(
                "environment {} is not an environment of project {}",
                wanted.environment_id, wanted.project_id
            ),
        ));
    }
    environments::require_open(&project, &environment, WHAT)
}

/// 409 when another dependency of `environment` (not `except`) has the slug of `name`.
fn require_free_slug(
    state: &AppState,
    namespace: &str,
    environment: &str,
    name: &str,
    except: Option<&str>,
) -> ApiResult<()> {
    let slug = slugify(name);
    let taken = all_in(&state.caches.dependency_resources, namespace)
        .into_iter()
        .find(|d| {
            d.spec.environment_id == environment
                && slugify(&d.spec.name) == slug
                && Some(d.name_any().as_str()) != except
        });
    match taken {
        None => Ok(()),
        Some(taken) => Err(ApiError::conflict_code(
            "dependency_resource_slug_conflict",
            format!(
                "environment {environment} already has a dependency resource named {slug} ({})",
                taken.name_any()
            ),
        )
        .with_detail("field", "name")
        .with_detail("conflictingDependencyResourceId", taken.name_any())),
    }
}

async fn provision(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ProvisionDependencyResource>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let wanted = Placement {
        project_id: &body.project_id,
        environment_id: &body.environment_id,
        server_id: &body.server_id,
    };
    placement(&state, &caller, wanted)?;
    let namespace = organization.namespace.clone();
    let name = body.name.trim().to_string();
    require_free_slug(&state, &namespace, &body.environment_id, &name, None)?;
    if let Some(exposure) = &body.exposure {
        require_free_port(&state, &namespace, &body.server_id, None, exposure)?;
    }
    let id = new_id("dep");
    let dependency = DependencyResource::new(
        &id,
        DependencyResourceSpec {
            kind: body.kind,
            project_id: body.project_id,
            environment_id: body.environment_id,
            server_id: body.server_id,
            name,
            description: body.description,
            image: body.image,
            exposure: body.exposure,
            source: DependencySource::Managed,
            connection_secret_ref: None,
            rotate_credentials: None,
            major_version_upgrade: None,
        },
    );
    let api = Api::<DependencyResource>::namespaced(state.client.clone(), &namespace);
    apply(
        &api,
        &state.caches.dependency_resources,
        Some(&caller),
        dependency,
    )
    .await?;
    tracing::info!(dependency = %id, "dependency resource provisioned");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

async fn import(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ImportDependencyResource>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    checked_connection(body.kind, &body.connection_url).map_err(|why| {
        ApiError::validation("connectionUrl", format!("the connection URL {why}"))
    })?;
    let wanted = Placement {
        project_id: &body.project_id,
        environment_id: &body.environment_id,
        server_id: &body.server_id,
    };
    placement(&state, &caller, wanted)?;
    let namespace = organization.namespace.clone();
    let name = body.name.trim().to_string();
    require_free_slug(&state, &namespace, &body.environment_id, &name, None)?;
    let id = new_id("dep");
    dependency_imports::keep_url(&state, &namespace, &id, &body.connection_url).await?;
    let dependency = DependencyResource::new(
        &id,
        DependencyResourceSpec {
            kind: body.kind,
            project_id: body.project_id,
            environment_id: body.environment_id,
            server_id: body.server_id,
            name,
            description: body.description,
            image: body.image,
            exposure: None,
            source: DependencySource::Imported,
            connection_secret_ref: Some(ConnectionSecretRef {
                name: dependency_imports::source_secret_name(&id),
            }),
            rotate_credentials: None,
            major_version_upgrade: None,
        },
    );
    let api = Api::<DependencyResource>::namespaced(state.client.clone(), &namespace);
    let stored = apply(
        &api,
        &state.caches.dependency_resources,
        Some(&caller),
        dependency,
    )
    .await;
    let stored = match stored {
        Ok(stored) => stored,
        Err(error) => {
            dependency_imports::forget_url(&state, &namespace, &id).await;
            return Err(error);
        }
    };
    dependency_imports::hand_over(&state, &namespace, &stored).await?;
    tracing::info!(dependency = %id, "dependency resource imported");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

/// The caller's dependencies that pass the query's filters, oldest first.
fn filtered(
    state: &AppState,
    caller: &Caller,
    query: &QueryParams,
) -> ApiResult<Vec<Arc<DependencyResource>>> {
    known_params(query, &["projectId", "environmentId", "kind"])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    // A filter must name a project or environment the caller may use.
    let project = query.string("projectId")?;
    if let Some(project) = project {
        projects::lookup(state, caller, project)?;
    }
    let environment = query.string("environmentId")?;
    if let Some(environment) = environment {
        environments::lookup(state, caller, environment)?;
    }
    let kind = query
        .one_of("kind", &["postgres", "redis"], None)?
        .map(|k| {
            if k == "redis" {
                DependencyKind::Redis
            } else {
                DependencyKind::Postgres
            }
        });
    let mut dependencies: Vec<_> =
        all_in(&state.caches.dependency_resources, &organization.namespace)
            .into_iter()
            .filter(|d| visible_to(caller, d))
            .filter(|d| project.is_none_or(|p| d.spec.project_id == p))
            .filter(|d| environment.is_none_or(|e| d.spec.environment_id == e))
            .filter(|d| kind.is_none_or(|k| d.spec.kind == k))
            .collect();
    dependencies.sort_by_key(|d| {
        (
            d.metadata.creation_timestamp.clone().map(|t| t.0),
            d.name_any(),
        )
    });
    Ok(dependencies)
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<DependencyResourceList>> {
    let dependencies = filtered(&state, &caller, &query)?;
    let namespace = &caller.organization()?.namespace;
    let resources = all_in(&state.caches.resources, namespace);
    Ok(Json(DependencyResourceList {
        schema_version: LIST_SCHEMA.into(),
        items: dependencies
            .iter()
            .map(|d| summary(d, &resources))
            .collect(),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn count(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<CountResponse>> {
    let count = filtered(&state, &caller, &query)?.len();
    Ok(Json(CountResponse { count }))
}

fn resources_of(state: &AppState, dependency: &DependencyResource) -> Vec<Arc<Resource>> {
    all_in(
        &state.caches.resources,
        &dependency.namespace().unwrap_or_default(),
    )
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DependencyResourceShow>> {
    let dependency = lookup(&state, &caller, &id)?;
    let resources = resources_of(&state, &dependency);
    Ok(Json(DependencyResourceShow {
        schema_version: SHOW_SCHEMA.into(),
        dependency_resource: summary(&dependency, &resources),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn ca_certificate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DependencyCaCertificate>> {
    let dependency = lookup(&state, &caller, &id)?;
    Ok(Json(
        database_authority::certificate_of(&state, &dependency).await?,
    ))
}

async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RenameDependencyResource>,
) -> ApiResult<Json<IdResponse>> {
    let dependency = lookup(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    require_open_for(&state, &caller, &dependency)?;
    let name = body.name.trim().to_string();
    let namespace = dependency.namespace().unwrap_or_default();
    let environment = &dependency.spec.environment_id;
    require_free_slug(&state, &namespace, environment, &name, Some(&id))?;
    let mut spec = dependency.spec.clone();
    spec.name = name;
    let api = Api::<DependencyResource>::namespaced(state.client.clone(), &namespace);
    let renamed = DependencyResource::new(&id, spec);
    apply(
        &api,
        &state.caches.dependency_resources,
        Some(&caller),
        renamed,
    )
    .await?;
    Ok(Json(IdResponse { id }))
}

/// Writes a new `spec.rotateCredentials` value; the controller does the rest.
async fn rotate_credentials(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_body): JsonBody<RotateDependencyCredentials>,
) -> ApiResult<(StatusCode, Json<CredentialRotationStarted>)> {
    let dependency = lookup(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Admin)?;
    if let Some(why) = rotation_unsupported(&dependency) {
        return Err(ApiError::validation_code(
            "dependency_credential_rotation_unsupported",
            "dependencyResourceId",
            why,
        ));
    }
    let rotation = ask_rotation(&state, &caller, &dependency).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(CredentialRotationStarted { id, rotation }),
    ))
}

/// The 409 of a dependency still bound, naming every binding.
fn still_bound(id: &str, resources: &[Arc<Resource>]) -> Option<ApiError> {
    let blockers = delete_blockers(resources, id);
    if blockers.is_empty() {
        return None;
    }
    let named: Vec<String> = bindings_of(resources, id)
        .map(|(resource, binding)| format!("resource {} ({})", resource.name_any(), binding.id()))
        .collect();
    let mut resource_ids: Vec<String> = blockers
        .iter()
        .filter_map(|b| b.related_entity_id.clone())
        .collect();
    resource_ids.dedup();
    let error = ApiError::conflict_code(
        "dependency_resource_delete_blocked",
        format!(
            "dependency resource {id} is bound by {}: unbind it first",
            named.join(", ")
        ),
    )
    .with_detail("resourceIds", resource_ids)
    .with_detail(
        "deletionBlockers",
        serde_json::to_value(&blockers).unwrap_or_default(),
    );
    Some(error)
}

/// What a deletion was confirmed to do beyond removing the container.
struct Confirmed {
    delete_data: bool,
    skip_final_backup: bool,
}

/// Whether `typed` confirms by repeating the dependency's name; a 422 on `field` when it was
/// typed wrong.
fn confirmed(typed: Option<&str>, name: &str, field: &str, effect: &str) -> ApiResult<bool> {
    match typed {
        None => Ok(false),
        Some(typed) if typed == name => Ok(true),
        Some(_) => Err(ApiError::validation(
            field,
            format!("{field} must repeat the dependency's name ({name}) to {effect}"),
        )),
    }
}

/// Sets (or clears) the annotations that let the controller remove the data volume and go
/// without a final backup.
async fn mark_confirmed(
    api: &Api<DependencyResource>,
    dependency: &DependencyResource,
    confirmed: &Confirmed,
) -> ApiResult<()> {
    let id = dependency.name_any();
    let annotations = dependency.annotations();
    let wanted = |yes: bool| yes.then_some(&id);
    let data = wanted(confirmed.delete_data);
    let skip = wanted(confirmed.skip_final_backup);
    if annotations.get(DELETE_DATA_ANNOTATION) == data
        && annotations.get(SKIP_FINAL_BACKUP_ANNOTATION) == skip
    {
        return Ok(());
    }
    let patch = json!({"metadata": {"annotations": {
        DELETE_DATA_ANNOTATION: data, SKIP_FINAL_BACKUP_ANNOTATION: skip,
    }}});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    api.patch(&id, &params, &Patch::Merge(&patch)).await?;
    Ok(())
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteDependencyResource>,
) -> ApiResult<Json<IdResponse>> {
    let dependency = lookup(&state, &caller, &id)?;
    let name = &dependency.spec.name;
    let confirmed = Confirmed {
        delete_data: confirmed(
            body.delete_data_confirmation.as_deref(),
            name,
            "deleteDataConfirmation",
            "remove its data volume; leave it out to keep the volume",
        )?,
        skip_final_backup: confirmed(
            body.skip_final_backup_confirmation.as_deref(),
            name,
            "skipFinalBackupConfirmation",
            "delete it without a final backup; leave it out to take one",
        )?,
    };
    require_open_for(&state, &caller, &dependency)?;
    if let Some(error) = still_bound(&id, &resources_of(&state, &dependency)) {
        return Err(error);
    }
    let namespace = dependency.namespace().unwrap_or_default();
    let api = Api::<DependencyResource>::namespaced(state.client.clone(), &namespace);
    mark_confirmed(&api, &dependency, &confirmed).await?;
    let marked = crate::write::delete(&api, &dependency, &DeleteParams::default(), &caller).await?;
    wait_deleted(&state.caches.dependency_resources, &dependency, marked).await?;
    let (delete_data, skip_final_backup) = (confirmed.delete_data, confirmed.skip_final_backup);
    tracing::info!(dependency = %id, delete_data, skip_final_backup, "dependency resource deleted");
    Ok(Json(IdResponse { id }))
}
