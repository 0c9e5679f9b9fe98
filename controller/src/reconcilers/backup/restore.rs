//! DependencyResourceRestore: puts a ready backup's data into a managed database of its kind,
//! its own or another of the same project and environment. The artifact is read from where the
//! backup recorded it, checked against its checksum and opened on the way. A PostgreSQL's dump
//! is fed to `pg_restore --clean --single-transaction` in the target's container: it lands
//! whole or changes nothing. A Redis's snapshot is served by a throwaway server on the
//! target's network, which the target replicates until it holds all of it (`redis_job`). It
//! ends `completed` with what the database then holds (tables and rows or keys, bytes,
//! seconds), or `failed` with the cause.

use std::sync::Arc;
use std::time::Instant;

use berth_crds::backup::{
    BackupArtifact, BackupStatus, DependencyResourceBackup, DependencyResourceRestore,
    DependencyResourceRestoreStatus, RestoreReport, RestoreStatus, counted_contents,
};
use berth_crds::condition::{self, READY};
use berth_crds::dependency_resource::{DependencyKind, DependencyResource, network_name};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use super::job;
use super::plan::{self, Failure, code};
use super::redis_job::{self, RedisRestore};
use super::sites::ArtifactStream;
use super::store::Store;
use super::{key, not_backed_up};
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::fresh::{release_finalizer, with_finalizer};
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::dedicated_connection;
use crate::status::StatusWriter;

const KIND: &str = "DependencyResourceRestore";
/// Held while a restore runs (see [`abandon`]).
const IN_PROGRESS_FINALIZER: &str = "berth.dev/restore-in-progress";

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
    let namespace = restore
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<DependencyResourceRestore>::namespaced(context.client.clone(), &namespace);
    if restore.metadata.deletion_timestamp.is_some() {
        return abandon(&context, &api, &namespace, &restore).await;
    }
    let current = restore.status.clone().unwrap_or_default();
    if current.status != RestoreStatus::Pending {
        return Ok(Action::await_change());
    }
    // Held until the restore ends, so that one deleted midway (or while the controller was
    // down) still puts its target right.
    let Some(restore) = with_finalizer(&api, restore, IN_PROGRESS_FINALIZER).await? else {
        return Ok(Action::await_change());
    };
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

/// A restore being deleted: one that had not ended leaves a Redis target a primary again
/// and its throwaway server gone (a PostgreSQL's restore is one transaction: nothing to put
/// right), with a Warning; then the finalizer goes.
async fn abandon(
    context: &Context,
    api: &Api<DependencyResourceRestore>,
    namespace: &str,
    restore: &DependencyResourceRestore,
) -> Result<Action> {
    if !restore
        .finalizers()
        .iter()
        .any(|f| f == IN_PROGRESS_FINALIZER)
    {
        return Ok(Action::await_change());
    }
    let pending = restore
        .status
        .as_ref()
        .is_none_or(|s| s.status == RestoreStatus::Pending);
    if pending && let Some(note) = put_target_right(context, namespace, restore).await? {
        let reference = restore.object_ref(&());
        context
            .publish_event(&reference, EventType::Warning, "RestoreAbandoned", note)
            .await;
    }
    release_finalizer(api, restore, IN_PROGRESS_FINALIZER).await?;
    Ok(Action::await_change())
}

/// Makes the Redis target of an abandoned restore a primary again; what the event says.
async fn put_target_right(
    context: &Context,
    namespace: &str,
    restore: &DependencyResourceRestore,
) -> Result<Option<String>> {
    let into = &restore.spec.target_dependency_resource_id;
    let dependencies = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    let Some(dependency) = dependencies.get_opt(into).await? else {
        return Ok(None);
    };
    if dependency.spec.kind != DependencyKind::Redis {
        return Ok(None);
    }
    let (_, database) = connect(context, namespace, &dependency.spec.server_id).await?;
    let container = network_name(namespace, into);
    let scratch = plan::scratch_name(namespace, &restore.name_any());
    let note = match redis_job::abandon(&database, &container, &scratch).await? {
        None => format!(
            "restore deleted before it ended: {into} is a primary again and may hold part of \
             backup {}",
            restore.spec.backup_id
        ),
        Some(problem) => format!("restore deleted before it ended; {into}: {problem}"),
    };
    Ok(Some(note))
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
    if let Some(why) = not_restorable(&backup, &dependency) {
        return blocked(why);
    }
    Ok(Ok((backup, dependency)))
}

/// Why `backup` cannot be restored into `into`: a backup goes only into a database of its own
/// kind.
fn not_restorable(backup: &DependencyResourceBackup, into: &DependencyResource) -> Option<String> {
    // Backups taken before Redis ones existed did not record their kind: all are PostgreSQL.
    let held = backup
        .status
        .as_ref()
        .and_then(|s| s.dependency_kind.as_deref())
        .unwrap_or(DependencyKind::Postgres.as_str());
    let into_kind = into.spec.kind.as_str();
    (held != into_kind).then(|| {
        format!(
            "backup {} holds a {held}; {} is a {into_kind}",
            backup.name_any(),
            into.name_any()
        )
    })
}

