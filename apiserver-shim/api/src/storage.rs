//! A resource's storage attachments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{OBJECT_NAME_MAX, TEXT_MAX};
use crate::validate::{Checked, FieldError, bounded};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachStorage {
    /// Id of the storage volume (>= 1 character).
    pub storage_volume_id: String,
    /// Absolute path inside the container.
    pub destination_path: String,
}

impl AttachStorage {
    /// The volume id and an absolute destination path (a path already in use is the
    /// server's to refuse).
    pub fn validate(&self) -> Checked {
        bounded("storageVolumeId", &self.storage_volume_id, OBJECT_NAME_MAX)?;
        bounded("destinationPath", &self.destination_path, TEXT_MAX)?;
        if !self.destination_path.starts_with('/') {
            return Err(FieldError::new(
                "destinationPath",
                "destinationPath must be an absolute path inside the container",
            ));
        }
        Ok(())
    }
}

/// A body with no fields (an empty body is accepted too).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct DetachStorage {}
