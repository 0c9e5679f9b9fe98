//! Invitation: an offer to join an organization (spec §2.2 "Invitation"), in the organization's
//! namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::EMAIL_MAX;
use crate::member::OrganizationRole;

/// State of an invitation (spec §3).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InvitationState {
    Pending,
    Accepted,
    Expired,
    Revoked,
}

/// An invitation for an email address to join the organization owning this namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Invitation",
    namespaced,
    shortname = "binv",
    category = "berth",
    doc = "An invitation for an email address to join an organization with a role.",
    status = "InvitationStatus",
    printcolumn = r#"{"name":"Email","type":"string","jsonPath":".spec.email"}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".spec.role"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Expires","type":"string","jsonPath":".spec.expiresAt"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InvitationSpec {
    /// Email address invited.
    #[schemars(length(min = 1, max = EMAIL_MAX), regex(pattern = r"^[^@\s]+@[^@\s]+$"))]
    pub email: String,
    /// Role the invitee gets on acceptance: `owner`, `admin` or `member`.
    pub role: OrganizationRole,
    /// Id (object name) of the User who sent the invitation.
    #[schemars(length(min = 1))]
    pub inviter_user_id: String,
    /// When the invitation can no longer be accepted.
    pub expires_at: Time,
    /// Set to revoke the invitation.
    #[serde(default)]
    pub revoked: bool,
}

/// What happened to an invitation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationStatus {
    /// `pending`, `accepted`, `expired` or `revoked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InvitationState>,
    /// When the invitation was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_at: Option<Time>,
    /// Id of the User who accepted the invitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by_user_id: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the invitation can be accepted.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
