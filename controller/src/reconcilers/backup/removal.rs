//! A backup being deleted (by hand, by its policy's pruning, with its database or organization)
//! takes its artifact with it: the whole file and any partial upload (or the object) are removed at the target
//! before the finalizer is released. A target or server that no longer exists has nothing left
//! to remove; one that cannot be reached is tried again, for at most [`GIVE_UP_AFTER`], then
//! the backup goes with a Warning naming the file left behind.

use std::time::Duration;

use std::fmt::Debug;

use berth_crds::backup::{
    ARTIFACT_FINALIZER, BackupArtifact, BackupTarget, DependencyResourceBackup,
    DependencyResourceBackupStatus, PolicySlot,
};
use berth_crds::volume_backup::StorageVolumeBackup;
use k8s_openapi::jiff::Timestamp;
use kube::core::NamespaceResourceScope;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde::de::DeserializeOwned;

use super::store::Store;
use crate::context::Context;
use crate::error::{Error, Result};
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
    /// The policy slot it was taken for, if a policy took it.
    fn slot(&self) -> &PolicySlot;

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
    fn slot(&self) -> &PolicySlot {
        &self.spec.slot
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
    fn slot(&self) -> &PolicySlot {
        &self.spec.slot
    }
}

/// Where the artifact of `backup` is, or would be: its recorded location, else the place its
/// target gives it (an upload cut short). `None` when neither is known; why not, when the
/// place cannot be opened.
async fn artifact_store(
    backup: &impl StoredBackup,
    target: Option<&BackupTarget>,
    context: &Context,
    namespace: &str,
) -> Result<Option<std::result::Result<Store, String>>> {
    if let Some(artifact) = backup.artifact() {
        let store = Store::of_artifact(context, namespace, &artifact.location, target).await?;
        return Ok(Some(store));
    }
    let Some(target) = target else {
        return Ok(None);
    };
    let (of, name) = (backup.taken_of(), backup.name_any());
    let store = Store::for_new(context, namespace, target, of, &name).await?;
    Ok(Some(store.map_err(|failure| failure.message)))
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
    let left_at_target = |why: String| {
        format!(
            "the artifact of {} was left at its target: {why}",
            backup.name_any()
        )
    };
    let left = match artifact_store(backup, target.as_ref(), context, namespace).await {
        Ok(None) => None,
        Ok(Some(Err(why))) => Some(left_at_target(why)),
        Ok(Some(Ok(store))) => {
            let left = |why: String| format!("the artifact {} was left: {why}", store.described());
            match store.remove().await {
                Ok(refused) => refused.map(left),
                Err(error) if gave_up(backup) => Some(left(error.to_string())),
                Err(error) => return Err(error),
            }
        }
        // The server is gone: nothing Berth can reach is left.
        Err(Error::InvalidSpec(_)) => None,
        Err(error) if gave_up(backup) => Some(left_at_target(error.to_string())),
        Err(error) => return Err(error),
    };
    if let Some(note) = left {
        let reference = backup.object_ref(&());
        context
            .publish_event(&reference, EventType::Warning, "ArtifactLeft", note)
            .await;
    }
    release_finalizer(&api, backup, ARTIFACT_FINALIZER).await?;
    Ok(Action::await_change())
}

fn gave_up(backup: &impl StoredBackup) -> bool {
    let since = backup.meta().deletion_timestamp.as_ref().map(|t| t.0);
    since.is_some_and(|at| {
        Timestamp::now().duration_since(at).as_secs() >= GIVE_UP_AFTER.as_secs() as i64
    })
}
