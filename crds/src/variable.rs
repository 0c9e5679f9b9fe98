//! Variables shared by environments and resources (spec §2.2 "Secret/variable entry").

use schemars::JsonSchema;
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
    /// Value, stored in plain text.
    pub value: String,
    /// `runtime` (default) or `build-time`.
    #[serde(default)]
    pub exposure: VariableExposure,
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
