//! UsageIntent: an idempotent usage-intent record (spec §2.2 "Usage-intent record", §4.1). The
//! object name is derived from the idempotency key, so a repeated intent is a duplicate.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::{DecisionContext, Quantity};

/// A recorded intent to use a capability.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "UsageIntent",
    namespaced,
    shortname = "bui",
    category = "berth",
    doc = "A usage-intent record (spec 4.1), idempotent by its key.",
    status = "UsageIntentStatus",
    printcolumn = r#"{"name":"Capability","type":"string","jsonPath":".spec.capabilityKey"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".spec.status"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".spec.source"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentSpec {
    /// Key that makes repeated submissions of the same intent duplicates.
    #[schemars(length(min = 1))]
    pub idempotency_key: String,
    /// Capability used, e.g. `deployments.create`.
    #[schemars(length(min = 1))]
    pub capability_key: String,
    /// What reported the intent, e.g. `cli`.
    #[schemars(length(min = 1))]
    pub source: String,
    /// Outcome of the intent, e.g. `accepted`.
    #[serde(default = "default_status")]
    #[schemars(length(min = 1))]
    pub status: String,
    /// Why the intent has that outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How much is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<Quantity>,
    /// When the usage happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<Time>,
    /// Tenant, account, organization, actor, resource references, attributes and details.
    #[serde(flatten)]
    pub context: DecisionContext,
}

fn default_status() -> String {
    "accepted".to_string()
}

/// When the intent was recorded.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentStatus {
    /// When the record was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the record is stored.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
