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

/// The Environment record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentRecord {
    pub id: String,
    pub project_id: String,
    pub name: String,
    /// e.g. `local`, `production`, `staging`, `preview`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_environment_id: Option<String>,
    /// `active` or `archived`.
    pub lifecycle_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    pub created_at: String,
    /// The environment's variables; values of secret-looking keys read `****`.
    pub masked_variables: Vec<MaskedVariable>,
}

/// One environment variable as the API shows it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MaskedVariable {
    pub key: String,
    /// The value, or `****` when the key or value looks secret.
    pub value: String,
    /// Always `environment`: inherited by every resource of the environment.
    pub scope: String,
    /// `build-time` or `runtime`.
    pub exposure: String,
    pub is_secret: bool,
    /// `secret` or `plain-config`.
    pub kind: String,
}

/// `{ items }` of `GET /environments`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct EnvironmentList {
    pub items: Vec<EnvironmentRecord>,
}
