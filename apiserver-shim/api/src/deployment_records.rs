//! Deployment attempts as records (beyond the spec's §4, in Appaloft 1.10.5's shapes):
//! `GET /deployments` and `/deployments/count`, `GET /deployments/{id}` (`deployments.show/v1`),
//! `GET /deployments/{id}/timeline` and its stream, cancel, retry, rollback and redeploy, and
//! `GET /deployments/{id}/proof` (`deployments.proof/v1`). The spec shows no field of these
//! records beyond their ids; statuses, phases, levels and sources keep the spec's value sets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::deployments::DeploymentState;
use crate::progress::{DeploymentPhase, DeploymentStep, Level, OutputStream, Source};

mod checks;

pub const SHOW_SCHEMA_VERSION: &str = "deployments.show/v1";
pub const TIMELINE_SCHEMA_VERSION: &str = "deployments.timeline/v1";

/// What started an attempt (`spec.trigger`), as Berth records it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerKind {
    /// `POST /deployments`, `/deployments/stream`, or an attempt applied with kubectl.
    Manual,
    /// A pushed commit delivered by a webhook.
    GitPush,
    /// The resource's first attempt, when it was created with a server and a source.
    ResourceCreated,
    /// A spec change with auto-deploy on.
    AutoDeploy,
    /// A variable or secret changed with auto-deploy on.
    ConfigChange,
    /// `POST /deployments/{id}/retry`.
    Retry,
    /// `POST /resources/{id}/redeploy`.
    Redeploy,
    /// `POST /deployments/{id}/rollback`.
    Rollback,
}

impl TriggerKind {
    /// Every kind, as `spec.trigger` spells it.
    pub const ALL: [Self; 8] = [
        Self::Manual,
        Self::GitPush,
        Self::ResourceCreated,
        Self::AutoDeploy,
        Self::ConfigChange,
        Self::Retry,
        Self::Redeploy,
        Self::Rollback,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::GitPush => "git-push",
            Self::ResourceCreated => "resource-created",
            Self::AutoDeploy => "auto-deploy",
            Self::ConfigChange => "config-change",
            Self::Retry => "retry",
            Self::Redeploy => "redeploy",
            Self::Rollback => "rollback",
        }
    }

    /// `spec.trigger` read back; anything unknown (or none) counts as `manual`.
    pub fn parse(text: Option<&str>) -> Self {
        Self::ALL
            .into_iter()
            .find(|kind| Some(kind.as_str()) == text)
            .unwrap_or(Self::Manual)
    }

    /// Appaloft's `triggerKind`: how the attempt relates to earlier ones.
    pub fn lineage(self) -> LineageKind {
        match self {
            Self::Retry => LineageKind::Retry,
            Self::Redeploy => LineageKind::Redeploy,
            Self::Rollback => LineageKind::Rollback,
            _ => LineageKind::Create,
        }
    }
}

/// Appaloft's `triggerKind` value set.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LineageKind {
    Create,
    Retry,
    Redeploy,
    ForceRedeploy,
    Rollback,
}

/// Who or what started the attempt.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTrigger {
    pub kind: TriggerKind,
    /// `user`, `deploy-token` or `system` (Berth's own: auto-deploy, config changes, the
    /// first attempt); with kubectl or a GitOps tool, `user` and its field manager as the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<String>,
}

/// Where the attempt runs (Appaloft's `server-backed` target).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTarget {
    /// `server-backed`.
    pub kind: String,
    pub server_id: String,
    /// The destination on the server (`default` when the resource names none).
    pub destination_id: String,
}

/// The source the attempt deploys.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlanSource {
    pub kind: String,
    pub locator: String,
    pub display_name: String,
}

/// The image the attempt runs.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeArtifact {
    /// `image`.
    pub kind: String,
    /// `build-image` or `prebuilt-image`.
    pub intent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// How the attempt's container runs.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlanExecution {
    /// `docker-container`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_command: Option<String>,
}

