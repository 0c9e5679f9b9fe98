//! A resource's runtime control: start, stop, restart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeControlRequest {
    /// `stop`, `start` or `restart`.
    pub operation: String,
}
