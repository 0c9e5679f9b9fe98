//! StorageVolume: durable storage a resource mounts (Appaloft's storage volume): a Docker volume
//! Berth names, or a directory of the server mounted as it is.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};

pub use berth_vocabulary::storage::{StorageVolumeKind, check_source_path};

/// A storage volume of an environment. Deleting it keeps the data on servers.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "StorageVolume",
    namespaced,
    shortname = "bvol",
    category = "berth",
    doc = "Durable storage resources mount: a named Docker volume or a directory of the server.",
    status = "StorageVolumeStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".spec.sourcePath"}"#,
    printcolumn = r#"{"name":"Environment","type":"string","jsonPath":".spec.environmentId"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeSpec {
    /// Id (object name) of the Project the volume belongs to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub project_id: String,
    /// Id (object name) of the Environment the volume belongs to; only its resources attach it.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub environment_id: String,
    /// Display name; its slug is unique among the environment's volumes.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// `named-volume` (the Docker volume `berth-<namespace>-<name of this object>`) or
    /// `bind-mount` (the server's directory `sourcePath`).
    pub kind: StorageVolumeKind,
    /// Absolute path of a directory on the server; required for `bind-mount`, not allowed for
    /// `named-volume` (the controller refuses to mount a volume that breaks this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = TEXT_MAX), regex(pattern = r"^/[^;&|`$<>\s]+$"))]
    pub source_path: Option<String>,
    /// Free-text description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = DESCRIPTION_MAX))]
    pub description: Option<String>,
}

impl StorageVolumeSpec {
    /// What makes the volume unusable, said as the controller reports it: the `sourcePath`
    /// rule the schema cannot express (Kubernetes 1.20 has no CEL).
    pub fn problem(&self) -> Option<String> {
        check_source_path(self.kind, self.source_path.as_deref())
            .err()
            .map(|error| format!("spec.{}", error.message))
    }
}

/// What the controller observed about a storage volume.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeStatus {
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the spec is one Berth can mount.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: &str, source_path: Option<&str>) -> StorageVolumeSpec {
        serde_json::from_value(serde_json::json!({
            "projectId": "p", "environmentId": "e", "name": "Data", "kind": kind,
            "sourcePath": source_path,
        }))
        .unwrap()
    }

    #[test]
    fn the_source_path_rule_is_reported_naming_the_field() {
        assert_eq!(spec("named-volume", None).problem(), None);
        assert_eq!(spec("bind-mount", Some("/srv/data")).problem(), None);
        let missing = spec("bind-mount", None).problem().unwrap();
        assert!(
            missing.starts_with("spec.sourcePath is required"),
            "{missing}"
        );
        let forbidden = spec("named-volume", Some("/srv")).problem().unwrap();
        assert!(forbidden.starts_with("spec.sourcePath"), "{forbidden}");
        assert!(spec("bind-mount", Some("/srv/../etc")).problem().is_some());
    }
}
