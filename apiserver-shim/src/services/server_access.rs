//! SSH connections the shim opens itself (terminals, runtime logs), like the controller's but
//! this process's own: logged in with the server's credential and checked against the host key
//! the controller pinned, never first contact.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::server::Server;
use berth_crds::ssh_credential::SshCredential;
use berth_remote::{
    PoolSettings, RemoteError, ServerAddress, ServerConnection, ServerConnectionPool, ServerId,
    load_key,
};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};

use crate::error::{ApiError, ApiResult};

// How a Server is dialled is berth-remote's, shared with the controller.
pub use berth_remote::server_id;

/// An SSH connection nothing uses is closed after this long.
pub const IDLE_CONNECTION: Duration = Duration::from_secs(90);

/// The server's address, refused when its host key is not pinned yet: first contact is the
/// controller's, never the shim's.
fn pinned_address(server: &Server) -> ApiResult<ServerAddress> {
    let address = ServerAddress::of(server);
    if address.pinned_host_key.is_none() {
        return Err(ApiError::conflict(format!(
            "server {} has not been reached yet, so its host key is not pinned; wait until it \
             is reachable",
            server.name_any()
        )));
    }
    Ok(address)
}

/// A remote failure as the REST API reports it (`cannot <action>: …`); messages name hosts and
/// fingerprints only. A server that does not answer is a retriable 503.
pub fn remote_error(action: &str, error: RemoteError) -> ApiError {
    let reason = error.reason();
    let message = format!("cannot {action}: {}", error.condition_message());
    match error {
        RemoteError::HostKeyMismatch { .. } | RemoteError::AuthenticationRejected { .. } => {
            ApiError::conflict(message)
        }
        _ => ApiError::unavailable(message),
    }
    .with_detail("reason", reason)
}

/// The server's SSH connection in `pool`, logged in with its credential's current key (the
/// credential from `credentials`, its key Secret read with `client`).
pub async fn connect(
    client: &Client,
    credentials: &Store<SshCredential>,
    pool: &ServerConnectionPool,
    server: &Server,
    action: &str,
) -> ApiResult<Arc<ServerConnection>> {
    let namespace = server.namespace().unwrap_or_default();
    let credential_id = &server.spec.credential_id;
    let credential = credentials
        .get(&ObjectRef::new(credential_id).within(&namespace))
        .ok_or_else(|| {
            ApiError::conflict(format!(
                "the server's SSH credential {credential_id} does not exist"
            ))
        })?;
    let key = load_key(client, &credential)
        .await
        .map_err(|error| ApiError::unavailable(format!("cannot read the SSH key: {error}")))?
        .map_err(|problem| {
            ApiError::conflict(format!(
                "SSH credential {credential_id} is not usable: {}",
                problem.message()
            ))
        })?;
    pool.connect_to(&pinned_address(server)?, &key)
        .await
        .map_err(|error| remote_error(action, error))
}

/// Connections for short reads and live tails (runtime logs): one per server, shared, and
/// closed [`IDLE_CONNECTION`] after its last user let go.
pub struct ServerAccess {
    pool: ServerConnectionPool,
    users: tokio::sync::Mutex<HashMap<ServerId, usize>>,
}

impl Default for ServerAccess {
    fn default() -> Self {
        Self {
            pool: ServerConnectionPool::new(PoolSettings::default()),
            users: tokio::sync::Mutex::default(),
        }
    }
}

/// One user of a server's connection; dropping it lets the connection close when idle.
pub struct AccessLease {
    access: Arc<ServerAccess>,
    server: ServerId,
}

impl Drop for AccessLease {
    fn drop(&mut self) {
        let access = self.access.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            let mut users = access.users.lock().await;
            if let Some(count) = users.get_mut(&server) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    users.remove(&server);
                }
            }
            drop(users);
            tokio::time::sleep(IDLE_CONNECTION).await;
            // The lock is held while closing, so nobody starts on a connection going away.
            let users = access.users.lock().await;
            if !users.contains_key(&server) {
                access.pool.remove(&server).await;
            }
            drop(users);
        });
    }
}

impl ServerAccess {
    /// The server's connection and a lease that keeps it open; the user is counted before the
    /// connection is made, so an idle close cannot take it away meanwhile.
    pub async fn connect(
        self: &Arc<Self>,
        client: &Client,
        credentials: &Store<SshCredential>,
        server: &Server,
        action: &str,
    ) -> ApiResult<(Arc<ServerConnection>, AccessLease)> {
        let id = server_id(server);
        *self.users.lock().await.entry(id.clone()).or_insert(0) += 1;
        let lease = AccessLease {
            access: self.clone(),
            server: id,
        };
        let connection = connect(client, credentials, &self.pool, server, action).await?;
        Ok((connection, lease))
    }
}
