//! Push webhooks (`POST /webhooks/{provider}`): what a delivery started or left alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a delivery did.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookReceipt {
    pub provider: String,
    /// `push`, `tag`, `pull-request` or `other`.
    pub event: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    /// Attempts started (or, for a redelivery, started before).
    pub deployments: Vec<StartedAttempt>,
    /// Verified bindings that start nothing, and why.
    pub ignored: Vec<IgnoredBinding>,
    /// What a pull request's event did to each verified binding's preview (absent for other
    /// events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previews: Vec<PreviewReceipt>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartedAttempt {
    pub resource_id: String,
    pub deployment_id: String,
    /// True when this delivery had started it already (a redelivery).
    pub duplicate: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredBinding {
    pub resource_id: String,
    /// `not-a-push`, `ref-deleted`, `auto-deploy-disabled`, `source-binding-changed`,
    /// `event-kind-not-enabled`, `ref-not-followed` or `no-server`.
    pub reason: String,
    pub message: String,
}

/// What a pull request's event did to one verified binding's preview.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreviewReceipt {
    pub resource_id: String,
    /// The PreviewEnvironment concerned (absent when the event is ignored before one is named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_environment_id: Option<String>,
    /// `created`, `updated`, `unchanged`, `cleanup-requested` or `ignored`.
    pub action: String,
    /// Why, for `unchanged` and `ignored`: `same-head`, `no-preview`, `preview-being-removed`,
    /// `preview-fork-disabled`, `preview-same-repository-disabled`,
    /// `not-a-pull-request-action`, `pull-request-unreadable` or `source-not-git`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
