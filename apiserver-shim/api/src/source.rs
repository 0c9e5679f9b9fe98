//! A resource's source and auto-deploy policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource_input::SourceInput;

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetAutoDeploy {
    /// `enable` or `disable`.
    pub mode: String,
    /// What triggers a deployment; default `git-push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_kind: Option<String>,
    /// Source refs that trigger a deployment, e.g. `refs/heads/main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<Vec<String>>,
    /// Event kinds that trigger a deployment: `push`, `tag`; default `["push"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_kinds: Option<Vec<String>>,
    /// With `enable`: a new webhook secret for the binding even if it has one (the old one
    /// stops verifying). A git source's first enable creates one; either way it is shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotate_webhook_secret: Option<bool>,
}

// `POST /resources/{id}/source` (no doc comment: it would become the schema's description).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetSource {
    pub source: SourceInput,
    /// A repeat with the same key returns the same result and changes nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// Auto-deploy policy result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoDeployResult {
    pub resource_id: String,
    /// `enabled`, `disabled` or `blocked`.
    pub status: String,
    pub trigger_kind: String,
    pub refs: Vec<String>,
    pub event_kinds: Vec<String>,
    /// Fingerprint of the source binding auto-deploy was enabled for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_binding_fingerprint: Option<String>,
    /// Why an enabled policy does not fire, e.g. `source-binding-changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// The webhook secret of a git source's binding, shown once: when enabling created it or
    /// `rotateWebhookSecret` replaced it. Pushes are delivered to `POST /webhooks/{provider}`
    /// signed with it (GitHub and Gitea) or carrying it (GitLab's token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}
