//! StorageVolumeBackup: takes one backup of a storage volume's files on one server and proves
//! it. The files leave the server as the tar archive `docker cp` writes (`volume_plan`),
//! whose tree is read as it streams past (`tree`), sealed with the organization's key and
//! stored at the BackupTarget like a database's dump. The proof: the artifact is read back,
//! checked and opened into a throwaway Docker volume on the same server, whose files are read
//! out again; the tree they give must be the one the backup read. Only then is it `ready`.
//!
//! What is read is `crash-consistent` by default: the application keeps running and may write
//! meanwhile. `quiesced`: its containers are stopped (held, so drift repair leaves them) only
//! while the files are copied into a snapshot volume on the same server, which is then read.

use std::sync::Arc;
use std::time::Instant;

use berth_crds::backup::{
    ARTIFACT_FINALIZER, BackupArtifact, BackupStatus, BackupTarget, BackupVerification, VolumeTree,
};
use berth_crds::storage_volume::StorageVolume;
use berth_crds::volume_backup::{
    QuiescedWindow, StorageVolumeBackup, StorageVolumeBackupStatus, VolumeConsistency,
};
use berth_remote::ServerConnection;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use russh::ChannelMsg;

use super::plan::{self, Failure, code};
use super::record::BackupRecord;
use super::sites::{ArtifactStream, counted};
use super::store::Store;
use super::transfer::{self, Ended};
use super::tree::TreeReader;
use super::volume_plan::{self, DOCKER_CP, VolumeSource};
use super::volume_users;
use super::{key, removal};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::fresh::with_finalizer;
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::dedicated_connection;

const KIND: &str = "StorageVolumeBackup";

/// Runs the volume backup controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<StorageVolumeBackup>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(backup: Arc<StorageVolumeBackup>, context: Arc<Context>) -> Result<Action> {
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

/// The files to read and the backup's status once they are ready to be read.
type Quiesced = (VolumeSource, StorageVolumeBackupStatus);

/// Where one volume backup reads and writes.
struct Sites<'a> {
    volume: &'a VolumeSource,
    /// The volume's server, and a connection of its own for the archive's streams.
    server: &'a Target,
    server_stream: &'a ServerConnection,
    store: &'a Store,
    key: &'a [u8],
    image: &'a str,
}

