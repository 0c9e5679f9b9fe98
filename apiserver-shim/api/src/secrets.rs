//! A resource's secrets (values are write-only).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateSecret {
    /// Variable name, e.g. `DATABASE_PASSWORD`.
    pub key: String,
    /// The value; stored only in a Kubernetes Secret and never returned.
    pub value: String,
    /// `runtime` (default) or `build-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateSecret {
    /// The new value.
    pub value: String,
    /// `runtime` (default) or `build-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteSecret {
    /// `runtime` (default) or `build-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}
