//! Spec §4.1 deployment-overlay and route-surface decisions.

use berth_vocabulary::decisions::DecisionContext;
use schemars::{JsonSchema, Schema};
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

/// Fields the deployment-overlay and route-surface records share (spec §2.2).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionFields {
    pub id: String,
    pub operation_key: String,
    /// `enabled`.
    pub decision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_key: Option<String>,
    pub decided_at: String,
    #[serde(flatten)]
    pub context: DecisionContext,
}

/// What one decision kind adds to the record and result every kind shares (flattened into
/// both), and how the OpenAPI document names and describes them: `{K}Record`, `{K}Result`…
/// after the type's name.
pub trait OwnFields: Serialize + JsonSchema + Clone + Send + Sync + 'static {
    /// The `schemaVersion` of its records.
    const SCHEMA_VERSION: &'static str;
    /// The description of its record's schema.
    const RECORD: &'static str;
    /// The description of its result's schema.
    const RESULT: &'static str;
    /// Its list filters beyond [`FILTERS`], in the order of `filter_values`.
    const FILTERS: &'static [&'static str];
    fn filter_values(&self) -> Vec<Option<&str>>;
}

/// A deployment-overlay decision adds nothing.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
pub struct Overlay {}

impl OwnFields for Overlay {
    const SCHEMA_VERSION: &'static str = "deployment-overlay.decision/v1";
    const RECORD: &'static str = "The Deployment-overlay decision record of spec §2.2.";
    const RESULT: &'static str = "The Deployment-overlay result of spec §2.2.";
    const FILTERS: &'static [&'static str] = &[];
    fn filter_values(&self) -> Vec<Option<&str>> {
        Vec::new()
    }
}

/// A route-surface decision adds the kind of surface.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurface {
    pub surface_kind: String,
}

impl OwnFields for RouteSurface {
    const SCHEMA_VERSION: &'static str = "route-surface.decision/v1";
    const RECORD: &'static str = "The Route-surface decision record of spec §2.2.";
    const RESULT: &'static str = "The Route-surface result of spec §2.2.";
    const FILTERS: &'static [&'static str] = &["surfaceKind"];
    fn filter_values(&self) -> Vec<Option<&str>> {
        vec![Some(self.surface_kind.as_str())]
    }
}

/// A decision record of spec §2.2: the shared fields, then the kind's own.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{K}Record", transform = describe_record::<K>)]
pub struct DecisionRecord<K: OwnFields> {
    /// [`OwnFields::SCHEMA_VERSION`].
    pub schema_version: String,
    #[serde(flatten)]
    pub fields: DecisionFields,
    #[serde(flatten)]
    pub own: K,
}

/// A decision result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{K}Result", transform = describe_result::<K>)]
pub struct DecisionResult<K: OwnFields> {
    pub operation_key: String,
    pub decision: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    #[serde(flatten)]
    pub own: K,
    pub record: DecisionRecord<K>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "{K}Answer")]
pub struct DecisionAnswer<K: OwnFields> {
    pub result: DecisionResult<K>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "{K}List")]
pub struct DecisionList<K: OwnFields> {
    pub records: Vec<DecisionRecord<K>>,
}

/// A record's schema says which kind it is, and its `schemaVersion`.
fn describe_record<K: OwnFields>(schema: &mut Schema) {
    schema.insert("description".into(), K::RECORD.into());
    let version = format!("`{}`.", K::SCHEMA_VERSION);
    if let Some(property) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("schemaVersion"))
    {
        property["description"] = version.into();
    }
}

/// A result's schema says which kind it is.
fn describe_result<K: OwnFields>(schema: &mut Schema) {
    schema.insert("description".into(), K::RESULT.into());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A client reads an answer back into the record it was written from: the kind's own
    /// fields and the context, both flattened, land where they were.
    #[test]
    fn a_decision_answer_reads_back_from_its_wire_form() {
        let wire = json!({"result": {
            "operationKey": "routes.publish", "decision": "enabled", "allowed": true,
            "source": "cli", "surfaceKind": "http",
            "record": {
                "schemaVersion": RouteSurface::SCHEMA_VERSION, "id": "rsd-1",
                "operationKey": "routes.publish", "decision": "enabled", "source": "cli",
                "decidedAt": "2030-01-01T00:00:00Z", "surfaceKind": "http",
                "organizationId": "shop", "actor": {"kind": "user", "id": "usr-1"},
                "resourceRefs": {"resourceId": "res-1"}, "attributes": {"tier": 1},
            },
        }});
        let answer: DecisionAnswer<RouteSurface> = serde_json::from_value(wire.clone()).unwrap();
        let record = &answer.result.record;
        assert_eq!(record.own.surface_kind, "http");
        assert_eq!(
            record.fields.context.organization_id.as_deref(),
            Some("shop")
        );
        assert_eq!(serde_json::to_value(&answer).unwrap(), wire);
    }
}
