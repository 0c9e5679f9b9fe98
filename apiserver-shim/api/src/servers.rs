//! Spec §4.10, servers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

/// An empty object (or no body).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct NoBody {}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteServer {
    /// Must carry `serverId` equal to the server being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Repeating a delete with the same key (within 24 hours) returns the same result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}
