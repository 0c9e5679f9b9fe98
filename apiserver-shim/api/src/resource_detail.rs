//! `GET /resources/{resourceId}` (`resources.show/v1`, Appaloft 1.10.5's resource detail): the
//! whole resource in one answer — identity, profiles, source, auto-deploy, health policy,
//! storage attachments, access summary, the serving runtime, the latest deployment and its
//! lifecycle. Secrets never appear here (variables are read at their own endpoints).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::access::{AccessSummary, ProxyRouteStatus};
use crate::deployment_records::SourceCommit;
use crate::deployments::DeploymentState;
use crate::resource_input::{ResourceKind, RuntimeProfileInput};
use crate::resources::{AccessProfile, NetworkProfile, ResourceService};
/// Whether the serving deployment runs the declared spec: the Resource's
/// `status.deployedState`, defined in `berth-vocabulary`.
pub use berth_vocabulary::deployed_spec::DeployedState;

pub const SHOW_SCHEMA_VERSION: &str = "resources.show/v1";

/// Who and what the resource is.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentity {
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    /// The server its deployments go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    pub name: String,
    pub slug: String,
    pub kind: ResourceKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub created_at: String,
    pub services: Vec<ResourceService>,
    pub deployment_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deployment_status: Option<DeploymentState>,
}

/// Where the code or image comes from.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct SourceProfile {
    pub kind: String,
    pub locator: String,
    pub display_name: String,
    /// Digest of kind and locator: what auto-deploy is bound to.
    pub source_binding_fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// `credentialId` of a deploy key, `hostKeyFingerprint` of the git host: no secret.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// Auto-deploy as it stands.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AutoDeploySummary {
    /// `enabled`, `disabled` or `blocked`.
    pub status: String,
    pub trigger_kind: String,
    pub refs: Vec<String>,
    pub event_kinds: Vec<String>,
    pub source_binding_fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// When the policy became what it is: the resource's creation for the policy it was
    /// created with, else when the controller saw it change (the creation until it has).
    pub updated_at: String,
}

/// The HTTP request of a health check.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct HttpCheck {
    pub method: String,
    pub scheme: String,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    pub path: String,
    pub expected_status_code: i64,
}

/// The check a new container must pass (Appaloft's requested health check).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct HealthPolicy {
    pub enabled: bool,
    /// `http` (a TCP connect for `upstreamProtocol: tcp` is still reported as `http`'s port)
    /// or `command`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command of a `command` check, run by `/bin/sh -c` in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub interval_seconds: i64,
    pub timeout_seconds: i64,
    pub retries: i64,
    pub start_period_seconds: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpCheck>,
}

/// A storage volume mounted into the resource.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct StorageAttachmentSummary {
    pub id: String,
    pub storage_volume_id: String,
    /// The volume's name; left out when no StorageVolume of that id exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_volume_name: Option<String>,
    /// `named-volume` or `bind-mount`; left out when no StorageVolume of that id exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_volume_kind: Option<String>,
    pub destination_path: String,
    /// `read-write`.
    pub mount_mode: String,
    /// When it was attached (the resource's creation time when not recorded).
    pub attached_at: String,
}

/// The latest attempt.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LatestDeployment {
    pub id: String,
    pub status: DeploymentState,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
}

/// The serving container as the server's observer last saw it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeSummary {
    /// `not-deployed`, `running`, `exited`, `missing`, `stopped` or `unknown`.
    pub lifecycle: String,
    /// `healthy`, `unhealthy`, `starting` or `unknown`.
    pub health: String,
    pub observed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    pub message: String,
    /// `running` or `stopped`: what the resource asks for.
    pub desired_state: String,
}

/// Whether the resource is in use.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLifecycle {
    /// `active` or `archived` (archived itself, or in an archived project or environment).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
}

/// Something about the resource's profiles a person should know.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProfileDiagnostic {
    pub code: String,
    /// `info`, `warning` or `blocking`.
    pub severity: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}

/// `GET /resources/{resourceId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDetail {
    pub schema_version: String,
    pub resource: ResourceIdentity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceProfile>,
    pub auto_deploy_policy: AutoDeploySummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_profile: Option<RuntimeProfileInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_profile: Option<AccessProfile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_policy: Option<HealthPolicy>,
    pub storage_attachments: Vec<StorageAttachmentSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_summary: Option<AccessSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_route_status: Option<ProxyRouteStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_deployment: Option<LatestDeployment>,
    /// The commit the serving attempt built (a git source's); absent while nothing serves or
    /// the source has no commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_commit: Option<SourceCommit>,
    /// Whether the serving deployment runs the declared spec, and the changed spec fields it
    /// does not run yet (the Resource's `Deployed` condition); absent while nothing serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_state: Option<DeployedState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSummary>,
    pub lifecycle: ResourceLifecycle,
    pub diagnostics: Vec<ProfileDiagnostic>,
    pub generated_at: String,
}
