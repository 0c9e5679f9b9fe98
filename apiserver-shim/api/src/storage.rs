//! A resource's storage attachments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachStorage {
    /// Id of the storage volume (>= 1 character).
    pub storage_volume_id: String,
    /// Absolute path inside the container.
    pub destination_path: String,
}

/// A body with no fields (an empty body is accepted too).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct DetachStorage {}
