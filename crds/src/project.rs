//! Project: groups environments and resources inside an organization (spec §2.2 "Project").

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::variable::PlainVariable;

use crate::Condition;
use crate::lifecycle::LifecycleStatus;
use crate::limits::{DNS_LABEL_MAX, DNS_LABEL_PATTERN, NAME_MAX};

/// A project. Archiving (`spec.archived: true`, or `DELETE /projects/{id}`) is a status
/// transition: the object and its history stay readable.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Project",
    namespaced,
    shortname = "prj",
    category = "berth",
    doc = "A project: groups environments and resources; archiving keeps its history readable.",
    status = "ProjectStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Lifecycle","type":"string","jsonPath":".status.lifecycleStatus"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSpec {
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// URL-safe short name; derived from the name when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = DNS_LABEL_MAX),
        regex(pattern = DNS_LABEL_PATTERN)
    )]
    pub slug: Option<String>,
    /// Free-text description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Position in ordered lists; lower comes first.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub display_order: i64,
    /// Set to archive the project; its history stays readable.
    #[serde(default)]
    pub archived: bool,
    /// Why the project was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    /// Plain (non-secret) variables every resource of this project inherits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::variable::variables_schema")]
    pub variables: Vec<PlainVariable>,
}

/// What the controller observed about a project.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectStatus {
    /// `active` or `archived`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
    /// When the project was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Time>,
    /// Why the project was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the project is usable.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
