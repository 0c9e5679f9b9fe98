//! Connections to servers through the context's shared pool, for whoever reaches a server: the
//! reconcilers and the observers' tasks ([`crate::observer_tasks`]) alike. A server's address,
//! pinned host key and private key come from the cached Server and its SshCredential.

use std::sync::Arc;

use berth_crds::server::Server;
use berth_remote::{ClientKey, CommandOutput, ServerAddress, ServerConnection};
use kube::ResourceExt;

use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};

// How a Server is dialled is berth-remote's, shared with the shim.
pub use berth_remote::{endpoint, pinned_host_key, server_id};

/// The private key of the server's credential from the caches, or why there is none (which the
/// Server's status reports as its credential not being ready).
pub fn credential_key(context: &Context, server: &Server) -> Result<ClientKey, String> {
    let namespace = server.namespace().unwrap_or_default();
    credential_key_named(context, &namespace, &server.spec.credential_id)
}

/// The private key of the SshCredential `name` in `namespace`, from the caches.
pub fn credential_key_named(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<ClientKey, String> {
    let caches = &context.caches;
    let Some(credential) = Caches::get(&caches.credentials, namespace, name) else {
        return Err(format!("SshCredential {name} does not exist"));
    };
    let secret_name = &credential.spec.private_key_secret_ref.name;
    let secret = Caches::get(&caches.secrets, namespace, secret_name);
    berth_remote::credential_key(&credential, secret.as_deref())
        .map_err(|problem| format!("SshCredential {name}: {}", problem.message()))
}

/// The cached Server `name` and a connection to it through the shared pool.
pub async fn server_connection(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<(Arc<Server>, Arc<ServerConnection>)> {
    let server = Caches::get(&context.caches.servers, namespace, name)
        .ok_or_else(|| Error::InvalidSpec(format!("Server {name} does not exist")))?;
    let address = ServerAddress::of(&server);
    let key = match credential_key(context, &server) {
        Ok(key) => key,
        // The credential may go first when a whole namespace is deleted; a live connection
        // still serves cleanup.
        Err(message) => match context.servers.current(&address.id).await {
            Some(connection) => return Ok((server, connection)),
            None => return Err(Error::InvalidSpec(message)),
        },
    };
    let connection = context.servers.connect_to(&address, &key).await?;
    Ok((server, connection))
}

/// A connection to server `name` of its own, outside the pool, for a long bulk transfer (a
/// backup's stream): SSH flow control stalls a whole connection while one of its channels is
/// not read, so a transfer held back by a slow peer must not share the connection the server's
/// other work (Docker calls, probes) uses, nor the one its other end uses. Closed when dropped.
pub async fn dedicated_connection(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<ServerConnection> {
    let server = Caches::get(&context.caches.servers, namespace, name)
        .ok_or_else(|| Error::InvalidSpec(format!("Server {name} does not exist")))?;
    let address = ServerAddress::of(&server);
    let key = credential_key(context, &server).map_err(Error::InvalidSpec)?;
    let timeouts = &context.servers.settings().timeouts;
    let pinned = address.pinned_host_key.as_deref();
    Ok(ServerConnection::open(&address.endpoint, &key, pinned, timeouts).await?)
}

/// Runs `command` on one of server `name`'s exec channels (the pool counts them against
/// sshd's session limit).
pub async fn server_exec(
    context: &Context,
    namespace: &str,
    name: &str,
    command: &str,
) -> Result<CommandOutput> {
    let server = Caches::get(&context.caches.servers, namespace, name)
        .ok_or_else(|| Error::InvalidSpec(format!("Server {name} does not exist")))?;
    let key = credential_key(context, &server).map_err(Error::InvalidSpec)?;
    let output = context
        .servers
        .exec_on(&ServerAddress::of(&server), &key, command)
        .await?;
    Ok(output)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::context::fixtures::StandInServer;

    /// The premise of every "opens no SSH connection" assertion: had the reconcile tried, the
    /// stand-in server would have seen it.
    #[tokio::test]
    async fn a_reconciler_reaching_for_the_server_dials_the_stand_in() {
        let (context, api, mut feeds) = Context::test();
        let server = StandInServer::start(&mut feeds, "org-acme", "local").await;
        let script = api.expect_nothing();
        let reaching = tokio::spawn({
            let context = context.clone();
            async move {
                server_connection(&context, "org-acme", "local")
                    .await
                    .is_ok()
            }
        });
        assert!(server.dialled_within(Duration::from_secs(10)).await);
        // Not an SSH server: the handshake fails once the connection is dropped.
        assert!(!reaching.await.unwrap());
        assert_eq!(context.servers.connections_opened(), 0);
        script.finish().await;
    }
}