/// Streams the artifact into `into`'s database and says what it then holds.
async fn restore_into(
    context: &Context,
    namespace: &str,
    restore: &DependencyResourceRestore,
    backup: &DependencyResourceBackup,
    into: &DependencyResource,
) -> Result<std::result::Result<RestoreReport, Failure>> {
    let failed = |message: String| Ok(Err(Failure::new(code::RESTORE_FAILED, message)));
    let artifact = backup.status.as_ref().and_then(|s| s.artifact.clone());
    let Some(artifact) = artifact else {
        return failed(format!("backup {} records no artifact", backup.name_any()));
    };
    let location = &artifact.location;
    let target_id = &backup.spec.target_id;
    let store = match Store::of_recorded(context, namespace, location, target_id).await? {
        Ok(store) => store,
        Err(why) => return failed(why),
    };
    let key = key::backup_key(&context.client, namespace).await?;
    let (_, database) = connect(context, namespace, &into.spec.server_id).await?;
    let container = network_name(namespace, &into.name_any());
    // The stream on a connection of its own (see `sites::Sites`).
    let database_stream = dedicated_connection(context, namespace, &into.spec.server_id).await?;
    let stream = ArtifactStream {
        from: &store,
        to: &database_stream,
        key: &key,
    };
    match into.spec.kind {
        DependencyKind::Postgres => {
            restore_postgres(&stream, &database, &container, &artifact).await
        }
        DependencyKind::Redis => {
            let scratch = plan::scratch_name(namespace, &restore.name_any());
            let redis = RedisRestore {
                database: &database,
                stream,
                container: &container,
                image: into.spec.image(),
                scratch: &scratch,
            };
            Ok(redis
                .run(&artifact)
                .await?
                .map(|(keys, dump_bytes)| RestoreReport {
                    keys: Some(keys),
                    ..report(dump_bytes)
                }))
        }
    }
}

/// A report before its counts and time are known.
fn report(dump_bytes: i64) -> RestoreReport {
    RestoreReport {
        tables: None,
        rows: None,
        keys: None,
        tree: None,
        dump_bytes,
        seconds: 0.0,
    }
}

/// Feeds the dump to `pg_restore` over the live database, in one transaction, and counts its
/// tables and rows.
async fn restore_postgres(
    stream: &ArtifactStream<'_>,
    database: &Target,
    container: &str,
    artifact: &BackupArtifact,
) -> Result<std::result::Result<RestoreReport, Failure>> {
    let command = plan::restore_over_command(&database.docker_socket, container);
    let dump_bytes = match stream.send_to(artifact, &command, plan::PG_RESTORE).await? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Err(Failure::new(code::RESTORE_FAILED, failure.message))),
    };
    Ok(job::count(database, container, code::RESTORE_FAILED)
        .await?
        .map(|(tables, rows)| RestoreReport {
            tables: Some(tables),
            rows: Some(rows),
            ..report(dump_bytes)
        }))
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
    let into = &restore.spec.target_dependency_resource_id;
    let completed = |report: &RestoreReport| {
        let counted = counted_contents(report.tables, report.rows, report.keys);
        format!(
            "restored backup {} into {into}: {}, {} bytes of dump in {}s",
            restore.spec.backup_id,
            counted.unwrap_or_else(|| "nothing counted".into()),
            report.dump_bytes,
            report.seconds
        )
    };
    let current = restore.status.clone().unwrap_or_default();
    let (status, type_, reason, note) = ended(current, outcome, stamp, completed, "the target");
    write(api, restore, &status).await?;
    context
        .publish_event(&restore.object_ref(&()), type_, reason, note)
        .await;
    release_finalizer(api, restore, IN_PROGRESS_FINALIZER).await?;
    Ok(Action::await_change())
}

/// A restore's status once ended, and its Event's type, reason and note: `completed` says what
/// a completed one holds; a failure says whether `target` may hold part of the backup.
pub(super) fn ended(
    mut status: DependencyResourceRestoreStatus,
    outcome: std::result::Result<RestoreReport, Failure>,
    stamp: Stamp,
    completed: impl FnOnce(&RestoreReport) -> String,
    target: &str,
) -> (
    DependencyResourceRestoreStatus,
    EventType,
    &'static str,
    String,
) {
    status.started_at.get_or_insert(Time(stamp.now));
    match outcome {
        Ok(report) => {
            let note = completed(&report);
            status.status = RestoreStatus::Completed;
            status.completed_at = Some(Time(stamp.now));
            status.report = Some(report);
            let ready = stamp.holds(READY, "Restored", note.clone());
            condition::merge(&mut status.conditions, ready);
            (status, EventType::Normal, "Restored", note)
        }
        Err(failure) => {
            let note = if failure.code == code::RESTORE_INCOMPLETE {
                format!("{target} may hold part of the backup: {}", failure.message)
            } else {
                format!("nothing was changed: {}", failure.message)
            };
            status.status = RestoreStatus::Failed;
            status.failed_at = Some(Time(stamp.now));
            status.failure_code = Some(failure.code.to_string());
            status.failure_message = Some(note.clone());
            let failed = stamp.fails(READY, "RestoreFailed", note.clone());
            condition::merge(&mut status.conditions, failed);
            (status, EventType::Warning, "RestoreFailed", note)
        }
    }
}

async fn write(
    api: &Api<DependencyResourceRestore>,
    restore: &DependencyResourceRestore,
    status: &DependencyResourceRestoreStatus,
) -> Result<()> {
    StatusWriter::new(api, restore).apply(None, status).await?;
    Ok(())
}
