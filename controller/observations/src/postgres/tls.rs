//! TLS to the store's PostgreSQL as libpq's `sslmode` and `sslrootcert` say. tokio-postgres
//! parses only `disable|prefer|require` and checks no certificate itself, so both parameters
//! are taken off the URL here and the connector (rustls, ring) checks what the mode asks for:
//!
//! | `sslmode`          | encrypted                  | server certificate checked            |
//! |--------------------|----------------------------|---------------------------------------|
//! | `disable`          | never                      | —                                     |
//! | `prefer` (default) | when the server offers it  | no                                    |
//! | `require`          | yes                        | no; issued by `sslrootcert` if given  |
//! | `verify-ca`        | yes                        | issued by `sslrootcert`               |
//! | `verify-full`      | yes                        | issued by `sslrootcert`, for the host |
//!
//! `sslrootcert` is the path of a PEM file of the authority (or authorities) that issued the
//! server's certificate; the verifying modes need it (there is no default file, unlike libpq's
//! `~/.postgresql/root.crt`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{
    CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use rustls::{Error as TlsError, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// libpq's `sslmode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

const MODES: &str = "disable, prefer, require, verify-ca, verify-full";

impl Mode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => return Err(format!("sslmode `{other}` is not one of {MODES}")),
        })
    }

    /// What tokio-postgres is told: whether to ask for TLS at all, and to insist on it.
    pub(crate) fn driver_mode(self) -> SslMode {
        match self {
            Self::Disable => SslMode::Disable,
            Self::Prefer => SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => SslMode::Require,
        }
    }
}

/// The TLS parameters of a store URL.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TlsParameters {
    pub(crate) mode: Mode,
    /// The PEM file of the authorities the server's certificate must come from.
    pub(crate) root_cert: Option<String>,
}

/// Takes `sslmode` and `sslrootcert` off `url`: the URL tokio-postgres is given, and what they
/// say; or which parameter is wrong (never repeating the URL, which may hold a password).
pub(crate) fn split(url: &str) -> Result<(String, TlsParameters), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut mode = None;
    let mut root_cert = None;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("sslmode", value) => mode = Some(Mode::parse(&decoded(value))?),
            ("sslrootcert", value) => root_cert = Some(decoded(value)),
            _ => kept.push(pair),
        }
    }
    let mode = mode.unwrap_or(Mode::Prefer);
    if root_cert.as_deref() == Some("system") {
        return Err("sslrootcert=system is not supported: give the path of a PEM file".into());
    }
    if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) && root_cert.is_none() {
        return Err(format!(
            "sslmode={} needs sslrootcert=PATH, a PEM file of the authority that issued the \
             server's certificate",
            if mode == Mode::VerifyCa {
                "verify-ca"
            } else {
                "verify-full"
            }
        ));
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, TlsParameters { mode, root_cert }))
}

