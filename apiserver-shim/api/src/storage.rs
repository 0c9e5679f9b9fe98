//! Storage volumes (Appaloft's `/storage-volumes` routes and records) and a resource's storage
//! attachments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};
use crate::validate::{Checked, FieldError, bounded, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::storage::{StorageVolumeKind, check_source_path};

/// `list` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "storage-volumes.list/v1";
/// `show` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "storage-volumes.show/v1";

/// Appaloft's create-storage-volume input.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateStorageVolume {
    /// The project it belongs to (active, in the caller's organization).
    pub project_id: String,
    /// An environment of that project.
    pub environment_id: String,
    /// Display name (1-120 characters); its slug must be free in the environment.
    pub name: String,
    /// `named-volume` or `bind-mount`.
    pub kind: StorageVolumeKind,
    /// For `bind-mount` only, and required there: an absolute directory on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl CreateStorageVolume {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("environmentId", &self.environment_id, OBJECT_NAME_MAX)?;
        bounded("name", &self.name, NAME_MAX)?;
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        check_source_path(self.kind, self.source_path.as_deref())
    }
}

/// `DELETE /storage-volumes/{id}`: an optional confirmation repeating the id (checked when
/// given).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteStorageVolume {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Berth: the volume's name, typed out, to delete a volume a backup policy covers without
    /// the final backup it otherwise gets first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_final_backup_confirmation: Option<String>,
}

/// One resource the volume is attached to (Appaloft's storage volume attachment summary).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeAttachment {
    pub attachment_id: String,
    pub resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_slug: Option<String>,
    /// Absolute path inside the container.
    pub destination_path: String,
    /// `read-write` (Berth mounts every volume read-write).
    pub mount_mode: String,
    /// When it was attached (the resource's creation time for attachments applied with
    /// kubectl without `attachedAt`).
    pub attached_at: String,
}

/// Appaloft's storage volume summary.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeSummary {
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    pub name: String,
    pub slug: String,
    pub kind: StorageVolumeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `active` (a deleted volume is gone, not listed).
    pub lifecycle_status: String,
    pub attachment_count: usize,
    pub attachments: Vec<StorageVolumeAttachment>,
    pub created_at: String,
}

/// `GET /storage-volumes`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeList {
    /// `storage-volumes.list/v1`.
    pub schema_version: String,
    pub items: Vec<StorageVolumeSummary>,
    pub generated_at: String,
}

/// `GET /storage-volumes/{storageVolumeId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeShow {
    /// `storage-volumes.show/v1`.
    pub schema_version: String,
    pub storage_volume: StorageVolumeSummary,
    pub generated_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachStorage {
    /// Id of a storage volume of the resource's project and environment.
    pub storage_volume_id: String,
    /// Absolute path inside the container.
    pub destination_path: String,
}

impl AttachStorage {
    /// The volume id and an absolute destination path (a path already in use, or a volume
    /// that does not exist, is the server's to refuse).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_request_names_the_field_it_breaks() {
        let request = |extra: serde_json::Value| {
            let mut body = serde_json::json!({
                "projectId": "prj-1", "environmentId": "env-1", "name": "Uploads",
                "kind": "named-volume",
            });
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value::<CreateStorageVolume>(body).unwrap()
        };
        assert!(request(serde_json::json!({})).validate().is_ok());
        for (extra, field) in [
            (serde_json::json!({"name": " "}), "name"),
            (serde_json::json!({"projectId": ""}), "projectId"),
            (serde_json::json!({"description": ""}), "description"),
            (serde_json::json!({"sourcePath": "/srv"}), "sourcePath"),
            (serde_json::json!({"kind": "bind-mount"}), "sourcePath"),
        ] {
            assert_eq!(request(extra).validate().unwrap_err().field, field);
        }
        let sent = serde_json::to_value(request(serde_json::json!({}))).unwrap();
        assert!(sent.get("sourcePath").is_none(), "{sent}");
    }
}
