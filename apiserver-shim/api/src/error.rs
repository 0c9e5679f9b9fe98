//! The one error envelope of every failed request:
//! `{"error":{"code","category","message","retriable","details"}}` — written by the shim, read by
//! the CLI and any other client.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of every error response.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// What went wrong, for people and for programs.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `validation_error`.
    pub code: Cow<'static, str>,
    /// Who can fix it: `user`, `auth`, `conflict` or `infra`.
    pub category: Cow<'static, str>,
    /// Human-readable explanation; never contains a secret value.
    pub message: String,
    /// Whether repeating the same request may succeed.
    pub retriable: bool,
    /// Structured context, e.g. the offending `field`.
    #[serde(default)]
    pub details: Map<String, Value>,
}
