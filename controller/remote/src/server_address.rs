//! A Server custom resource turned into what an SSH connection needs: its identity in a
//! connection pool, the endpoint to dial and the host key it must present (the private key of
//! its SshCredential is [`crate::credential_key::credential_key`]). The controller (reconcilers,
//! observers) and the shim (terminals, runtime logs) both reach servers through these, so both
//! dial a Server the same way.

use std::sync::Arc;

use berth_crds::server::Server;
use kube::ResourceExt;

use crate::client_key::ClientKey;
use crate::connection::{CommandOutput, Endpoint, ServerConnection};
use crate::error::RemoteError;
use crate::pool::{ServerConnectionPool, ServerId};

/// Port of a Server whose spec holds none that fits (the spec's schema keeps it in range).
const DEFAULT_SSH_PORT: u16 = 22;

/// The server's identity in a connection pool: its namespace and name.
pub fn server_id(server: &Server) -> ServerId {
    ServerId {
        namespace: server.namespace().unwrap_or_default(),
        name: server.name_any(),
    }
}

/// Where the server's sshd listens and whom to log in as.
pub fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        host: server.spec.host.clone(),
        port: u16::try_from(server.spec.port).unwrap_or(DEFAULT_SSH_PORT),
        username: server.spec.username.clone(),
    }
}

/// The host key fingerprint a connection must present: the spec's pin, else the one the
/// controller recorded on first contact; `None` before the server was ever reached.
pub fn pinned_host_key(server: &Server) -> Option<String> {
    server
        .spec
        .expected_host_key_fingerprint
        .clone()
        .or_else(|| server.status.as_ref()?.host_key_fingerprint.clone())
}

/// A Server as the pool dials it.
pub struct ServerAddress {
    pub id: ServerId,
    pub endpoint: Endpoint,
    /// `None` lets the connection record the key on first contact (only the controller may).
    pub pinned_host_key: Option<String>,
}

impl ServerAddress {
    pub fn of(server: &Server) -> Self {
        Self {
            id: server_id(server),
            endpoint: endpoint(server),
            pinned_host_key: pinned_host_key(server),
        }
    }
}

impl ServerConnectionPool {
    /// The server's preferred connection (see [`Self::connect`]), logged in with `key`.
    pub async fn connect_to(
        &self,
        server: &ServerAddress,
        key: &ClientKey,
    ) -> Result<Arc<ServerConnection>, RemoteError> {
        let pinned = server.pinned_host_key.as_deref();
        self.connect(&server.id, &server.endpoint, key, pinned)
            .await
    }

    /// Runs `command` on one of the server's exec channels (see [`Self::exec`]).
    pub async fn exec_on(
        &self,
        server: &ServerAddress,
        key: &ClientKey,
        command: &str,
    ) -> Result<CommandOutput, RemoteError> {
        let pinned = server.pinned_host_key.as_deref();
        self.exec(&server.id, &server.endpoint, key, pinned, command)
            .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn server(spec_pin: Option<&str>, status_pin: Option<&str>) -> Server {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Server",
            "metadata": { "name": "edge", "namespace": "org-acme" },
            "spec": {
                "host": "203.0.113.7", "port": 2222, "username": "deploy", "credentialId": "key",
                "proxy": { "kind": "caddy", "httpPort": 80, "httpsPort": 443 },
                "expectedHostKeyFingerprint": spec_pin,
            },
            "status": { "hostKeyFingerprint": status_pin },
        }))
        .expect("a server")
    }

    #[test]
    fn a_server_is_dialled_at_its_spec_as_its_namespace_and_name() {
        let address = ServerAddress::of(&server(None, None));
        assert_eq!(address.id.namespace, "org-acme");
        assert_eq!(address.id.name, "edge");
        assert_eq!(address.endpoint.host, "203.0.113.7");
        assert_eq!(address.endpoint.port, 2222);
        assert_eq!(address.endpoint.username, "deploy");
        assert_eq!(address.pinned_host_key, None, "first contact");
    }

    #[test]
    fn the_spec_pin_wins_over_the_key_recorded_on_first_contact() {
        let recorded = server(None, Some("SHA256:recorded"));
        assert_eq!(
            pinned_host_key(&recorded).as_deref(),
            Some("SHA256:recorded")
        );
        let both = server(Some("SHA256:spec"), Some("SHA256:recorded"));
        assert_eq!(pinned_host_key(&both).as_deref(), Some("SHA256:spec"));
    }
}
