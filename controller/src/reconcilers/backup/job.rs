//! The I/O of one backup: the dump streamed from the database's server, sealed, to the target
//! (named whole only once complete), then read back and restored into a throwaway
//! container of the database's image on its server, whose tables and rows (PostgreSQL) or
//! keys (Redis) are counted.

use std::time::{Duration, Instant};

use berth_crds::backup::{BackupArtifact, BackupVerification, UploadedDump};
use berth_crds::dependency_resource::DependencyKind;
use sha2::{Digest, Sha256};

use super::plan::{self, Failure, code};
use super::sites::{Sites, counted, download_into, start_scratch};
use super::{redis, redis_job};

use crate::error::Result;
use crate::reconcilers::deployment::server_target::Target;

/// How long the throwaway database may take to accept connections.
const SCRATCH_READY_WITHIN: Duration = Duration::from_secs(90);
/// The network of a throwaway container that only proves a backup: none.
const NO_NETWORK: &str = "none";

/// An uploaded dump a backup takes in place of a dump of the database.
pub struct Upload<'a> {
    /// Where it waits on the database's server.
    pub path: String,
    pub dump: &'a UploadedDump,
}

/// Dumps, seals and stores the database (or reads the uploaded dump `upload` in its place);
/// the artifact's record, or why not. A failed upload leaves nothing under the artifact's name.
pub async fn take(
    sites: &Sites<'_>,
    upload: Option<&Upload<'_>>,
) -> Result<std::result::Result<BackupArtifact, Failure>> {
    let socket = &sites.database.docker_socket;
    let (dump, dumper) = match (upload, sites.kind) {
        (Some(upload), _) => (plan::read_upload_command(&upload.path), plan::UPLOAD_READER),
        (None, DependencyKind::Postgres) => {
            (plan::dump_command(socket, sites.container), plan::PG_DUMP)
        }
        (None, DependencyKind::Redis) => {
            (redis::dump_command(socket, sites.container), "redis-cli")
        }
    };
    let dump = sites.database_stream.exec_channel(&dump).await?;
    // Only an upload is hashed on the way: a dump Berth takes itself has nothing to match.
    let mut read = upload.map(|_| Sha256::new());
    let mut hash = |data: &[u8]| read.iter_mut().for_each(|h| h.update(data));
    let stored = sites
        .store
        .upload(dump, dumper, sites.key, &mut hash)
        .await?;
    let stored = match stored {
        Ok(stored) => stored,
        Err(failure) => return Ok(Err(failure)),
    };
    let changed = upload.zip(read).and_then(|(upload, read)| {
        plan::upload_changed(upload.dump, &hex::encode(read.finalize()))
    });
    if let Some(changed) = changed {
        sites.store.discard().await;
        return Ok(Err(changed));
    }
    sites.store.record(stored).await.map(Ok)
}

/// Restores `artifact` into a throwaway container named `scratch` and counts what it holds;
/// the container goes whatever happened.
pub async fn verify(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    scratch: &str,
) -> Result<std::result::Result<BackupVerification, Failure>> {
    let started = Instant::now();
    let database = sites.database;
    database.remove_container(scratch).await?;
    start_scratch(database, sites.kind, sites.image, scratch, NO_NETWORK).await?;
    let restored = match sites.kind {
        DependencyKind::Postgres => restore_and_count(sites, artifact, scratch).await,
        DependencyKind::Redis => redis_job::load_and_count_keys(sites, artifact, scratch).await,
    };
    let removed = database.remove_container(scratch).await;
    let mut verification = match restored? {
        Ok(counted) => counted,
        Err(failure) => return Ok(Err(failure)),
    };
    removed?;
    verification.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    Ok(Ok(verification))
}

async fn restore_and_count(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    scratch: &str,
) -> Result<std::result::Result<BackupVerification, Failure>> {
    let database = sites.database;
    if let Some(failure) = wait_ready(database, scratch).await? {
        return Ok(Err(failure));
    }
    let restore = plan::restore_command(&database.docker_socket, scratch);
    let dump_bytes = match download_into(sites, artifact, &restore, plan::PG_RESTORE).await? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Err(failure)),
    };
    Ok(count(database, scratch, code::VERIFICATION_FAILED)
        .await?
        .map(|(tables, rows)| BackupVerification {
            tables: Some(tables),
            rows: Some(rows),
            ..counted(dump_bytes)
        }))
}

/// The tables and rows of the database in `container`, or a failure coded `code`.
pub async fn count(
    target: &Target,
    container: &str,
    code: &'static str,
) -> Result<std::result::Result<(i64, i64), Failure>> {
    let command = plan::count_command(&target.docker_socket, container);
    let counted = target.connection.exec(&command).await?;
    Ok(plan::parse_counts(&counted.stdout_text())
        .ok_or_else(|| Failure::new(code, "counting the restored tables and rows gave no answer")))
}

/// Waits until the throwaway database accepts connections; `Some` failure when it never does.
async fn wait_ready(target: &Target, scratch: &str) -> Result<Option<Failure>> {
    let deadline = Instant::now() + SCRATCH_READY_WITHIN;
    let command = plan::ready_command(&target.docker_socket, scratch);
    while Instant::now() < deadline {
        if target.connection.exec(&command).await?.exit_status == Some(0) {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(Some(Failure::new(
        code::VERIFICATION_FAILED,
        format!(
            "the throwaway database {scratch} did not accept connections within {}s",
            SCRATCH_READY_WITHIN.as_secs()
        ),
    )))
}
