//! Spec §4.3, user accounts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateUser {
    /// Email address the person signs in with; unique across the platform.
    pub email: String,
    /// Name shown in the console and CLI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// At least 12 characters; one is generated and returned once when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CreatedUser {
    pub user_id: String,
    pub email: String,
    /// Returned once, only when the password was generated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_password: Option<String>,
}
