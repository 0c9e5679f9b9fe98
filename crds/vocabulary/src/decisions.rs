//! What every decision and usage record carries (spec §2.1 and §2.2): who acted, an amount
//! with its unit, the ids a record is about and free-form data. Stored in the specs of
//! UsageIntent, OverlayDecision and RouteSurfaceDecision and answered by their routes, so it
//! lives below both.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A map of string to arbitrary JSON values (spec §2.1 `details` and `attributes`).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// References to the objects a record is about (spec §2.1 `resourceRefs`): `organizationId`,
/// `projectId`, `environmentId`, `resourceId`, `serverId`, `destinationId`, `deploymentId` and
/// any other string-valued keys.
pub type ResourceRefs = BTreeMap<String, String>;

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

/// The context every decision and usage record carries (spec §2.2 usage-intent,
/// deployment-overlay and route-surface records): whose record it is, who acted, what it is
/// about, and free-form data. Flattened into each kind's spec, so its fields sit directly under
/// `spec` as in the records.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionContext {
    /// Id of the tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub tenant_id: Option<String>,
    /// Id of the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub account_id: Option<String>,
    /// Id of the Organization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub organization_id: Option<String>,
    /// Who acted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    /// Ids of the objects the record is about, by key (`resourceId`, `routeId`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<ResourceRefs>,
    /// Arbitrary attributes of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::decisions::optional_arbitrary_object")]
    pub attributes: Option<JsonMap>,
    /// Arbitrary details of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::decisions::optional_arbitrary_object")]
    pub details: Option<JsonMap>,
}

/// Schema of an optional arbitrary JSON object the API server keeps as it is. Deliberately
/// without `additionalProperties: true` (what schemars derives for a map of JSON values): next
/// to `x-kubernetes-preserve-unknown-fields`, Kubernetes 1.20 then prunes the fields of objects
/// nested in lists.
pub fn optional_arbitrary_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
