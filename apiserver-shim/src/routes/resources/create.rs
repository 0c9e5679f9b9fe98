//! `POST /resources`: creates a Resource in an environment of a project. Not in the spec's
//! endpoint list, but REST users need it to have something to deploy (as `POST /organizations`).
//! Every field is checked here, naming the field, before anything is written.

use std::collections::{BTreeMap, HashSet};

use axum::Json;
use axum::extract::State;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{
    ExposureMode, GeneratedAccessMode, MAX_PORT_NUMBER, Resource, ResourceKind, ResourceService,
    ResourceSpec, RestartPolicy, ServiceKind, UpstreamProtocol,
};
use berth_crds::server::ServerLifecycle;
use kube::{Api, ResourceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{ResourceRecord, record, slug_of};
use crate::auth::token::new_id;
use crate::auth::{Caller, ScopeDimension};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::routes::common::{all_in, bounded, slugify};
use crate::routes::{environments, projects, servers};
use crate::state::AppState;
use crate::write::apply;

/// Longest free-text description.
const MAX_DESCRIPTION: usize = 2000;
/// Longest command or path in a runtime profile.
const MAX_COMMAND: usize = 4096;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateResource {
    /// The project (in the caller's organization).
    pub project_id: String,
    /// An environment of that project.
    pub environment_id: String,
    /// Display name (1-120 characters).
    pub name: String,
    pub kind: ResourceKind,
    /// URL-safe short name (the generated host's first label); derived from the name when
    /// omitted. Unique within the environment and on the server.
    pub slug: Option<String>,
    pub description: Option<String>,
    /// The server deployments go to.
    pub server_id: Option<String>,
    /// Deployment destination on the server.
    pub destination_id: Option<String>,
    /// Services the resource runs (unique names).
    pub services: Option<Vec<ServiceInput>>,
    /// Where the code or artifact comes from, e.g. `{"kind":"docker-image","locator":"app:1"}`.
    pub source: Option<SourceInput>,
    pub network_profile: Option<NetworkProfileInput>,
    pub access_profile: Option<AccessProfileInput>,
    pub runtime_profile: Option<RuntimeProfileInput>,
    /// Name of a `kubernetes.io/dockerconfigjson` Secret (in the organization's namespace)
    /// whose credentials pull a `docker-image` source the server does not have.
    pub image_pull_secret_name: Option<String>,
}

/// One service of a new resource.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceInput {
    pub name: String,
    pub kind: ServiceKind,
}

/// Resource source input of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceInput {
    /// e.g. `docker-image`, `local-folder`, `git`.
    pub kind: String,
    /// An image reference, path or repository URL.
    pub locator: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_directory: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// Network profile of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkProfileInput {
    /// Port the application listens on (1..9007199254740991).
    pub internal_port: i64,
    /// `http` (default) or `tcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_protocol: Option<UpstreamProtocol>,
    /// `reverse-proxy` (default), `direct-port` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure_mode: Option<ExposureMode>,
    /// Service that receives traffic; one of `services` when those are given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_service_name: Option<String>,
    /// Host port for `direct-port` exposure (1..9007199254740991).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i64>,
}

/// Access profile of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccessProfileInput {
    /// `inherit` (default) or `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_access_mode: Option<GeneratedAccessMode>,
    /// Path prefix, default `/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
}

/// How the resource is built and run.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeProfileInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish_directory: Option<String>,
    /// Health check a new container must pass before it takes traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckInput>,
    /// `unless-stopped` (default), `always`, `on-failure` or `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
}

/// An HTTP health check; omitted settings take the platform's defaults.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HealthCheckInput {
    /// Request path, starting with `/` (default `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Container port (1-65535); the network profile's internal port when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Status a healthy container answers (100-599, default 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_status_code: Option<i64>,
    /// Seconds between probes (>= 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i64>,
    /// Seconds before a probe fails (>= 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Failed probes in a row before giving up (>= 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    /// Seconds after start during which failures do not count (>= 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_period_seconds: Option<i64>,
}

fn optional_text(field: &str, value: Option<&String>, max: usize) -> ApiResult<()> {
    value.map_or(Ok(()), |text| bounded(field, text, max))
}

fn in_range(field: &str, value: Option<i64>, min: i64, max: i64) -> ApiResult<()> {
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(ApiError::validation(
            field,
            format!("{field} must be from {min} to {max}"),
        )
        .with_detail("min", min)
        .with_detail("max", max)),
        _ => Ok(()),
    }
}

