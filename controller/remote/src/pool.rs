//! `ServerConnectionPool`: a small, bounded set of SSH connections per server, shared by every
//! caller and reopened with exponential backoff when they break or when what they were opened
//! with (endpoint, client key) changes.
//!
//! One connection is preferred: forwarding channels (Docker, probes, the proxy admin API) always
//! use the first live connection, and so do session channels (exec, terminals) while it has room.
//! sshd caps session channels per connection (`MaxSessions`, 10 by default), so the pool counts
//! them ([`SessionLease`]) and opens another connection when every live one is at
//! `max_sessions_per_connection`, up to `max_connections_per_server`; beyond that, callers wait
//! for a session to end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::Channel;
use russh::client::Msg;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::client_key::ClientKey;
use super::connection::{CommandOutput, Endpoint, ServerConnection, Timeouts};
use super::error::RemoteError;
use super::host_key;

/// Identity of a server in the pool: the Server object's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerId {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ServerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// How the pool connects and backs off.
#[derive(Clone, Debug)]
pub struct PoolSettings {
    pub timeouts: Timeouts,
    /// Wait after the first failed attempt; doubles per failure up to `backoff_max`.
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// Session channels (exec, terminals) open at once on one connection; below sshd's default
    /// `MaxSessions` (10).
    pub max_sessions_per_connection: usize,
    /// Connections to one server at most; further sessions wait for one to end.
    pub max_connections_per_server: usize,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            timeouts: Timeouts::default(),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            max_sessions_per_connection: 8,
            max_connections_per_server: 4,
        }
    }
}

/// The wait before attempt number `failures + 1`.
pub fn backoff(settings: &PoolSettings, failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    settings
        .backoff_initial
        .saturating_mul(factor)
        .min(settings.backoff_max)
}

/// Where the next session channel goes, given each live connection's open sessions and limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the live connection at this index (the first one with room).
    Use(usize),
    /// On a new connection.
    Open,
    /// Nowhere yet: every connection is full and there are as many as allowed.
    Wait,
}

/// Picks a place for one more session: the first connection with room (`open < limit`), else
/// a new connection while fewer than `max_connections` exist, else wait.
pub fn place(sessions: &[(usize, usize)], max_connections: usize) -> Placement {
    match sessions.iter().position(|&(open, limit)| open < limit) {
        Some(index) => Placement::Use(index),
        None if sessions.len() < max_connections.max(1) => Placement::Open,
        None => Placement::Wait,
    }
}

/// Whether sshd refused to open a session channel, as it does when the connection has
/// `MaxSessions` already: the connection is fine, just full. OpenSSH answers "connect failed"
/// there (a session has nothing else to connect to); "administratively prohibited" and
/// "resource shortage" are taken the same way. Only meaningful for session channel opens.
pub fn is_session_refused(error: &RemoteError) -> bool {
    matches!(
        error,
        RemoteError::Ssh {
            source: russh::Error::ChannelOpenFailure(
                russh::ChannelOpenFailure::AdministrativelyProhibited
                    | russh::ChannelOpenFailure::ConnectFailed
                    | russh::ChannelOpenFailure::ResourceShortage
            ),
            ..
        }
    )
}

/// Session channels open on one connection, and how many it takes.
#[derive(Debug)]
struct Sessions {
    open: AtomicUsize,
    limit: AtomicUsize,
}

impl Sessions {
    fn new(limit: usize) -> Self {
        Self {
            open: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit.max(1)),
        }
    }

    fn load(&self) -> (usize, usize) {
        (
            self.open.load(Ordering::Acquire),
            self.limit.load(Ordering::Acquire),
        )
    }

    /// sshd refused one more session while `open` (this one included) were counted: lowers the
    /// limit to the others (at least one). False when there were no others: then sshd may
    /// still be releasing a session that just ended here.
    fn refused(&self) -> bool {
        let others = self.open.load(Ordering::Acquire).saturating_sub(1);
        self.limit.fetch_min(others.max(1), Ordering::AcqRel);
        others > 0
    }
}

