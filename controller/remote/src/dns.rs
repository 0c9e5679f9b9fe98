//! The A records of a host name, as the CA sees them: from the DNS server the CA resolves with
//! when one is configured (a test DNS such as `pebble-challtestsrv`), else the system resolver.
//! One UDP question, no recursion logic: enough to compare with a server's address.
//! Shared by the certificate pre-flight (controller) and DNS readiness (shim).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

const QUERY_TIMEOUT: Duration = Duration::from_secs(3);
const TYPE_A: u16 = 1;

/// The IPv4 addresses `hostname` resolves to (empty when it does not resolve).
pub async fn resolve(
    hostname: &str,
    dns_server: Option<SocketAddr>,
) -> Result<Vec<IpAddr>, String> {
    match dns_server {
        Some(server) => query_a(hostname, server).await,
        None => match tokio::net::lookup_host((hostname, 0)).await {
            Ok(addresses) => Ok(addresses.map(|a| a.ip()).collect()),
            // "No such host" is an answer here, not a failure.
            Err(_) => Ok(Vec::new()),
        },
    }
}

/// Where a host name leads, compared with a server's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pointing {
    /// At least one of its addresses is the server's.
    AtServer,
    /// It resolves, but to none of the server's addresses.
    Elsewhere,
    /// It has no A record.
    Nowhere,
}

/// Where `resolved` (a host name's addresses) leads relative to `server` (the server's).
pub fn pointing(resolved: &[IpAddr], server: &[IpAddr]) -> Pointing {
    if resolved.is_empty() {
        Pointing::Nowhere
    } else if resolved.iter().any(|a| server.contains(a)) {
        Pointing::AtServer
    } else {
        Pointing::Elsewhere
    }
}

/// The addresses a server's `host` (a name or an address) stands for.
pub async fn server_addresses(host: &str) -> Result<Vec<IpAddr>, String> {
    Ok(tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| format!("server address {host} does not resolve: {e}"))?
        .map(|a| a.ip())
        .collect())
}

async fn query_a(hostname: &str, server: SocketAddr) -> Result<Vec<IpAddr>, String> {
    let socket = tokio::net::UdpSocket::bind(if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })
    .await
    .map_err(|e| format!("DNS socket: {e}"))?;
    let id: u16 = rand::random();
    let question = encode_query(id, hostname)?;
    socket
        .send_to(&question, server)
        .await
        .map_err(|e| format!("DNS query to {server}: {e}"))?;
    let mut buffer = [0u8; 1500];
    let length = tokio::time::timeout(QUERY_TIMEOUT, socket.recv(&mut buffer))
        .await
        .map_err(|_| format!("DNS server {server} did not answer"))?
        .map_err(|e| format!("DNS answer from {server}: {e}"))?;
    decode_a_records(id, &buffer[..length])
}

fn encode_query(id: u16, hostname: &str) -> Result<Vec<u8>, String> {
    let mut packet = Vec::with_capacity(32 + hostname.len());
    packet.extend_from_slice(&id.to_be_bytes());
    // Recursion desired; one question.
    packet.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in hostname.trim_end_matches('.').split('.') {
        let length = u8::try_from(label.len())
            .ok()
            .filter(|l| (1..64).contains(l))
            .ok_or_else(|| format!("{hostname:?} is not a valid host name"))?;
        packet.push(length);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.push(0);
    packet.extend_from_slice(&TYPE_A.to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    Ok(packet)
}

fn decode_a_records(id: u16, packet: &[u8]) -> Result<Vec<IpAddr>, String> {
    let malformed = || "malformed DNS answer".to_string();
    let u16_at = |at: usize| -> Result<u16, String> {
        packet
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(malformed)
    };
    if u16_at(0)? != id {
        return Err("DNS answer to another question".into());
    }
    let questions = u16_at(4)?;
    let answers = u16_at(6)?;
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(packet, at).ok_or_else(malformed)? + 4;
    }
    let mut addresses = Vec::new();
    for _ in 0..answers {
        at = skip_name(packet, at).ok_or_else(malformed)?;
        let type_ = u16_at(at)?;
        let length = usize::from(u16_at(at + 8)?);
        let data = packet
            .get(at + 10..at + 10 + length)
            .ok_or_else(malformed)?;
        if type_ == TYPE_A && length == 4 {
            addresses.push(IpAddr::V4(Ipv4Addr::new(
                data[0], data[1], data[2], data[3],
            )));
        }
        at += 10 + length;
    }
    Ok(addresses)
}

/// The offset after a (possibly compressed) name starting at `at`.
fn skip_name(packet: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let length = *packet.get(at)?;
        if length == 0 {
            return Some(at + 1);
        }
        if length & 0xC0 == 0xC0 {
            return Some(at + 2);
        }
        at += 1 + usize::from(length);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_to_our_question_yields_its_a_records() {
        let query = encode_query(7, "shop.example").unwrap();
        let mut answer = query.clone();
        answer[2] = 0x81;
        answer[7] = 1; // one answer
        // Name as a pointer to the question's, type A, class IN, TTL, 4 bytes of data.
        answer.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
        assert_eq!(
            decode_a_records(7, &answer).unwrap(),
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
        );
        assert!(decode_a_records(8, &answer).is_err());
        assert!(encode_query(1, "bad..name").is_err());
    }

    #[test]
    fn a_host_name_points_at_the_server_when_any_address_is_the_servers() {
        let a = |last| IpAddr::V4(Ipv4Addr::new(198, 18, 0, last));
        assert_eq!(pointing(&[a(1), a(2)], &[a(2)]), Pointing::AtServer);
        assert_eq!(pointing(&[a(1)], &[a(2)]), Pointing::Elsewhere);
        assert_eq!(pointing(&[], &[a(2)]), Pointing::Nowhere);
    }
}
