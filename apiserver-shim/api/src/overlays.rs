//! Spec §4.1 deployment-overlay and route-surface decisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::decisions::{
    ActorInput, ContextInput, JsonMap, MAX_KEY, ResourceRefs, check_keys, context_accessors,
};
use crate::validate::{Checked, bounded};

/// Declares the request body of one decision kind: the fields every kind takes, with the kind's
/// own after `source`. A macro rather than a shared flattened struct, which would cost serde's
/// unknown-field error (the 422's message) its list of expected fields, in this order.
macro_rules! decision_request {
    ($name:ident { $($own:tt)* }) => {
        #[derive(Serialize, Deserialize, JsonSchema, Debug)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct $name {
            /// Operation to decide on.
            pub operation_key: String,
            /// What asks, e.g. `cli`.
            pub source: String,
            $($own)*
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

        context_accessors!($name);

        impl $name {
            /// Operation, source and capability within their limits.
            fn check_shared_keys(&self) -> Checked {
                check_keys(&self.operation_key, &self.source, self.capability_key.as_ref())
            }

            /// What every kind's request holds, taken out of the body (read its own fields first).
            pub fn into_input(mut self) -> DecisionInput {
                DecisionInput {
                    context: self.take_context(),
                    operation_key: self.operation_key,
                    source: self.source,
                    capability_key: self.capability_key,
                }
            }
        }
    };
}

// No doc comments: they would become descriptions the OpenAPI document does not give.
decision_request!(DecideOverlay {});
decision_request!(DecideRouteSurface {
    /// Kind of route surface, e.g. `generated-access`.
    pub surface_kind: String,
});

/// What a decision request of either kind holds, as the server takes it: the caller and the
/// decision itself complete it into a record.
pub struct DecisionInput {
    pub operation_key: String,
    pub source: String,
    pub capability_key: Option<String>,
    pub context: ContextInput,
}

impl DecideOverlay {
    /// Every check that needs no caller (the server adds organization, actor and scope).
    pub fn validate(&self) -> Checked {
        self.check_shared_keys()?;
        self.context_fields().validate()
    }
}

impl DecideRouteSurface {
    /// Every check that needs no caller (the server adds organization, actor and scope).
    pub fn validate(&self) -> Checked {
        self.check_shared_keys()?;
        bounded("surfaceKind", &self.surface_kind, MAX_KEY)?;
        self.context_fields().validate()
    }
}
