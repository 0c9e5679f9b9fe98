//! Terminal sessions. What every replica must see lives in the observation store: the sessions
//! waiting for their WebSocket ([`pending`]), so that any replica may take them, and the
//! sessions taken, closing or closed ([`opened`]), so that any replica may list, show and close
//! them ([`lifecycle`]). What lives in this process: the shells it bridges ([`bridged`]: a
//! WebSocket lives on one replica), open sessions per server and the SSH connections they use.
//! The HTTP side (creating, the WebSocket and its protocol, the routes of [`lifecycle`]) is
//! `routes::terminal`.

pub mod bridged;
pub mod lifecycle;
pub mod opened;
pub mod pending;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_crds::server::Server;
use berth_crds::ssh_credential::SshCredential;
use berth_remote::{PoolSettings, ServerConnection, ServerConnectionPool, ServerId};
use kube::Client;
use kube::runtime::reflector::Store;

use super::server_access::{self, IDLE_CONNECTION};
use crate::error::{ApiError, ApiResult};

pub use berth_api::terminal::{ListedSession, TerminalSessionStatus};

/// How long a created session waits for its WebSocket.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(60);
/// Terminal sessions open at once on one server (OpenSSH allows 10 sessions per connection).
pub const MAX_OPEN_PER_SERVER: usize = 8;
/// Sessions one user may have waiting for their WebSocket.
pub const MAX_PENDING_PER_USER: usize = 16;
/// How long the replica bridging a session vouches for it at a time; past it, with no renewal,
/// the session is taken for gone (its replica died).
pub const LEASE: Duration = Duration::from_secs(15);
/// How often the replica bridging a session renews its lease, and so learns that another
/// replica asked for it to close.
pub const RENEW_EVERY: Duration = Duration::from_secs(2);
/// How long a closed session is remembered, so that closing it again answers the same.
pub const CLOSED_KEPT: Duration = Duration::from_secs(60 * 60);

/// The lease that taking or renewing a session at `now_ms` (Unix milliseconds) sets.
pub fn lease_from(now_ms: i64) -> i64 {
    now_ms.saturating_add(i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX))
}

/// At `now_ms`, sessions closed (or whose replica stopped renewing them) before this are
/// forgotten: [`CLOSED_KEPT`] ago.
pub fn forget_before(now_ms: i64) -> i64 {
    now_ms.saturating_sub(i64::try_from(CLOSED_KEPT.as_millis()).unwrap_or(i64::MAX))
}

// Also how a session is stored (inside `pending::Pending`, while it waits and once it is
// opened), so it lives here. Its doc line is the schema's description in the OpenAPI document.

/// Where a `resource` or `dependency` terminal runs: a container on the server, reached with
/// the Docker CLI on the server's socket. Not a wire record: it is kept with a pending session in the store.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerShell {
    /// The container's id, or its name.
    pub container_id: String,
    pub docker_socket: String,
    /// What runs in it (sessions pending from before it existed ran a shell).
    #[serde(default)]
    pub program: ContainerProgram,
}

/// What a container terminal runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerProgram {
    /// `bash` where the image has it, else `sh`.
    #[default]
    Shell,
    /// A managed PostgreSQL's `psql`, as its user on its database (local logins are trusted).
    Psql,
    /// A managed Redis's `redis-cli`, its password read from the container's environment.
    RedisCli,
}

impl ContainerProgram {
    /// The command `docker exec -it` runs, single-quoted for the server's shell: variables
    /// are expanded in the container, never on the server.
    fn command(self) -> String {
        use berth_crds::dependency_resource::{POSTGRES_DATABASE, POSTGRES_USER};
        match self {
            Self::Shell => "/bin/sh -c 'if command -v bash >/dev/null 2>&1; then exec bash; \
                            else exec sh; fi'"
                .to_string(),
            // No pager: the exec's pty may still be 0×0 when psql starts (Docker sizes it a
            // moment later), and psql would page even a one-line answer and wait.
            Self::Psql => format!("psql -P pager=off -U {POSTGRES_USER} -d {POSTGRES_DATABASE}"),
            Self::RedisCli => {
                "/bin/sh -c 'REDISCLI_AUTH=\"$REDIS_PASSWORD\" exec redis-cli'".to_string()
            }
        }
    }
}

impl ContainerShell {
    /// `docker exec` of the program. The container's id or name keeps only the characters a
    /// Docker name may hold and the socket path is single-quoted, so nothing is expanded on
    /// the server.
    pub fn command(&self) -> String {
        let socket = self.docker_socket.replace('\'', r"'\''");
        let id: String = self
            .container_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        let program = self.program.command();
        format!("exec docker -H 'unix://{socket}' exec -it {id} {program}")
    }
}

