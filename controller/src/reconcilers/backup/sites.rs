//! What one backup's or restore's I/O shares: where it reads and writes (`Sites`), the
//! artifact's way from its target to a command on a database's server (`ArtifactStream`), and
//! the throwaway container a backup is proven in or a Redis restore is served from.

use std::collections::HashMap;

use berth_crds::MANAGED_LABEL;
use berth_crds::backup::{BackupArtifact, BackupVerification};
use berth_crds::dependency_resource::{DependencyKind, POSTGRES_DATABASE, POSTGRES_USER};
use berth_remote::ServerConnection;
use berth_remote::docker::docker_call;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::plan::{Failure, code};
use super::store::Store;
use super::{redis, transfer};
use crate::error::Result;
use crate::reconcilers::deployment::server_target::Target;

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
    /// Where the artifact is kept.
    pub store: &'a Store,
    pub key: &'a [u8],
}

/// What a test restore counted, before its time is known.
pub fn counted(dump_bytes: i64) -> BackupVerification {
    BackupVerification {
        tables: None,
        rows: None,
        keys: None,
        tree: None,
        dump_bytes,
        seconds: 0.0,
        verified_at: Time(Timestamp::now()),
    }
}

/// Streams the artifact from the target into `receiver` on the database's server (named
/// `receiving` in failures); the dump's size.
pub async fn download_into(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    receiver: &str,
    receiving: &str,
) -> Result<std::result::Result<i64, Failure>> {
    let stream = ArtifactStream {
        from: sites.store,
        to: sites.database_stream,
        key: sites.key,
    };
    stream.send_to(artifact, receiver, receiving).await
}

/// An artifact's way from its target to a command on a database's server.
pub struct ArtifactStream<'a> {
    pub from: &'a Store,
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
        let download = match self.from.source().await? {
            Ok(download) => download,
            Err(why) => return Ok(Err(Failure::new(code::VERIFICATION_FAILED, why))),
        };
        let receiver = self.to.exec_channel(receiver).await?;
        let opened =
            transfer::restore_from(download, receiver, receiving, self.key, &artifact.sha256);
        Ok(opened.await)
    }
}

/// Creates and starts the throwaway database on `network` (`none` for a test restore),
/// with Berth's label so a sweep of managed containers finds it and a fresh password, which
/// it returns (given to it in the API's request, never on a command line). A PostgreSQL needs
/// it from no one (local connections are trusted); a Redis idles until its snapshot is
/// written into it, then requires it.
pub async fn start_scratch(
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
