//! A backup being deleted (by hand, by its policy's pruning, with its database or organization)
//! takes its artifact with it: the whole file and any partial upload are removed at the target
//! before the finalizer is released. A target or server that no longer exists has nothing left
//! to remove; one that cannot be reached is tried again, for at most [`GIVE_UP_AFTER`], then
//! the backup goes with a Warning naming the file left behind.

use std::time::Duration;

use std::fmt::Debug;

use berth_crds::backup::{
    ARTIFACT_FINALIZER, BackupArtifact, BackupTarget, DependencyResourceBackup,
    DependencyResourceBackupStatus,
};
use berth_crds::volume_backup::StorageVolumeBackup;
use k8s_openapi::jiff::Timestamp;
use kube::core::NamespaceResourceScope;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde::de::DeserializeOwned;

use super::plan::ArtifactPath;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::fresh::release_finalizer;

/// How long a deleted backup keeps trying to reach its target before it goes without it.
const GIVE_UP_AFTER: Duration = Duration::from_secs(15 * 60);

/// A backup whose artifact is at a target: a database's or a storage volume's.
pub trait StoredBackup:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug
{
    fn target_id(&self) -> &str;
    /// The dependency or volume it was taken of (its artifacts' directory).
    fn taken_of(&self) -> &str;
    /// What it was taken of, for people.
    fn taken_of_described(&self) -> String;
    fn status(&self) -> Option<&DependencyResourceBackupStatus>;

    fn artifact(&self) -> Option<&BackupArtifact> {
        self.status().and_then(|s| s.artifact.as_ref())
    }
}

impl StoredBackup for DependencyResourceBackup {
    fn target_id(&self) -> &str {
        &self.spec.target_id
    }
    fn taken_of(&self) -> &str {
        &self.spec.dependency_resource_id
    }
    fn taken_of_described(&self) -> String {
        self.spec.dependency_resource_id.clone()
    }
    fn status(&self) -> Option<&DependencyResourceBackupStatus> {
        self.status.as_ref()
    }
}

impl StoredBackup for StorageVolumeBackup {
    fn target_id(&self) -> &str {
        &self.spec.target_id
    }
    fn taken_of(&self) -> &str {
        &self.spec.storage_volume_id
    }
    fn taken_of_described(&self) -> String {
        format!("storage volume {}", self.spec.storage_volume_id)
    }
    fn status(&self) -> Option<&DependencyResourceBackupStatus> {
        self.status.as_ref()
    }
}

/// Where the artifact of `backup` is, or would be: its recorded location, else the place its
/// target gives it. `None` when neither is known.
fn artifact_place(
    backup: &impl StoredBackup,
    target: Option<&BackupTarget>,
    namespace: &str,
) -> Option<(String, ArtifactPath)> {
    let recorded = backup
        .artifact()
        .and_then(|artifact| ArtifactPath::from_location(&artifact.location));
    recorded.or_else(|| {
        let directory = &target?.spec.server_directory;
        let path = ArtifactPath::of(
            &directory.path,
            namespace,
            backup.taken_of(),
            &backup.name_any(),
        );
        Some((directory.server_id.clone(), path))
    })
}

/// Removes the artifact of a backup being deleted, then releases its finalizer.
pub async fn remove_artifact<K: StoredBackup>(
    backup: &K,
    context: &Context,
    namespace: &str,
) -> Result<Action> {
    let api = Api::<K>::namespaced(context.client.clone(), namespace);
    if !backup.finalizers().iter().any(|f| f == ARTIFACT_FINALIZER) {
        return Ok(Action::await_change());
    }
    let targets = Api::<BackupTarget>::namespaced(context.client.clone(), namespace);
    let target = targets.get_opt(backup.target_id()).await?;
    if let Some((server, path)) = artifact_place(backup, target.as_ref(), namespace) {
        let left = match remove_at(context, namespace, &server, &path).await {
            Ok(refused) => refused,
            // The server is gone: nothing Berth can reach is left.
            Err(Error::InvalidSpec(_)) => None,
            Err(error) if gave_up(backup) => Some(error.to_string()),
            Err(error) => return Err(error),
        };
        if let Some(why) = left {
            let note = format!(
                "the artifact {} was left on server {server}: {why}",
                path.file
            );
            let reference = backup.object_ref(&());
            context
                .publish_event(&reference, EventType::Warning, "ArtifactLeft", note)
                .await;
        }
    }
    release_finalizer(&api, backup, ARTIFACT_FINALIZER).await?;
    Ok(Action::await_change())
}

/// Removes the artifact at `server`: what `rm` said when it refused (a retry would not help).
async fn remove_at(
    context: &Context,
    namespace: &str,
    server: &str,
    path: &ArtifactPath,
) -> Result<Option<String>> {
    let (_, store) = connect(context, namespace, server).await?;
    let output = store.connection.exec(&path.remove_command()).await?;
    let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Ok((output.exit_status != Some(0)).then_some(said))
}

fn gave_up(backup: &impl StoredBackup) -> bool {
    let since = backup.meta().deletion_timestamp.as_ref().map(|t| t.0);
    since.is_some_and(|at| {
        Timestamp::now().duration_since(at).as_secs() >= GIVE_UP_AFTER.as_secs() as i64
    })
}
