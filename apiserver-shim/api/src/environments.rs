//! Spec §4.5, environments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Every value an environment's `kind` may take (a closed set, checked by the API server and
/// the shim).
pub const ENVIRONMENT_KINDS: &[&str] = &[
    "local",
    "development",
    "test",
    "staging",
    "production",
    "preview",
    "custom",
];

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateEnvironment {
    /// The project it belongs to (active, in the caller's organization).
    pub project_id: String,
    /// Display name, unique among the project's active environments (1-120 characters).
    pub name: String,
    /// `local`, `development`, `test`, `staging`, `production`, `preview` or `custom`.
    #[schemars(extend("enum" = ENVIRONMENT_KINDS))]
    pub kind: String,
    /// An environment of the same project this one derives from (previews).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_environment_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveEnvironment {
    /// Why the environment is archived (shown as `archiveReason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
