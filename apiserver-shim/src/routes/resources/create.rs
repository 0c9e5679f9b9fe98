//! `POST /resources`: creates a Resource in an environment of a project. Not in the spec's
//! endpoint list, but REST users need it to have something to deploy (as `POST /organizations`).
//! Every field is checked here, naming the field, before anything is written.

use axum::extract::State;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::server::ServerLifecycle;
use kube::{Api, ResourceExt};

use super::{ResourceRecord, record};
use crate::auth::{Caller, ScopeDimension};
use crate::domain::environments;
use crate::domain::fields::slugify;
use crate::domain::objects::all_in;
use crate::domain::projects;
use crate::domain::resource_input::{
    access_profile, network_profile, runtime_profile, service, source_descriptor,
};
use crate::domain::servers;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::resources::CreateResource;

/// A 422 on `field` for an id that names nothing the caller may use (or a 409 where the
/// object exists but does not take new resources).
fn unknown(field: &str, kind: &str, id: &str) -> ApiError {
    ApiError::validation(
        field,
        format!("{field}: no {kind} {id} in this organization"),
    )
}

fn closed(field: &str, message: String) -> ApiError {
    ApiError::conflict(message).with_detail("field", field)
}

/// The project and environment exist for the caller, the environment belongs to the project,
/// and neither is archived (nor the environment locked).
fn check_placement(state: &AppState, caller: &Caller, body: &CreateResource) -> ApiResult<()> {
    let (project_id, environment_id) = (&body.project_id, &body.environment_id);
    caller.require_in_scope(ScopeDimension::Project, project_id)?;
    caller.require_in_scope(ScopeDimension::Environment, environment_id)?;
    let project = projects::lookup(state, caller, project_id)
        .map_err(|_| unknown("projectId", "project", project_id))?;
    let environment = environments::lookup(state, caller, environment_id)
        .map_err(|_| unknown("environmentId", "environment", environment_id))?;
    if environment.spec.project_id != *project_id {
        return Err(ApiError::validation(
            "environmentId",
            format!("environmentId: environment {environment_id} belongs to another project"),
        ));
    }
    if project.spec.archived {
        let message = format!("project {project_id} is archived; resources cannot be added");
        return Err(closed("projectId", message));
    }
    if environment.spec.archived || environment.spec.locked {
        let message = format!(
            "environment {environment_id} is archived or locked; resources cannot be added"
        );
        return Err(closed("environmentId", message));
    }
    Ok(())
}

/// The server exists for the caller and takes deployments.
fn check_server(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    let server =
        servers::lookup(state, caller, id).map_err(|_| unknown("serverId", "server", id))?;
    if server.spec.lifecycle_status != ServerLifecycle::Active {
        return Err(closed(
            "serverId",
            format!("server {id} is inactive and takes no deployments"),
        ));
    }
    Ok(())
}

/// Two resources with one slug in an environment, or on one server, would share a generated
/// host name.
fn check_slug_free(
    state: &AppState,
    namespace: &str,
    slug: &str,
    body: &CreateResource,
) -> ApiResult<()> {
    let clash = all_in(&state.caches.resources, namespace).iter().any(|r| {
        let same_place = r.spec.environment_id == body.environment_id
            || (body.server_id.is_some() && r.spec.server_id == body.server_id);
        r.metadata.deletion_timestamp.is_none() && same_place && r.host_slug() == slug
    });
    if clash {
        return Err(ApiError::conflict(format!(
            "another resource in this environment or on this server already uses the slug {slug}"
        ))
        .with_detail("field", "slug"));
    }
    Ok(())
}

fn spec_of(body: CreateResource, slug: String) -> ApiResult<ResourceSpec> {
    let services = body
        .services
        .unwrap_or_default()
        .into_iter()
        .map(service)
        .collect();
    Ok(ResourceSpec {
        project_id: body.project_id,
        environment_id: body.environment_id,
        server_id: body.server_id,
        destination_id: body.destination_id,
        name: body.name.trim().to_string(),
        slug: Some(slug),
        kind: body.kind,
        description: body.description.filter(|d| !d.trim().is_empty()),
        services,
        source: body.source.map(source_descriptor),
        runtime_profile: body
            .runtime_profile
            .map(|profile| runtime_profile(profile, None))
            .transpose()?,
        network_profile: body.network_profile.map(network_profile),
        access_profile: body.access_profile.map(access_profile),
        auto_deploy: Default::default(),
        first_deployment: body.first_deployment.unwrap_or_default(),
        storage_attachments: Vec::new(),
        deployment_history_limit: None,
        variables: Vec::new(),
        dependency_bindings: Vec::new(),
        secrets_ref: None,
        image_pull_secret_ref: body
            .image_pull_secret_name
            .map(|name| berth_crds::resource::ImagePullSecretRef { name }),
        runtime: None,
    })
}

/// Creates the resource and returns its list item (no deployment yet). Members may create
/// resources; a deploy token only inside its project and environment scope, and only when it
/// is not limited to a list of resources (the new one could not be in it).
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateResource>,
) -> ApiResult<Json<ResourceRecord>> {
    let organization = caller.require_role(OrganizationRole::Member)?.clone();
    body.validate()?;
    check_placement(&state, &caller, &body)?;
    if let Some(server) = &body.server_id {
        check_server(&state, &caller, server)?;
    }
    let id = new_id("res");
    caller.require_in_scope(ScopeDimension::Resource, &id)?;
    let slug = body.slug.clone().unwrap_or_else(|| slugify(&body.name));
    check_slug_free(&state, &organization.namespace, &slug, &body)?;
    let spec = spec_of(body, slug)?;
    spec.check_support()?;
    let resource = Resource::new(&id, spec);
    let api = Api::<Resource>::namespaced(state.client.clone(), &organization.namespace);
    let written = apply(&api, &state.caches.resources, Some(&caller), resource).await?;
    tracing::info!(resource = %written.name_any(), organization = %organization.id, "resource created");
    Ok(Json(record(&written)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::resource::ExposureMode;
    use serde_json::json;

    fn body(extra: serde_json::Value) -> CreateResource {
        let mut value = json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web", "kind": "application",
        });
        if let (Some(base), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            base.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    /// The checks are `berth-api`'s (`bad_fields_are_named` there); here, that the shim runs
    /// them and answers a 422 naming the field.
    #[test]
    fn bad_fields_are_422s() {
        let error = ApiError::from(body(json!({"slug": "Bad_Slug"})).validate().unwrap_err());
        assert_eq!(error.status, 422);
        assert_eq!(error.body.details["field"], "slug");
    }

    #[test]
    fn crd_defaults_fill_omitted_settings() {
        let input = body(json!({
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "networkProfile": {"internalPort": 8080},
            "accessProfile": {},
            "runtimeProfile": {"healthCheck": {"path": "/healthz"}},
        }));
        let spec = spec_of(input, "web".into()).unwrap();
        let health = spec.runtime_profile.unwrap().health_check.unwrap();
        assert_eq!(
            (health.path.as_str(), health.expected_status_code),
            ("/healthz", 200)
        );
        assert_eq!(spec.access_profile.unwrap().path_prefix, "/");
        assert_eq!(
            spec.network_profile.unwrap().exposure_mode,
            ExposureMode::ReverseProxy
        );
        assert_eq!(spec.slug.as_deref(), Some("web"));
    }
}
