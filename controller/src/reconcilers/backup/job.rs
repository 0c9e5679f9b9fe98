//! The I/O of one backup: the dump streamed from the database's server, sealed, to the target
//! server (named whole only once complete), then read back and restored into a throwaway
//! container of the database's image on its server, whose tables and rows are counted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use berth_crds::MANAGED_LABEL;
use berth_crds::backup::{BackupArtifact, BackupVerification, ENCRYPTION};
use berth_crds::dependency_resource::{POSTGRES_DATABASE, POSTGRES_USER};
use berth_remote::ServerConnection;
use berth_remote::docker::docker_call;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::plan::{self, ArtifactPath, Failure, code};
use super::transfer;
use crate::error::Result;
use crate::reconcilers::deployment::server_target::Target;

/// How long the throwaway database may take to accept connections.
const SCRATCH_READY_WITHIN: Duration = Duration::from_secs(90);

/// Where one backup reads and writes. The streams run on connections of their own
/// (`server_connections::dedicated_connection`): a transfer held back by its slower end stalls
/// only them.
pub struct Sites<'a> {
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
    let dump = plan::dump_command(&sites.database.docker_socket, sites.container);
    let dump = sites.database_stream.exec_channel(&dump).await?;
    let upload = sites.path.upload_command();
    let upload = sites.store_stream.exec_channel(&upload).await?;
    let stored = match transfer::dump_to(dump, upload, sites.key).await {
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
    database.remove_container(scratch).await?;
    start_scratch(database, sites.image, scratch).await?;
    let restored = restore_and_count(sites, artifact, scratch).await;
    let removed = database.remove_container(scratch).await;
    let (dump_bytes, tables, rows) = match restored? {
        Ok(counted) => counted,
        Err(failure) => return Ok(Err(failure)),
    };
    removed?;
    Ok(Ok(BackupVerification {
        tables,
        rows,
        dump_bytes,
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        verified_at: Time(Timestamp::now()),
    }))
}

async fn restore_and_count(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    scratch: &str,
) -> Result<std::result::Result<(i64, i64, i64), Failure>> {
    let database = sites.database;
    let socket = &database.docker_socket;
    if let Some(failure) = wait_ready(database, scratch).await? {
        return Ok(Err(failure));
    }
    let download = sites.path.download_command();
    let download = sites.store_stream.exec_channel(&download).await?;
    let restore = plan::restore_command(socket, scratch);
    let restore = sites.database_stream.exec_channel(&restore).await?;
    let dump_bytes =
        match transfer::restore_from(download, restore, sites.key, &artifact.sha256).await {
            Ok(bytes) => bytes,
            Err(failure) => return Ok(Err(failure)),
        };
    Ok(count(database, scratch, code::VERIFICATION_FAILED)
        .await?
        .map(|(tables, rows)| (dump_bytes, tables, rows)))
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

/// Creates and starts the throwaway database: no network, a password nobody needs (local
/// connections are trusted), Berth's label so a sweep of managed containers finds it.
async fn start_scratch(target: &Target, image: &str, scratch: &str) -> Result<()> {
    let password = hex::encode(rand::random::<[u8; 16]>());
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        env: Some(vec![
            format!("POSTGRES_PASSWORD={password}"),
            format!("POSTGRES_USER={POSTGRES_USER}"),
            format!("POSTGRES_DB={POSTGRES_DATABASE}"),
        ]),
        labels: Some(HashMap::from([(
            MANAGED_LABEL.to_string(),
            "true".to_string(),
        )])),
        host_config: Some(HostConfig {
            network_mode: Some("none".to_string()),
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
    Ok(())
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
