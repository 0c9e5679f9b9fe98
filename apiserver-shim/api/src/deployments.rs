//! Spec §6, deployments started through the event stream, and an attempt's stored timeline.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::progress::ProgressEvent;

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::deployments::DeploymentState;

/// The timeline's `schemaVersion`.
pub const TIMELINE_SCHEMA_VERSION: &str = "deployments.timeline/v1";

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartDeployment {
    /// The resource's project.
    pub project_id: String,
    /// The server to deploy to: the one the resource names.
    pub server_id: String,
    /// The resource's environment.
    pub environment_id: String,
    /// The resource to deploy (its current source is deployed).
    pub resource_id: String,
    /// Deployment destination on the server; the resource's when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    /// A git source's commit to deploy (40 or 64 hex digits) instead of its ref's newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    /// A git source's branch, tag or ref to deploy instead of the one the resource follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

/// `POST /deployments`: the attempt started, to follow with its timeline.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentCreated {
    pub id: String,
}

/// `GET /resources/{resourceId}/deployments/{deploymentId}/timeline`: an attempt's timeline,
/// oldest entry first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// `deployments.timeline/v1`.
    pub schema_version: String,
    pub resource_id: String,
    pub deployment_id: String,
    /// The attempt's status, while its Deployment object exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeploymentState>,
    pub entries: Vec<TimelineItem>,
    /// Pass as `after` to read on; absent once the timeline was read to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<i64>,
    pub generated_at: String,
}

/// One entry: a deployment progress event (spec §6) and its place in the timeline.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelineItem {
    /// Increases along the timeline; pass the last one seen as `after` to read on.
    pub sequence: i64,
    #[serde(flatten)]
    pub event: ProgressEvent,
}
