//! Deployment: one attempt to deploy a resource to a server (spec §2.2 "Deployment statuses",
//! §3, §6 "Deployment progress"). Phases: detect → plan → package → deploy → verify (→ rollback).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Resource;
use crate::variable::PlainVariable;
use crate::{GENERATION_ANNOTATION, RESOURCE_LABEL};

use crate::Condition;
use crate::common::SourceDescriptor;

/// Status of a deployment attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentState {
    Created,
    Planning,
    Planned,
    Running,
    CancelRequested,
    Succeeded,
    Failed,
    Canceled,
    RolledBack,
}

impl DeploymentState {
    /// Whether the attempt has ended and will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Canceled | Self::RolledBack
        )
    }
}

/// Phase of a deployment attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentPhase {
    Detect,
    Plan,
    Package,
    Deploy,
    Verify,
    Rollback,
}

/// One attempt to deploy a resource. A newer attempt for the same resource supersedes it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Deployment",
    namespaced,
    shortname = "bdep",
    category = "berth",
    doc = "One attempt to deploy a resource to a server; status carries phase, step and last error.",
    status = "DeploymentStatus",
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceId"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// Id (object name) of the Resource deployed.
    #[schemars(length(min = 1))]
    pub resource_id: String,
    /// Id (object name) of the Project.
    #[schemars(length(min = 1))]
    pub project_id: String,
    /// Id (object name) of the Environment.
    #[schemars(length(min = 1))]
    pub environment_id: String,
    /// Id (object name) of the Server deployed to.
    #[schemars(length(min = 1))]
    pub server_id: String,
    /// Id of the deployment destination on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub destination_id: Option<String>,
    /// The resource's source as it was when the attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_snapshot: Option<SourceDescriptor>,
    /// Set to ask for the attempt to be canceled.
    #[serde(default)]
    pub cancel_requested: bool,
    /// What started the attempt, e.g. `manual`, `git-push`, `deploy-token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub trigger: Option<String>,
    /// Variables for this attempt only; they override every other scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::variable::variables_schema")]
    pub variables: Vec<PlainVariable>,
}

/// What happened to a deployment attempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStatus {
    /// Status of the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeploymentState>,
    /// Phase the attempt is in, or ended in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DeploymentPhase>,
    /// Progress through the attempt's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step: Option<DeploymentStep>,
    /// When the attempt started running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the attempt ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// Id of the Docker container the attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// SHA-256 over the effective configuration (every scope but the attempt's own) the
    /// attempt started with; values themselves never appear here. With auto-deploy on, a
    /// different fingerprint starts a new attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_fingerprint: Option<String>,
    /// Image the attempt built or pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    /// Why the attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<DeploymentError>,
    /// Set while the attempt waits to run again after a passing infrastructure fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<DeploymentRetry>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the attempt succeeded.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Progress through a deployment's steps.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStep {
    /// Number of the current step, from 1.
    pub current: i64,
    /// Number of steps.
    pub total: i64,
    /// What the current step does.
    pub label: String,
}

/// A scheduled retry of an attempt that failed for a passing reason.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRetry {
    /// How many times the attempt was retried so far, this one included.
    pub count: i64,
    /// When the attempt runs again.
    pub next_retry_at: Time,
    /// The fault that is being retried.
    pub last_error: DeploymentError,
}

/// A structured deployment failure.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentError {
    /// When the failure happened.
    pub timestamp: Time,
    /// Phase that failed.
    pub phase: DeploymentPhase,
    /// Stable machine-readable error code.
    pub code: String,
    /// Human-readable explanation; never contains secret values.
    pub message: String,
}
impl Deployment {
    /// A new attempt of `resource` named `name`, labelled with the resource (how attempts are
    /// found) and annotated with the generation it covers (so the controller starts no attempt
    /// of its own for that generation). The source is snapshotted as the resource has it now.
    pub fn of_resource(
        name: &str,
        resource: &Resource,
        server_id: String,
        destination_id: Option<String>,
        trigger: &str,
    ) -> Self {
        let resource_id = resource.metadata.name.clone().unwrap_or_default();
        let generation = resource.metadata.generation.unwrap_or(0).to_string();
        let mut deployment = Deployment::new(
            name,
            DeploymentSpec {
                resource_id: resource_id.clone(),
                project_id: resource.spec.project_id.clone(),
                environment_id: resource.spec.environment_id.clone(),
                server_id,
                destination_id,
                source_snapshot: resource.spec.source.clone(),
                cancel_requested: false,
                trigger: Some(trigger.into()),
                variables: Vec::new(),
            },
        );
        deployment.metadata.labels =
            Some(BTreeMap::from([(RESOURCE_LABEL.to_string(), resource_id)]));
        deployment.metadata.annotations = Some(BTreeMap::from([(
            GENERATION_ANNOTATION.to_string(),
            generation,
        )]));
        deployment
    }
}
