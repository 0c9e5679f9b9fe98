//! Organization: a tenant. Cluster-scoped; owns one namespace that holds everything else of it.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::variable::PlainVariable;

use crate::Condition;
use crate::limits::{DNS_LABEL_PATTERN, NAME_MAX, ORGANIZATION_SLUG_MAX};

/// Condition reasons of an Organization.
pub mod reason {
    /// `Ready=True`: the organization's namespace exists.
    pub const NAMESPACE_READY: &str = "NamespaceReady";
}

/// An organization: members, projects, servers and tokens live in the namespace it owns.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Organization",
    shortname = "org",
    category = "berth",
    doc = "An organization (tenant); owns the namespace holding its projects, servers and tokens.",
    status = "OrganizationStatus",
    printcolumn = r#"{"name":"Slug","type":"string","jsonPath":".spec.slug"}"#,
    printcolumn = r#"{"name":"Namespace","type":"string","jsonPath":".status.namespace"}"#,
    printcolumn = r#"{"name":"Members","type":"integer","jsonPath":".status.memberCount"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationSpec {
    /// Display name shown in the console and CLI.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// URL-safe short name: lowercase letters, digits and dashes.
    #[schemars(
        length(min = 1, max = ORGANIZATION_SLUG_MAX),
        regex(pattern = DNS_LABEL_PATTERN)
    )]
    pub slug: String,
    /// Logo image URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub logo_url: Option<String>,
    /// Plain (non-secret) variables every resource of this organization inherits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::variable::variables_schema")]
    pub variables: Vec<PlainVariable>,
}

/// What the controller observed about an organization.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationStatus {
    /// Namespace that holds this organization's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Number of active members.
    #[serde(default)]
    pub member_count: i64,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the namespace exists and is labelled.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Prefix of every organization namespace; keeps them clear of `default` and `kube-*`.
pub const NAMESPACE_PREFIX: &str = "org-";

impl Organization {
    /// The namespace this organization owns: `org-<object name>`.
    pub fn namespace_name(name: &str) -> String {
        format!("{NAMESPACE_PREFIX}{name}")
    }
}
