//! Resource: something deployable — an application, service, database, static site… (spec §2.2
//! "Resource", "Network profile", "Access profile", "Access summary"). Plain variables live in the
//! spec; secret values live in a Secret owned by the Resource.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::SourceDescriptor;
use crate::runtime_control::{RuntimeControlSpec, RuntimeControlStatus};
use crate::variable::PlainVariable;
use berth_vocabulary::deployments::DeploymentState;

pub mod deployed;
mod support;
pub use support::resolved_strategy;

pub use crate::limits::MAX_PORT_NUMBER;
use crate::limits::{
    ABSOLUTE_PATH_PATTERN, DESCRIPTION_MAX, DNS_LABEL_MAX, DNS_LABEL_PATTERN,
    HEALTH_CHECK_RETRIES_MAX, HEALTH_CHECK_SECONDS_MAX, HTTP_STATUS_MAX, HTTP_STATUS_MIN, NAME_MAX,
    OBJECT_NAME_MAX, TCP_PORT_MAX, TEXT_MAX, URL_PATH_MAX,
};

/// The profiles and the access summary a Resource holds, which the REST API serves as they
/// are: defined once in `berth-vocabulary`, too.
pub use berth_vocabulary::access::{
    AccessScheme, AccessSummary, AppliedAccessRoute, PlannedAccessRoute, ProxyRouteStatus,
};
pub use berth_vocabulary::build::{BuildStrategy, SourceKind};
pub use berth_vocabulary::dependencies::DependencyBinding;
/// The wire enums of a Resource's spec: defined once in `berth-vocabulary`, which the REST
/// API's requests and the CLI use too.
pub use berth_vocabulary::resource_input::{
    ExposureMode, FirstDeployment, GeneratedAccessMode, HealthCheckKind, ResourceKind,
    RestartPolicy, ServiceKind, UpstreamProtocol,
};
pub use berth_vocabulary::resources::{AccessProfile, NetworkProfile, ResourceService};

/// A deployable resource in an environment of a project.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Resource",
    namespaced,
    shortname = "bres",
    category = "berth",
    doc = "A deployable resource (application, service, database, static site…) of an environment.",
    status = "ResourceStatus",
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Environment","type":"string","jsonPath":".spec.environmentId"}"#,
    printcolumn = r#"{"name":"Last Deployment","type":"string","jsonPath":".status.lastDeploymentStatus"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Deployed","type":"string","jsonPath":".status.conditions[?(@.type==\"Deployed\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Id (object name) of the Project.
    #[schemars(length(min = 1))]
    pub project_id: String,
    /// Id (object name) of the Environment.
    #[schemars(length(min = 1))]
    pub environment_id: String,
    /// Id (object name) of the Server deployments go to by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server_id: Option<String>,
    /// Id of the deployment destination on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub destination_id: Option<String>,
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// URL-safe short name; derived from the name when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = DNS_LABEL_MAX), regex(pattern = DNS_LABEL_PATTERN))]
    pub slug: Option<String>,
    /// What the resource is.
    pub kind: ResourceKind,
    /// Free-text description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = DESCRIPTION_MAX))]
    pub description: Option<String>,
    /// Services the resource runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ResourceService>,
    /// Where the code or artifact comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceDescriptor>,
    /// How the resource is built and run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_profile: Option<RuntimeProfile>,
    /// Which port the resource listens on and how traffic reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfile>,
    /// How the generated access URL behaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_profile: Option<AccessProfile>,
    /// When the resource redeploys by itself.
    #[serde(default)]
    pub auto_deploy: AutoDeployPolicy,
    /// When the first deployment happens: `on-create` (default; once a server and a source
    /// are named) or `on-request` (only when one is asked for). Later ones follow `autoDeploy`.
    #[serde(default, skip_serializing_if = "FirstDeployment::is_on_create")]
    pub first_deployment: FirstDeployment,
    /// Storage volumes mounted into the resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage_attachments: Vec<StorageAttachment>,
    /// How many finished attempts stay as Deployment objects (default 10); older ones are
    /// removed once their timeline is in the observation store, where they stay readable.
    /// The running and the serving attempt are always kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub deployment_history_limit: Option<u32>,
    /// Plain (non-secret) variables; they override the environment's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::variable::variables_schema")]
    pub variables: Vec<PlainVariable>,
    /// Databases and caches the resource uses: each puts a DependencyResource's connection URL
    /// into the container's environment under `targetName` and joins the container to the
    /// dependency's private network. One binding per `targetName`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "dependency_bindings_schema")]
    pub dependency_bindings: Vec<DependencyBinding>,
    /// Name of the Secret, owned by this Resource, holding its secret variable values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub secrets_ref: Option<String>,
    /// Registry credentials for pulling a `docker-image` source that is missing on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secret_ref: Option<ImagePullSecretRef>,
    /// Runtime control: keep the runtime `running` (default) or `stopped`, or restart it once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeControlSpec>,
}