/// Terminal state of this shim process: the sessions it bridges, open sessions per server, and
/// the SSH connections they use (one per server, like the controller's, but this process's
/// own). A WebSocket lives on one replica, so these stay per process; what replicas share is
/// in the observation store.
pub struct Terminals {
    /// How to ask each session bridged here to close, by id.
    bridged: Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>,
    open: tokio::sync::Mutex<HashMap<ServerId, usize>>,
    pool: ServerConnectionPool,
}

impl Default for Terminals {
    fn default() -> Self {
        Self {
            bridged: Mutex::default(),
            open: tokio::sync::Mutex::default(),
            pool: ServerConnectionPool::new(PoolSettings::default()),
        }
    }
}

/// One open terminal on a server; dropping it frees the slot.
pub struct OpenSlot {
    terminals: Arc<Terminals>,
    server: ServerId,
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        let terminals = self.terminals.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            let mut open = terminals.open.lock().await;
            if let Some(count) = open.get_mut(&server) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    open.remove(&server);
                }
            }
            drop(open);
            terminals.close_when_idle(server);
        });
    }
}

impl Terminals {
    /// Asks session `id` to close if this replica bridges it; returns whether it does.
    pub fn close_here(&self, id: &str) -> bool {
        let bridged = self.bridged.lock().unwrap_or_else(|e| e.into_inner());
        bridged.get(id).map(|ask| ask.send_replace(true)).is_some()
    }

    /// Terminals open on `server` through this replica.
    pub async fn open_count(&self, server: &ServerId) -> usize {
        self.open.lock().await.get(server).copied().unwrap_or(0)
    }

    /// Claims a terminal slot on `server`, or 429 when it has [`MAX_OPEN_PER_SERVER`].
    pub async fn reserve(self: &Arc<Self>, server: &ServerId) -> ApiResult<OpenSlot> {
        let mut open = self.open.lock().await;
        let count = open.entry(server.clone()).or_insert(0);
        if *count >= MAX_OPEN_PER_SERVER {
            return Err(too_many());
        }
        *count += 1;
        Ok(OpenSlot {
            terminals: self.clone(),
            server: server.clone(),
        })
    }

    /// Closes the server's SSH connection after [`IDLE_CONNECTION`] unless a terminal opened
    /// meanwhile. The open-count lock is held while closing, so no terminal starts on a
    /// connection that is going away.
    pub fn close_when_idle(self: Arc<Self>, server: ServerId) {
        tokio::spawn(async move {
            tokio::time::sleep(IDLE_CONNECTION).await;
            let open = self.open.lock().await;
            if !open.contains_key(&server) {
                self.pool.remove(&server).await;
            }
            drop(open);
        });
    }

    /// The server's SSH connection in this process, logged in with its credential's current
    /// key.
    pub async fn connection(
        &self,
        client: &Client,
        credentials: &Store<SshCredential>,
        server: &Server,
    ) -> ApiResult<Arc<ServerConnection>> {
        server_access::connect(client, credentials, &self.pool, server, "open a terminal").await
    }
}

/// The 429 of a server with [`MAX_OPEN_PER_SERVER`] open terminal sessions.
pub fn too_many() -> ApiError {
    ApiError::rate_limited(
        format!("this server already has {MAX_OPEN_PER_SERVER} open terminal sessions"),
        5,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_shell_expands_nothing_of_its_socket_path() {
        let shell = ContainerShell {
            container_id: "abc123;rm".into(),
            docker_socket: "/run/it's.sock".into(),
            program: ContainerProgram::Shell,
        };
        let command = shell.command();
        assert!(command.contains(r"'unix:///run/it'\''s.sock'"), "{command}");
        assert!(command.contains("exec -it abc123rm "), "{command}");
    }

    #[test]
    fn a_database_terminal_runs_its_client_by_the_containers_name() {
        let shell = |program| ContainerShell {
            container_id: "berth-dep-org-a-dep-1 $(x)".into(),
            docker_socket: "/var/run/docker.sock".into(),
            program,
        };
        let psql = shell(ContainerProgram::Psql).command();
        assert!(
            psql.ends_with("exec -it berth-dep-org-a-dep-1x psql -P pager=off -U berth -d app"),
            "{psql}"
        );
        let redis = shell(ContainerProgram::RedisCli).command();
        // The password is read in the container: single quotes keep it from the server's shell.
        assert!(
            redis.ends_with(r#"'REDISCLI_AUTH="$REDIS_PASSWORD" exec redis-cli'"#),
            "{redis}"
        );
    }
}
