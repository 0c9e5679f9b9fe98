//! Spec §4.1, bootstrap and sign-in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
    /// Kind of client, e.g. `web` (default) or `cli`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_kind: Option<String>,
    /// Name shown in the session list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct LogoutRequest {}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FirstAdminRequest {
    /// The administrator's email (their login name).
    pub email: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// A password of at least 12 characters; one is generated and returned once when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Display name of the first organization (default `Default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_name: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct LoginResult {
    /// The bearer token; shown only here.
    pub token: String,
    pub session_id: String,
    pub user_id: String,
    pub expires_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct LogoutResult {
    pub session_id: String,
    pub revoked_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct LoginMethod {
    pub key: String,
    pub configured: bool,
    pub enabled: bool,
    pub reason: String,
}

/// The Bootstrap auth status record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapStatus {
    pub bootstrap_required: bool,
    pub first_admin_configured: bool,
    pub organization_configured: bool,
    pub login_methods: Vec<LoginMethod>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_admin_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_slug: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
}

/// The First-admin result record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct FirstAdminResult {
    pub bootstrap_required: bool,
    pub created: bool,
    pub email: String,
    pub login_methods: Vec<LoginMethod>,
    pub organization_id: String,
    pub organization_slug: String,
    pub user_id: String,
    /// Returned once, only when the password was generated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_password: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login_url: Option<String>,
}
