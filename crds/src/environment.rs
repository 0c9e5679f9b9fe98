//! Environment: a stage of a project (production, staging, preview…), spec §2.2 "Environment".

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::lifecycle::LifecycleStatus;
use crate::limits::NAME_MAX;
use crate::variable::PlainVariable;

/// Every value `spec.kind` may take (a closed set, checked by the API server and the shim).
pub use berth_vocabulary::environments::ENVIRONMENT_KINDS;

/// Condition reasons of an Environment.
pub mod reason {
    /// `Ready=False` while the referenced project does not exist.
    pub const PROJECT_NOT_FOUND: &str = "ProjectNotFound";
}

/// An environment of a project. Archiving keeps its deployment history readable.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Environment",
    namespaced,
    shortname = "env",
    category = "berth",
    doc = "An environment (stage) of a project; archiving keeps its deployment history readable.",
    status = "EnvironmentStatus",
    printcolumn = r#"{"name":"Project","type":"string","jsonPath":".spec.projectId"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Lifecycle","type":"string","jsonPath":".status.lifecycleStatus"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSpec {
    /// Id (object name) of the Project this environment belongs to.
    #[schemars(length(min = 1))]
    pub project_id: String,
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// Environment kind: `local`, `development`, `test`, `staging`, `production`, `preview`
    /// or `custom`.
    // A string checked against ENVIRONMENT_KINDS, not an enum: objects stored before the set
    // was closed must still read.
    #[schemars(extend("enum" = ENVIRONMENT_KINDS))]
    pub kind: String,
    /// Id of the environment this one derives from (previews).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub parent_environment_id: Option<String>,
    /// Plain (non-secret) variables every resource in this environment inherits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::variable::variables_schema")]
    pub variables: Vec<PlainVariable>,
    /// Set to lock the environment against new deployments.
    #[serde(default)]
    pub locked: bool,
    /// Why the environment is locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    /// When the lock was asked for: written with `locked` by the REST API, so its answers
    /// carry the time at once; `status.lockedAt` takes it (or the time the controller first
    /// saw the lock, when this is unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_at: Option<Time>,
    /// Set to archive the environment; its deployment history stays readable.
    #[serde(default)]
    pub archived: bool,
    /// Why the environment was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
}

/// What the controller observed about an environment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentStatus {
    /// `active` or `archived`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
    /// When the environment was locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_at: Option<Time>,
    /// When the environment was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Time>,
    /// Why the environment was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while its project exists and it is usable.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
