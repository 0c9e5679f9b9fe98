//! What a PEM chain says about itself: validity, names and the leaf's fingerprint. Parsing
//! only; the private key is never read here.

use k8s_openapi::jiff::Timestamp;
use sha2::{Digest, Sha256};
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFacts {
    pub not_before: Timestamp,
    pub not_after: Timestamp,
    /// DNS names of the leaf (subjectAltName).
    pub dns_names: Vec<String>,
    /// SHA-256 of the leaf's DER, hex.
    pub sha256: String,
    /// SHA-256 of the whole chain's PEM, hex, short: names the files the proxy loads.
    pub chain_digest: String,
}

impl CertificateFacts {
    /// The leaf (first certificate) of `chain_pem`.
    pub fn of_chain(chain_pem: &[u8]) -> Result<Self, String> {
        let pem = Pem::iter_from_buffer(chain_pem)
            .next()
            .ok_or("no certificate in the chain")?
            .map_err(|e| format!("the chain is not PEM: {e}"))?;
        let leaf = pem
            .parse_x509()
            .map_err(|e| format!("the leaf certificate does not parse: {e}"))?;
        let time = |t: x509_parser::time::ASN1Time| {
            Timestamp::from_second(t.timestamp()).map_err(|e| e.to_string())
        };
        let dns_names = leaf
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|san| {
                san.value
                    .general_names
                    .iter()
                    .filter_map(|name| match name {
                        GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let chain_digest = hex::encode(&Sha256::digest(chain_pem)[..8]);
        Ok(Self {
            not_before: time(leaf.validity().not_before)?,
            not_after: time(leaf.validity().not_after)?,
            dns_names,
            sha256: hex::encode(Sha256::digest(&pem.contents)),
            chain_digest,
        })
    }

    /// Whether the certificate names `hostname` (a wildcard covers one label).
    pub fn covers(&self, hostname: &str) -> bool {
        let hostname = hostname.to_ascii_lowercase();
        self.dns_names.iter().any(|name| {
            *name == hostname
                || name.strip_prefix("*.").is_some_and(|suffix| {
                    hostname
                        .split_once('.')
                        .is_some_and(|(_, rest)| rest == suffix)
                })
        })
    }

    /// Two thirds into the lifetime: Let's Encrypt's advice, and early enough that two more
    /// attempts fit before expiry.
    pub fn renew_at(&self) -> Timestamp {
        let lifetime = self.not_after.as_second() - self.not_before.as_second();
        Timestamp::from_second(self.not_before.as_second() + lifetime * 2 / 3)
            .unwrap_or(self.not_after)
    }

    /// Whole days until expiry at `now` (negative once expired).
    pub fn days_until_expiry(&self, now: Timestamp) -> i64 {
        (self.not_after.as_second() - now.as_second()).div_euclid(86_400)
    }
}
