//! A resource's source and auto-deploy policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Event kinds that trigger a deployment; default `["push"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_kinds: Option<Vec<String>>,
}
