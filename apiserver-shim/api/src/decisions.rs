//! Spec §4.1 and §4.6: capability and entitlement queries, and what every decision or usage
//! record request shares (its context fields and their limits).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Checked, FieldError, bounded, optional_text};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityQuery {
    /// 1-100 operations to decide on.
    pub queries: Vec<OperationKeyQuery>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationKeyQuery {
    /// Operation, e.g. `deployments.create`.
    pub operation_key: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EntitlementQuery {
    /// 1-100 capabilities to check.
    pub queries: Vec<CapabilityKeyQuery>,
}

impl CapabilityQuery {
    pub fn validate(&self) -> Checked {
        count_queries(self.queries.len())?;
        for (index, query) in self.queries.iter().enumerate() {
            let field = format!("queries[{index}].operationKey");
            bounded(&field, &query.operation_key, MAX_KEY)?;
        }
        Ok(())
    }
}

impl EntitlementQuery {
    pub fn validate(&self) -> Checked {
        count_queries(self.queries.len())?;
        for (index, query) in self.queries.iter().enumerate() {
            let field = format!("queries[{index}].capabilityKey");
            bounded(&field, &query.capability_key, MAX_KEY)?;
        }
        Ok(())
    }
}

/// 1 to [`MAX_QUERIES`] queries.
pub fn count_queries(count: usize) -> Checked {
    if count == 0 || count > MAX_QUERIES {
        return Err(FieldError::new(
            "queries",
            format!("queries must hold 1 to {MAX_QUERIES} entries"),
        ));
    }
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityKeyQuery {
    /// Capability, e.g. `custom-domains`.
    pub capability_key: String,
}

/// Longest key, source or id a record holds.
pub const MAX_KEY: usize = 256;
/// Largest `attributes` or `details` map, as JSON: records live in etcd.
pub const MAX_MAP_BYTES: usize = 16 * 1024;
/// Most entries in `resourceRefs`.
pub const MAX_REFS: usize = 32;
/// Longest key of `resourceRefs`.
pub const MAX_REF_KEY: usize = 64;
/// Most queries one capability or entitlement call may carry.
pub const MAX_QUERIES: usize = 100;

pub use berth_vocabulary::decisions::{Actor, DecisionContext, JsonMap, Quantity, ResourceRefs};

/// Who acts, as a decision or usage request may state it; the server checks it is the caller.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActorInput {
    /// `user` or `deploy-token`; must be the caller's kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Must be the caller's id (user id or deploy token id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Must be the signed-in user's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Must be the signed-in user's email.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// The context fields every decision and usage request carries, borrowed for their checks.
#[derive(Clone, Copy)]
pub struct ContextFields<'a> {
    pub tenant_id: Option<&'a String>,
    pub account_id: Option<&'a String>,
    pub resource_refs: Option<&'a ResourceRefs>,
    pub attributes: Option<&'a JsonMap>,
    pub details: Option<&'a JsonMap>,
}

impl ContextFields<'_> {
    /// What needs no caller: ids and references within their limits, maps within
    /// [`MAX_MAP_BYTES`]. The server then checks the organization, actor and scope.
    pub fn validate(&self) -> Checked {
        for (field, value) in [("tenantId", self.tenant_id), ("accountId", self.account_id)] {
            optional_text(field, value, MAX_KEY)?;
        }
        if let Some(refs) = self.resource_refs {
            if refs.len() > MAX_REFS {
                return Err(FieldError::new(
                    "resourceRefs",
                    format!("resourceRefs may hold at most {MAX_REFS} entries"),
                ));
            }
            for (key, value) in refs {
                bounded("resourceRefs", key, MAX_REF_KEY)?;
                bounded(&format!("resourceRefs.{key}"), value, MAX_KEY)?;
            }
        }
        for (field, map) in [("attributes", self.attributes), ("details", self.details)] {
            let size = map
                .map(|m| serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX))
                .unwrap_or(0);
            if size > MAX_MAP_BYTES {
                return Err(FieldError::new(
                    field,
                    format!("{field} must be at most {MAX_MAP_BYTES} bytes of JSON"),
                ));
            }
        }
        Ok(())
    }
}

