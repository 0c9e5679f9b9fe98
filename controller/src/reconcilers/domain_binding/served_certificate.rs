//! Which certificate the edge proxy serves for a host name: a TLS handshake with SNI through
//! the SSH tunnel to the proxy's HTTPS port on the server. Trust is not the question here (the
//! caller compares the leaf with the one it issued), so every chain is accepted.

use std::sync::Arc;
use std::time::Duration;

use berth_observations::UncheckedChain;
use berth_remote::ServerConnection;
use rustls::crypto::ring;
use rustls::pki_types::ServerName;
use sha2::{Digest, Sha256};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// SHA-256 (hex) of the leaf the proxy presents for `hostname` on `port` of the server.
pub async fn served_leaf_sha256(
    connection: &ServerConnection,
    port: u16,
    hostname: &str,
) -> Result<String, String> {
    let channel = connection
        .open_tcp("127.0.0.1", port)
        .await
        .map_err(|e| format!("opening port {port} through the tunnel: {e}"))?;
    let provider = Arc::new(ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(UncheckedChain::new(algorithms)))
        .with_no_client_auth();
    let name = ServerName::try_from(hostname.to_string()).map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let stream = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        connector.connect(name, channel.into_stream()),
    )
    .await
    .map_err(|_| format!("no TLS handshake within {}s", HANDSHAKE_TIMEOUT.as_secs()))?
    .map_err(|e| format!("TLS handshake for {hostname} failed: {e}"))?;
    let (_, session) = stream.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or("the proxy presented no certificate")?;
    Ok(hex::encode(Sha256::digest(leaf.as_ref())))
}
