//! Spec §4.7, resources: `GET /resources` (the Resource list item of spec §2.2, from the status
//! the controller writes), `DELETE /resources/{resourceId}` (confirmed by the resource's slug;
//! the controller's finalizer then removes containers, route and Deployments) and, beyond the
//! spec so REST users can create what they deploy, `POST /resources` (in [`create`]).

mod create;
pub mod lifecycle;
mod show;

use std::sync::{Arc, LazyLock};

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::cache::wait_deleted;
use crate::domain::environments;
use crate::domain::objects::all_in;
use crate::domain::projects;
use crate::domain::resource_access::lookup;
use crate::domain::time::created_at;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::services::delete_receipts::DeleteReceipts;
use crate::state::AppState;

pub use berth_api::resources::{DeleteResource, ResourceList, ResourceRecord};
pub use create::CreateResource;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ResourceList, _, _>(
            "/resources",
            "List resources (filters: projectId, environmentId)",
            list,
        ),
        Endpoint::post::<CreateResource, ResourceRecord, _, _>(
            "/resources",
            "Create a resource in an environment of a project; with serverId and a docker-image \
             source the controller deploys it",
            create::create,
        ),
        Endpoint::get::<berth_api::resource_detail::ResourceDetail, _, _>(
            "/resources/{resourceId}",
            "One resource, whole (resources.show/v1): identity, source, profiles, auto-deploy, \
             health policy, storage attachments, access summary, runtime, latest deployment, \
             lifecycle",
            show::show,
        ),
        Endpoint::post::<berth_api::resources::ArchiveResource, IdResponse, _, _>(
            "/resources/{resourceId}/archive",
            "Archive a resource (reason?): it takes no deployments and no changes until \
             restored; its runtime, route and history stay",
            lifecycle::archive,
        ),
        Endpoint::post::<berth_api::resources::RestoreResource, IdResponse, _, _>(
            "/resources/{resourceId}/restore",
            "Restore an archived resource",
            lifecycle::restore,
        ),
        Endpoint::delete::<DeleteResource, IdResponse, _, _>(
            "/resources/{resourceId}",
            "Delete a resource (admin; confirmation.resourceSlug): its containers, route and \
             deployments go with it",
            delete,
        ),
    ]
}

/// Converts the custom resource to the list item; deployment facts come from its status.
pub fn record(resource: &Resource) -> ResourceRecord {
    let spec = &resource.spec;
    let status = resource.status.clone().unwrap_or_default();
    ResourceRecord {
        id: resource.name_any(),
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        destination_id: spec.destination_id.clone(),
        name: spec.name.clone(),
        slug: resource.host_slug(),
        kind: spec.kind,
        description: spec.description.clone(),
        created_at: created_at(&resource.metadata),
        services: spec.services.clone(),
        network_profile: spec.network_profile.clone(),
        access_profile: spec.access_profile.clone(),
        deployment_count: status.deployment_count,
        last_deployment_id: status.last_deployment_id,
        last_deployment_status: status.last_deployment_status,
        access_summary: status.access_summary,
        proxy_route_status: status.proxy_route_status,
        last_route_realization_deployment_id: status.last_route_realization_deployment_id,
        deployed_state: status.deployed_state,
    }
}

/// Whether a deploy token's scope covers the resource, its project and its environment.
fn visible_to(caller: &Caller, resource: &Resource) -> bool {
    caller.sees(ScopeDimension::Resource, &resource.name_any())
        && caller.sees(ScopeDimension::Project, &resource.spec.project_id)
        && caller.sees(ScopeDimension::Environment, &resource.spec.environment_id)
}

/// Checks the list filters the way `GET /environments` does: a filter must name a project or
/// environment the caller may use (403 outside a token's scope, 404 when missing).
fn check_filters(
    state: &AppState,
    caller: &Caller,
    project: Option<&str>,
    environment: Option<&str>,
) -> ApiResult<()> {
    if let Some(project) = project {
        caller.require_in_scope(ScopeDimension::Project, project)?;
        projects::lookup(state, caller, project)?;
    }
    if let Some(environment) = environment {
        caller.require_in_scope(ScopeDimension::Environment, environment)?;
        environments::lookup(state, caller, environment)?;
    }
    Ok(())
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ResourceList>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    known_params(&query, &["projectId", "environmentId"])?;
    let project = query.string("projectId")?;
    let environment = query.string("environmentId")?;
    check_filters(&state, &caller, project, environment)?;
    let mut resources: Vec<Arc<Resource>> =
        all_in(&state.caches.resources, &organization.namespace)
            .into_iter()
            // A resource being deleted is gone for the API already.
            .filter(|r| r.metadata.deletion_timestamp.is_none())
            .filter(|r| project.is_none_or(|p| r.spec.project_id == p))
            .filter(|r| environment.is_none_or(|e| r.spec.environment_id == e))
            .filter(|r| visible_to(&caller, r))
            .collect();
    resources.sort_by_key(|r| {
        (
            r.metadata.creation_timestamp.clone().map(|t| t.0),
            r.name_any(),
        )
    });
    let items = resources.iter().map(|r| record(r)).collect();
    Ok(Json(ResourceList { items }))
}