/// A Secret of type `kubernetes.io/dockerconfigjson` in the Resource's namespace. Only the
/// entry for the image's registry host is used, and only when the image must be pulled.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullSecretRef {
    /// Name of the Secret; its `.dockerconfigjson` key holds `{"auths": {"host:port": …}}`.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub name: String,
}

/// How a resource is built and run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeProfile {
    /// How the resource is built: `auto` (default), `dockerfile`, `docker-compose`,
    /// `prebuilt-image`, `workspace-commands` or `static`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<BuildStrategy>,
    /// Command that installs dependencies, run in the build on `baseImage`
    /// (`workspace-commands` and `static`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub install_command: Option<String>,
    /// Command that builds the application, run in the build after the install command
    /// (`workspace-commands` and `static`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub build_command: Option<String>,
    /// Command that starts the application, run by `/bin/sh -c` in place of the image's own
    /// command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub start_command: Option<String>,
    /// Directory served by a static site, relative to the base directory (after the build
    /// commands, when there are any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub publish_directory: Option<String>,
    /// Image the install, build and start commands run on (`workspace-commands`, and the build
    /// stage of a `static` site with commands), e.g. `node:22-alpine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub base_image: Option<String>,
    /// Dockerfile to build, relative to the base directory (default `Dockerfile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub dockerfile_path: Option<String>,
    /// Stage of a multi-stage Dockerfile to build (its last stage when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub build_target: Option<String>,
    /// Compose file of a `compose-stack`, relative to the base directory (default
    /// `compose.yaml`, then `compose.yml`, `docker-compose.yaml`, `docker-compose.yml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub docker_compose_file_path: Option<String>,
    /// Health check a new container must pass before it takes traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
    /// Container restart policy: `unless-stopped` (default), `always`, `on-failure` or `never`.
    #[serde(default)]
    pub restart_policy: RestartPolicy,
}

/// A health check: an HTTP request (a connection for `upstreamProtocol: tcp`) to a port of the
/// container, or a command run in it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// `http` (default) or `command`.
    #[serde(rename = "type", default, skip_serializing_if = "is_http")]
    pub kind: HealthCheckKind,
    /// With `type: command`: run by `/bin/sh -c` in the container; exit 0 is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub command: Option<String>,
    /// Request path.
    #[serde(default = "default_root_path")]
    #[schemars(length(min = 1, max = URL_PATH_MAX), regex(pattern = ABSOLUTE_PATH_PATTERN))]
    pub path: String,
    /// Container port to probe; the network profile's internal port when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = TCP_PORT_MAX))]
    pub port: Option<i32>,
    /// Status code a healthy container answers with.
    #[serde(default = "default_expected_status_code")]
    #[schemars(range(min = HTTP_STATUS_MIN, max = HTTP_STATUS_MAX))]
    pub expected_status_code: i32,
    /// Seconds between probes.
    #[serde(default = "default_probe_seconds")]
    #[schemars(range(min = 1, max = HEALTH_CHECK_SECONDS_MAX))]
    pub interval_seconds: i32,
    /// Seconds before one probe counts as failed.
    #[serde(default = "default_probe_seconds")]
    #[schemars(range(min = 1, max = HEALTH_CHECK_SECONDS_MAX))]
    pub timeout_seconds: i32,
    /// Failed probes in a row before the container counts as unhealthy.
    #[serde(default = "default_retries")]
    #[schemars(range(min = 0, max = HEALTH_CHECK_RETRIES_MAX))]
    pub retries: i32,
    /// Seconds after start during which failures do not count.
    #[serde(default)]
    #[schemars(range(min = 0, max = HEALTH_CHECK_SECONDS_MAX))]
    pub start_period_seconds: i32,
}

