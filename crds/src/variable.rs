//! Variables shared by environments and resources (spec §2.2 "Secret/variable entry").

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// When a variable is visible: at image build or in the running container.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum VariableExposure {
    BuildTime,
    #[default]
    Runtime,
}

/// A plain (non-secret) variable. Secret values never live in a spec: they go in Secrets.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlainVariable {
    /// Variable name, e.g. `LOG_LEVEL`.
    #[schemars(
        length(min = 1, max = 256),
        regex(pattern = r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    )]
    pub key: String,
    /// Value, stored in plain text; may be empty.
    #[serde(deserialize_with = "empty_if_null")]
    pub value: String,
    /// `runtime` (default) or `build-time`.
    #[serde(default)]
    pub exposure: VariableExposure,
}

fn empty_if_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Option::<String>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Schema of every `variables` list: a server-side-apply map keyed by `key` and `exposure`, so
/// REST and GitOps can each own their own entries of the same list.
pub fn variables_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<Vec<PlainVariable>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["key", "exposure"]),
    );
    schema
}

/// Marks `value` nullable in every `variables` list of a CRD (as JSON). The API server (1.20 as
/// built on the local stack) validates an empty string in a custom resource as null, which
/// would refuse `KEY=`; it still stores and returns "". Runs after the generic normalization,
/// which drops every other `nullable`.
pub(crate) fn allow_empty_values(schema: &mut serde_json::Value) {
    let is_variables =
        schema.get("x-kubernetes-list-map-keys") == Some(&serde_json::json!(["key", "exposure"]));
    if is_variables && let Some(value) = schema.pointer_mut("/items/properties/value") {
        value["nullable"] = true.into();
    }
    match schema {
        serde_json::Value::Object(map) => map.values_mut().for_each(allow_empty_values),
        serde_json::Value::Array(items) => items.iter_mut().for_each(allow_empty_values),
        _ => {}
    }
}

impl VariableExposure {
    /// The exposure as the API and Secret data keys spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BuildTime => "build-time",
            Self::Runtime => "runtime",
        }
    }
}

/// Data key of a secret variable in its Resource's Secret: `<exposure>.<KEY>`.
pub fn secret_data_key(exposure: VariableExposure, key: &str) -> String {
    format!("{}.{key}", exposure.as_str())
}

/// A Secret data key back to `(exposure, KEY)`; a key without an exposure prefix (a Secret
/// written by hand) is a runtime variable.
pub fn parse_secret_data_key(data_key: &str) -> (VariableExposure, &str) {
    if let Some(key) = data_key.strip_prefix("build-time.") {
        (VariableExposure::BuildTime, key)
    } else if let Some(key) = data_key.strip_prefix("runtime.") {
        (VariableExposure::Runtime, key)
    } else {
        (VariableExposure::Runtime, data_key)
    }
}
