//! DependencyResourceBackup: takes one backup of a managed PostgreSQL or Redis and proves it.
//! The dump is taken in the database's own container (`pg_dump -Fc`, or the snapshot a
//! replica would get from `redis-cli --rdb`: `redis`), streamed through the server's
//! tunnel, sealed by the controller with the organization's key (`seal`) and written to the
//! BackupTarget (a directory on another server, or an S3 bucket: `store`, `s3`), named whole
//! only once complete; then it is read
//! back, checked against its checksum, opened and restored into a throwaway container of the
//! same image, whose tables and rows, or keys, are counted (`job`). Only then is the backup `ready`;
//! anything else ends it `failed` with the cause in one line, a Warning event and a
//! `backup-failed` notification.
//!
//! A backup of an uploaded dump (`spec.uploaded`: a `pg_dump -Fc` made outside Berth, staged on
//! the database's server by the shim) reads that file in place of a dump, refuses it when its
//! SHA-256 is not the upload's, and removes it once the backup has ended.
//!
//! A controller that stops midway finds the backup still pending and takes it again from the
//! start (the artifact's name is fixed; a partial upload never carries it). A server that
//! cannot be reached is tried again with backoff, for at most [`record::GIVE_UP_AFTER`].
//!
//! `plan` (and `redis` for a Redis's commands) decides without I/O; `job`, `redis_job`,
//! `sites` and `transfer` move the bytes, `key` keeps the key,
//! `record` ends a backup object as ready or failed, `removal` takes a deleted backup's
//! artifact with it; `target` checks BackupTargets,
//! `restore` runs DependencyResourceRestores and `policy` takes backups of a database or a
//! volume on a schedule (`policy_kinds`) and prunes them by the rules `prune` decides.

pub mod final_backup;
mod job;
mod key;
mod plan;
mod policy;
mod policy_kinds;
mod prune;
mod record;
mod redis;
mod redis_job;
mod removal;
mod restore;
mod s3;
mod seal;
mod sites;
mod store;
mod target;
mod transfer;
mod tree;
mod volume;
mod volume_plan;
mod volume_restore;
mod volume_users;

pub use policy::run as run_policies;
pub use policy_kinds::BackupPolicy;
pub use restore::run as run_restores;
pub use target::run as run_targets;
pub use volume::run as run_volume_backups;
pub use volume_restore::run as run_volume_restores;

use std::sync::Arc;

use berth_crds::backup::{
    ARTIFACT_FINALIZER, BackupStatus, BackupTarget, DependencyResourceBackup, upload_path,
};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::{DependencyResource, DependencySource, network_name};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use self::job::Upload;
use self::plan::{Failure, code};
use self::record::BackupRecord;
use self::sites::Sites;
use self::store::Store;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::fresh::with_finalizer;
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::dedicated_connection;

const KIND: &str = "DependencyResourceBackup";

/// Runs the backup controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<DependencyResourceBackup>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(backup: Arc<DependencyResourceBackup>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = backup
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    if backup.metadata.deletion_timestamp.is_some() {
        return removal::remove_artifact(backup.as_ref(), &context, &namespace).await;
    }
    let status = backup.status.clone().unwrap_or_default();
    if status.status != BackupStatus::Pending {
        return Ok(Action::await_change());
    }
    let api = Api::namespaced(context.client.clone(), &namespace);
    // Held before anything reaches the target, so deleting the backup removes what did.
    let Some(backup) = with_finalizer(&api, backup, ARTIFACT_FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    let job = BackupRecord {
        object: backup.as_ref(),
        context: &context,
        api,
        namespace: &namespace,
    };
    match job.take_and_prove().await {
        Err(error) if job.gave_up() => job.end_unreachable(&error).await,
        done => done,
    }
}

/// What a backup works on, once found.
struct Found {
    dependency: DependencyResource,
    target: BackupTarget,
}