/// One reconcile of one pending volume backup.
impl BackupRecord<'_, StorageVolumeBackup> {
    async fn take_and_prove(&self) -> Result<Action> {
        let spec = &self.object.spec;
        let (volume, target) = match self.find().await? {
            Ok(found) => found,
            Err(failure) => return self.end_from(self.current(), Err(failure)).await,
        };
        let source = VolumeSource::of(&volume);
        let (_, server) = connect(self.context, self.namespace, &spec.server_id).await?;
        if let Some(failure) = absent(&server, &source, &spec.server_id).await? {
            return self.end_from(self.current(), Err(failure)).await;
        }
        let key = key::backup_key(&self.context.client, self.namespace).await?;
        let server_stream =
            dedicated_connection(self.context, self.namespace, &spec.server_id).await?;
        let name = self.object.name_any();
        let store = Store::for_new(
            self.context,
            self.namespace,
            &target,
            &spec.storage_volume_id,
            &name,
        );
        let store = match store.await? {
            Ok(store) => store,
            Err(failure) => return self.end_from(self.current(), Err(failure)).await,
        };
        let reading = plan::in_progress(self.current(), plan::DUMPING, self.stamp());
        self.write(&reading).await?;
        let (read_from, reading) = match self.quiesce(&server, &source, reading).await? {
            Ok(quiesced) => quiesced,
            Err((reading, failure)) => return self.end_from(reading, Err(failure)).await,
        };
        let sites = Sites {
            volume: &read_from,
            server: &server,
            server_stream: &server_stream,
            store: &store,
            key: &key,
            image: &self.context.volume_helper_image,
        };
        let taken = take(&sites).await;
        if read_from != source {
            let remove =
                volume_plan::remove_volume_command(&server.docker_socket, &read_from.source);
            server.connection.run(&remove).await?;
        }
        let (artifact, tree) = match taken? {
            Ok(taken) => taken,
            Err(failure) => return self.end_from(reading, Err(failure)).await,
        };
        let mut verifying = plan::in_progress(reading, plan::VERIFYING, self.stamp());
        verifying.artifact = Some(artifact.clone());
        self.write(&verifying).await?;
        let scratch = volume_plan::scratch_volume(self.namespace, &self.object.name_any());
        let proven = prove(&sites, &artifact, &tree, &scratch).await?;
        self.end_from(
            verifying,
            proven.map(|verification| (artifact, verification)),
        )
        .await
    }

    /// Where the files are read from: the volume itself, or for a `quiesced` backup a snapshot
    /// of it copied with its users stopped (the status then says for how long).
    async fn quiesce(
        &self,
        server: &Target,
        source: &VolumeSource,
        mut reading: StorageVolumeBackupStatus,
    ) -> Result<std::result::Result<Quiesced, (StorageVolumeBackupStatus, Failure)>> {
        let spec = &self.object.spec;
        if spec.consistency == VolumeConsistency::CrashConsistent {
            return Ok(Ok((source.clone(), reading)));
        }
        let snapshot = volume_plan::snapshot_volume(self.namespace, &self.object.name_any());
        let why = format!(
            "storage volume {} is copied for a quiesced backup",
            spec.storage_volume_id
        );
        match volume_users::snapshot(self.context, server, source, &snapshot, &why).await? {
            Ok(window) => {
                reading.quiesced = Some(QuiescedWindow {
                    containers: window.containers as i64,
                    seconds: window.seconds,
                });
                self.write(&reading).await?;
                Ok(Ok((VolumeSource::named_as(&snapshot), reading)))
            }
            Err(failure) => {
                let remove = volume_plan::remove_volume_command(&server.docker_socket, &snapshot);
                server.connection.run(&remove).await?;
                Ok(Err((reading, failure)))
            }
        }
    }

    /// The volume and target, or why this backup cannot be taken.
    async fn find(&self) -> Result<std::result::Result<(StorageVolume, BackupTarget), Failure>> {
        let spec = &self.object.spec;
        let blocked = |message: String| Ok(Err(Failure::new(code::NOT_BACKED_UP, message)));
        let client = self.context.client.clone();
        let volumes = Api::<StorageVolume>::namespaced(client.clone(), self.namespace);
        let Some(volume) = volumes.get_opt(&spec.storage_volume_id).await? else {
            return blocked(format!(
                "storage volume {} does not exist",
                spec.storage_volume_id
            ));
        };
        if let Some(problem) = volume.spec.problem() {
            return blocked(format!("storage volume {}: {problem}", volume.name_any()));
        }
        let targets = Api::<BackupTarget>::namespaced(client, self.namespace);
        let Some(target) = targets.get_opt(&spec.target_id).await? else {
            return blocked(format!("backup target {} does not exist", spec.target_id));
        };
        Ok(Ok((volume, target)))
    }
}

/// A failure when the volume's files are not on `server` (a named volume read where it was
/// never made would be an empty one made by the read).
pub async fn absent(
    server: &Target,
    volume: &VolumeSource,
    server_id: &str,
) -> Result<Option<Failure>> {
    let found = server
        .connection
        .exec(&volume.exists_command(&server.docker_socket))
        .await?;
    Ok((found.exit_status != Some(0))
        .then(|| Failure::new(code::NOT_BACKED_UP, volume.absent(server_id))))
}

/// Reads, seals and stores the volume's files; the artifact and the tree it holds.
async fn take(
    sites: &Sites<'_>,
) -> Result<std::result::Result<(BackupArtifact, VolumeTree), Failure>> {
    let read = sites
        .volume
        .read_command(&sites.server.docker_socket, sites.image);
    let read = sites.server_stream.exec_channel(&read).await?;
    let store = sites.store;
    let mut tree = TreeReader::default();
    let stored = match store
        .upload(read, DOCKER_CP, sites.key, &mut |data| tree.push(data))
        .await?
    {
        Ok(stored) => stored,
        Err(failure) => return Ok(Err(failure)),
    };
    let tree = match tree.finish() {
        Ok(tree) => tree,
        Err(why) => {
            store.discard().await;
            let why = format!("the volume's archive: {why}");
            return Ok(Err(Failure::new(code::DUMP_FAILED, why)));
        }
    };
    Ok(Ok((store.record(stored).await?, tree)))
}

