//! Session: a signed-in client of a user (spec §2.2 "Session"). Lives in `berth-system`; only a
//! digest of the bearer token is stored.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::SHA256_DIGEST_PATTERN;

/// A user session. The bearer token itself is never stored: only its SHA-256 digest.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Session",
    namespaced,
    shortname = "bsess",
    category = "berth",
    doc = "A user session (in berth-system); holds only a SHA-256 digest of the bearer token.",
    status = "SessionStatus",
    printcolumn = r#"{"name":"User","type":"string","jsonPath":".spec.userId"}"#,
    printcolumn = r#"{"name":"Client","type":"string","jsonPath":".spec.clientKind"}"#,
    printcolumn = r#"{"name":"Expires","type":"string","jsonPath":".spec.expiresAt"}"#,
    printcolumn = r#"{"name":"Revoked","type":"boolean","jsonPath":".spec.revoked"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SessionSpec {
    /// Id (object name) of the User this session belongs to.
    #[schemars(length(min = 1))]
    pub user_id: String,
    /// Kind of client that opened the session, e.g. `web` or `cli`.
    #[schemars(length(min = 1))]
    pub client_kind: String,
    /// Name shown in the session list, e.g. the browser and OS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// SHA-256 digest of the bearer token, `sha256:<64 hex digits>`.
    #[schemars(regex(pattern = SHA256_DIGEST_PATTERN))]
    pub token_digest: String,
    /// When the session stops being accepted.
    pub expires_at: Time,
    /// Set to revoke the session; a revoked session is never accepted again.
    #[serde(default)]
    pub revoked: bool,
    /// Client IP address the session was opened from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// User agent of the client that opened the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Organization (object name) the session currently acts in; switched by the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub organization_id: Option<String>,
}

/// What the platform observed about a session.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// When the session last authenticated a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active_at: Option<Time>,
    /// When the session was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the session is accepted.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