/// The server (or servers) the attempt targets.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlanTarget {
    /// `single-server`.
    pub kind: String,
    /// `generic-ssh`.
    pub provider_key: String,
    pub server_ids: Vec<String>,
}

/// What the attempt does, as far as its object says (Appaloft's `runtimePlan`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimePlan {
    pub id: String,
    pub source: PlanSource,
    /// `dockerfile`, `workspace-commands`, `static-artifact` or `prebuilt-image`.
    pub build_strategy: String,
    /// `split-deploy`: the image is built or pulled, then run.
    pub packaging_mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_artifact: Option<RuntimeArtifact>,
    pub execution: PlanExecution,
    pub target: PlanTarget,
    pub detect_summary: String,
    /// The five steps every attempt goes through.
    pub steps: Vec<String>,
    pub generated_at: String,
}

/// One variable of the attempt's configuration, masked.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotVariable {
    pub key: String,
    pub value: String,
    pub scope: String,
    pub exposure: String,
    pub is_secret: bool,
    pub kind: String,
}

/// The configuration the attempt started with: its own variables (masked) and, as
/// `fingerprint`, a digest of every scope's entries (values never appear).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSnapshot {
    pub id: String,
    pub environment_id: String,
    pub created_at: String,
    pub precedence: Vec<String>,
    pub variables: Vec<SnapshotVariable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// A structured failure.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentFailure {
    pub timestamp: String,
    pub phase: DeploymentPhase,
    /// One of the README's deployment error codes.
    pub code: String,
    pub message: String,
}

/// A retry scheduled after a passing infrastructure fault.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledRetry {
    pub count: i64,
    pub next_retry_at: String,
    pub last_error: DeploymentFailure,
}

/// The commit a git source's attempt built.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceCommit {
    pub repository: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    pub sha: String,
    pub subject: String,
    pub author_name: String,
    pub author_email: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authored_at: Option<String>,
}

/// One attempt (Appaloft's `DeploymentSummary`, plus what Berth knows of it).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSummary {
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    pub resource_id: String,
    pub target: DeploymentTarget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    pub status: DeploymentState,
    pub trigger_kind: LineageKind,
    pub trigger: DeploymentTrigger,
    /// The attempt this one repeats (retry, redeploy) or returns to (rollback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_of_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<SourceCommit>,
    pub runtime_plan: RuntimePlan,
    pub environment_snapshot: EnvironmentSnapshot,
    /// Entries of the timeline (empty in lists: read `/deployments/{id}/timeline`).
    pub timeline: Vec<JournalEntry>,
    pub timeline_count: i64,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The phase it is in or ended in, and its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DeploymentPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<DeploymentStep>,
    /// The image it built or pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<DeploymentFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<ScheduledRetry>,
    /// Whether cancel was asked for.
    pub cancel_requested: bool,
}

/// One line of a timeline in the record (Appaloft's journal entry).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    pub timestamp: String,
    pub source: Source,
    pub phase: DeploymentPhase,
    pub level: Level,
    pub message: String,
    pub masked: bool,
}

/// `GET /deployments`: newest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentList {
    pub items: Vec<DeploymentSummary>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `status` of `deployments.show/v1`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AttemptStatus {
    pub current: DeploymentState,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_of_deployment_id: Option<String>,
}

/// `timeline` of `deployments.show/v1`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AttemptTimeline {
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub timeline_count: i64,
}

/// A named object the attempt relates to.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RelatedObject {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
}

/// The project, environment, resource and server of the attempt, as they are now.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RelatedContext {
    pub project: RelatedObject,
    pub environment: RelatedObject,
    pub resource: RelatedObject,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<RelatedObject>,
}

/// The failure of an attempt that ended without success.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LatestFailure {
    pub timestamp: String,
    pub source: Source,
    pub phase: DeploymentPhase,
    pub level: Level,
    pub message: String,
    pub code: String,
}

/// What can be done with the attempt now.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RecoverySummary {
    /// `deployments.recovery-readiness`.
    pub source: String,
    pub retryable: bool,
    pub redeployable: bool,
    pub rollback_ready: bool,
    pub rollback_candidate_count: i64,
    pub blocked_reason_codes: Vec<String>,
    /// Also: whether `POST /deployments/{id}/cancel` applies.
    pub cancelable: bool,
}

