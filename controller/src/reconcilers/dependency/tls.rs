//! TLS of a managed PostgreSQL, decided without I/O: a certificate authority per organization
//! issues each database a server certificate for the host name its bound apps connect to (its
//! container's name on its private network), so a client that verifies the name and the chain
//! (`sslmode=verify-full`) accepts it. The server's files go into its container as a tar
//! archive, owned by the `postgres` user (uid 999 in the official image and Berth's) as the
//! server requires of its key.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

/// Where the server's files land in its container (outside the data volume: they are put in
/// again whenever the container is created).
pub const SERVER_DIRECTORY: &str = "/var/lib/postgresql/tls";
/// The uid and gid the official image (and Berth's) runs PostgreSQL as.
const POSTGRES_UID: u64 = 999;
/// How long an authority is valid.
const AUTHORITY_YEARS: i64 = 20;
/// How long a server certificate is valid (there is no renewal yet: see the README).
const SERVER_YEARS: i64 = 10;

/// A certificate and its private key, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// A new certificate authority for the organization of `namespace`.
pub fn new_authority(namespace: &str) -> Result<Pem, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&format!("Berth databases of {namespace}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    valid_for(&mut params, AUTHORITY_YEARS);
    let cert = params.self_signed(&key)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// A server certificate for `host`, issued by `authority`.
pub fn new_server_certificate(authority: &Pem, host: &str) -> Result<Pem, rcgen::Error> {
    let authority_key = KeyPair::from_pem(&authority.key)?;
    let issuer = Issuer::from_ca_cert_pem(&authority.cert, authority_key)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![host.to_string()])?;
    params.distinguished_name = name(host);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    valid_for(&mut params, SERVER_YEARS);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

/// Valid from an hour ago (clocks differ) for `years`.
fn valid_for(params: &mut CertificateParams, years: i64) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(365 * years);
}

/// A short fingerprint of the server certificate: the container carries it as a label, and
/// one made with another certificate is made again.
pub fn fingerprint(server: &Pem) -> String {
    hex::encode(&Sha256::digest(server.cert.as_bytes())[..8])
}

/// The PostgreSQL server's options that turn TLS on with the files of [`server_files`].
pub fn server_options() -> Vec<String> {
    let settings = [
        "ssl=on".to_string(),
        format!("ssl_cert_file={SERVER_DIRECTORY}/server.crt"),
        format!("ssl_key_file={SERVER_DIRECTORY}/server.key"),
    ];
    settings
        .into_iter()
        .flat_map(|setting| ["-c".to_string(), setting])
        .collect()
}

/// The tar archive of the server's certificate and key, extracted at `/`: the directory and
/// files owned by `postgres`, the key readable by it alone.
pub fn server_files(server: &Pem) -> std::io::Result<Vec<u8>> {
    let directory = SERVER_DIRECTORY.trim_start_matches('/');
    let mut archive = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_mode(0o700);
    owned_by_postgres(&mut header);
    header.set_size(0);
    archive.append_data(&mut header, format!("{directory}/"), std::io::empty())?;
    for (file, contents, mode) in [
        ("server.crt", &server.cert, 0o644),
        ("server.key", &server.key, 0o600),
    ] {
        let mut header = tar::Header::new_ustar();
        header.set_mode(mode);
        owned_by_postgres(&mut header);
        header.set_size(contents.len() as u64);
        archive.append_data(
            &mut header,
            format!("{directory}/{file}"),
            contents.as_bytes(),
        )?;
    }
    archive.into_inner()
}

fn owned_by_postgres(header: &mut tar::Header) {
    header.set_uid(POSTGRES_UID);
    header.set_gid(POSTGRES_UID);
    header.set_mtime(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

    fn der(pem: &str) -> Vec<u8> {
        x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .unwrap()
            .1
            .contents
    }

    #[test]
    fn a_server_certificate_names_its_host_and_is_issued_by_the_organizations_authority() {
        let authority = new_authority("org-acme").unwrap();
        let server = new_server_certificate(&authority, "berth-dep-org-acme-db").unwrap();
        let authority_der = der(&authority.cert);
        let server_der = der(&server.cert);
        let (_, ca) = X509Certificate::from_der(&authority_der).unwrap();
        let (_, cert) = X509Certificate::from_der(&server_der).unwrap();
        assert!(ca.is_ca());
        assert_eq!(cert.issuer(), ca.subject());
        cert.verify_signature(Some(ca.public_key()))
            .expect("signed by the authority");
        let names = cert.subject_alternative_name().unwrap().unwrap();
        let hosts: Vec<_> = names.value.general_names.iter().collect();
        assert_eq!(hosts, [&GeneralName::DNSName("berth-dep-org-acme-db")]);
        assert!(cert.validity().is_valid());
    }

    #[test]
    fn the_servers_files_are_postgres_own_and_its_key_private() {
        let server = Pem {
            cert: "CERT".into(),
            key: "KEY".into(),
        };
        let bytes = server_files(&server).unwrap();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let entries: Vec<(String, u32, u64)> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                let path = entry.path().unwrap().display().to_string();
                (path, header.mode().unwrap(), header.uid().unwrap())
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("var/lib/postgresql/tls/".to_string(), 0o700, 999),
                ("var/lib/postgresql/tls/server.crt".to_string(), 0o644, 999),
                ("var/lib/postgresql/tls/server.key".to_string(), 0o600, 999),
            ]
        );
    }

    #[test]
    fn the_server_reads_its_files_from_the_tls_directory() {
        assert_eq!(
            server_options().join(" "),
            "-c ssl=on -c ssl_cert_file=/var/lib/postgresql/tls/server.crt \
             -c ssl_key_file=/var/lib/postgresql/tls/server.key"
        );
    }
}
