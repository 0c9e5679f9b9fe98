//! Domain binding changes: whether a binding can be deleted, and what stands in the way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Appaloft's domain-binding delete safety.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteSafety {
    pub domain_binding_id: String,
    pub safe_to_delete: bool,
    pub blockers: Vec<DeleteBlocker>,
    pub warnings: Vec<DeleteBlocker>,
    pub preserves_generated_access: bool,
    pub preserves_deployment_snapshots: bool,
    pub preserves_server_applied_route_audit: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBlocker {
    /// `active-certificate` or `certificate-history`.
    pub kind: String,
    /// `blocking` or `warning`.
    pub severity: String,
    pub message: String,
    pub related_entity_type: String,
    pub related_entity_id: String,
}
