//! Spec §4.2, organizations and the current context.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

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