/// `GET /deployments/{deploymentId}` (`deployments.show/v1`).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ShowDeployment {
    pub schema_version: String,
    pub deployment: DeploymentSummary,
    pub status: AttemptStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_context: Option<RelatedContext>,
    pub timeline: AttemptTimeline,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_failure: Option<LatestFailure>,
    pub recovery_summary: RecoverySummary,
    /// `timeline`, `resource-detail`, `resource-health`, `diagnostic-summary`.
    pub next_actions: Vec<String>,
    pub section_errors: Vec<SectionError>,
    pub generated_at: String,
}

/// A part of the answer that could not be read.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct SectionError {
    /// `related-context`, `timeline`, …
    pub section: String,
    pub code: String,
    pub category: String,
    pub phase: String,
    pub retriable: bool,
}

/// What kind of line a timeline entry is.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// Berth's own message within a step.
    Lifecycle,
    /// A step began.
    Step,
    /// Output of the build, the pull or the container.
    Output,
    /// How the attempt ended.
    Status,
}

/// The outcome an entry reports.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EntryStatus {
    Running,
    Succeeded,
    Failed,
}

/// One entry of `GET /deployments/{id}/timeline` and its stream.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    pub deployment_id: String,
    /// Increases along the timeline (from 1).
    pub sequence: i64,
    /// The same, as the `cursor` (or `after`, or `Last-Event-ID`) to read on from.
    pub cursor: String,
    pub occurred_at: String,
    pub source: Source,
    pub kind: EntryKind,
    pub phase: DeploymentPhase,
    pub level: Level,
    pub message: String,
    pub status: EntryStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<OutputStream>,
    pub step: DeploymentStep,
}

/// `GET /deployments/{deploymentId}/timeline` (`deployments.timeline/v1`).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTimeline {
    pub schema_version: String,
    pub deployment_id: String,
    pub entries: Vec<TimelineEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

/// Why a timeline stream ended.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ClosedReason {
    /// The attempt ended (any outcome) and every entry was sent.
    Completed,
    /// The attempt's object went before it ended.
    SourceEnded,
    /// The stream's deadline passed; the attempt goes on.
    IdleTimeout,
}

/// One event of `GET /deployments/{deploymentId}/timeline/stream`: an entry (the event's
/// `id` is its sequence), then, last, `closed`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TimelineEnvelope {
    #[serde(rename_all = "camelCase")]
    Entry {
        schema_version: String,
        entry: TimelineEntry,
    },
    #[serde(rename_all = "camelCase")]
    Closed {
        schema_version: String,
        reason: ClosedReason,
        /// The attempt's final status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<DeploymentState>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
}

/// `POST /deployments/{deploymentId}/cancel` (Appaloft's body: `confirm` repeats the id).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CancelDeployment {
    /// The deployment id again, to confirm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// When given, the attempt must be of this resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

/// What cancel answers once the attempt stopped.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentCanceled {
    pub id: String,
    /// `canceled`.
    pub status: DeploymentState,
    pub canceled_at: String,
}

/// `POST /deployments/{deploymentId}/retry`: the attempt's source again, as a new attempt.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RetryDeployment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_generated_at: Option<String>,
    /// `confirmation.deploymentId` repeats the attempt retried: what serves may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

/// `POST /deployments/{deploymentId}/rollback`: serve an earlier succeeded attempt's image.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RollbackDeployment {
    /// The succeeded attempt to return to; default the newest succeeded one before
    /// `deploymentId` with an image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_candidate_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_generated_at: Option<String>,
    /// `confirmation.deploymentId` repeats the path's id: what serves changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

/// `POST /resources/{resourceId}/redeploy`: the resource's current source again (or that of
/// `sourceDeploymentId`), as a new attempt.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RedeployResource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_generated_at: Option<String>,
    /// `confirmation.resourceId` repeats the path's id: what serves changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}