/// One reconcile of one pending database backup.
impl BackupRecord<'_, DependencyResourceBackup> {
    async fn take_and_prove(&self) -> Result<Action> {
        let found = match self.find().await? {
            Ok(found) => found,
            Err(failure) => return self.end_from(self.current(), Err(failure)).await,
        };
        let key = key::backup_key(&self.context.client, self.namespace).await?;
        let dependency = &found.dependency;
        let dependency_id = dependency.name_any();
        let (_, database) =
            connect(self.context, self.namespace, &dependency.spec.server_id).await?;
        let database_stream =
            dedicated_connection(self.context, self.namespace, &dependency.spec.server_id).await?;
        let name = self.object.name_any();
        let store = Store::for_new(
            self.context,
            self.namespace,
            &found.target,
            &dependency_id,
            &name,
        );
        let store = match store.await? {
            Ok(store) => store,
            Err(failure) => return self.end_from(self.current(), Err(failure)).await,
        };
        let container = network_name(self.namespace, &dependency_id);
        let sites = Sites {
            kind: dependency.spec.kind,
            database: &database,
            database_stream: &database_stream,
            container: &container,
            image: dependency.spec.image(),
            store: &store,
            key: &key,
        };
        let upload = self.object.spec.uploaded.as_ref().map(|dump| Upload {
            path: upload_path(self.namespace, &name),
            dump,
        });
        let mut status = self.current();
        status.dependency_kind = Some(dependency.spec.kind.as_str().into());
        let first_step = match upload {
            Some(_) => plan::STORING_UPLOAD,
            None => plan::DUMPING,
        };
        let dumping = plan::in_progress(status, first_step, self.stamp());
        self.write(&dumping).await?;
        let artifact = match job::take(&sites, upload.as_ref()).await? {
            Ok(artifact) => artifact,
            Err(failure) => {
                let ended = self.end_from(dumping, Err(failure)).await?;
                drop_upload(&database, upload).await;
                return Ok(ended);
            }
        };
        let mut verifying = plan::in_progress(dumping, plan::VERIFYING, self.stamp());
        verifying.artifact = Some(artifact.clone());
        self.write(&verifying).await?;
        let scratch = plan::scratch_name(self.namespace, &name);
        let proven = job::verify(&sites, &artifact, &scratch).await?;
        let outcome = proven.map(|verification| (artifact, verification));
        let ended = self.end_from(verifying, outcome).await?;
        drop_upload(&database, upload).await;
        Ok(ended)
    }

    /// The dependency and target, or why this backup cannot be taken.
    async fn find(&self) -> Result<std::result::Result<Found, Failure>> {
        let spec = &self.object.spec;
        let blocked = |message: String| Ok(Err(Failure::new(code::NOT_BACKED_UP, message)));
        let dependencies =
            Api::<DependencyResource>::namespaced(self.context.client.clone(), self.namespace);
        let Some(dependency) = dependencies.get_opt(&spec.dependency_resource_id).await? else {
            return blocked(format!(
                "dependency resource {} does not exist",
                spec.dependency_resource_id
            ));
        };
        if let Some(why) = not_backed_up(&dependency) {
            return blocked(why);
        }
        let targets = Api::<BackupTarget>::namespaced(self.context.client.clone(), self.namespace);
        let Some(target) = targets.get_opt(&spec.target_id).await? else {
            return blocked(format!("backup target {} does not exist", spec.target_id));
        };
        Ok(Ok(Found { dependency, target }))
    }
}

/// Removes an uploaded dump from the database's server once its backup has ended (stored and
/// proven, or failed: a failed one is uploaded again). Best effort: a file left behind is
/// logged, never a reason to take the backup again.
async fn drop_upload(database: &Target, upload: Option<Upload<'_>>) {
    let Some(upload) = upload else { return };
    let command = plan::remove_upload_command(&upload.path);
    if let Err(error) = database.connection.run(&command).await {
        tracing::warn!(%error, path = %upload.path, "could not remove an uploaded dump");
    }
}

/// Why `dependency` cannot be backed up now, if it cannot.
fn not_backed_up(dependency: &DependencyResource) -> Option<String> {
    let name = dependency.name_any();
    if dependency.spec.source != DependencySource::Managed {
        return Some(format!(
            "dependency resource {name} is imported; Berth backs up only the databases it runs"
        ));
    }
    let ready = dependency
        .status
        .as_ref()
        .and_then(|s| condition::find(&s.conditions, READY))
        .is_some_and(|c| c.status == ConditionStatus::True);
    (!ready).then(|| format!("dependency resource {name} is not ready"))
}