/// The keys a decision request carries: `operationKey`, `source`, `capabilityKey`.
pub fn check_keys(operation_key: &str, source: &str, capability_key: Option<&String>) -> Checked {
    bounded("operationKey", operation_key, MAX_KEY)?;
    bounded("source", source, MAX_KEY)?;
    optional_text("capabilityKey", capability_key, MAX_KEY)
}

/// The context fields of a decision or usage request, as given (spec §2.2: tenant, account,
/// organization, actor, resource references, attributes, details), taken out of the body for
/// the server to check against the caller and complete.
#[derive(Default)]
pub struct ContextInput {
    pub tenant_id: Option<String>,
    pub account_id: Option<String>,
    pub organization_id: Option<String>,
    pub actor: Option<ActorInput>,
    pub resource_refs: Option<ResourceRefs>,
    pub attributes: Option<JsonMap>,
    pub details: Option<JsonMap>,
}

/// `context_fields` and `take_context` for a request body that declares the context fields as
/// every decision and usage request does. A macro because the declarations are not a shared
/// struct: flattened, serde's unknown-field error (the 422's message) no longer lists them.
macro_rules! context_accessors {
    ($body:ty) => {
        impl $body {
            /// The context fields, borrowed for their checks.
            pub fn context_fields(&self) -> $crate::decisions::ContextFields<'_> {
                $crate::decisions::ContextFields {
                    tenant_id: self.tenant_id.as_ref(),
                    account_id: self.account_id.as_ref(),
                    resource_refs: self.resource_refs.as_ref(),
                    attributes: self.attributes.as_ref(),
                    details: self.details.as_ref(),
                }
            }

            /// The context fields, taken out of the body.
            pub fn take_context(&mut self) -> $crate::decisions::ContextInput {
                $crate::decisions::ContextInput {
                    tenant_id: self.tenant_id.take(),
                    account_id: self.account_id.take(),
                    organization_id: self.organization_id.take(),
                    actor: self.actor.take(),
                    resource_refs: self.resource_refs.take(),
                    attributes: self.attributes.take(),
                    details: self.details.take(),
                }
            }
        }
    };
}
pub(crate) use context_accessors;

/// The Capability decision record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityDecision {
    pub operation_key: String,
    pub allowed: bool,
    /// `unrestricted` on self-hosted Berth.
    pub mode: String,
    pub hint: String,
    pub reason: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct CapabilityAnswer {
    pub capabilities: Vec<CapabilityDecision>,
}

/// The Entitlement record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Entitlement {
    pub capability_key: String,
    pub entitled: bool,
    /// `entitled`.
    pub status: String,
    /// `unrestricted`: nothing limits the capability.
    pub mode: String,
    pub hint: String,
    pub reason: String,
    /// `self-hosted`.
    pub source: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct EntitlementAnswer {
    pub entitlements: Vec<Entitlement>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_limits_name_their_field() {
        let long = "a".repeat(MAX_KEY + 1);
        let refs: ResourceRefs = [("projectId".to_string(), String::new())].into();
        let big: JsonMap = [("k".to_string(), "x".repeat(MAX_MAP_BYTES).into())]
            .into_iter()
            .collect();
        let none = ContextFields {
            tenant_id: None,
            account_id: None,
            resource_refs: None,
            attributes: None,
            details: None,
        };
        assert!(none.validate().is_ok());
        let cases = [
            (
                ContextFields {
                    tenant_id: Some(&long),
                    ..none
                },
                "tenantId",
            ),
            (
                ContextFields {
                    resource_refs: Some(&refs),
                    ..none
                },
                "resourceRefs.projectId",
            ),
            (
                ContextFields {
                    details: Some(&big),
                    ..none
                },
                "details",
            ),
        ];
        for (fields, field) in cases {
            assert_eq!(fields.validate().unwrap_err().field, field);
        }
        assert_eq!(
            check_keys("", "cli", None).unwrap_err().field,
            "operationKey"
        );
    }
}
