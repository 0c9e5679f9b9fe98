//! The I/O of a Redis's backups (the commands are in `redis`): a snapshot written into a
//! throwaway container and loaded there, its keys counted (the test restore); and a restore,
//! which makes the target a replica of that throwaway server until it holds the whole
//! snapshot, then a primary again.

use std::time::{Duration, Instant};

use berth_crds::backup::{BackupArtifact, BackupVerification};
use berth_crds::dependency_resource::DependencyKind;

use super::plan::{Failure, code};
use super::redis::{self, Sync};
use super::sites::{ArtifactStream, Sites, counted, download_into, start_scratch};
use crate::error::Result;
use crate::reconcilers::container_exec::run_script_in;
use crate::reconcilers::deployment::server_target::Target;

/// How long a throwaway Redis may take to load its snapshot, and a target to sync it.
const LOAD_WITHIN: Duration = Duration::from_secs(90);
const SYNC_WITHIN: Duration = Duration::from_secs(120);
/// What receives a snapshot in the throwaway container, as failures name it.
const RECEIVER: &str = "writing the snapshot into the throwaway container";

/// Writes the snapshot into the throwaway container, loads it in a server there and counts
/// its keys.
pub async fn load_and_count_keys(
    sites: &Sites<'_>,
    artifact: &BackupArtifact,
    scratch: &str,
) -> Result<std::result::Result<BackupVerification, Failure>> {
    let receive = redis::receive_command(&sites.database.docker_socket, scratch);
    let dump_bytes = match download_into(sites, artifact, &receive, RECEIVER).await? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Err(failure)),
    };
    let loaded = load(sites.database, scratch, code::VERIFICATION_FAILED).await?;
    Ok(loaded.map(|keys| BackupVerification {
        keys: Some(keys),
        ..counted(dump_bytes)
    }))
}