/// When a resource redeploys by itself.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoDeployPolicy {
    /// Whether automatic deployment is on.
    #[serde(default)]
    pub enabled: bool,
    /// What triggers a deployment, e.g. `git-push`.
    #[serde(default = "default_trigger_kind")]
    #[schemars(length(min = 1))]
    pub trigger_kind: String,
    /// Source refs that trigger a deployment, e.g. `refs/heads/main`.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub refs: Vec<String>,
    /// Event kinds that trigger a deployment, e.g. `push`.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub event_kinds: Vec<String>,
    /// Fingerprint of the source binding (kind and locator) when auto-deploy was enabled; a
    /// different source blocks auto-deploy until it is enabled again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_binding_fingerprint: Option<String>,
}

impl AutoDeployPolicy {
    /// Whether an enabled policy must not fire because the resource's source binding is no
    /// longer the one it was enabled for (spec §7 `source-binding-changed`). A policy enabled
    /// without a fingerprint (written by hand, the GitOps way) follows whatever source is set.
    pub fn blocked(&self, source: Option<&SourceDescriptor>) -> bool {
        let Some(enabled_for) = &self.source_binding_fingerprint else {
            return false;
        };
        self.enabled && source.map(source_binding_fingerprint).as_ref() != Some(enabled_for)
    }

    /// SHA-256 of the whole policy as JSON: any change to it is a new fingerprint.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("sha256:{}", hex::encode(Sha256::digest(json)))
    }
}

/// The auto-deploy policy the controller last saw, and since when it has been so.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoDeployObservation {
    /// [`AutoDeployPolicy::fingerprint`] of `spec.autoDeploy` as it was seen.
    pub policy_fingerprint: String,
    /// When the policy became this one: the Resource's creation for the policy it was created
    /// with, else when the controller first saw it changed.
    pub updated_at: Time,
}

/// SHA-256 of a source's binding: its kind and where it comes from, without the version. For
/// a `docker-image` source that is the image repository (a new tag is a new version of the
/// same binding); for a git source the repository (however its URL is spelled) and the branch
/// or tag it follows (a new commit is a new version); for others the locator.
pub fn source_binding_fingerprint(source: &SourceDescriptor) -> String {
    use sha2::{Digest, Sha256};
    let repository = SourceKind::parse("source.kind", &source.kind)
        .ok()
        .filter(|kind| kind.is_git())
        .and_then(|_| berth_vocabulary::repository::RepoLocator::parse(&source.locator).ok());
    let binding = match (&repository, source.kind.as_str()) {
        (Some(repository), _) => format!(
            "{}\n{}",
            repository.identity(),
            source.git_ref.as_deref().unwrap_or("HEAD")
        ),
        (None, "docker-image") => image_repository(&source.locator).to_string(),
        (None, _) => source.locator.clone(),
    };
    let digest = Sha256::digest(format!("{}\n{binding}", source.kind));
    format!("sha256:{}", hex::encode(digest))
}

/// An image reference without its tag or digest: `registry:5000/app:2` → `registry:5000/app`.
fn image_repository(reference: &str) -> &str {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    let name_start = without_digest.rfind('/').map_or(0, |slash| slash + 1);
    match without_digest[name_start..].rfind(':') {
        Some(colon) => &without_digest[..name_start + colon],
        None => without_digest,
    }
}

