//! Spec §4.6, capability and entitlement queries.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityQuery {
    /// 1-100 operations to decide on.
    pub queries: Vec<OperationKeyQuery>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationKeyQuery {
    /// Operation, e.g. `deployments.create`.
    pub operation_key: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EntitlementQuery {
    /// 1-100 capabilities to check.
    pub queries: Vec<CapabilityKeyQuery>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityKeyQuery {
    /// Capability, e.g. `custom-domains`.
    pub capability_key: String,
}