/// One session slot on a connection; frees it when dropped.
struct SessionSlot {
    sessions: Arc<Sessions>,
    freed: Arc<Notify>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.sessions.open.fetch_sub(1, Ordering::AcqRel);
        self.freed.notify_waiters();
    }
}

/// A connection with room for one session channel, reserved until this is dropped. Keep it for
/// as long as the session channel (exec, terminal) is open.
pub struct SessionLease {
    connection: Arc<ServerConnection>,
    slot: SessionSlot,
}

impl SessionLease {
    pub fn connection(&self) -> &Arc<ServerConnection> {
        &self.connection
    }

    /// sshd refused a session on this connection: take no more sessions on it than the others
    /// open now until it is replaced. False when no other session was open.
    pub fn mark_full(&self) -> bool {
        self.slot.sessions.refused()
    }
}

impl std::ops::Deref for SessionLease {
    type Target = ServerConnection;

    fn deref(&self) -> &ServerConnection {
        &self.connection
    }
}

/// What a live connection must match to be reused.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    endpoint: Endpoint,
    client_key_fingerprint: String,
}

struct Pooled {
    connection: Arc<ServerConnection>,
    sessions: Arc<Sessions>,
}

#[derive(Default)]
struct Slot {
    /// Live connections, the preferred one first.
    connections: Vec<Pooled>,
    identity: Option<Identity>,
    failures: u32,
    retry_at: Option<Instant>,
    last_failure: Option<(&'static str, String)>,
}

impl Slot {
    /// Closes every connection and forgets it.
    async fn close_all(&mut self) {
        for pooled in self.connections.drain(..) {
            pooled.connection.close().await;
        }
    }

    /// Drops connections that ended or whose host key `pinned` no longer accepts.
    async fn prune(&mut self, pinned_host_key: Option<&str>) {
        let mut index = 0;
        while index < self.connections.len() {
            let connection = &self.connections[index].connection;
            let usable = !connection.is_closed()
                && host_key::accepts(pinned_host_key, connection.host_key_fingerprint());
            if usable {
                index += 1;
            } else {
                let old = self.connections.remove(index);
                old.connection.close().await;
            }
        }
    }
}

/// A server's connections and the wake-up for callers waiting for a session slot.
#[derive(Default)]
struct Server {
    slot: tokio::sync::Mutex<Slot>,
    freed: Arc<Notify>,
}

/// A bounded set of SSH connections per server, shared.
pub struct ServerConnectionPool {
    servers: Mutex<HashMap<ServerId, Arc<Server>>>,
    settings: PoolSettings,
    opened: AtomicU64,
}

impl ServerConnectionPool {
    pub fn new(settings: PoolSettings) -> Self {
        Self {
            servers: Mutex::new(HashMap::new()),
            settings,
            opened: AtomicU64::new(0),
        }
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    /// SSH connections opened so far (successfully authenticated ones).
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    fn server(&self, id: &ServerId) -> Arc<Server> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers.entry(id.clone()).or_default().clone()
    }

    /// Resets `slot` when `endpoint` or `key` changed: the old connections and their failures
    /// are forgotten.
    async fn match_identity(slot: &mut Slot, endpoint: &Endpoint, key: &ClientKey) {
        let identity = Identity {
            endpoint: endpoint.clone(),
            client_key_fingerprint: key.fingerprint().to_string(),
        };
        if slot.identity.as_ref() != Some(&identity) {
            slot.close_all().await;
            *slot = Slot {
                identity: Some(identity),
                ..Slot::default()
            };
        }
    }

