//! User: an account that can sign in (spec §2.2 "Account profile"). Cluster-scoped; the password
//! hash lives in a Secret in `berth-system`, never here.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{EMAIL_MAX, NAME_MAX, OBJECT_NAME_MAX};

/// A user account. Organization membership is a Member in the organization's namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "User",
    shortname = "busr",
    category = "berth",
    doc = "A user account; its password hash lives in a Secret in berth-system.",
    status = "UserStatus",
    printcolumn = r#"{"name":"Email","type":"string","jsonPath":".spec.email"}"#,
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Verified","type":"boolean","jsonPath":".status.emailVerified"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct UserSpec {
    /// Email address the user signs in with.
    #[schemars(length(min = 1, max = EMAIL_MAX), regex(pattern = r"^[^@\s]+@[^@\s]+$"))]
    pub email: String,
    /// Name shown in the console and CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = NAME_MAX))]
    pub display_name: Option<String>,
    /// Avatar image URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub avatar_url: Option<String>,
    /// Name of the Secret in `berth-system` holding the password hash (local-password login).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub password_secret_ref: Option<String>,
}

/// What the platform knows about a user.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserStatus {
    /// Whether the email address has been verified.
    #[serde(default)]
    pub email_verified: bool,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the user can sign in.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
