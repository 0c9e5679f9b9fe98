//! Deployment: one attempt to deploy a resource to a server (spec §2.2 "Deployment statuses",
//! §3, §6 "Deployment progress"). Phases: detect → plan → package → deploy → verify (→ rollback).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Resource;
use crate::variable::PlainVariable;
use crate::{GENERATION_ANNOTATION, RESOURCE_LABEL};

/// When Berth asked for the attempt, to the nanosecond: orders attempts created within one
/// second of each other.
pub const REQUESTED_AT_ANNOTATION: &str = "berth.dev/requested-at";

/// See [`Deployment::attempt_order`].
pub type AttemptOrder = (Option<Timestamp>, Option<Timestamp>, String);

use crate::Condition;
use crate::common::SourceDescriptor;

/// Phase and step are wire types too (progress events carry them): defined in
/// `berth-vocabulary`.
pub use berth_vocabulary::deployments::DeploymentState;
pub use berth_vocabulary::progress::{DeploymentPhase, DeploymentStep};

/// One attempt to deploy a resource. A newer attempt for the same resource supersedes it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
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
    /// The earlier attempt this one repeats: the one retried, or the one whose source a
    /// redeploy uses again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub source_deployment_id: Option<String>,
    /// Set on a rollback: the earlier succeeded attempt whose image this attempt serves again,
    /// without fetching or building the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_of: Option<RollbackTarget>,
}

/// The attempt a rollback returns to, and the image it served.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackTarget {
    /// Id (object name) of the earlier succeeded Deployment.
    #[schemars(length(min = 1))]
    pub deployment_id: String,
    /// The image that attempt served (its `status.imageRef`), run again as it is.
    #[schemars(length(min = 1))]
    pub image_ref: String,
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
    /// The commit a git source's attempt fetched and built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<SourceCommit>,
    /// The services of a Compose stack's attempt and the containers that run them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<StackStatus>,
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

/// A Compose stack as an attempt brought it up.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackStatus {
    /// The service the edge proxy routes to (the attempt's own container).
    pub routed_service: String,
    /// Every service of the stack, dependencies first.
    pub services: Vec<StackServiceStatus>,
}

/// One service of a stack.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackServiceStatus {
    /// The Compose service's name.
    pub name: String,
    /// The Docker container that runs it.
    pub container: String,
    /// The image it runs.
    pub image: String,
}

/// The commit of a git source an attempt deploys.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceCommit {
    /// The repository, however its URL is spelled (`github.com/acme/shop`).
    pub repository: String,
    /// The branch, tag or ref followed; the repository's default branch when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// The commit id.
    pub sha: String,
    /// The first line of the commit message.
    pub subject: String,
    /// Who wrote the commit.
    pub author_name: String,
    /// The commit author's email address.
    pub author_email: String,
    /// When the commit was authored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authored_at: Option<Time>,
    /// The SSH host key the git host showed (`SHA256:…`): the pin for the resource's next
    /// fetches when its source pins none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_key_fingerprint: Option<String>,
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
    pub code: DeploymentErrorCode,
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
        // What the attempt deploys, so the Resource can tell which later changes it lacks.
        let digests = crate::resource::deployed::spec_digests(
            &resource.spec,
            &resource.host_slug(),
            &server_id,
            destination_id.as_deref(),
        );
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
                source_deployment_id: None,
                rollback_of: None,
            },
        );
        deployment.metadata.labels =
            Some(BTreeMap::from([(RESOURCE_LABEL.to_string(), resource_id)]));
        deployment.metadata.annotations = Some(BTreeMap::from([
            (GENERATION_ANNOTATION.to_string(), generation),
            (
                crate::resource::deployed::SPEC_DIGESTS_ANNOTATION.to_string(),
                serde_json::to_string(&digests).unwrap_or_default(),
            ),
            (
                REQUESTED_AT_ANNOTATION.to_string(),
                Timestamp::now().to_string(),
            ),
        ]));
        deployment
    }

    /// Where the attempt stands among its resource's attempts: creation time, then when it was
    /// requested (creation times have whole seconds only, so two attempts requested within
    /// one second would otherwise be told apart by name alone), then name — so exactly one
    /// attempt is newest and it is the one requested last.
    pub fn attempt_order(&self) -> AttemptOrder {
        let requested_at = self
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REQUESTED_AT_ANNOTATION))
            .and_then(|at| at.parse().ok());
        (
            self.metadata.creation_timestamp.clone().map(|t| t.0),
            requested_at,
            self.metadata.name.clone().unwrap_or_default(),
        )
    }
}

mod error_code;
pub use error_code::DeploymentErrorCode;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_serialise_as_their_documented_spelling() {
        for code in DeploymentErrorCode::ALL {
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, code.as_str(), "{code:?}");
            let back: DeploymentErrorCode = serde_json::from_value(wire).unwrap();
            assert_eq!(back, code);
        }
        let distinct: std::collections::HashSet<_> = DeploymentErrorCode::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(distinct.len(), DeploymentErrorCode::ALL.len());
        assert_eq!(
            DeploymentErrorCode::HealthCheckFailed,
            "health_check_failed"
        );
    }

    #[test]
    fn the_readme_lists_every_error_code_and_no_other() {
        let readme = include_str!("../../README.md");
        let section = readme
            .split("### Deployment error codes")
            .nth(1)
            .expect("README section \"Deployment error codes\"");
        let section = section.split("\n#").next().unwrap_or_default();
        let listed: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split('`').next())
            .collect();
        let all: Vec<&str> = DeploymentErrorCode::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(listed, all);
    }

    /// An attempt of `name` created in second 100, requested at `nanos` past it.
    fn attempt(name: &str, nanos: Option<i32>) -> Deployment {
        let mut d = Deployment::new(name, DeploymentSpec::default());
        d.metadata.creation_timestamp = Some(Time(Timestamp::from_second(100).unwrap()));
        let requested = nanos.map(|n| Timestamp::new(100, n).unwrap().to_string());
        d.metadata.annotations =
            requested.map(|at| BTreeMap::from([(REQUESTED_AT_ANNOTATION.to_string(), at)]));
        d
    }

    #[test]
    fn the_attempt_requested_last_within_a_second_is_newest_whatever_its_name() {
        let first = attempt("dep-web-md2p", Some(97_000_000));
        let second = attempt("dep-web-m5ez", Some(947_000_000));
        assert!(second.attempt_order() > first.attempt_order());
        // Without the annotation (say, applied with kubectl) the name breaks the tie.
        let applied = attempt("dep-web-zz", None);
        assert!(first.attempt_order() > applied.attempt_order());
    }
}