impl Default for AutoDeployPolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            trigger_kind: default_trigger_kind(),
            refs: Vec::new(),
            event_kinds: Vec::new(),
            source_binding_fingerprint: None,
        }
    }
}

/// A storage volume mounted into a resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageAttachment {
    /// Id of this attachment.
    #[schemars(length(min = 1))]
    pub attachment_id: String,
    /// Id of the storage volume; detaching keeps the volume.
    #[schemars(length(min = 1))]
    pub storage_volume_id: String,
    /// Absolute path inside the container.
    #[schemars(length(min = 1, max = TEXT_MAX), regex(pattern = ABSOLUTE_PATH_PATTERN))]
    pub destination_path: String,
    /// When the volume was attached (set by the REST API; shown as `attachedAt`, which is the
    /// resource's creation time when this is left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_at: Option<Time>,
}

/// Docker volume holding a `named-volume` StorageVolume of an organization. Volumes outlive
/// containers, attachments and the StorageVolume object: detaching, redeploying or deleting a
/// resource or the volume keeps the data.
pub fn volume_name(namespace: &str, storage_volume_id: &str) -> String {
    let id: String = storage_volume_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("berth-{namespace}-{id}")
}

fn is_http(kind: &HealthCheckKind) -> bool {
    *kind == HealthCheckKind::Http
}

fn default_root_path() -> String {
    "/".to_string()
}

fn default_expected_status_code() -> i32 {
    200
}

fn default_probe_seconds() -> i32 {
    5
}

fn default_retries() -> i32 {
    3
}

fn default_trigger_kind() -> String {
    "git-push".to_string()
}

/// What the controller observed about a resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// Number of deployments of this resource.
    #[serde(default)]
    pub deployment_count: i64,
    /// Id (object name) of the latest Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deployment_id: Option<String>,
    /// Status of the latest Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deployment_status: Option<DeploymentState>,
    /// Where the resource can be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_summary: Option<AccessSummary>,
    /// Whether the edge proxy serves the resource's route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_route_status: Option<ProxyRouteStatus>,
    /// Id of the Deployment that last realized the proxy route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_route_realization_deployment_id: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The serving container as the server's Docker last reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeObservation>,
    /// The latest stop, start or restart and the state the runtime is kept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_control: Option<RuntimeControlStatus>,
    /// Whether the serving deployment runs the declared spec, and which changed fields it does
    /// not run yet; absent while nothing serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_state: Option<deployed::DeployedState>,
    /// When `spec.autoDeploy` last changed, as the controller saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_deploy: Option<AutoDeployObservation>,
    /// Current conditions; `Ready` while the latest deployment serves, `Deployed` while it runs
    /// the declared spec.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The serving container's state, from the server observer's Docker events (spec §2.2
/// "Resource health" `runtime`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeObservation {
    pub lifecycle: RuntimeLifecycle,
    pub health: RuntimeHealth,
    /// Since when the container has been in this state (moves only when the state changes).
    pub observed_at: Time,
    /// The attempt whose container this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// Machine-readable cause, e.g. `container_exited`, `oom_killed`, `server_unreachable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    /// What was observed, for people.
    pub message: String,
    /// Exit code of the container's last stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Whether the kernel killed the container for memory.
    #[serde(default)]
    pub oom_killed: bool,
}

/// Whether the resource's container runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeLifecycle {
    /// No attempt has succeeded yet.
    NotDeployed,
    Running,
    /// The container stopped (its exit code says how).
    Exited,
    /// The container is gone from the server.
    Missing,
    /// Stopped on request (`spec.runtime.desiredState: stopped`), or by Berth for a while
    /// (reason `held`: a volume restored in place or copied for a quiesced backup); drift
    /// repair leaves it.
    Stopped,
    /// The server has not been observed (unreachable, or not yet since the controller started).
    Unknown,
}

/// Whether the resource's container is healthy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeHealth {
    Healthy,
    Unhealthy,
    /// Docker's health check has not passed yet.
    Starting,
    Unknown,
}

