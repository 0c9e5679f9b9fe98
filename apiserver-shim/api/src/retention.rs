//! Retention defaults (spec §4.5).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /retention-defaults`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetRetention {
    /// One of the six categories, e.g. `runtime-monitoring-samples`.
    pub category: String,
    /// Days history is kept, 1..=36500.
    pub retention_days: i64,
    /// `organization` (default) or `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The caller's organization (organization scope only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    /// Omitted flags keep their current value (false, or true for `enabled`, when new).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run_scheduling_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_scheduling_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}
