//! The roles of an organization's members: a Member's spec and the REST API's bodies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Role of a member in an organization (spec §5).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OrganizationRole {
    Owner,
    Admin,
    Member,
}

impl OrganizationRole {
    /// The spelling used in the REST API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Member => "member",
        }
    }
}
