//! Spec §4.3, invitations.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