/// Idempotency keys of recent resource deletes, kept in this process's memory like the
/// server-delete receipts (same type, same 24-hour memory): a restarted shim forgets them, and
/// a retry then sees 404 for a resource that is gone.
static DELETE_RECEIPTS: LazyLock<DeleteReceipts> = LazyLock::new(DeleteReceipts::default);

/// A remembered delete of the same resource answers `{id}` again; a key used for another
/// resource is a conflict.
fn replay(namespace: &str, key: &str, id: &str) -> ApiResult<bool> {
    match DELETE_RECEIPTS.get(namespace, key) {
        Some(done) if done == id => Ok(true),
        Some(_) => Err(ApiError::conflict(
            "idempotencyKey was already used to delete another resource",
        )
        .with_detail("field", "idempotencyKey")),
        None => Ok(false),
    }
}

/// `confirmation.resourceSlug` must repeat the resource's slug: missing is 422, wrong is 409.
fn confirm_slug(given: Option<&str>, slug: &str) -> ApiResult<()> {
    match given {
        None => Err(ApiError::validation(
            "confirmation.resourceSlug",
            "confirmation.resourceSlug is required: repeat the resource's slug to confirm",
        )),
        Some(value) if value == slug => Ok(()),
        Some(_) => Err(ApiError::confirmation_mismatch("resourceSlug", "resource")),
    }
}

/// Deletes the Resource object; the controller's finalizer removes its containers, route and
/// Deployments before the object goes. Needs the admin role (deploy tokens act as members).
///
/// Idempotency: a resource already being deleted answers `{id}` as the first request did
/// (after the same role and confirmation checks). With an `idempotencyKey`, a repeat after the
/// resource is gone answers `{id}` too, while this shim remembers the key (24 hours); without
/// one, or after a shim restart, a resource that is gone is 404. A key already used for another
/// resource is 409.
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteResource>,
) -> ApiResult<Json<IdResponse>> {
    let namespace = caller.organization()?.namespace.clone();
    body.validate()?;
    if let Some(key) = &body.idempotency_key {
        caller.require_role(OrganizationRole::Admin)?;
        if replay(&namespace, key, &id)? {
            return Ok(Json(IdResponse { id }));
        }
    }
    let resource = lookup(&state, &caller, &id)?;
    let organization = caller.require_role(OrganizationRole::Admin)?.clone();
    let confirmation = body.confirmation.unwrap_or_default();
    confirm_slug(confirmation.resource_slug.as_deref(), &resource.host_slug())?;
    let remember = || {
        if let Some(key) = &body.idempotency_key {
            DELETE_RECEIPTS.record(&namespace, key, &id);
        }
    };
    if resource.metadata.deletion_timestamp.is_some() {
        remember();
        return Ok(Json(IdResponse { id }));
    }
    let api = Api::<Resource>::namespaced(state.client.clone(), &namespace);
    // Gone between the cache read and the call: the outcome the caller asked for.
    let marked =
        crate::write::delete(&api, resource.as_ref(), &Default::default(), &caller).await?;
    wait_deleted(&state.caches.resources, resource.as_ref(), marked).await?;
    remember();
    tracing::info!(resource = %id, organization = %organization.id, "resource deleted");
    Ok(Json(IdResponse { id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::resource::ResourceSpec;
    use serde_json::json;

    fn resource(extra: serde_json::Value) -> Resource {
        let mut spec = json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web Shop",
            "kind": "application",
        });
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        let spec: ResourceSpec = serde_json::from_value(spec).unwrap();
        Resource::new("res-1", spec)
    }

    #[test]
    fn record_follows_the_spec_list_item() {
        let mut resource = resource(json!({"networkProfile": {"internalPort": 8080}}));
        resource.status = Some(
            serde_json::from_value(json!({
                "deploymentCount": 2, "lastDeploymentId": "dep-res-1-2",
                "lastDeploymentStatus": "succeeded", "proxyRouteStatus": "ready",
            }))
            .unwrap(),
        );
        let value = serde_json::to_value(record(&resource)).unwrap();
        assert_eq!(value["slug"], "web-shop");
        assert_eq!(value["kind"], "application");
        assert_eq!(value["services"], json!([]));
        assert_eq!(value["networkProfile"]["exposureMode"], "reverse-proxy");
        assert_eq!(value["deploymentCount"], 2);
        assert_eq!(value["lastDeploymentStatus"], "succeeded");
        assert_eq!(value["proxyRouteStatus"], "ready");
        assert!(value.get("accessSummary").is_none());
        assert!(value.get("description").is_none());
    }

    #[test]
    fn slug_confirmation() {
        assert!(confirm_slug(Some("shop"), "shop").is_ok());
        assert_eq!(confirm_slug(Some("x"), "shop").unwrap_err().status, 409);
        let missing = confirm_slug(None, "shop").unwrap_err();
        assert_eq!(missing.status, 422);
        assert_eq!(missing.body.details["field"], "confirmation.resourceSlug");
    }

    #[test]
    fn receipts_replay_the_same_resource_and_refuse_another() {
        DELETE_RECEIPTS.record("ns-test", "k1", "res-a");
        assert!(replay("ns-test", "k1", "res-a").unwrap());
        assert_eq!(replay("ns-test", "k1", "res-b").unwrap_err().status, 409);
        assert!(!replay("ns-other", "k1", "res-a").unwrap());
    }
}
