//! The I/O of one backup: the dump streamed from the database's server, sealed, to the target
//! server (named whole only once complete), then read back and restored into a throwaway
//! container of the database's image on its server, whose tables and rows (PostgreSQL) or
//! keys (Redis) are counted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use berth_crds::MANAGED_LABEL;
use berth_crds::backup::{BackupArtifact, BackupVerification, ENCRYPTION};
use berth_crds::dependency_resource::{DependencyKind, POSTGRES_DATABASE, POSTGRES_USER};
use berth_remote::ServerConnection;
use berth_remote::docker::docker_call;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::plan::{self, ArtifactPath, Failure, code};
use super::{redis, redis_job, transfer};
use crate::error::Result;
use crate::reconcilers::deployment::server_target::Target;

/// How long the throwaway database may take to accept connections.
const SCRATCH_READY_WITHIN: Duration = Duration::from_secs(90);
/// The network of a throwaway container that only proves a backup: none.
const NO_NETWORK: &str = "none";

/// Where one backup reads and writes. The streams run on connections of their own
/// (`server_connections::dedicated_connection`): a transfer held back by its slower end stalls
/// only them.
pub struct Sites<'a> {
    pub kind: DependencyKind,
    /// The database's server (Docker calls, short commands).
    pub database: &'a Target,
    /// A connection to it for the dump and restore streams.
    pub database_stream: &'a ServerConnection,
    /// Its container.
    pub container: &'a str,
    /// Its image, for the throwaway container.
    pub image: &'a str,
    /// The target's server and its name.
    pub store: &'a Target,
    /// A connection to it for the artifact's streams.
    pub store_stream: &'a ServerConnection,
    pub store_server: &'a str,
    pub path: &'a ArtifactPath,
    pub key: &'a [u8],
}

/// Dumps, seals and stores the database; the artifact's record, or why not. A failed upload
/// leaves nothing under the artifact's name.
pub async fn take(sites: &Sites<'_>) -> Result<std::result::Result<BackupArtifact, Failure>> {
    let socket = &sites.database.docker_socket;
    let (dump, dumper) = match sites.kind {
        DependencyKind::Postgres => (plan::dump_command(socket, sites.container), plan::PG_DUMP),
        DependencyKind::Redis => (redis::dump_command(socket, sites.container), "redis-cli"),
    };
    let dump = sites.database_stream.exec_channel(&dump).await?;
    let upload = sites.path.upload_command();
    let upload = sites.store_stream.exec_channel(&upload).await?;
    let stored = match transfer::dump_to(dump, dumper, upload, sites.key).await {
        Ok(stored) => stored,
        Err(failure) => {
            // Best effort: a leftover `.partial` is never taken for an artifact.
            let _ = sites
                .store
                .connection
                .run(&sites.path.discard_command())
                .await;
            return Ok(Err(failure));
        }
    };
    sites
        .store
        .connection
        .run(&sites.path.commit_command())
        .await?;
    Ok(Ok(BackupArtifact {
        location: sites.path.location(sites.store_server),
        bytes: stored.bytes,
        sha256: stored.sha256,
        encryption: ENCRYPTION.to_string(),
    }))
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
    database.remove_throwaway(scratch).await?;
    start_scratch(database, sites.kind, sites.image, scratch, NO_NETWORK).await?;
    let restored = match sites.kind {
        DependencyKind::Postgres => restore_and_count(sites, artifact, scratch).await,
        DependencyKind::Redis => redis_job::load_and_count_keys(sites, artifact, scratch).await,
    };
    let removed = database.remove_throwaway(scratch).await;
    let mut verification = match restored? {
        Ok(counted) => counted,
        Err(failure) => return Ok(Err(failure)),
    };
    removed?;
    verification.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    Ok(Ok(verification))
}

/// What a test restore counted, before its time is known.
pub(super) fn counted(dump_bytes: i64) -> BackupVerification {
    BackupVerification {
        tables: None,
        rows: None,
        keys: None,
        dump_bytes,
        seconds: 0.0,
        verified_at: Time(Timestamp::now()),
    }
}

/// Streams the artifact from the target into `receiver` on the database's server (named
/// `receiving` in failures); the dump's size.
pub(super) async fn download_into(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    receiver: &str,
    receiving: &str,
) -> Result<std::result::Result<i64, Failure>> {
    let stream = ArtifactStream {
        from: sites.store_stream,
        path: sites.path,
        to: sites.database_stream,
        key: sites.key,
    };
    stream.send_to(artifact, receiver, receiving).await
}

/// An artifact's way from its target to a command on a database's server.
pub(super) struct ArtifactStream<'a> {
    pub from: &'a ServerConnection,
    pub path: &'a ArtifactPath,
    pub to: &'a ServerConnection,
    pub key: &'a [u8],
}

impl ArtifactStream<'_> {
    /// Streams `artifact` (checked and opened on the way) into `receiver`'s standard input
    /// (named `receiving` in failures); the dump's size.
    pub async fn send_to(
        &self,
        artifact: &BackupArtifact,
        receiver: &str,
        receiving: &str,
    ) -> Result<std::result::Result<i64, Failure>> {
        let download = self
            .from
            .exec_channel(&self.path.download_command())
            .await?;
        let receiver = self.to.exec_channel(receiver).await?;
        let opened =
            transfer::restore_from(download, receiver, receiving, self.key, &artifact.sha256);
        Ok(opened.await)
    }
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

/// Creates and starts the throwaway database on `network` (`none` for a test restore),
/// with Berth's label so a sweep of managed containers finds it and a fresh password, which
/// it returns (given to it in the API's request, never on a command line). A PostgreSQL needs
/// it from no one (local connections are trusted); a Redis idles until its snapshot is
/// written into it, then requires it.
pub(super) async fn start_scratch(
    target: &Target,
    kind: DependencyKind,
    image: &str,
    scratch: &str,
    network: &str,
) -> Result<String> {
    let password = hex::encode(rand::random::<[u8; 16]>());
    let (env, cmd) = match kind {
        DependencyKind::Postgres => {
            let env = vec![
                format!("POSTGRES_PASSWORD={password}"),
                format!("POSTGRES_USER={POSTGRES_USER}"),
                format!("POSTGRES_DB={POSTGRES_DATABASE}"),
            ];
            (env, None)
        }
        DependencyKind::Redis => (
            vec![format!("REDIS_PASSWORD={password}")],
            Some(redis::idle_command()),
        ),
    };
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        env: Some(env),
        cmd,
        labels: Some(HashMap::from([(
            MANAGED_LABEL.to_string(),
            "true".to_string(),
        )])),
        host_config: Some(HostConfig {
            network_mode: Some(network.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::new().name(scratch).build();
    docker_call(
        &target.connection,
        "creating the throwaway database",
        target.docker.create_container(Some(options), body),
    )
    .await?;
    target.start(scratch).await?;
    Ok(password)
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
