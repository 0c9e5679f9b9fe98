//! `ServerConnectionPool`: one SSH connection per server, shared by every caller and reopened
//! with exponential backoff when it breaks or when what it was opened with (endpoint, client
//! key) changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::client_key::ClientKey;
use super::connection::{Endpoint, ServerConnection, Timeouts};
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
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            timeouts: Timeouts::default(),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
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

/// What a live connection must match to be reused.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    endpoint: Endpoint,
    client_key_fingerprint: String,
}

#[derive(Default)]
struct Slot {
    connection: Option<Arc<ServerConnection>>,
    identity: Option<Identity>,
    failures: u32,
    retry_at: Option<Instant>,
    last_failure: Option<(&'static str, String)>,
}

/// One SSH connection per server, shared.
pub struct ServerConnectionPool {
    slots: Mutex<HashMap<ServerId, Arc<tokio::sync::Mutex<Slot>>>>,
    settings: PoolSettings,
    opened: AtomicU64,
}

impl ServerConnectionPool {
    pub fn new(settings: PoolSettings) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
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

    fn slot(&self, id: &ServerId) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(id.clone()).or_default().clone()
    }

    /// The server's connection: the live one when it still matches `endpoint`, `key` and the
    /// pinned host key, else a new one. Concurrent callers for one server share one attempt.
    /// While backing off after failures, fails fast with [`RemoteError::BackingOff`].
    pub async fn connect(
        &self,
        id: &ServerId,
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned_host_key: Option<&str>,
    ) -> Result<Arc<ServerConnection>, RemoteError> {
        let slot = self.slot(id);
        let mut slot = slot.lock().await;
        let identity = Identity {
            endpoint: endpoint.clone(),
            client_key_fingerprint: key.fingerprint().to_string(),
        };
        if slot.identity.as_ref() != Some(&identity) {
            // New endpoint or rotated key: forget the old connection and its failures.
            if let Some(old) = slot.connection.take() {
                old.close().await;
            }
            *slot = Slot {
                identity: Some(identity),
                ..Slot::default()
            };
        }
        if let Some(connection) = &slot.connection {
            let usable = !connection.is_closed()
                && host_key::accepts(pinned_host_key, connection.host_key_fingerprint());
            if usable {
                return Ok(connection.clone());
            }
            let old = slot.connection.take();
            if let Some(old) = old {
                old.close().await;
            }
        }
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
                let connection = Arc::new(connection);
                self.opened.fetch_add(1, Ordering::Relaxed);
                slot.connection = Some(connection.clone());
                slot.failures = 0;
                slot.retry_at = None;
                slot.last_failure = None;
                tracing::info!(server = %id, address = %endpoint.address(), "SSH connection opened");
                Ok(connection)
            }
            Err(error) => {
                slot.failures = slot.failures.saturating_add(1);
                slot.retry_at = Some(Instant::now() + backoff(&self.settings, slot.failures));
                slot.last_failure = Some((error.reason(), error.to_string()));
                Err(error)
            }
        }
    }

    /// The server's live connection, if any, whatever it was opened with. Used to clean up after
    /// a server whose credential is already gone.
    pub async fn current(&self, id: &ServerId) -> Option<Arc<ServerConnection>> {
        let slot = self.slot(id);
        let slot = slot.lock().await;
        slot.connection.clone().filter(|c| !c.is_closed())
    }

    /// Drops `connection` if it is still the server's current one, after it failed in a way that
    /// makes it suspect; the next `connect` opens a new one at once.
    pub async fn discard(&self, id: &ServerId, connection: &Arc<ServerConnection>) {
        let slot = self.slot(id);
        let mut slot = slot.lock().await;
        if slot
            .connection
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, connection))
        {
            slot.connection = None;
            connection.close().await;
        }
    }

    /// Closes the server's connection and forgets it (server deleted).
    pub async fn remove(&self, id: &ServerId) {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.remove(id)
        };
        if let Some(slot) = slot {
            let connection = slot.lock().await.connection.take();
            if let Some(connection) = connection {
                connection.close().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let settings = PoolSettings::default();
        let waits: Vec<_> = (0..8).map(|n| backoff(&settings, n)).collect();
        assert_eq!(waits[0], Duration::ZERO);
        assert_eq!(waits[1], Duration::from_millis(500));
        assert_eq!(waits[2], Duration::from_secs(1));
        assert_eq!(waits[3], Duration::from_secs(2));
        assert_eq!(waits[5], Duration::from_secs(8));
        assert_eq!(waits[7], Duration::from_secs(8));
        assert_eq!(backoff(&settings, u32::MAX), settings.backoff_max);
    }
}
