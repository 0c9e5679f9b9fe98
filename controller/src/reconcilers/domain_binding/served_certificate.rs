//! Which certificate the edge proxy serves for a host name: a TLS handshake with SNI through
//! the SSH tunnel to the proxy's HTTPS port on the server. Trust is not the question here (the
//! caller compares the leaf with the one it issued), so every chain is accepted.

use std::sync::Arc;
use std::time::Duration;

use berth_remote::ServerConnection;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
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
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyChain(provider)))
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

#[derive(Debug)]
struct AnyChain(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyChain {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