/// A query value with its percent-escapes (and `+` for a space) undone.
fn decoded(value: &str) -> String {
    url::form_urlencoded::parse(format!("v={value}").as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Makes the TLS connections of one store, checking certificates as its parameters say.
#[derive(Clone)]
pub(crate) struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeRustls {
    /// The connector for `parameters`, with the authorities read from their file now: a file
    /// that is missing or holds no certificate is named when the store opens.
    pub(crate) fn new(parameters: &TlsParameters) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let authority = |path: &str| authority_verifier(path, &provider);
        let verifier: Arc<dyn ServerCertVerifier> = match (parameters.mode, &parameters.root_cert) {
            (Mode::VerifyFull, Some(path)) => authority(path)?,
            (Mode::VerifyCa | Mode::Require, Some(path)) => Arc::new(AnyHost(authority(path)?)),
            _ => Arc::new(UncheckedChain::new(
                provider.signature_verification_algorithms,
            )),
        };
        let config = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

/// The verifier of certificates issued by the authorities in the PEM file at `path`.
fn authority_verifier(
    path: &str,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, String> {
    let unusable = |why: String| format!("sslrootcert {path}: {why}");
    let mut roots = RootCertStore::empty();
    let certificates =
        CertificateDer::pem_file_iter(path).map_err(|error| unusable(error.to_string()))?;
    for certificate in certificates {
        let certificate = certificate.map_err(|error| unusable(error.to_string()))?;
        roots
            .add(certificate)
            .map_err(|error| unusable(error.to_string()))?;
    }
    if roots.is_empty() {
        return Err(unusable("no certificate in the file".into()));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|error| unusable(error.to_string()))
}

/// `verify-ca` (and `require` with an authority): the chain must lead to the authority; the
/// host the certificate names is not compared with the one connected to.
#[derive(Debug)]
struct AnyHost(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHost {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        let checked =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        // webpki compares the name only once the chain is valid.
        match checked {
            Err(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Any certificate chain, with the handshake's signatures checked against the certificate
/// presented: encrypted, but not who issued it. The store's `prefer` and `require` without an
/// authority (libpq's meaning); also the controller's look at which certificate an edge proxy
/// serves, where the caller compares the leaf itself.
#[derive(Debug)]
pub struct UncheckedChain(WebPkiSupportedAlgorithms);

impl UncheckedChain {
    pub fn new(algorithms: WebPkiSupportedAlgorithms) -> Self {
        Self(algorithms)
    }
}

impl ServerCertVerifier for UncheckedChain {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<RustlsConnect> {
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            server_name,
        })
    }
}

/// One connection's handshake.
pub(crate) struct RustlsConnect {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            let stream = connector.connect(self.server_name, stream).await?;
            Ok(RustlsStream(stream))
        })
    }
}

/// An encrypted connection to the server.
pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    // SCRAM without channel binding (SCRAM-SHA-256, not -PLUS): the certificate checks above
    // are what stands between the password exchange and a server in the middle.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_ok(url: &str) -> (String, TlsParameters) {
        split(url).unwrap_or_else(|why| panic!("{url}: {why}"))
    }

    #[test]
    fn the_tls_parameters_come_off_the_url_and_the_rest_stays() {
        let (url, tls) = split_ok(
            "postgres://u:pw@db:5432/berth?sslmode=verify-full&application_name=x\
             &sslrootcert=%2Fetc%2Fberth%2Fca.crt",
        );
        assert_eq!(url, "postgres://u:pw@db:5432/berth?application_name=x");
        assert_eq!(tls.mode, Mode::VerifyFull);
        assert_eq!(tls.root_cert.as_deref(), Some("/etc/berth/ca.crt"));
        let (url, tls) = split_ok("postgres://u:pw@db/berth");
        assert_eq!(url, "postgres://u:pw@db/berth");
        assert_eq!(
            (tls.mode, tls.root_cert),
            (Mode::Prefer, None),
            "libpq's default"
        );
        let (url, tls) = split_ok("postgres://db/berth?sslmode=disable");
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgres://db/berth", Mode::Disable)
        );
    }

    #[test]
    fn a_wrong_parameter_is_named_without_the_url() {
        let refused = |query: &str| {
            let why = split(&format!("postgres://u:s3cret@db/b?{query}")).unwrap_err();
            assert!(!why.contains("s3cret"), "{why}");
            why
        };
        let why = refused("sslmode=verify");
        assert!(
            why.contains("sslmode `verify`") && why.contains("verify-full"),
            "{why}"
        );
        let why = refused("sslmode=verify-full");
        assert!(why.contains("needs sslrootcert=PATH"), "{why}");
        let why = refused("sslmode=verify-ca&sslrootcert=system");
        assert!(why.contains("sslrootcert=system"), "{why}");
    }

    #[test]
    fn only_the_verifying_modes_insist_and_check() {
        let insists = |mode: Mode| mode.driver_mode() == SslMode::Require;
        assert!(!insists(Mode::Disable) && !insists(Mode::Prefer));
        assert!(insists(Mode::Require) && insists(Mode::VerifyCa) && insists(Mode::VerifyFull));
        let missing = TlsParameters {
            mode: Mode::VerifyFull,
            root_cert: Some("/nonexistent/ca.crt".into()),
        };
        let why = MakeRustls::new(&missing)
            .err()
            .expect("a missing file is refused");
        assert!(why.starts_with("sslrootcert /nonexistent/ca.crt:"), "{why}");
    }
}