/// The CRD's slug rule: 1-63 lowercase letters, digits and inner dashes.
fn validate_slug(slug: &str) -> ApiResult<()> {
    let valid = (1..=63).contains(&slug.len())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-');
    if valid {
        return Ok(());
    }
    Err(ApiError::validation(
        "slug",
        "slug must be 1-63 lowercase letters, digits or dashes, not starting or ending with a dash",
    ))
}

fn validate_services(services: &[ServiceInput]) -> ApiResult<()> {
    let mut seen = HashSet::new();
    for (i, service) in services.iter().enumerate() {
        let field = format!("services[{i}].name");
        bounded(&field, &service.name, 63)?;
        if !seen.insert(service.name.as_str()) {
            return Err(ApiError::validation(
                &field,
                format!("{field}: service names must be unique"),
            ));
        }
    }
    Ok(())
}

fn validate_source(source: &SourceInput) -> ApiResult<()> {
    bounded("source.kind", &source.kind, 63)?;
    bounded("source.locator", &source.locator, MAX_COMMAND)?;
    optional_text("source.displayName", source.display_name.as_ref(), 255)?;
    optional_text(
        "source.baseDirectory",
        source.base_directory.as_ref(),
        MAX_COMMAND,
    )
}

fn validate_network(input: &NetworkProfileInput, services: &[ServiceInput]) -> ApiResult<()> {
    let port = |field, value| in_range(field, Some(value), 1, MAX_PORT_NUMBER);
    port("networkProfile.internalPort", input.internal_port)?;
    if let Some(host_port) = input.host_port {
        port("networkProfile.hostPort", host_port)?;
    }
    let field = "networkProfile.targetServiceName";
    optional_text(field, input.target_service_name.as_ref(), 63)?;
    if let Some(name) = &input.target_service_name
        && !services.is_empty()
        && !services.iter().any(|s| &s.name == name)
    {
        return Err(ApiError::validation(
            field,
            format!("{field} must name one of the resource's services"),
        ));
    }
    Ok(())
}

fn validate_access(input: &AccessProfileInput) -> ApiResult<()> {
    let field = "accessProfile.pathPrefix";
    optional_text(field, input.path_prefix.as_ref(), 1024)?;
    if input
        .path_prefix
        .as_ref()
        .is_some_and(|p| !p.starts_with('/'))
    {
        return Err(ApiError::validation(
            field,
            format!("{field} must start with /"),
        ));
    }
    Ok(())
}

fn validate_health(check: &HealthCheckInput) -> ApiResult<()> {
    let field = "runtimeProfile.healthCheck.path";
    optional_text(field, check.path.as_ref(), 1024)?;
    if check.path.as_ref().is_some_and(|p| !p.starts_with('/')) {
        return Err(ApiError::validation(
            field,
            format!("{field} must start with /"),
        ));
    }
    let prefix = "runtimeProfile.healthCheck";
    let limits = [
        ("port", check.port, 1, 65_535),
        ("expectedStatusCode", check.expected_status_code, 100, 599),
        ("intervalSeconds", check.interval_seconds, 1, 86_400),
        ("timeoutSeconds", check.timeout_seconds, 1, 86_400),
        ("retries", check.retries, 0, 1_000),
        ("startPeriodSeconds", check.start_period_seconds, 0, 86_400),
    ];
    for (name, value, min, max) in limits {
        in_range(&format!("{prefix}.{name}"), value, min, max)?;
    }
    Ok(())
}

fn validate_runtime(input: &RuntimeProfileInput) -> ApiResult<()> {
    let texts = [
        ("runtimeProfile.strategy", &input.strategy),
        ("runtimeProfile.installCommand", &input.install_command),
        ("runtimeProfile.buildCommand", &input.build_command),
        ("runtimeProfile.startCommand", &input.start_command),
        ("runtimeProfile.publishDirectory", &input.publish_directory),
    ];
    for (field, value) in texts {
        optional_text(field, value.as_ref(), MAX_COMMAND)?;
    }
    input.health_check.as_ref().map_or(Ok(()), validate_health)
}

