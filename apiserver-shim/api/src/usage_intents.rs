//! Spec §4.1 usage-intent records, idempotent by `idempotencyKey`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decisions::{
    ActorInput, DecisionContext, JsonMap, MAX_KEY, Quantity, ResourceRefs, context_accessors,
};
use crate::validate::{Checked, FieldError, bounded};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuantityInput {
    /// A finite amount, at least 0.
    pub value: f64,
    /// Unit, e.g. `deployment`.
    pub unit: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecordUsageIntent {
    /// Repeats with the same key (within the organization) return the original record.
    pub idempotency_key: String,
    /// Capability used.
    pub capability_key: String,
    /// What reports the intent, e.g. `cli`.
    pub source: String,
    /// Tenant the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Account the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The caller's organization (filled in when omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    /// Who acted; the caller, filled in when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<ActorInput>,
    /// Ids the intent is about; a deploy token may name only ids in its scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<ResourceRefs>,
    /// How much was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity: Option<QuantityInput>,
    /// When the usage happened (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    /// Arbitrary attributes (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<JsonMap>,
    /// Arbitrary details (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonMap>,
}

context_accessors!(RecordUsageIntent);

impl RecordUsageIntent {
    /// Every check that needs no caller and no clock; the server also parses `occurredAt`
    /// and checks organization, actor and scope.
    pub fn validate(&self) -> Checked {
        bounded("idempotencyKey", &self.idempotency_key, MAX_KEY)?;
        bounded("capabilityKey", &self.capability_key, MAX_KEY)?;
        bounded("source", &self.source, MAX_KEY)?;
        if let Some(quantity) = &self.quantity {
            if !quantity.value.is_finite() || quantity.value < 0.0 {
                return Err(FieldError::new(
                    "quantity.value",
                    "quantity.value must be a finite number of at least 0",
                ));
            }
            bounded("quantity.unit", &quantity.unit, MAX_KEY)?;
        }
        self.context_fields().validate()
    }
}

/// The Usage-intent record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentRecord {
    /// `usage-intent.record/v1`.
    pub schema_version: String,
    pub id: String,
    pub idempotency_key: String,
    pub capability_key: String,
    /// `accepted`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    pub recorded_at: String,
    #[serde(flatten)]
    pub context: DecisionContext,
}

/// The Usage-intent result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentResult {
    pub idempotency_key: String,
    pub capability_key: String,
    pub accepted: bool,
    /// True when the key was seen before; `record` is then the original.
    pub duplicate: bool,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    pub record: UsageIntentRecord,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct UsageIntentAnswer {
    pub result: UsageIntentResult,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct UsageIntentList {
    pub records: Vec<UsageIntentRecord>,
}
