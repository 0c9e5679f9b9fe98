//! Shapes several kinds share (spec §2.1): actor, quantity, resource references, source
//! descriptor, digests and arbitrary JSON maps.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::limits::{SOURCE_DISPLAY_NAME_MAX, SOURCE_KIND_MAX, SOURCE_KIND_PATTERN, TEXT_MAX};

/// Pattern of every SHA-256 digest Berth stores instead of a secret: `sha256:` and 64 hex digits.
pub const SHA256_DIGEST_PATTERN: &str = r"^sha256:[0-9a-f]{64}$";

/// A map of string to arbitrary JSON values (spec §2.1 `details` and `attributes`).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// Who did something (spec §2.1 `actor`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// Kind of actor, e.g. `user`, `deploy-token`, `system`.
    #[schemars(length(min = 1))]
    pub kind: String,
    /// Id of the actor (user id, token id…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub id: Option<String>,
    /// Id of the user behind the actor, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub user_id: Option<String>,
    /// Email of the user behind the actor, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub email: Option<String>,
}

/// An amount with its unit (spec §2.1 `quantity`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quantity {
    /// The amount.
    pub value: f64,
    /// Unit of the amount, e.g. `deployment`, `byte`, `second`.
    #[schemars(length(min = 1))]
    pub unit: String,
}

/// References to the objects a record is about (spec §2.1 `resourceRefs`): `organizationId`,
/// `projectId`, `environmentId`, `resourceId`, `serverId`, `destinationId`, `deploymentId` and
/// any other string-valued keys.
pub type ResourceRefs = BTreeMap<String, String>;

/// Where a resource's code or artifact comes from (spec §2.2 "Resource source input").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceDescriptor {
    /// Source kind, e.g. `local-folder`, `docker-image`, `git`, `static-directory`.
    #[schemars(length(min = 1, max = SOURCE_KIND_MAX), regex(pattern = SOURCE_KIND_PATTERN))]
    pub kind: String,
    /// Where the source is: a path, an image reference or a repository URL.
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub locator: String,
    /// Name shown for the source in the console and CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = SOURCE_DISPLAY_NAME_MAX))]
    pub display_name: Option<String>,
    /// Directory inside the source to build from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub base_directory: Option<String>,
    /// Extra source facts, e.g. the git ref or commit.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// `true`, for `#[serde(default = ...)]` on flags that default on.
pub(crate) fn default_true() -> bool {
    true
}

/// Schema of an arbitrary JSON object the API server keeps as it is. Deliberately without
/// `additionalProperties: true` (what schemars derives for a map of JSON values): next to
/// `x-kubernetes-preserve-unknown-fields`, Kubernetes 1.20 then prunes the fields of objects
/// nested in lists.
pub(crate) fn arbitrary_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// [`arbitrary_object`] for an optional field.
pub(crate) fn optional_arbitrary_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema of a list of arbitrary JSON objects the API server keeps as they are.
pub(crate) fn arbitrary_object_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
    })
}
