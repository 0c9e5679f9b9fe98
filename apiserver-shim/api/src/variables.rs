//! A resource's variables and env-file import.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetVariable {
    pub key: String,
    pub value: String,
    /// `runtime` (default) or `build-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteVariable {
    /// `runtime` (default) or `build-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportVariables {
    /// Env-file text: `KEY=value` lines, `export` prefixes, `#` comments.
    pub content: String,
    /// `runtime` (default) or `build-time`, for every imported entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
}
