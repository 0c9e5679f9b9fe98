//! Reaching a Resource through the API: whether the caller may see it (`lookup`), whether it
//! takes deployments and changes (`require_writable`: not archived, its environment not
//! locked), and which values a reader of its output must never see (`masker`).

use std::sync::Arc;

use berth_crds::config::secret_name;
use berth_crds::masking::Masker;
use berth_crds::masking::looks_secret;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::find_in;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// When the resource was archived (its own archive).
pub const ARCHIVED_AT: &str = "berth.dev/archived-at";
/// Why, as given.
pub const ARCHIVE_REASON: &str = "berth.dev/archive-reason";
/// An archive in force: the resource's own, or its project's or environment's.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    pub archived_at: Option<String>,
    pub reason: Option<String>,
}

/// Whether `resource` is archived, and since when.
pub fn archived(state: &AppState, resource: &Resource) -> Option<Archived> {
    let annotations = resource.annotations();
    if let Some(at) = annotations.get(ARCHIVED_AT) {
        return Some(Archived {
            archived_at: Some(at.clone()),
            reason: annotations.get(ARCHIVE_REASON).cloned(),
        });
    }
    let namespace = resource.namespace().unwrap_or_default();
    let caches = &state.caches;
    let spec = &resource.spec;
    if let Ok(environment) = find_in(
        &caches.environments,
        &namespace,
        &spec.environment_id,
        "environment",
    ) && environment.spec.archived
    {
        let status = environment.status.clone().unwrap_or_default();
        return Some(Archived {
            archived_at: status.archived_at.as_ref().map(timestamp),
            reason: Some(format!("environment {} is archived", spec.environment_id)),
        });
    }
    if let Ok(project) = find_in(&caches.projects, &namespace, &spec.project_id, "project")
        && project.spec.archived
    {
        let status = project.status.clone().unwrap_or_default();
        return Some(Archived {
            archived_at: status.archived_at.as_ref().map(timestamp),
            reason: Some(format!("project {} is archived", spec.project_id)),
        });
    }
    None
}

/// Refuses a deployment or a change of a resource that is archived or in a locked
/// environment.
pub fn require_writable(state: &AppState, resource: &Resource) -> ApiResult<()> {
    if let Some(archived) = archived(state, resource) {
        let why = archived.reason.unwrap_or_else(|| "it was archived".into());
        return Err(ApiError::resource_archived(format!(
            "resource {} is archived ({why}): restore it first",
            resource.name_any()
        )));
    }
    let namespace = resource.namespace().unwrap_or_default();
    let environment_id = &resource.spec.environment_id;
    if let Ok(environment) = find_in(
        &state.caches.environments,
        &namespace,
        environment_id,
        "environment",
    ) && environment.spec.locked
    {
        return Err(ApiError::environment_locked(
            environment_id,
            environment.spec.lock_reason.as_deref(),
            "unlock it to deploy or change its resources",
        ));
    }
    Ok(())
}

/// A resource of the caller's organization the caller may see, or 404 (other organizations'
/// resources and those outside a deploy token's scope look the same as missing ones).
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<Resource>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let resource = find_in(
        &state.caches.resources,
        &organization.namespace,
        id,
        "resource",
    )?;
    let visible = caller.sees(ScopeDimension::Resource, id)
        && caller.sees(ScopeDimension::Project, &resource.spec.project_id)
        && caller.sees(ScopeDimension::Environment, &resource.spec.environment_id);
    if !visible {
        return Err(ApiError::not_found("resource", id));
    }
    Ok(resource)
}

/// The resource, for a change: as [`lookup`], and refused while it is archived or its
/// environment is locked.
pub fn lookup_writable(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<Resource>> {
    let resource = lookup(state, caller, id)?;
    crate::domain::resource_access::require_writable(state, &resource)?;
    Ok(resource)
}

/// Values the stream must never show: the resource's secret values, and plain variables of
/// every scope it inherits from (organization, project, environment, resource) that look
/// secret. The controller keeps them out of what it writes; this is the second line.
pub(crate) async fn masker(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
) -> ApiResult<Masker> {
    let namespace = resource.namespace().unwrap_or_default();
    let secret = Api::<Secret>::namespaced(state.client.clone(), &namespace)
        .get_opt(&secret_name(resource))
        .await?;
    let stored = secret
        .and_then(|s| s.data)
        .unwrap_or_default()
        .into_values()
        .filter_map(|bytes| String::from_utf8(bytes.0).ok());
    let spec = &resource.spec;
    let organization = caller.organization()?;
    let mut plain = spec.variables.clone();
    let caches = &state.caches;
    if let Some(o) = caches
        .organizations
        .find(|o| o.name_any() == organization.id)
    {
        plain.extend(o.spec.variables.clone());
    }
    if let Ok(p) = find_in(&caches.projects, &namespace, &spec.project_id, "project") {
        plain.extend(p.spec.variables.clone());
    }
    if let Ok(e) = find_in(
        &caches.environments,
        &namespace,
        &spec.environment_id,
        "environment",
    ) {
        plain.extend(e.spec.variables.clone());
    }
    let secret_looking = plain
        .into_iter()
        .filter(|v| looks_secret(&v.key, &v.value))
        .map(|v| v.value);
    Ok(Masker::new(
        stored.chain(secret_looking).collect::<Vec<_>>(),
    ))
}

pub fn resources_api(state: &AppState, resource: &Resource) -> Api<Resource> {
    let namespace = resource.namespace().unwrap_or_default();
    Api::namespaced(state.client.clone(), &namespace)
}
