//! The connection URL of an imported database: checked against its kind (scheme, host) and
//! shown masked (the password as `****`, secret query parameters left out), by the REST import
//! and by the controller alike. The URL itself stays in a Secret.

use url::Url;

use crate::dependency_resource::{DependencyConnection, DependencyKind};
use crate::masking::MASK;

/// Query parameters that carry secrets; a masked URL leaves them out (Appaloft's list).
const SECRET_QUERY_KEYS: [&str; 14] = [
    "password",
    "pass",
    "token",
    "secret",
    "auth",
    "authorization",
    "cookie",
    "sslcert",
    "sslkey",
    "sslpassword",
    "tlskey",
    "tlscert",
    "access_key",
    "secret_key",
];

/// The schemes a client of `kind` takes.
pub fn schemes(kind: DependencyKind) -> &'static [&'static str] {
    match kind {
        DependencyKind::Postgres => &["postgres", "postgresql"],
        DependencyKind::Redis => &["redis", "rediss"],
    }
}

/// What an imported `kind`'s connection `url` says, masked; or why it is not one (for a person,
/// without the URL's secret parts).
pub fn checked_connection(kind: DependencyKind, url: &str) -> Result<DependencyConnection, String> {
    let parsed = Url::parse(url.trim()).map_err(|error| format!("is not a URL ({error})"))?;
    let allowed = schemes(kind);
    if !allowed.contains(&parsed.scheme()) {
        return Err(format!(
            "scheme {}:// is not a {} URL: use {}",
            parsed.scheme(),
            kind.as_str(),
            allowed
                .iter()
                .map(|scheme| format!("{scheme}://"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    let host = match parsed.host_str() {
        Some(host) if !host.is_empty() => host.to_string(),
        _ => return Err("names no host".to_string()),
    };
    let database_name = (kind == DependencyKind::Postgres)
        .then(|| parsed.path().trim_start_matches('/').to_string())
        .filter(|name| !name.is_empty());
    Ok(DependencyConnection {
        port: i64::from(parsed.port().unwrap_or(kind.port())),
        host,
        database_name,
        masked_connection: masked(parsed),
        secret_ref: None,
    })
}

/// `url` with its password as `****` and without secret query parameters.
fn masked(mut url: Url) -> String {
    if url.password().is_some() {
        // Setting a password fails only for URLs without a host, refused above.
        let _ = url.set_password(Some(MASK));
    }
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(key, _)| !SECRET_QUERY_KEYS.contains(&key.to_ascii_lowercase().as_str()))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    url.set_query(None);
    if !kept.is_empty() {
        url.query_pairs_mut().extend_pairs(kept);
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_read_and_masked() {
        let url =
            "postgresql://app:s3cret-pw@db.example.net:6543/orders?sslmode=require&password=x";
        let connection = checked_connection(DependencyKind::Postgres, url).unwrap();
        assert_eq!(connection.host, "db.example.net");
        assert_eq!(connection.port, 6543);
        assert_eq!(connection.database_name.as_deref(), Some("orders"));
        assert_eq!(
            connection.masked_connection,
            "postgresql://app:****@db.example.net:6543/orders?sslmode=require"
        );
        assert!(!format!("{connection:?}").contains("s3cret-pw"));
    }

    #[test]
    fn a_redis_url_takes_its_kinds_port_when_it_names_none() {
        let connection =
            checked_connection(DependencyKind::Redis, "redis://:pw-123@198.18.0.7").unwrap();
        assert_eq!(connection.port, 6379);
        assert_eq!(connection.database_name, None);
        assert_eq!(connection.masked_connection, "redis://:****@198.18.0.7");
    }

    #[test]
    fn a_url_of_another_kind_or_without_host_is_refused_without_its_password() {
        let wrong = checked_connection(DependencyKind::Redis, "postgres://u:pw-9@h/db");
        let why = wrong.unwrap_err();
        assert!(why.contains("redis:// or rediss://"), "{why}");
        assert!(!why.contains("pw-9"));
        assert!(checked_connection(DependencyKind::Postgres, "postgres:///db").is_err());
        let garbage = checked_connection(DependencyKind::Postgres, "not a url pw-9").unwrap_err();
        assert!(!garbage.contains("pw-9"), "{garbage}");
    }
}
