//! Spec §4.4, projects.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::limits::{DNS_LABEL_MAX, NAME_MAX};
use crate::validate::{Checked, bounded, dns_label};

/// A project's display name and, when given, its slug (a DNS label). Whether the slug is free
/// is the shim's to check.
fn check_name_and_slug(name: &str, slug: Option<&String>) -> Checked {
    bounded("name", name, NAME_MAX)?;
    match slug {
        Some(slug) => dns_label("slug", slug, DNS_LABEL_MAX),
        None => Ok(()),
    }
}

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

impl CreateProject {
    pub fn validate(&self) -> Checked {
        check_name_and_slug(&self.name, self.slug.as_ref())
    }
}

impl RenameProject {
    pub fn validate(&self) -> Checked {
        check_name_and_slug(&self.name, self.slug.as_ref())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_or_renamed_project_names_the_field_it_refuses() {
        let create = |name: &str, slug: Option<&str>| CreateProject {
            name: name.into(),
            slug: slug.map(str::to_string),
            description: None,
            display_order: None,
        };
        let rename = |name: &str, slug: Option<&str>| RenameProject {
            name: name.into(),
            slug: slug.map(str::to_string),
        };
        assert!(create("Shop", None).validate().is_ok());
        assert!(create("Shop", Some("shop-1")).validate().is_ok());
        assert!(rename("Shop", Some("shop")).validate().is_ok());
        let long = "n".repeat(NAME_MAX + 1);
        for (name, slug, field) in [
            ("", None, "name"),
            (long.as_str(), None, "name"),
            ("Shop", Some("Shop"), "slug"),
            ("Shop", Some("-shop"), "slug"),
        ] {
            assert_eq!(create(name, slug).validate().unwrap_err().field, field);
            assert_eq!(rename(name, slug).validate().unwrap_err().field, field);
        }
    }
}
