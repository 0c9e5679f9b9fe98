//! StorageVolumeRestore: writes a ready volume backup's files on the server it was taken on.
//! `new-volume`: into the Docker volume of a new StorageVolume, made by the restore (one that
//! exists already is refused: nothing is overwritten). `in-place`: over the backup's own
//! volume, acknowledged, with the containers using it stopped while its files are emptied and
//! written, and started again however it ends. Either way the files are read back and must
//! give the tree the backup holds; the restore ends `completed` with that tree, or `failed`
//! saying whether anything was changed.

use std::sync::Arc;
use std::time::Instant;

use berth_crds::backup::{BackupStatus, RestoreReport, RestoreStatus};
use berth_crds::storage_volume::{StorageVolume, StorageVolumeKind};
use berth_crds::volume_backup::{
    StorageVolumeBackup, StorageVolumeRestore, StorageVolumeRestoreStatus, VolumeRestoreMode,
};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use super::key;
use super::plan::{self, Failure, code};
use super::restore::ended;
use super::sites::ArtifactStream;
use super::store::Store;
use super::volume::{absent, differs, write_and_read_back};
use super::volume_plan::{self, VolumeSource};
use super::volume_users;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::dedicated_connection;
use crate::status::StatusWriter;

const KIND: &str = "StorageVolumeRestore";

/// Runs the volume restore controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<StorageVolumeRestore>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(restore: Arc<StorageVolumeRestore>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = restore
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let current = restore.status.clone().unwrap_or_default();
    if restore.metadata.deletion_timestamp.is_some() || current.status != RestoreStatus::Pending {
        return Ok(Action::await_change());
    }
    let api = Api::<StorageVolumeRestore>::namespaced(context.client.clone(), &namespace);
    let started = Instant::now();
    let outcome = match found(&context, &namespace, &restore).await? {
        Ok((backup, into)) => restore_into(&context, &namespace, &restore, &backup, &into).await?,
        Err(failure) => Err(failure),
    };
    let outcome = outcome.map(|report| RestoreReport {
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        ..report
    });
    end(&context, &api, &restore, outcome).await
}

/// The ready backup and the volume written, or why the restore cannot run.
async fn found(
    context: &Context,
    namespace: &str,
    restore: &StorageVolumeRestore,
) -> Result<std::result::Result<(StorageVolumeBackup, StorageVolume), Failure>> {
    let spec = &restore.spec;
    let blocked = |message: String| Ok(Err(Failure::new(code::NOT_BACKED_UP, message)));
    let backups = Api::<StorageVolumeBackup>::namespaced(context.client.clone(), namespace);
    let Some(backup) = backups.get_opt(&spec.backup_id).await? else {
        return blocked(format!("backup {} does not exist", spec.backup_id));
    };
    let ready = backup
        .status
        .as_ref()
        .is_some_and(|s| s.status == BackupStatus::Ready);
    if !ready {
        return blocked(format!("backup {} is not ready to restore", spec.backup_id));
    }
    let volumes = Api::<StorageVolume>::namespaced(context.client.clone(), namespace);
    let into = &spec.target_storage_volume_id;
    let Some(volume) = volumes.get_opt(into).await? else {
        return blocked(format!("storage volume {into} does not exist"));
    };
    if let Some(why) = plan_problem(restore, &backup, &volume) {
        return blocked(why);
    }
    Ok(Ok((backup, volume)))
}

/// Why the restore's spec cannot be carried out as written.
fn plan_problem(
    restore: &StorageVolumeRestore,
    backup: &StorageVolumeBackup,
    into: &StorageVolume,
) -> Option<String> {
    let spec = &restore.spec;
    let own = into.name_any() == backup.spec.storage_volume_id;
    match spec.target_mode {
        VolumeRestoreMode::InPlace if !spec.acknowledge_destructive_restore => Some(
            "acknowledgeDestructiveRestore must be true: the volume's files are replaced".into(),
        ),
        VolumeRestoreMode::InPlace if !own => Some(format!(
            "an in-place restore writes over the backup's own volume {}, not {}",
            backup.spec.storage_volume_id,
            into.name_any()
        )),
        VolumeRestoreMode::NewVolume if own => Some(format!(
            "a new-volume restore needs a volume other than the backup's own {}",
            into.name_any()
        )),
        VolumeRestoreMode::NewVolume if into.spec.kind != StorageVolumeKind::NamedVolume => {
            Some(format!(
                "a new-volume restore writes into a named volume; {} is a bind mount",
                into.name_any()
            ))
        }
        _ => None,
    }
}