/// Checks every field that needs no lookup.
fn validate_body(body: &CreateResource) -> ApiResult<()> {
    bounded("projectId", &body.project_id, 253)?;
    bounded("environmentId", &body.environment_id, 253)?;
    bounded("name", &body.name, 120)?;
    if let Some(slug) = &body.slug {
        validate_slug(slug)?;
    }
    optional_text("description", body.description.as_ref(), MAX_DESCRIPTION)?;
    optional_text("serverId", body.server_id.as_ref(), 253)?;
    optional_text("destinationId", body.destination_id.as_ref(), 253)?;
    optional_text(
        "imagePullSecretName",
        body.image_pull_secret_name.as_ref(),
        253,
    )?;
    let services = body.services.as_deref().unwrap_or_default();
    validate_services(services)?;
    if let Some(source) = &body.source {
        validate_source(source)?;
    }
    if let Some(network) = &body.network_profile {
        validate_network(network, services)?;
    }
    if let Some(access) = &body.access_profile {
        validate_access(access)?;
    }
    body.runtime_profile
        .as_ref()
        .map_or(Ok(()), validate_runtime)
}

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
        r.metadata.deletion_timestamp.is_none() && same_place && slug_of(r) == slug
    });
    if clash {
        return Err(ApiError::conflict(format!(
            "another resource in this environment or on this server already uses the slug {slug}"
        ))
        .with_detail("field", "slug"));
    }
    Ok(())
}

/// Converts a checked input to its CRD type through JSON, so the CRD's own defaults apply.
fn convert<I: Serialize, T: DeserializeOwned>(
    field: &str,
    input: Option<I>,
) -> ApiResult<Option<T>> {
    input
        .map(|i| {
            serde_json::to_value(i)
                .and_then(serde_json::from_value)
                .map_err(|e| ApiError::validation(field, format!("{field}: {e}")))
        })
        .transpose()
}

fn spec_of(body: CreateResource, slug: String) -> ApiResult<ResourceSpec> {
    let services = body
        .services
        .unwrap_or_default()
        .into_iter()
        .map(|s| ResourceService {
            name: s.name,
            kind: s.kind,
        })
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
        source: convert("source", body.source)?,
        runtime_profile: convert("runtimeProfile", body.runtime_profile)?,
        network_profile: convert("networkProfile", body.network_profile)?,
        access_profile: convert("accessProfile", body.access_profile)?,
        auto_deploy: Default::default(),
        storage_attachments: Vec::new(),
        deployment_history_limit: None,
        variables: Vec::new(),
        secrets_ref: None,
        image_pull_secret_ref: body
            .image_pull_secret_name
            .map(|name| berth_crds::resource::ImagePullSecretRef { name }),
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
    validate_body(&body)?;
    check_placement(&state, &caller, &body)?;
    if let Some(server) = &body.server_id {
        check_server(&state, &caller, server)?;
    }
    let id = new_id("res");
    caller.require_in_scope(ScopeDimension::Resource, &id)?;
    let slug = body.slug.clone().unwrap_or_else(|| slugify(&body.name));
    check_slug_free(&state, &organization.namespace, &slug, &body)?;
    let resource = Resource::new(&id, spec_of(body, slug)?);
    let api = Api::<Resource>::namespaced(state.client.clone(), &organization.namespace);
    let written = apply(&api, &state.caches.resources, Some(&caller), resource).await?;
    tracing::info!(resource = %written.name_any(), organization = %organization.id, "resource created");
    Ok(Json(record(&written)))
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn field_of(result: ApiResult<()>) -> String {
        result.unwrap_err().body.details["field"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (json!({"name": " "}), "name"),
            (json!({"slug": "Bad_Slug"}), "slug"),
            (json!({"serverId": ""}), "serverId"),
            (
                json!({"source": {"kind": "docker-image", "locator": ""}}),
                "source.locator",
            ),
            (
                json!({"networkProfile": {"internalPort": 0}}),
                "networkProfile.internalPort",
            ),
            (
                json!({"networkProfile": {"internalPort": 80, "hostPort": -1}}),
                "networkProfile.hostPort",
            ),
            (
                json!({"services": [{"name": "web", "kind": "web"}],
                       "networkProfile": {"internalPort": 80, "targetServiceName": "api"}}),
                "networkProfile.targetServiceName",
            ),
            (
                json!({"services": [{"name": "a", "kind": "web"}, {"name": "a", "kind": "api"}]}),
                "services[1].name",
            ),
            (
                json!({"accessProfile": {"pathPrefix": "api"}}),
                "accessProfile.pathPrefix",
            ),
            (
                json!({"runtimeProfile": {"healthCheck": {"path": "healthz"}}}),
                "runtimeProfile.healthCheck.path",
            ),
            (
                json!({"runtimeProfile": {"healthCheck": {"expectedStatusCode": 99}}}),
                "runtimeProfile.healthCheck.expectedStatusCode",
            ),
        ];
        for (extra, field) in cases {
            assert_eq!(field_of(validate_body(&body(extra))), field);
        }
        assert!(validate_body(&body(json!({"slug": "web-1"}))).is_ok());
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