    /// Opens one more connection for `slot`, unless backing off after failures.
    async fn open(
        &self,
        id: &ServerId,
        slot: &mut Slot,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
    ) -> Result<usize, RemoteError> {
        if let (Some(retry_at), Some((reason, message))) = (slot.retry_at, &slot.last_failure) {
            let now = Instant::now();
            if retry_at > now {
                return Err(RemoteError::BackingOff {
                    retry_in: retry_at - now,
                    reason,
                    message: message.clone(),
                });
            }
        }
        match ServerConnection::open(endpoint, key, pinned_host_key, &self.settings.timeouts).await
        {
            Ok(connection) => {
                self.opened.fetch_add(1, Ordering::Relaxed);
                slot.connections.push(Pooled {
                    connection: Arc::new(connection),
                    sessions: Arc::new(Sessions::new(self.settings.max_sessions_per_connection)),
                });
                slot.failures = 0;
                slot.retry_at = None;
                slot.last_failure = None;
                let count = slot.connections.len();
                tracing::info!(server = %id, address = %endpoint.address(), connections = count, "SSH connection opened");
                Ok(count - 1)
            }
            Err(error) => {
                slot.failures = slot.failures.saturating_add(1);
                slot.retry_at = Some(Instant::now() + backoff(&self.settings, slot.failures));
                slot.last_failure = Some((error.reason(), error.to_string()));
                Err(error)
            }
        }
    }

    /// The server's preferred connection, for forwarding channels (Docker, probes): the first
    /// live one when it still matches `endpoint`, `key` and the pinned host key, else a new one.
    /// Concurrent callers for one server share one attempt. While backing off after failures,
    /// fails fast with [`RemoteError::BackingOff`]. Session channels (exec, terminals) should
    /// go through [`Self::session`] instead, which spreads them over more connections.
    pub async fn connect(
        &self,
        id: &ServerId,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
    ) -> Result<Arc<ServerConnection>, RemoteError> {
        let server = self.server(id);
        let mut slot = server.slot.lock().await;
        Self::match_identity(&mut slot, endpoint, key).await;
        slot.prune(pinned_host_key).await;
        if let Some(first) = slot.connections.first() {
            return Ok(first.connection.clone());
        }
        let index = self
            .open(id, &mut slot, endpoint, key, pinned_host_key)
            .await?;
        Ok(slot.connections[index].connection.clone())
    }

    /// A connection with room for one more session channel (exec, terminal), reserved until the
    /// lease is dropped. Prefers the first connection; opens another when every live one is
    /// full, up to `max_connections_per_server`; beyond that waits for a session to end, for at
    /// most the command deadline.
    pub async fn session(
        &self,
        id: &ServerId,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
    ) -> Result<SessionLease, RemoteError> {
        let after = self.settings.timeouts.command;
        let deadline = Instant::now() + after;
        let server = self.server(id);
        loop {
            // Registered before looking, so a session ending meanwhile still wakes us.
            let freed = server.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut slot = server.slot.lock().await;
                Self::match_identity(&mut slot, endpoint, key).await;
                slot.prune(pinned_host_key).await;
                let sessions: Vec<_> = slot
                    .connections
                    .iter()
                    .map(|pooled| pooled.sessions.load())
                    .collect();
                let index = match place(&sessions, self.settings.max_connections_per_server) {
                    Placement::Use(index) => Some(index),
                    Placement::Open => {
                        match self
                            .open(id, &mut slot, endpoint, key, pinned_host_key)
                            .await
                        {
                            Ok(index) => Some(index),
                            // The live connections free up eventually; wait for them.
                            Err(error) if !slot.connections.is_empty() => {
                                tracing::debug!(server = %id, %error, "no extra SSH connection; waiting for a session slot");
                                None
                            }
                            Err(error) => return Err(error),
                        }
                    }
                    Placement::Wait => None,
                };
                if let Some(index) = index {
                    let pooled = &slot.connections[index];
                    pooled.sessions.open.fetch_add(1, Ordering::AcqRel);
                    return Ok(SessionLease {
                        connection: pooled.connection.clone(),
                        slot: SessionSlot {
                            sessions: pooled.sessions.clone(),
                            freed: server.freed.clone(),
                        },
                    });
                }
            }
            // Connections that end do not notify: look again now and then.
            let wake = deadline.min(Instant::now() + Duration::from_millis(500));
            if tokio::time::timeout_at(wake, freed).await.is_err() && Instant::now() >= deadline {
                return Err(RemoteError::Timeout {
                    operation: "waiting for an SSH session slot",
                    after,
                });
            }
        }
    }

