//! Spec §4.4, projects.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateProject {
    /// Display name (required, at least 1 character).
    pub name: String,
    /// URL-safe short name; derived from the name when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Position in ordered lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_order: Option<u32>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveProject {
    /// Must carry `projectId` equal to the project being archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Why the project is archived (shown as `archiveReason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameProject {
    /// The new display name.
    pub name: String,
    /// A new slug; unchanged when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
}

/// The Project record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProjectRecord {
    pub id: String,
    pub organization_id: String,
    pub name: String,
    pub slug: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `active` or `archived`.
    pub lifecycle_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    pub display_order: i64,
    pub created_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct ProjectList {
    pub items: Vec<ProjectRecord>,
    pub total: usize,
    pub limit: u64,
    pub offset: u64,
}
