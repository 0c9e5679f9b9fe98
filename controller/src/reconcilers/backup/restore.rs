//! DependencyResourceRestore: puts a ready backup's data into a managed PostgreSQL, its own or
//! another of the same project and environment. The artifact is read from where the backup
//! recorded it, checked against its checksum, opened and fed to `pg_restore --clean
//! --single-transaction` in the target's container: the restore lands whole or changes
//! nothing. It ends `completed` with what the database then holds (tables, rows, bytes,
//! seconds), or `failed` with the cause.

use std::sync::Arc;
use std::time::Instant;

use berth_crds::backup::{
    BackupStatus, DependencyResourceBackup, DependencyResourceRestore,
    DependencyResourceRestoreStatus, RestoreReport, RestoreStatus,
};
use berth_crds::condition::{self, READY};
use berth_crds::dependency_resource::{DependencyResource, network_name};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use super::plan::{self, ArtifactPath, Failure, code};
use super::{job, key, not_backed_up, transfer};
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::dedicated_connection;
use crate::status::StatusWriter;

const KIND: &str = "DependencyResourceRestore";

/// Runs the restore controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<DependencyResourceRestore>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(
    restore: Arc<DependencyResourceRestore>,
    context: Arc<Context>,
) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let current = restore.status.clone().unwrap_or_default();
    if current.status != RestoreStatus::Pending || restore.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = restore
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<DependencyResourceRestore>::namespaced(context.client.clone(), &namespace);
    let started = Instant::now();
    let outcome = match found(&context, &namespace, &restore).await? {
        Ok((backup, into)) => restore_into(&context, &namespace, &backup, &into).await?,
        Err(failure) => Err(failure),
    };
    let outcome = outcome.map(|(tables, rows, dump_bytes)| RestoreReport {
        tables,
        rows,
        dump_bytes,
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    });
    end(&context, &api, &restore, outcome).await
}

/// The ready backup and the database it goes into, or why the restore cannot run.
async fn found(
    context: &Context,
    namespace: &str,
    restore: &DependencyResourceRestore,
) -> Result<std::result::Result<(DependencyResourceBackup, DependencyResource), Failure>> {
    let spec = &restore.spec;
    let blocked = |message: String| Ok(Err(Failure::new(code::NOT_BACKED_UP, message)));
    if !spec.acknowledge_data_overwrite {
        return blocked(
            "acknowledgeDataOverwrite must be true: the target's data is replaced".into(),
        );
    }
    let backups = Api::<DependencyResourceBackup>::namespaced(context.client.clone(), namespace);
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
    let dependencies = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    let into = &spec.target_dependency_resource_id;
    let Some(dependency) = dependencies.get_opt(into).await? else {
        return blocked(format!("dependency resource {into} does not exist"));
    };
    if let Some(why) = not_backed_up(&dependency) {
        return blocked(why);
    }
    Ok(Ok((backup, dependency)))
}

/// Streams the artifact into `into`'s database and counts what it then holds:
/// `(tables, rows, dump bytes)`.
async fn restore_into(
    context: &Context,
    namespace: &str,
    backup: &DependencyResourceBackup,
    into: &DependencyResource,
) -> Result<std::result::Result<(i64, i64, i64), Failure>> {
    let failed = |message: String| Ok(Err(Failure::new(code::RESTORE_FAILED, message)));
    let artifact = backup.status.as_ref().and_then(|s| s.artifact.clone());
    let Some(artifact) = artifact else {
        return failed(format!("backup {} records no artifact", backup.name_any()));
    };
    let Some((store_server, path)) = ArtifactPath::from_location(&artifact.location) else {
        return failed(format!(
            "the artifact location {} cannot be read",
            artifact.location
        ));
    };
    let key = key::backup_key(&context.client, namespace).await?;
    let (_, database) = connect(context, namespace, &into.spec.server_id).await?;
    let container = network_name(namespace, &into.name_any());
    // The streams on connections of their own (see `job::Sites`).
    let store_stream = dedicated_connection(context, namespace, &store_server).await?;
    let database_stream = dedicated_connection(context, namespace, &into.spec.server_id).await?;
    let download = store_stream.exec_channel(&path.download_command()).await?;
    let command = plan::restore_over_command(&database.docker_socket, &container);
    let restore = database_stream.exec_channel(&command).await?;
    let dump_bytes = match transfer::restore_from(download, restore, &key, &artifact.sha256).await {
        Ok(bytes) => bytes,
        Err(failure) => return failed(failure.message),
    };
    Ok(job::count(&database, &container, code::RESTORE_FAILED)
        .await?
        .map(|(tables, rows)| (tables, rows, dump_bytes)))
}

/// Records the outcome with an Event.
async fn end(
    context: &Context,
    api: &Api<DependencyResourceRestore>,
    restore: &DependencyResourceRestore,
    outcome: std::result::Result<RestoreReport, Failure>,
) -> Result<Action> {
    let stamp = Stamp {
        generation: restore.metadata.generation,
        now: Timestamp::now(),
    };
    let mut status = restore.status.clone().unwrap_or_default();
    status.started_at.get_or_insert(Time(stamp.now));
    let into = &restore.spec.target_dependency_resource_id;
    let (type_, reason, note) = match outcome {
        Ok(report) => {
            let note = format!(
                "restored backup {} into {into}: {} tables, {} rows, {} bytes of dump in {}s",
                restore.spec.backup_id,
                report.tables,
                report.rows,
                report.dump_bytes,
                report.seconds
            );
            status.status = RestoreStatus::Completed;
            status.completed_at = Some(Time(stamp.now));
            status.report = Some(report);
            let ready = stamp.holds(READY, "Restored", note.clone());
            condition::merge(&mut status.conditions, ready);
            (EventType::Normal, "Restored", note)
        }
        Err(failure) => {
            let note = format!("nothing was changed: {}", failure.message);
            status.status = RestoreStatus::Failed;
            status.failed_at = Some(Time(stamp.now));
            status.failure_code = Some(failure.code.to_string());
            status.failure_message = Some(note.clone());
            let ready = stamp.fails(READY, "RestoreFailed", note.clone());
            condition::merge(&mut status.conditions, ready);
            (EventType::Warning, "RestoreFailed", note)
        }
    };
    write(api, restore, &status).await?;
    context
        .publish_event(&restore.object_ref(&()), type_, reason, note)
        .await;
    Ok(Action::await_change())
}

async fn write(
    api: &Api<DependencyResourceRestore>,
    restore: &DependencyResourceRestore,
    status: &DependencyResourceRestoreStatus,
) -> Result<()> {
    StatusWriter::new(api, restore).apply(None, status).await?;
    Ok(())
}
