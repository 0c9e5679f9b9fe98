//! TLS to PostgreSQL as the store URL's `sslmode` and `sslrootcert` say, against the stack's
//! server (it serves a certificate for 127.0.0.1 from the authority in
//! `BERTH_TEST_POSTGRES_CA`). Whether a connection is encrypted is read from the server's own
//! `pg_stat_ssl`, by the store's `application_name`.

use std::sync::Arc;

use super::{Fixture, ObservationStore, StoreLocation, TimelineKey, event, open};

const CA: &str = "BERTH_TEST_POSTGRES_CA";

/// The fixture's URL and the stack's authority, or `None` (skipped) without them.
fn setup() -> Option<(Fixture, String, String)> {
    let fixture = Fixture::postgres()?;
    let Some(ca) = std::env::var(CA).ok().filter(|ca| !ca.is_empty()) else {
        eprintln!("skipped: set {CA} to the stack's PostgreSQL authority");
        return None;
    };
    let StoreLocation::Postgres(url) = &fixture.location else {
        unreachable!("a PostgreSQL fixture")
    };
    let url = url.expose().to_string();
    Some((fixture, url, ca))
}

fn open_with(url: &str) -> Result<Arc<dyn ObservationStore>, String> {
    open(&url.parse().unwrap()).map_err(|error| error.to_string())
}

/// Whether the store's connections (named by the fixture's `application_name`) are
/// encrypted, as the server sees them; `None` when it sees none.
fn encrypted(url: &str) -> Option<bool> {
    let name = url
        .split("application_name=")
        .nth(1)?
        .split('&')
        .next()?
        .to_string();
    let admin = std::env::var(super::POSTGRES_URL).ok()?;
    let sql = "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
               WHERE a.application_name = $1";
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let (client, connection) =
                        tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                            .await
                            .unwrap();
                    tokio::spawn(connection);
                    let row = client.query_one(sql, &[&name]).await.unwrap();
                    row.get::<_, Option<bool>>(0)
                })
            })
            .join()
            .unwrap()
    })
}

fn written_and_read(store: &dyn ObservationStore) {
    let key = TimelineKey::new("org-a", "web", "dep-1");
    store.append(&key, &[event("over TLS")]).unwrap();
    assert_eq!(store.attempts("org-a", "web").unwrap(), ["dep-1"]);
}

#[test]
fn verify_full_encrypts_and_checks_the_server_it_reaches() {
    let Some((_fixture, url, ca)) = setup() else {
        return;
    };
    let store = open_with(&format!("{url}&sslmode=verify-full&sslrootcert={ca}")).unwrap();
    written_and_read(store.as_ref());
    assert_eq!(encrypted(&url), Some(true), "the server sees TLS");
}

#[test]
fn disable_is_honoured_and_prefer_encrypts_when_offered() {
    let Some((_fixture, url, _)) = setup() else {
        return;
    };
    let plain = open_with(&format!("{url}&sslmode=disable")).unwrap();
    written_and_read(plain.as_ref());
    assert_eq!(
        encrypted(&url),
        Some(false),
        "sslmode=disable is not ignored"
    );
    drop(plain);
    let Some((_fixture, url, _)) = setup() else {
        return;
    };
    let preferred = open_with(&url).unwrap();
    written_and_read(preferred.as_ref());
    assert_eq!(encrypted(&url), Some(true), "libpq's default, prefer");
}

#[test]
fn a_certificate_from_another_authority_is_refused_without_the_password() {
    let Some((_fixture, url, _)) = setup() else {
        return;
    };
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("other-ca.crt");
    std::fs::write(&ca, other.cert.pem()).unwrap();
    let why = open_with(&format!(
        "{url}&sslmode=verify-full&sslrootcert={}",
        ca.display()
    ))
    .err()
    .expect("another authority's server is refused");
    assert!(why.to_lowercase().contains("certificate"), "{why}");
    let password = url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('@').next())
        .unwrap();
    assert!(!why.contains(password), "{why}");
    assert_eq!(encrypted(&url), None, "no connection stayed");
}

#[test]
fn verify_full_compares_the_host_and_verify_ca_does_not() {
    let Some((_fixture, url, ca)) = setup() else {
        return;
    };
    // The certificate names 127.0.0.1, not `localhost`, which reaches the same server.
    let by_name = url.replacen("@127.0.0.1:", "@localhost:", 1);
    assert_ne!(by_name, url);
    let why = open_with(&format!("{by_name}&sslmode=verify-full&sslrootcert={ca}"))
        .err()
        .expect("a certificate for another host is refused");
    let other_host = why.contains("not valid for name") || why.contains("NotValidForName");
    assert!(other_host, "{why}");
    let store = open_with(&format!("{by_name}&sslmode=verify-ca&sslrootcert={ca}")).unwrap();
    written_and_read(store.as_ref());
    assert_eq!(encrypted(&url), Some(true));
}
