//! The check before any order (DESIGN §5b): the host name must resolve to the server (as the
//! CA resolves it) and the challenge path must answer there with what Berth publishes. A
//! misconfigured domain fails here, with the reason, and never spends the CA's rate limits.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use berth_remote::EdgeProxy;
use berth_remote::edge_tls::{ACME_CHALLENGE_PATH, challenge_route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use berth_remote::dns;

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pauses before fetching the probe again when it did not answer as published.
const PROBE_PAUSES: [Duration; 3] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_millis(1000),
];

/// Where the host name should lead.
pub struct Expected<'a> {
    pub hostname: &'a str,
    pub server_name: &'a str,
    pub server_host: &'a str,
    /// The port the CA connects to for HTTP-01 (the edge proxy's HTTP port).
    pub http_port: u16,
    pub dns_server: Option<SocketAddr>,
}

/// Why a host name does not lead to the server, each with the message a person reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolutionFailure {
    /// The host name has no A record.
    Nowhere(String),
    /// The host name resolves, but to none of the server's addresses.
    Elsewhere(String),
    /// The server's own `host` does not resolve.
    ServerAddressUnknown(String),
    /// The DNS question about the host name failed (no answer, a bad answer).
    Lookup(String),
}

impl ResolutionFailure {
    /// Whether nothing resolved: the host name (or the server's own address) has no address,
    /// as opposed to pointing elsewhere or a failed lookup.
    pub fn resolves_nowhere(&self) -> bool {
        matches!(self, Self::Nowhere(_) | Self::ServerAddressUnknown(_))
    }

    pub fn message(&self) -> &str {
        match self {
            Self::Nowhere(message)
            | Self::Elsewhere(message)
            | Self::ServerAddressUnknown(message)
            | Self::Lookup(message) => message,
        }
    }
}

/// The addresses the host name resolves to, once both checks pass; else the reason.
pub async fn host_name_resolves_to_server(expected: &Expected<'_>) -> Result<Vec<IpAddr>, String> {
    host_name_leads_to_server(expected)
        .await
        .map_err(|failure| failure.message().to_string())
}

/// Like [`host_name_resolves_to_server`], with the kind of failure.
pub async fn host_name_leads_to_server(
    expected: &Expected<'_>,
) -> Result<Vec<IpAddr>, ResolutionFailure> {
    let hostname = expected.hostname;
    let resolved = dns::resolve(hostname, expected.dns_server)
        .await
        .map_err(ResolutionFailure::Lookup)?;
    let server_addresses = dns::server_addresses(expected.server_host)
        .await
        .map_err(ResolutionFailure::ServerAddressUnknown)?;
    match dns::pointing(&resolved, &server_addresses) {
        dns::Pointing::AtServer => Ok(resolved),
        dns::Pointing::Nowhere => Err(ResolutionFailure::Nowhere(format!(
            "{hostname} does not resolve to any address; point its A record at server {} ({})",
            expected.server_name, expected.server_host
        ))),
        dns::Pointing::Elsewhere => Err(ResolutionFailure::Elsewhere(format!(
            "{hostname} resolves to {}, not to server {} ({}); the CA would reach another machine",
            join(&resolved),
            expected.server_name,
            join(&server_addresses)
        ))),
    }
}

/// Publishes a probe answer for the host name on the proxy and fetches it the way the CA
/// will (the resolved address, the HTTP port, the host name as `Host`).
pub async fn challenge_path_answers(
    expected: &Expected<'_>,
    address: IpAddr,
    proxy: &EdgeProxy,
    route_prefix: &str,
) -> Result<(), String> {
    let token = format!("berth-preflight-{}", hex_token());
    let answer = hex_token();
    let route = challenge_route(route_prefix, expected.hostname, &token, &answer);
    proxy
        .update_routes(|routes, _| routes.push(route))
        .await
        .map_err(|e| format!("publishing the probe answer on the edge proxy: {e}"))?;
    let path = format!("{ACME_CHALLENGE_PATH}{token}");
    let fetched = fetch_probe(
        SocketAddr::new(address, expected.http_port),
        expected.hostname,
        &path,
        &answer,
    )
    .await;
    // On success the probe stays until the issuance removes every route under the prefix
    // (one proxy reload fewer on the way to the certificate); on failure it goes now.
    if !matches!(&fetched, Ok((200, body)) if *body == answer) {
        let probe_id = format!("{route_prefix}{token}");
        let removed = proxy
            .update_routes(|routes, _| routes.retain(|r| r["@id"] != probe_id.as_str()))
            .await;
        if let Err(error) = removed {
            tracing::warn!(%error, "could not remove the pre-flight probe route");
        }
    }
    let url = format!(
        "http://{}:{}{ACME_CHALLENGE_PATH}…",
        expected.hostname, expected.http_port
    );
    match fetched {
        Ok((200, body)) if body == answer => Ok(()),
        Ok((status, _)) => Err(format!(
            "{url} answered {status} without Berth's probe answer; something other than this \
             server's edge proxy answers there"
        )),
        Err(error) => Err(format!("{url} did not answer: {error}")),
    }
}

/// Fetches the probe until it answers with `answer`, a few times over about two seconds: right
/// after a reload a busy proxy may still answer a connection from the configuration it
/// replaced. The last result otherwise.
async fn fetch_probe(
    address: SocketAddr,
    host: &str,
    path: &str,
    answer: &str,
) -> Result<(u16, String), String> {
    let mut fetched = http_get(address, host, path).await;
    for pause in PROBE_PAUSES {
        if matches!(&fetched, Ok((200, body)) if body == answer) {
            break;
        }
        tokio::time::sleep(pause).await;
        fetched = http_get(address, host, path).await;
    }
    fetched
}

fn hex_token() -> String {
    let bytes: [u8; 16] = rand::random();
    hex::encode(bytes)
}

fn join(addresses: &[IpAddr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One plain HTTP/1.1 GET; the status and body.
async fn http_get(address: SocketAddr, host: &str, path: &str) -> Result<(u16, String), String> {
    tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|e| format!("connecting to {address}: {e}"))?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .await
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&response);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("not an HTTP answer")?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default();
        Ok((status, body))
    })
    .await
    .map_err(|_| {
        format!(
            "no answer from {address} within {}s",
            PROBE_TIMEOUT.as_secs()
        )
    })?
}
