//! Spec §4.2, organizations and the current context.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bootstrap::LoginMethod;
use crate::common::Confirmation;
use crate::identity::Permissions;

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SwitchOrganization {
    /// An organization you are an active member of.
    pub organization_id: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateOrganization {
    /// Display name (1-120 characters).
    pub name: String,
    /// Id and URL-safe short name (1-58 lowercase letters, digits, dashes); derived from the
    /// name when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteOrganization {
    /// Must carry `organizationId` equal to the organization being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateOrganization {
    /// New display name (1-120 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Logo image URL (http or https); an empty string clears it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
}

/// One organization in the Organization context record.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationSummary {
    pub organization_id: String,
    pub name: String,
    pub slug: String,
    /// Your role there: `owner`, `admin` or `member`.
    pub role: String,
}

/// The signed-in user in the Organization context record.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ContextUser {
    pub user_id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
}

/// The Organization context record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationContext {
    pub user: ContextUser,
    /// The organization requests act in; absent for a user who belongs to none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_organization: Option<OrganizationSummary>,
    pub organizations: Vec<OrganizationSummary>,
    pub login_methods: Vec<LoginMethod>,
    /// What your role allows in the current organization.
    pub permissions: Permissions,
}

/// The Organization profile record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationProfile {
    pub organization_id: String,
    pub name: String,
    pub slug: String,
    /// Your role in the organization.
    pub role: String,
    pub permissions: Permissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeletedOrganization {
    pub organization_id: String,
    pub deleted_at: String,
}
