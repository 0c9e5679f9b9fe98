//! The disk artifacts of a runtime usage snapshot: each server's images, volumes and build
//! cache with their bytes, as its observer last read them from Docker (kept in the observation
//! store), attributed to the deployment whose image each is and the resource that declares each
//! volume. An image no container uses any more, such as a previous deployment's, is
//! reclaimable; so is an unused volume no resource declares.

use std::collections::HashMap;

use berth_crds::resource::volume_name;
use berth_crds::storage_volume::StorageVolumeKind;
use berth_observations::DiskRecord;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::ObjectRef;

use super::Scope;
use crate::auth::{Caller, ScopeDimension};
use crate::state::AppState;
use berth_api::monitoring::{Artifact, Evidence};

/// `evidence[].source` (Appaloft's closed set): an attempt's recorded image, a resource's
/// declared volumes, Docker's own report of what it holds.
const DEPLOYMENT_SNAPSHOT: &str = "deployment-snapshot";
const READ_MODEL: &str = "read-model";
const RUNTIME_IDENTITY: &str = "runtime-identity";

/// Who an image or a volume belongs to, and what says so.
#[derive(Clone, Debug, Default)]
struct Owner {
    project_id: Option<String>,
    environment_id: Option<String>,
    resource_id: Option<String>,
    deployment_id: Option<String>,
    /// The reference the owner names the image by.
    reference: Option<String>,
    evidence: Option<Evidence>,
}

/// Owners by image reference (each deployment's `status.imageRef`, the newest deployment
/// winning) and by Docker volume name (each resource's storage attachments).
struct Owners {
    images: HashMap<String, Owner>,
    volumes: HashMap<String, Owner>,
}

impl Owners {
    fn of(state: &AppState, namespace: &str) -> Self {
        let mut deployments: Vec<_> = state
            .caches
            .deployments
            .state()
            .into_iter()
            .filter(|d| d.metadata.namespace.as_deref() == Some(namespace))
            .collect();
        deployments.sort_by_key(|d| d.metadata.creation_timestamp.clone());
        let mut images = HashMap::new();
        for deployment in deployments {
            let Some(image) = deployment.status.as_ref().and_then(|s| s.image_ref.clone()) else {
                continue;
            };
            let spec = &deployment.spec;
            let owner = Owner {
                project_id: Some(spec.project_id.clone()),
                environment_id: Some(spec.environment_id.clone()),
                resource_id: Some(spec.resource_id.clone()),
                deployment_id: deployment.metadata.name.clone(),
                reference: Some(image.clone()),
                evidence: Some(evidence(DEPLOYMENT_SNAPSHOT, "status.imageRef")),
            };
            images.insert(image, owner);
        }
        let mut volumes = HashMap::new();
        for resource in state.caches.resources.state() {
            if resource.metadata.namespace.as_deref() != Some(namespace) {
                continue;
            }
            for attachment in &resource.spec.storage_attachments {
                // A bind-mounted directory is no Docker volume.
                let volume = crate::domain::objects::find_in(
                    &state.caches.storage_volumes,
                    namespace,
                    &attachment.storage_volume_id,
                    "storage volume",
                );
                if volume.is_ok_and(|v| v.spec.kind == StorageVolumeKind::BindMount) {
                    continue;
                }
                let owner = Owner {
                    project_id: Some(resource.spec.project_id.clone()),
                    environment_id: Some(resource.spec.environment_id.clone()),
                    resource_id: resource.metadata.name.clone(),
                    evidence: Some(evidence(READ_MODEL, "spec.storageAttachments")),
                    ..Owner::default()
                };
                volumes.insert(volume_name(namespace, &attachment.storage_volume_id), owner);
            }
        }
        Self { images, volumes }
    }

    fn of_artifact(&self, artifact: &berth_crds::monitoring::DiskArtifact) -> Option<Owner> {
        match artifact.kind.as_str() {
            "image" => std::iter::once(&artifact.id)
                .chain(&artifact.references)
                .find_map(|reference| self.images.get(reference))
                .cloned(),
            "volume" => self.volumes.get(&artifact.id).cloned(),
            _ => None,
        }
    }
}

fn evidence(source: &'static str, key: &str) -> Evidence {
    Evidence {
        source: source.into(),
        key: key.to_string(),
    }
}

