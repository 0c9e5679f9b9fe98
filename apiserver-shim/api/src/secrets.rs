//! A resource's secrets (values are write-only).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::variables::VariableEntry;

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

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SecretList {
    /// `resources.secrets.list/v1`.
    pub schema_version: String,
    pub resource_id: String,
    pub items: Vec<VariableEntry>,
    pub generated_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SecretShow {
    /// `resources.secrets.show/v1`.
    pub schema_version: String,
    pub secret: VariableEntry,
    pub generated_at: String,
}

/// What a secret write returns: which entry changed, never its value.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    pub resource_id: String,
    pub key: String,
    pub exposure: String,
}
