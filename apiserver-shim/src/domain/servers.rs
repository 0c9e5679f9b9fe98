//! Servers as the routes reach them: scoped lookups and the shared SSH connection.

use std::sync::Arc;

use berth_crds::server::Server;
use berth_remote::ServerConnection;

use crate::error::ApiError;
use crate::services::server_access::AccessLease;
use crate::state::AppState;

/// The server's shared SSH connection (runtime logs, probes, capacity) and a lease that keeps
/// it open: [`ServerAccess::connect`](crate::services::server_access::ServerAccess::connect)
/// logged in with this process's client and cached credentials.
pub async fn server_connection(
    state: &AppState,
    server: &Server,
    action: &str,
) -> Result<(Arc<ServerConnection>, AccessLease), ApiError> {
    let credentials = &state.caches.ssh_credentials;
    state
        .server_access
        .connect(&state.client, credentials, server, action)
        .await
}