/// The disk artifacts of every server in `records` that still exists and is in scope, which
/// the caller may see.
pub(super) fn disk_artifacts(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    scope: &Scope,
    records: &[DiskRecord],
) -> Vec<Artifact> {
    let owners = Owners::of(state, namespace);
    let mut artifacts = Vec::new();
    for record in records {
        let key = ObjectRef::new(&record.server).within(namespace);
        if scope
            .server_id
            .as_ref()
            .is_some_and(|s| *s != record.server)
            || state.caches.servers.get(&key).is_none()
        {
            continue;
        }
        let observed_at = Timestamp::from_millisecond(record.observed_ms)
            .map(|t| t.to_string())
            .unwrap_or_default();
        for disk in &record.artifacts {
            let owner = owners.of_artifact(disk);
            let artifact = artifact(&record.server, &observed_at, disk, owner);
            if in_scope(&artifact, scope) && sees(caller, &artifact) {
                artifacts.push(artifact);
            }
        }
    }
    artifacts
}

fn artifact(
    server: &str,
    observed_at: &str,
    disk: &berth_crds::monitoring::DiskArtifact,
    owner: Option<Owner>,
) -> Artifact {
    let (reclaimable, blocked) = reclaimable(disk, owner.as_ref());
    let attributed = owner.is_some();
    let owner = owner.unwrap_or_default();
    let runtime_id = match disk.kind.as_str() {
        "build-cache" => None,
        "image" => owner
            .reference
            .or_else(|| disk.references.first().cloned())
            .or_else(|| Some(disk.id.clone())),
        _ => Some(disk.id.clone()),
    };
    Artifact {
        kind: kind(&disk.kind).into(),
        ownership: if attributed {
            "attributed".into()
        } else {
            "unattributed".into()
        },
        server_id: server.to_string(),
        project_id: owner.project_id,
        environment_id: owner.environment_id,
        resource_id: owner.resource_id,
        deployment_id: owner.deployment_id,
        destination_id: None,
        runtime_id,
        bytes: disk.bytes,
        inode_count: disk.inode_count,
        observed_at: observed_at.to_string(),
        evidence: owner
            .evidence
            .into_iter()
            .chain([evidence(RUNTIME_IDENTITY, "system/df")])
            .collect(),
        reclaimable: reclaimable.into(),
        reclaim_blocked_reason: blocked,
        warnings: Vec::new(),
    }
}

/// The artifact `kind` on the wire (Appaloft's closed set) of what Docker reports.
fn kind(kind: &str) -> &'static str {
    match kind {
        "image" => "docker-image",
        "volume" => "volume",
        _ => "docker-build-cache",
    }
}

/// `yes` when nothing uses it and nothing declares it; otherwise `no` and why.
fn reclaimable(
    disk: &berth_crds::monitoring::DiskArtifact,
    owner: Option<&Owner>,
) -> (&'static str, Option<String>) {
    let users = match disk.kind.as_str() {
        "image" => "containers use the image",
        "volume" => "containers mount the volume",
        _ => "build cache records are in use by a build",
    };
    match disk.in_use_by {
        None => ("no", Some("Docker did not count what uses it".into())),
        Some(0) if disk.kind == "volume" && owner.is_some() => (
            "no",
            Some(format!(
                "resource {} declares it in spec.storageAttachments",
                owner.and_then(|o| o.resource_id.as_deref()).unwrap_or("")
            )),
        ),
        Some(0) => ("yes", None),
        Some(n) => ("no", Some(format!("{n} {users}"))),
    }
}

/// Whether the artifact falls in the scope's filters; one no resource owns only in a scope
/// that names no project, environment, resource or deployment.
fn in_scope(artifact: &Artifact, scope: &Scope) -> bool {
    let matches = |filter: &Option<String>, id: &Option<String>| {
        filter.as_ref().is_none_or(|f| id.as_ref() == Some(f))
    };
    matches(&scope.project_id, &artifact.project_id)
        && matches(&scope.environment_id, &artifact.environment_id)
        && matches(&scope.resource_id, &artifact.resource_id)
        && matches(&scope.deployment_id, &artifact.deployment_id)
}

/// A deploy token limited to part of the organization sees what it owns there; what no
/// resource owns, it sees if it may reach the server.
fn sees(caller: &Caller, artifact: &Artifact) -> bool {
    let Some(resource) = &artifact.resource_id else {
        return caller.sees(ScopeDimension::Target, &artifact.server_id);
    };
    let id = |id: &Option<String>| id.clone().unwrap_or_default();
    caller.sees(ScopeDimension::Resource, resource)
        && caller.sees(ScopeDimension::Project, &id(&artifact.project_id))
        && caller.sees(ScopeDimension::Environment, &id(&artifact.environment_id))
}
