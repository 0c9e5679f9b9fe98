//! What a resource's storage attachments mount, decided from the StorageVolumes they name (the
//! caller looks them up): a named volume is the Docker volume Berth names after it, a bind
//! mount the server's directory. An attachment whose volume does not exist, or cannot be
//! mounted, stops the attempt naming it: mounting something else in its place (an empty Docker
//! volume instead of a bind-mounted directory, say) would let the application write its data
//! where nobody looks.

use std::collections::HashMap;
use std::sync::Arc;

use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::resource::{Resource, volume_name};
use berth_crds::storage_volume::{StorageVolume, StorageVolumeKind};
use kube::ResourceExt;

use super::{PlanError, plan_error};

/// The StorageVolumes of the resource's namespace its attachments name, by id; ids without
/// an object are absent.
pub type AttachedVolumes = HashMap<String, Arc<StorageVolume>>;

/// One mount of the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeMount {
    pub kind: StorageVolumeKind,
    /// The Docker volume's name, or the directory on the server.
    pub source: String,
    /// The path inside the container.
    pub target: String,
}

/// The container's mounts, in the order of the attachments.
pub fn mounts(
    resource: &Resource,
    volumes: &AttachedVolumes,
) -> Result<Vec<VolumeMount>, PlanError> {
    let namespace = resource.namespace().unwrap_or_default();
    resource
        .spec
        .storage_attachments
        .iter()
        .map(|attachment| {
            let id = &attachment.storage_volume_id;
            let volume = volumes.get(id).ok_or_else(|| {
                plan_error(
                    Code::StorageVolumeNotFound,
                    format!(
                        "storage attachment {} names storage volume {id}, which does not exist in \
                         {namespace}: create the StorageVolume or detach it",
                        attachment.attachment_id
                    ),
                )
            })?;
            check(resource, volume)?;
            let source = match volume.spec.kind {
                StorageVolumeKind::NamedVolume => volume_name(&namespace, id),
                StorageVolumeKind::BindMount => volume.spec.source_path.clone().unwrap_or_default(),
            };
            Ok(VolumeMount {
                kind: volume.spec.kind,
                source,
                target: attachment.destination_path.clone(),
            })
        })
        .collect()
}

/// A volume the resource may mount: a valid spec, of the resource's environment.
fn check(resource: &Resource, volume: &StorageVolume) -> Result<(), PlanError> {
    let id = volume.name_any();
    let invalid = |why: String| {
        plan_error(
            Code::StorageVolumeInvalid,
            format!("storage volume {id}: {why}"),
        )
    };
    if let Some(problem) = volume.spec.problem() {
        return Err(invalid(problem));
    }
    if volume.spec.environment_id != resource.spec.environment_id {
        return Err(invalid(format!(
            "it belongs to environment {}, not the resource's ({})",
            volume.spec.environment_id, resource.spec.environment_id
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::resource::ResourceSpec;
    use serde_json::json;

    fn resource(attachments: serde_json::Value) -> Resource {
        let spec: ResourceSpec = serde_json::from_value(json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web",
            "kind": "application", "storageAttachments": attachments,
        }))
        .unwrap();
        let mut resource = Resource::new("web", spec);
        resource.metadata.namespace = Some("org-acme".into());
        resource
    }

    fn volumes(list: &[(&str, serde_json::Value)]) -> AttachedVolumes {
        list.iter()
            .map(|(id, spec)| {
                let mut spec = spec.clone();
                spec["projectId"] = json!("prj-1");
                spec["name"] = json!(id);
                if spec.get("environmentId").is_none() {
                    spec["environmentId"] = json!("env-1");
                }
                let volume = StorageVolume::new(id, serde_json::from_value(spec).unwrap());
                (id.to_string(), Arc::new(volume))
            })
            .collect()
    }

    fn attach(id: &str, path: &str) -> serde_json::Value {
        json!({ "attachmentId": format!("att-{id}"), "storageVolumeId": id, "destinationPath": path })
    }

    #[test]
    fn named_volumes_mount_berths_docker_volume_and_bind_mounts_the_servers_directory() {
        let resource = resource(json!([
            attach("uploads/2", "/data"),
            attach("host", "/srv")
        ]));
        let volumes = volumes(&[
            ("uploads/2", json!({ "kind": "named-volume" })),
            (
                "host",
                json!({ "kind": "bind-mount", "sourcePath": "/var/lib/app" }),
            ),
        ]);
        let planned = mounts(&resource, &volumes).unwrap();
        assert_eq!(
            planned,
            vec![
                VolumeMount {
                    kind: StorageVolumeKind::NamedVolume,
                    source: "berth-org-acme-uploads-2".into(),
                    target: "/data".into(),
                },
                VolumeMount {
                    kind: StorageVolumeKind::BindMount,
                    source: "/var/lib/app".into(),
                    target: "/srv".into(),
                },
            ]
        );
    }

    #[test]
    fn a_missing_or_unmountable_volume_stops_the_attempt_naming_it() {
        let missing =
            mounts(&resource(json!([attach("gone", "/data")])), &volumes(&[])).unwrap_err();
        assert_eq!(missing.code, "storage_volume_not_found");
        assert!(
            missing.message.contains("storage volume gone"),
            "{}",
            missing.message
        );
        let no_path = volumes(&[("host", json!({ "kind": "bind-mount" }))]);
        let error = mounts(&resource(json!([attach("host", "/srv")])), &no_path).unwrap_err();
        assert_eq!(error.code, "storage_volume_invalid");
        assert!(error.message.contains("sourcePath"), "{}", error.message);
        let elsewhere = volumes(&[(
            "v",
            json!({ "kind": "named-volume", "environmentId": "env-2" }),
        )]);
        let error = mounts(&resource(json!([attach("v", "/d")])), &elsewhere).unwrap_err();
        assert_eq!(error.code, "storage_volume_invalid");
        assert!(error.message.contains("env-2"), "{}", error.message);
    }
}
