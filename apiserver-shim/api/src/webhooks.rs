//! Push webhooks (`POST /webhooks/{provider}`): what a delivery started or left alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a delivery did.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookReceipt {
    pub provider: String,
    /// `push`, `tag` or `other`.
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
