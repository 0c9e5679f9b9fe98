//! Spec §4.1 deployment-overlay and route-surface decisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decisions::{ActorInput, ContextFields, JsonMap, MAX_KEY, ResourceRefs, check_keys};
use crate::validate::{Checked, bounded};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DecideOverlay {
    /// Operation to decide on.
    pub operation_key: String,
    /// What asks, e.g. `cli`.
    pub source: String,
    /// Capability the operation belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_key: Option<String>,
    /// Tenant the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Account the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The caller's organization (filled in when omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    /// Who acts; the caller, filled in when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<ActorInput>,
    /// Ids the decision is about; a deploy token may name only ids in its scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<ResourceRefs>,
    /// Arbitrary attributes (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<JsonMap>,
    /// Arbitrary details (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonMap>,
}

impl DecideOverlay {
    /// Every check that needs no caller (the server adds organization, actor and scope).
    pub fn validate(&self) -> Checked {
        check_keys(
            &self.operation_key,
            &self.source,
            self.capability_key.as_ref(),
        )?;
        ContextFields {
            tenant_id: self.tenant_id.as_ref(),
            account_id: self.account_id.as_ref(),
            resource_refs: self.resource_refs.as_ref(),
            attributes: self.attributes.as_ref(),
            details: self.details.as_ref(),
        }
        .validate()
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DecideRouteSurface {
    /// Operation to decide on.
    pub operation_key: String,
    /// What asks, e.g. `cli`.
    pub source: String,
    /// Kind of route surface, e.g. `generated-access`.
    pub surface_kind: String,
    /// Capability the operation belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_key: Option<String>,
    /// Tenant the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Account the record belongs to, if the caller tracks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The caller's organization (filled in when omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    /// Who acts; the caller, filled in when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<ActorInput>,
    /// Ids the decision is about; a deploy token may name only ids in its scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<ResourceRefs>,
    /// Arbitrary attributes (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<JsonMap>,
    /// Arbitrary details (at most 16 KiB of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonMap>,
}

impl DecideRouteSurface {
    /// Every check that needs no caller (the server adds organization, actor and scope).
    pub fn validate(&self) -> Checked {
        check_keys(
            &self.operation_key,
            &self.source,
            self.capability_key.as_ref(),
        )?;
        bounded("surfaceKind", &self.surface_kind, MAX_KEY)?;
        ContextFields {
            tenant_id: self.tenant_id.as_ref(),
            account_id: self.account_id.as_ref(),
            resource_refs: self.resource_refs.as_ref(),
            attributes: self.attributes.as_ref(),
            details: self.details.as_ref(),
        }
        .validate()
    }
}