/// Extracts `artifact` into the throwaway volume `scratch` and reads it back: the
/// verification when the tree is `expected`. The volume goes whatever happened.
async fn prove(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    expected: &VolumeTree,
    scratch: &str,
) -> Result<std::result::Result<BackupVerification, Failure>> {
    let started = Instant::now();
    let socket = &sites.server.docker_socket;
    let run = |command: String| async move { sites.server.connection.run(&command).await };
    run(volume_plan::remove_volume_command(socket, scratch)).await?;
    run(volume_plan::create_new_volume_command(socket, scratch)).await?;
    let into = VolumeSource::named_as(scratch);
    let stream = ArtifactStream {
        from: sites.store,
        to: sites.server_stream,
        key: sites.key,
    };
    let written = write_and_read_back(&stream, sites.server, &into, artifact, sites.image).await;
    run(volume_plan::remove_volume_command(socket, scratch)).await?;
    let (archive_bytes, tree) = match written? {
        Ok(written) => written,
        Err(failure) => return Ok(Err(failure)),
    };
    if let Some(difference) = differs(expected, &tree) {
        return Ok(Err(Failure::new(code::VERIFICATION_FAILED, difference)));
    }
    Ok(Ok(BackupVerification {
        tree: Some(tree),
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        ..counted(archive_bytes)
    }))
}

/// Streams `artifact` (checked and opened on the way) into `into` on `server` and reads the
/// files back: the archive's size and the tree written, or why not.
pub async fn write_and_read_back(
    stream: &ArtifactStream<'_>,
    server: &Target,
    into: &VolumeSource,
    artifact: &BackupArtifact,
    image: &str,
) -> Result<std::result::Result<(i64, VolumeTree), Failure>> {
    let extract = into.extract_command(&server.docker_socket, image);
    let archive_bytes = match stream.send_to(artifact, &extract, DOCKER_CP).await? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Err(failure)),
    };
    let read = into.read_command(&server.docker_socket, image);
    Ok(read_tree(stream.to, &read)
        .await?
        .map(|tree| (archive_bytes, tree)))
}

/// The tree of the archive `command` writes on `connection`.
pub async fn read_tree(
    connection: &ServerConnection,
    command: &str,
) -> Result<std::result::Result<VolumeTree, Failure>> {
    let failed = |message: String| Ok(Err(Failure::new(code::VERIFICATION_FAILED, message)));
    let channel = connection.exec_channel(command).await?;
    let (mut read, _write) = channel.split();
    let mut tree = TreeReader::default();
    let mut ended = Ended::default();
    while let Some(message) = read.wait().await {
        match message {
            ChannelMsg::Data { data } => tree.push(&data),
            ChannelMsg::ExtendedData { data, .. } => transfer::keep_stderr(&mut ended, &data),
            ChannelMsg::ExitStatus { exit_status } => ended.exit_status = Some(exit_status),
            _ => {}
        }
    }
    if let Some(problem) = ended.problem("reading the written files back") {
        return failed(problem);
    }
    match tree.finish() {
        Ok(tree) => Ok(Ok(tree)),
        Err(why) => failed(format!("the files read back: {why}")),
    }
}

/// How the tree written differs from the one backed up, in one line; `None` when it does not.
pub fn differs(expected: &VolumeTree, written: &VolumeTree) -> Option<String> {
    (expected != written).then(|| {
        format!(
            "the files written differ from those backed up: {} written, {} backed up (tree \
             digests {} and {})",
            plan::tree_contents(written),
            plan::tree_contents(expected),
            &written.sha256[..12.min(written.sha256.len())],
            &expected.sha256[..12.min(expected.sha256.len())]
        )
    })
}
