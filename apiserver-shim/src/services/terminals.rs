//! This process's terminal sessions: the connected ones and the SSH connections they use (a
//! WebSocket lives on one replica, so these stay per process), and the sessions waiting for
//! their WebSocket, which live in the observation store ([`pending`]) so that any replica may
//! take them. The HTTP side (creating, listing, the WebSocket and its protocol) is
//! `routes::terminal`.

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

// Also how a pending session is stored (inside `pending::Pending`) and how `Terminals`
// remembers a connected one, so it lives here. Its doc line is the schema's description in the
// OpenAPI document.

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

/// Terminal state of this shim process: connected sessions, open sessions per server, and the
/// SSH connections they use (one per server, like the controller's, but this process's own).
/// A WebSocket lives on one replica, so these stay per process; pending sessions do not.
pub struct Terminals {
    /// Connected sessions by id, with the user who opened them.
    connected: Mutex<HashMap<String, (String, ListedSession)>>,
    open: tokio::sync::Mutex<HashMap<ServerId, usize>>,
    pool: ServerConnectionPool,
}

impl Default for Terminals {
    fn default() -> Self {
        Self {
            connected: Mutex::default(),
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
    /// The user's sessions connected on this replica.
    pub fn connected_of(&self, user: &str) -> Vec<ListedSession> {
        let connected = self.connected.lock().unwrap_or_else(|e| e.into_inner());
        connected
            .values()
            .filter(|(owner, _)| owner == user)
            .map(|(_, listed)| listed.clone())
            .collect()
    }

    /// Remembers `listed` as connected by `user` through this replica (`active`).
    pub fn connected(&self, user: &str, mut listed: ListedSession) {
        listed.status = TerminalSessionStatus::Active;
        let mut connected = self.connected.lock().unwrap_or_else(|e| e.into_inner());
        connected.insert(listed.session_id.clone(), (user.to_string(), listed));
    }

    /// Marks a connected session `closing`: its shell ended (or its client left, or it idled
    /// out) and its channel and WebSocket are being closed.
    pub fn closing(&self, id: &str) {
        let mut connected = self.connected.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, listed)) = connected.get_mut(id) {
            listed.status = TerminalSessionStatus::Closing;
        }
    }

    /// Forgets a session whose WebSocket closed.
    pub fn disconnected(&self, id: &str) {
        let mut connected = self.connected.lock().unwrap_or_else(|e| e.into_inner());
        connected.remove(id);
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
    fn a_connected_session_is_active_then_closing_then_gone() {
        let listed = ListedSession {
            session_id: "trm-1".into(),
            scope: "server".into(),
            server_id: "srv-1".into(),
            resource_id: None,
            dependency_resource_id: None,
            transport: berth_api::terminal::Transport {
                kind: "websocket".into(),
                path: "/api/terminal-sessions/trm-1/ws".into(),
            },
            provider_key: "generic-ssh".into(),
            working_directory: None,
            status: TerminalSessionStatus::Active,
            created_at: "2030-01-01T00:00:00Z".into(),
        };
        let terminals = Terminals::default();
        terminals.connected("usr-a", listed);
        let status = |user| -> Vec<TerminalSessionStatus> {
            terminals
                .connected_of(user)
                .iter()
                .map(|s| s.status)
                .collect()
        };
        assert_eq!(status("usr-a"), vec![TerminalSessionStatus::Active]);
        assert_eq!(status("usr-b"), []);
        terminals.closing("trm-1");
        assert_eq!(status("usr-a"), vec![TerminalSessionStatus::Closing]);
        terminals.disconnected("trm-1");
        assert!(terminals.connected_of("usr-a").is_empty());
    }

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