    /// Runs `command` on an exec channel of one of the server's connections (see
    /// [`Self::session`]). A connection whose sshd refuses another session is taken as full and
    /// the command goes to another one.
    pub async fn exec(
        &self,
        id: &ServerId,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
        command: &str,
    ) -> Result<CommandOutput, RemoteError> {
        let deadline = Instant::now() + self.settings.timeouts.command;
        loop {
            let lease = self.session(id, endpoint, key, pinned_host_key).await?;
            match lease.exec(command).await {
                Err(error) if is_session_refused(&error) => {
                    if !retry_refused(id, &lease, &error, deadline).await {
                        return Err(error);
                    }
                }
                result => return result,
            }
        }
    }

    /// Opens an interactive terminal of `(cols, rows)` (see [`ServerConnection::open_terminal`]) on one of the
    /// server's connections; keep the lease as long as the channel. Refused sessions are
    /// retried as in [`Self::exec`].
    pub async fn open_terminal(
        &self,
        id: &ServerId,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
        (cols, rows): (u32, u32),
        command: Option<&str>,
    ) -> Result<(Channel<Msg>, SessionLease), RemoteError> {
        let deadline = Instant::now() + self.settings.timeouts.command;
        loop {
            let lease = self.session(id, endpoint, key, pinned_host_key).await?;
            match lease.open_terminal(cols, rows, command).await {
                Ok(channel) => return Ok((channel, lease)),
                Err(error) => {
                    if !retry_refused(id, &lease, &error, deadline).await {
                        return Err(error);
                    }
                }
            }
        }
    }

    /// The server's preferred live connection, if any, whatever it was opened with. Used to
    /// clean up after a server whose credential is already gone.
    pub async fn current(&self, id: &ServerId) -> Option<Arc<ServerConnection>> {
        let server = self.server(id);
        let slot = server.slot.lock().await;
        slot.connections
            .iter()
            .map(|pooled| &pooled.connection)
            .find(|c| !c.is_closed())
            .cloned()
    }

    /// Drops `connection` if it is still one of the server's, after it failed in a way that
    /// makes it suspect; the next `connect` opens a new one at once.
    pub async fn discard(&self, id: &ServerId, connection: &Arc<ServerConnection>) {
        let server = self.server(id);
        let mut slot = server.slot.lock().await;
        if let Some(index) = slot
            .connections
            .iter()
            .position(|pooled| Arc::ptr_eq(&pooled.connection, connection))
        {
            slot.connections.remove(index);
            connection.close().await;
            server.freed.notify_waiters();
        }
    }

    /// Closes the server's connections and forgets them (server deleted).
    pub async fn remove(&self, id: &ServerId) {
        let server = {
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            servers.remove(id)
        };
        if let Some(server) = server {
            server.slot.lock().await.close_all().await;
            server.freed.notify_waiters();
        }
    }
}

/// Whether to retry a session `lease` failed to open with `error`: sshd refused it (the
/// connection is then taken as full) and time is left. With no other session open on it, sshd
/// may still be releasing one that just ended, so the retry comes after a short pause.
async fn retry_refused(
    id: &ServerId,
    lease: &SessionLease,
    error: &RemoteError,
    deadline: Instant,
) -> bool {
    if !is_session_refused(error) || Instant::now() >= deadline {
        return false;
    }
    tracing::debug!(server = %id, %error, "sshd refused a session; taking the connection as full");
    if !lease.mark_full() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

#[cfg(test)]
mod tests;
