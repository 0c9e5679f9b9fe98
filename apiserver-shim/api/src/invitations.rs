//! Spec §4.3, invitations.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::members::MemberRecord;
use crate::members::OrganizationRole;

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RevokeInvitation {}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitation {}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateInvitation {
    /// Email address of the person invited.
    pub email: String,
    /// Role granted on acceptance; only an owner may invite an owner.
    pub role: OrganizationRole,
}

/// Who sent an invitation.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Inviter {
    pub user_id: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
}

/// The Invitation record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct InvitationRecord {
    pub invitation_id: String,
    pub organization_id: String,
    pub email: String,
    /// Role granted on acceptance.
    pub role: String,
    /// `accepted`, `expired`, `pending` or `revoked`.
    pub status: String,
    pub created_at: String,
    pub expires_at: String,
    pub inviter: Inviter,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct InvitationList {
    pub items: Vec<InvitationRecord>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The accepted invitation and the membership it created or reactivated.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedInvitation {
    pub invitation: InvitationRecord,
    pub member: MemberRecord,
}
