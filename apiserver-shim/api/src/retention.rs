//! Retention defaults (spec §4.5).

pub use berth_vocabulary::retention::{RetentionRun, RetentionRunMode};
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

pub const LIST_SCHEMA_VERSION: &str = "retention-defaults.list/v1";
pub const SHOW_SCHEMA_VERSION: &str = "retention-defaults.show/v1";
pub const POLICY_SCHEMA_VERSION: &str = "retention-defaults.policy/v1";

/// Spec §2.2 "Retention default policy".
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRecord {
    pub schema_version: String,
    /// `system.<category>` or `<organizationId>.<category>`.
    pub id: String,
    /// `organization` or `system`.
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    pub category: String,
    pub retention_days: i64,
    pub dry_run_scheduling_enabled: bool,
    pub destructive_scheduling_enabled: bool,
    pub enabled: bool,
    pub updated_at: String,
    pub updated_by_actor_id: String,
    /// `user`, `deploy-token`, or `system` for the defaults Berth created.
    /// `user`, `deploy-token` or `system`.
    pub updated_by_actor_kind: String,
    /// What the latest scheduled run counted or deleted (beyond the spec).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RetentionRun<String>>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RetentionList {
    pub schema_version: String,
    pub items: Vec<PolicyRecord>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RetentionShow {
    pub schema_version: String,
    pub policy: PolicyRecord,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct RetentionAnswer {
    pub id: String,
    pub policy: PolicyRecord,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The last run's instants are strings on the wire, read back as they were written.
    #[test]
    fn a_policy_with_its_last_run_reads_back_from_its_wire_form() {
        let wire = json!({
            "schemaVersion": SHOW_SCHEMA_VERSION,
            "policy": {
                "schemaVersion": POLICY_SCHEMA_VERSION, "id": "system.process-attempts",
                "scope": "system", "category": "process-attempts", "retentionDays": 30,
                "dryRunSchedulingEnabled": true, "destructiveSchedulingEnabled": false,
                "enabled": true, "updatedAt": "2030-01-01T00:00:00Z",
                "updatedByActorId": "berth", "updatedByActorKind": "system",
                "lastRun": {
                    "at": "2030-01-02T00:00:00Z", "mode": "dry-run",
                    "cutoff": "2029-12-03T00:00:00Z", "matchedRows": {"process-attempts": 4},
                    "deletedRows": 0, "namespaces": ["org-shop"],
                },
            },
        });
        let show: RetentionShow = serde_json::from_value(wire.clone()).unwrap();
        let run = show.policy.last_run.as_ref().unwrap();
        assert_eq!(run.mode, RetentionRunMode::DryRun);
        assert_eq!(run.cutoff, "2029-12-03T00:00:00Z");
        assert_eq!(serde_json::to_value(&show).unwrap(), wire);
    }
}
