//! Spec §4.3, members.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::members::OrganizationRole;

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RemoveMember {}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ReactivateMember {}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TransferOwnership {
    /// Your own owner membership; it becomes `admin`.
    pub from_member_id: String,
    /// An active member of the organization; it becomes `owner`.
    pub to_member_id: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangeRole {
    /// The new role: `owner`, `admin` or `member`.
    pub role: OrganizationRole,
}

/// The Member record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MemberRecord {
    pub member_id: String,
    pub user_id: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    pub joined_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub email: String,
    /// `active` or `removed`.
    pub status: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MemberList {
    pub items: Vec<MemberRecord>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RemovedMember {
    pub member_id: String,
    pub organization_id: String,
    pub removed_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TransferredOwnership {
    pub from_member: MemberRecord,
    pub to_member: MemberRecord,
    pub transferred_at: String,
}