/// Writes the backup's files into `into` on the backup's server; what it then holds.
async fn restore_into(
    context: &Context,
    namespace: &str,
    restore: &StorageVolumeRestore,
    backup: &StorageVolumeBackup,
    into: &StorageVolume,
) -> Result<std::result::Result<RestoreReport, Failure>> {
    let failed = |message: String| Ok(Err(Failure::new(code::RESTORE_FAILED, message)));
    let status = backup.status.clone().unwrap_or_default();
    let (Some(artifact), Some(expected)) =
        (status.artifact, status.verification.and_then(|v| v.tree))
    else {
        return failed(format!("backup {} records no artifact", backup.name_any()));
    };
    let location = &artifact.location;
    let target_id = &backup.spec.target_id;
    let store = match Store::of_recorded(context, namespace, location, target_id).await? {
        Ok(store) => store,
        Err(why) => return failed(why),
    };
    let server_id = &backup.spec.server_id;
    let key = key::backup_key(&context.client, namespace).await?;
    let (_, server) = connect(context, namespace, server_id).await?;
    let server_stream = dedicated_connection(context, namespace, server_id).await?;
    let stream = ArtifactStream {
        from: &store,
        to: &server_stream,
        key: &key,
    };
    let target = VolumeSource::of(into);
    let image = &context.volume_helper_image;
    let stopped = match make_room(context, &server, restore, &target, into, server_id).await? {
        Ok(stopped) => stopped,
        Err(failure) => return Ok(Err(failure)),
    };
    let written = write_and_read_back(&stream, &server, &target, &artifact, image).await;
    if let Some(users) = stopped {
        users.start().await?;
    }
    let (archive_bytes, tree) = match written? {
        Ok(written) => written,
        Err(failure) => return Ok(Err(incomplete(failure))),
    };
    if let Some(difference) = differs(&expected, &tree) {
        return Ok(Err(incomplete(Failure::new(
            code::RESTORE_FAILED,
            difference,
        ))));
    }
    Ok(Ok(RestoreReport {
        tables: None,
        rows: None,
        keys: None,
        tree: Some(tree),
        dump_bytes: archive_bytes,
        seconds: 0.0,
    }))
}

/// Readies the volume to write into: a new one made empty, or, in place, its containers
/// stopped (held until the answer's `start`) and its files removed.
async fn make_room<'a>(
    context: &'a Context,
    server: &'a Target,
    restore: &StorageVolumeRestore,
    target: &VolumeSource,
    into: &StorageVolume,
    server_id: &str,
) -> Result<std::result::Result<Option<volume_users::Stopped<'a>>, Failure>> {
    let socket = &server.docker_socket;
    match restore.spec.target_mode {
        VolumeRestoreMode::NewVolume => {
            let create = volume_plan::create_new_volume_command(socket, &target.source);
            let made = server.connection.exec(&create).await?;
            if made.exit_status == Some(0) {
                return Ok(Ok(None));
            }
            Ok(Err(Failure::new(
                code::RESTORE_FAILED,
                format!(
                    "the Docker volume {} could not be made new on server {server_id}: {}",
                    target.source,
                    String::from_utf8_lossy(&made.stderr).trim()
                ),
            )))
        }
        VolumeRestoreMode::InPlace => {
            if let Some(failure) = absent(server, target, server_id).await? {
                return Ok(Err(failure));
            }
            let why = format!("storage volume {} is restored in place", into.name_any());
            let users = volume_users::stop(context, server, target, &why).await?;
            let image = &context.volume_helper_image;
            server
                .connection
                .run(&target.empty_command(socket, image))
                .await?;
            Ok(Ok(Some(users)))
        }
    }
}

/// A failure once files were being written: the volume may hold part of the backup.
fn incomplete(failure: Failure) -> Failure {
    Failure::new(code::RESTORE_INCOMPLETE, failure.message)
}

/// Records the outcome with an Event.
async fn end(
    context: &Context,
    api: &Api<StorageVolumeRestore>,
    restore: &StorageVolumeRestore,
    outcome: std::result::Result<RestoreReport, Failure>,
) -> Result<Action> {
    let stamp = Stamp {
        generation: restore.metadata.generation,
        now: Timestamp::now(),
    };
    let into = &restore.spec.target_storage_volume_id;
    let completed = |report: &RestoreReport| {
        let tree = report.tree.as_ref().map(plan::tree_contents);
        format!(
            "restored backup {} into storage volume {into}: {}, read back identical, in {}s",
            restore.spec.backup_id,
            tree.unwrap_or_default(),
            report.seconds
        )
    };
    let current: StorageVolumeRestoreStatus = restore.status.clone().unwrap_or_default();
    let (status, type_, reason, note) = ended(current, outcome, stamp, completed, "the volume");
    StatusWriter::new(api, restore).apply(None, &status).await?;
    context
        .publish_event(&restore.object_ref(&()), type_, reason, note)
        .await;
    Ok(Action::await_change())
}