/// Reasons of a Resource's `Ready` condition.
pub mod reason {
    /// A succeeded deployment serves the resource through its route.
    pub const SERVING: &str = "Serving";
    /// A deployment succeeded but its container is not running or its route is not in place.
    pub const ROUTE_NOT_READY: &str = "RouteNotReady";
    /// No deployment has succeeded yet.
    pub const NOT_DEPLOYED: &str = "NotDeployed";
    /// Stopped on request: the desired state (nothing serving) is reached.
    pub const STOPPED: &str = "Stopped";
}

/// Finished attempts kept as Deployment objects unless `spec.deploymentHistoryLimit` says.
pub const DEFAULT_DEPLOYMENT_HISTORY_LIMIT: u32 = 10;

impl Resource {
    /// The URL-safe name the resource's generated host starts with: `spec.slug`, else the name
    /// lowercased with every run of other characters turned into one dash.
    pub fn host_slug(&self) -> String {
        if let Some(slug) = &self.spec.slug {
            return slug.clone();
        }
        let mut slug = String::new();
        for c in self.spec.name.to_lowercase().chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c);
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = slug.trim_matches('-');
        if slug.is_empty() {
            self.metadata.name.clone().unwrap_or_default()
        } else {
            slug.to_string()
        }
    }
}

impl ResourceSpec {
    /// The runtime control wish; `running` with no restart when `spec.runtime` is absent.
    pub fn runtime_wish(&self) -> RuntimeControlSpec {
        self.runtime.clone().unwrap_or_default()
    }

    /// How many finished attempts stay as Deployment objects.
    pub fn deployment_history_limit(&self) -> usize {
        self.deployment_history_limit
            .unwrap_or(DEFAULT_DEPLOYMENT_HISTORY_LIMIT) as usize
    }
}

/// One binding per `targetName`: the API server refuses a second one for the same variable.
fn dependency_bindings_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<DependencyBinding>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["targetName"]),
    );
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(kind: &str, locator: &str) -> SourceDescriptor {
        SourceDescriptor {
            kind: kind.into(),
            locator: locator.into(),
            display_name: None,
            base_directory: None,
            git_ref: None,
            commit_sha: None,
            metadata: Default::default(),
        }
    }

    #[test]
    fn the_host_slug_is_the_declared_one_else_derived_from_the_name() {
        let mut resource: Resource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "res-1"},
            "spec": {"projectId": "p", "environmentId": "e", "name": "My Shop (EU)!", "kind": "application"},
        }))
        .unwrap();
        assert_eq!(resource.host_slug(), "my-shop-eu");
        resource.spec.name = "!!".into();
        assert_eq!(resource.host_slug(), "res-1");
        resource.spec.slug = Some("shop".into());
        assert_eq!(resource.host_slug(), "shop");
    }

    #[test]
    fn a_new_image_tag_keeps_the_binding_a_new_repository_blocks_it() {
        let enabled_for = source("docker-image", "registry.local:5000/shop/web:1");
        let policy = AutoDeployPolicy {
            enabled: true,
            source_binding_fingerprint: Some(source_binding_fingerprint(&enabled_for)),
            ..Default::default()
        };
        let new_tag = source("docker-image", "registry.local:5000/shop/web:2");
        assert!(!policy.blocked(Some(&new_tag)));
        let pinned = source("docker-image", "registry.local:5000/shop/web@sha256:ab");
        assert!(!policy.blocked(Some(&pinned)));
        let other = source("docker-image", "registry.local:5000/shop/api:1");
        assert!(policy.blocked(Some(&other)));
        assert!(policy.blocked(None));
        let git = source("git", "https://example.com/a.git");
        assert_ne!(
            source_binding_fingerprint(&git),
            source_binding_fingerprint(&source("git", "https://example.com/b.git"))
        );
        let by_hand = AutoDeployPolicy {
            enabled: true,
            ..Default::default()
        };
        assert!(!by_hand.blocked(Some(&other)));
    }
}
