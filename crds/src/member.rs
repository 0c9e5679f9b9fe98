//! Member: a user's membership of an organization (spec §2.2 "Member"), in the organization's
//! namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;

/// Role of a member in an organization (spec §5): a wire type too, defined in
/// `berth-vocabulary`.
pub use berth_vocabulary::members::OrganizationRole;

/// A user's membership of the organization owning this namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Member",
    namespaced,
    shortname = "bmem",
    category = "berth",
    doc = "A user's membership of an organization, with its role (owner, admin or member).",
    status = "MemberStatus",
    printcolumn = r#"{"name":"Email","type":"string","jsonPath":".spec.email"}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".spec.role"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.memberStatus"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MemberSpec {
    /// Id (object name) of the User who is a member.
    #[schemars(length(min = 1))]
    pub user_id: String,
    /// Email of the user, copied for listing.
    #[schemars(length(min = 1))]
    pub email: String,
    /// Role in the organization: `owner`, `admin` or `member`.
    pub role: OrganizationRole,
    /// Unset to remove the member; set again to reactivate.
    #[serde(default = "crate::common::default_true")]
    pub active: bool,
}

/// What the platform observed about a membership.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    /// Membership status, e.g. `active` or `removed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_status: Option<String>,
    /// When the user joined the organization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_at: Option<Time>,
    /// When the member was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the membership is in effect.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