/// Starts the server of the throwaway container on its snapshot; its keys once loaded, or
/// why it never did (coded `code`).
async fn load(
    target: &Target,
    scratch: &str,
    code: &'static str,
) -> Result<std::result::Result<i64, Failure>> {
    let socket = &target.docker_socket;
    let started = target
        .connection
        .exec(&redis::load_command(socket, scratch))
        .await?;
    if started.exit_status != Some(0) {
        let said = String::from_utf8_lossy(&started.stderr).trim().to_string();
        let message = format!("the throwaway Redis did not start: {said}");
        return Ok(Err(Failure::new(code, message)));
    }
    let deadline = Instant::now() + LOAD_WITHIN;
    while Instant::now() < deadline {
        if let Some(keys) = keys_of(target, scratch).await? {
            return Ok(Ok(keys));
        }
        let log = target
            .connection
            .exec(&redis::log_tail_command(socket, scratch))
            .await?;
        if let Some(error) = redis::load_error(&log.stdout_text()) {
            let message = format!("the snapshot did not load: {error}");
            return Ok(Err(Failure::new(code, message)));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let within = LOAD_WITHIN.as_secs();
    let message =
        format!("the throwaway Redis {scratch} did not load the snapshot within {within}s");
    Ok(Err(Failure::new(code, message)))
}

/// The keys of the Redis in `container` (`None` while it cannot answer).
async fn keys_of(target: &Target, container: &str) -> Result<Option<i64>> {
    let command = redis::keyspace_command(&target.docker_socket, container);
    let answer = target.connection.exec(&command).await?;
    Ok(redis::parse_keyspace(&answer.stdout_text()))
}

/// One restore of a Redis backup into a managed Redis.
pub struct RedisRestore<'a> {
    /// The target's server.
    pub database: &'a Target,
    /// The artifact's way from its backup target to the target's server.
    pub stream: ArtifactStream<'a>,
    /// The target's container, which is also its private network's name.
    pub container: &'a str,
    pub image: &'a str,
    /// The throwaway container that serves the snapshot to the target.
    pub scratch: &'a str,
}

impl RedisRestore<'_> {
    /// Replaces the target's data with the snapshot's: `(keys, dump bytes)`. The throwaway
    /// container goes whatever happened.
    pub async fn run(
        &self,
        artifact: &BackupArtifact,
    ) -> Result<std::result::Result<(i64, i64), Failure>> {
        let database = self.database;
        database.remove_container(self.scratch).await?;
        let (image, scratch, network) = (self.image, self.scratch, self.container);
        let password =
            start_scratch(database, DependencyKind::Redis, image, scratch, network).await?;
        let outcome = self.serve_and_sync(artifact, &password).await;
        let removed = database.remove_container(self.scratch).await;
        let outcome = outcome?;
        removed?;
        Ok(outcome)
    }

    async fn serve_and_sync(
        &self,
        artifact: &BackupArtifact,
        password: &str,
    ) -> Result<std::result::Result<(i64, i64), Failure>> {
        let socket = &self.database.docker_socket;
        let receive = redis::receive_command(socket, self.scratch);
        let dump_bytes = match self.stream.send_to(artifact, &receive, RECEIVER).await? {
            Ok(bytes) => bytes,
            Err(failure) => return Ok(Err(failure)),
        };
        let snapshot_keys = match load(self.database, self.scratch, code::RESTORE_FAILED).await? {
            Ok(keys) => keys,
            Err(failure) => return Ok(Err(failure)),
        };
        if let Some(failure) = self.replicate(password).await? {
            // Not a replica: it still holds its own data.
            let _ = self.script(redis::PROMOTE_SCRIPT, &[]).await;
            return Ok(Err(failure));
        }
        // From here the target may have swapped data: a failure says so (`RESTORE_INCOMPLETE`).
        let synced = self.wait_synced().await?;
        let promoted = self.script(redis::PROMOTE_SCRIPT, &[]).await?;
        if let Some(failure) = synced.or(promoted) {
            return Ok(Err(Failure::new(code::RESTORE_INCOMPLETE, failure.message)));
        }
        let incomplete = |message: String| Ok(Err(Failure::new(code::RESTORE_INCOMPLETE, message)));
        let Some(keys) = keys_of(self.database, self.container).await? else {
            return incomplete("the restored Redis did not answer for its keys".into());
        };
        if keys != snapshot_keys {
            return incomplete(format!(
                "the target holds {keys} keys, the snapshot {snapshot_keys}"
            ));
        }
        Ok(Ok((keys, dump_bytes)))
    }

    /// Makes the target a replica of the throwaway server, reached by its address on the
    /// target's network (its name can be longer than a DNS label).
    async fn replicate(&self, password: &str) -> Result<Option<Failure>> {
        let Some(address) = self.scratch_address().await? else {
            let message = format!("the throwaway Redis {} has no address", self.scratch);
            return Ok(Some(Failure::new(code::RESTORE_FAILED, message)));
        };
        let env = [
            ("SOURCE_HOST", address.as_str()),
            ("SOURCE_PASSWORD", password),
        ];
        self.script(redis::REPLICATE_SCRIPT, &env).await
    }

    /// The throwaway server's address on the target's network.
    async fn scratch_address(&self) -> Result<Option<String>> {
        let inspected = self.database.inspect(self.scratch).await?;
        Ok(inspected
            .and_then(|c| c.network_settings?.networks?.remove(self.container))
            .and_then(|endpoint| endpoint.ip_address)
            .filter(|ip| !ip.is_empty()))
    }

    /// Runs `script` in the target's container with `env`; why it failed, if it did.
    async fn script(&self, script: &str, env: &[(&str, &str)]) -> Result<Option<Failure>> {
        let what = "the restore's replication step";
        let ended = run_script_in(self.database, self.container, what, script, env).await?;
        Ok(ended.map(|problem| Failure::new(code::RESTORE_FAILED, problem)))
    }

    /// Waits until the target has taken the whole snapshot; why not, if it never did.
    async fn wait_synced(&self) -> Result<Option<Failure>> {
        let socket = &self.database.docker_socket;
        let command = redis::replication_command(socket, self.container);
        let deadline = Instant::now() + SYNC_WITHIN;
        while Instant::now() < deadline {
            let answer = self.database.connection.exec(&command).await?;
            if redis::parse_sync(&answer.stdout_text()) == Sync::Done {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let within = SYNC_WITHIN.as_secs();
        let message = format!("the target did not take the snapshot within {within}s");
        Ok(Some(Failure::new(code::RESTORE_FAILED, message)))
    }
}

/// What a restore deleted before it ended leaves right: the target a primary again (it may
/// have been replicating the throwaway server, and a replica refuses writes) and the
/// throwaway container gone. Why the target could not be promoted, if it could not.
pub async fn abandon(database: &Target, container: &str, scratch: &str) -> Result<Option<String>> {
    let what = "making the target a primary again";
    let promoted = run_script_in(database, container, what, redis::PROMOTE_SCRIPT, &[]).await?;
    database.remove_container(scratch).await?;
    Ok(promoted)
}
