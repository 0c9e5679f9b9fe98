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

/// The Secret/variable entry of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct VariableEntry {
    pub resource_id: String,
    pub key: String,
    /// The value, or `****` for secrets.
    pub value: String,
    /// Where the entry is defined: `resource` or `environment`.
    pub scope: String,
    /// `build-time` or `runtime`.
    pub exposure: String,
    pub is_secret: bool,
    /// `secret` or `plain-config`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// Effective config of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveConfig {
    /// `resources.effective-config/v1`.
    pub schema_version: String,
    pub resource_id: String,
    /// The environment whose entries were merged (the preview one when asked).
    pub environment_id: String,
    /// Entries the resource defines itself.
    pub owned_entries: Vec<VariableEntry>,
    /// What the next deployment gets: one entry per key and exposure, from the strongest scope.
    pub effective_entries: Vec<VariableEntry>,
    /// Per key and exposure that more than one scope sets: the scope used and those hidden.
    pub overrides: Vec<Override>,
    /// Scope names, weakest first.
    pub precedence: Vec<String>,
    pub generated_at: String,
}

/// A key and exposure several scopes set: the strongest is used, the others are hidden.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    pub key: String,
    pub exposure: String,
    /// The scope whose entry is used.
    pub selected_scope: String,
    /// The scopes whose entries it hides, weakest first.
    pub overridden_scopes: Vec<String>,
}

/// The Variable import result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportResult {
    pub resource_id: String,
    pub imported_entries: Vec<ImportedEntry>,
    pub duplicate_overrides: Vec<DuplicateOverride>,
    pub existing_overrides: Vec<ExistingOverride>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportedEntry {
    pub key: String,
    /// The value, or `****` for secrets.
    pub value: String,
    pub exposure: String,
    pub kind: String,
    pub is_secret: bool,
    /// `created` or `updated`.
    pub action: String,
    /// 1-based line of the file the value came from.
    pub source_line: usize,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateOverride {
    pub key: String,
    pub exposure: String,
    pub first_line: usize,
    pub last_line: usize,
    /// Always `last-wins`.
    pub rule: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExistingOverride {
    pub key: String,
    pub exposure: String,
    /// Always `resource`: the replaced entry was the resource's own.
    pub previous_scope: String,
    /// Always `resource-entry-replaced`.
    pub rule: String,
}
