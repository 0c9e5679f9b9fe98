//! Where the observation store lives, as both binaries take it from `--observation-store`: a
//! `postgres://` URL or a SQLite file. A URL may carry a password, so a location only ever
//! shows itself masked (`****`), in `Display` and `Debug` alike.

use std::convert::Infallible;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use super::{FILE_NAME, ObservationStore, PostgresStore, SqliteStore, StoreError};

/// A store's location. Parsing never fails, so that a command-line parser never echoes a
/// mistyped URL with its password; [`open`] names what it cannot open, masked.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file (one machine: the controller writes, shims on the same host read).
    Sqlite(PathBuf),
    /// A PostgreSQL database shared by controller replicas and shims.
    Postgres(PostgresUrl),
}

/// A `postgres://` or `postgresql://` connection URL; shown with its password masked.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    /// The URL itself, password included: for the driver only, never for a log line.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl StoreLocation {
    /// The database kind, as diagnostics report it: `sqlite` or `postgresql`.
    pub fn driver(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgresql",
        }
    }
    /// The default: the SQLite file in Berth's data directory.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self::Sqlite(data_dir.join(FILE_NAME))
    }
}

impl FromStr for StoreLocation {
    type Err = Infallible;

    fn from_str(text: &str) -> Result<Self, Infallible> {
        let scheme = scheme(text).map(str::to_ascii_lowercase);
        Ok(match scheme.as_deref() {
            Some("postgres" | "postgresql") => Self::Postgres(PostgresUrl(text.to_string())),
            _ => Self::Sqlite(PathBuf::from(text)),
        })
    }
}

/// Opens the store at `location`, creating its schema if needed. Blocking: call it where
/// blocking is allowed (`spawn_blocking`, a plain thread), as every store call. The store
/// coerces to the [`ControllerStore`](crate::ControllerStore) or
/// [`ShimStore`](crate::ShimStore) its process keeps.
pub fn open(location: &StoreLocation) -> Result<Arc<dyn ObservationStore>, StoreError> {
    match location {
        StoreLocation::Sqlite(path) => {
            // A URL of a scheme Berth does not know would otherwise become a relative path.
            if let Some(scheme) = path.to_str().and_then(scheme) {
                return Err(StoreError::Open {
                    location: location.to_string(),
                    message: format!(
                        "unsupported scheme `{scheme}`: give a postgres:// URL or a file path"
                    ),
                });
            }
            Ok(Arc::new(SqliteStore::open(path)?))
        }
        StoreLocation::Postgres(url) => Ok(Arc::new(PostgresStore::open(url)?)),
    }
}

/// The scheme of `text` when it reads as a URL (`scheme://…`).
fn scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    valid.then_some(scheme)
}

/// `url` with the password of its user info and any `password=` parameter replaced by `****`.
/// Where the URL is ambiguous it masks more, never less.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The user info ends at the last `@`: a password may hold an unescaped `@` or `/`.
    let rest = match rest.rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{user}:****{}", &rest[at..]),
            None => rest.to_string(),
        },
        None => rest.to_string(),
    };
    let masked = match rest.split_once('?') {
        Some((base, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((name, _)) if name.eq_ignore_ascii_case("password") => {
                        format!("{name}=****")
                    }
                    _ => param.to_string(),
                })
                .collect();
            format!("{base}?{}", params.join("&"))
        }
        None => rest,
    };
    format!("{scheme}://{masked}")
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&mask_url(&self.0))
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({self})")
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A path is a URL of an unknown scheme at times (see `open`): mask it too.
            Self::Sqlite(path) => f.write_str(&mask_url(&path.display().to_string())),
            Self::Postgres(url) => url.fmt(f),
        }
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(_) => write!(f, "Sqlite({self})"),
            Self::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> StoreLocation {
        text.parse().unwrap()
    }

    #[test]
    fn postgres_urls_pick_postgres_and_anything_else_is_a_sqlite_file() {
        for url in [
            "postgres://berth@db/berth",
            "postgresql://db/berth",
            "POSTGRES://db",
        ] {
            assert!(matches!(parse(url), StoreLocation::Postgres(_)), "{url}");
        }
        assert_eq!(
            parse("/var/lib/berth/store.sqlite"),
            StoreLocation::Sqlite("/var/lib/berth/store.sqlite".into())
        );
        assert_eq!(
            StoreLocation::in_data_dir(Path::new("/data")),
            StoreLocation::Sqlite(Path::new("/data").join(FILE_NAME))
        );
    }

    #[test]
    fn passwords_never_show() {
        let cases = [
            (
                "postgres://berth:s3cret@127.0.0.1:5432/berth",
                "postgres://berth:****@127.0.0.1:5432/berth",
            ),
            (
                "postgres://berth:s3c@r/et@db/berth?sslmode=disable",
                "postgres://berth:****@db/berth?sslmode=disable",
            ),
            (
                "postgresql://db/berth?user=berth&Password=s3cret&application_name=x",
                "postgresql://db/berth?user=berth&Password=****&application_name=x",
            ),
            ("postgres://berth@db/berth", "postgres://berth@db/berth"),
            ("postgres://db", "postgres://db"),
        ];
        for (url, masked) in cases {
            let location = parse(url);
            assert_eq!(location.to_string(), masked);
            assert!(!format!("{location:?}").contains("s3c"), "{location:?}");
        }
    }

    #[test]
    fn an_unknown_scheme_is_refused_by_name_without_its_password() {
        let location = parse("mysql://berth:s3cret@db/berth");
        let error = open(&location)
            .err()
            .expect("opened a mysql:// URL")
            .to_string();
        assert!(error.contains("unsupported scheme `mysql`"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
    }

    #[test]
    fn an_unreachable_database_names_its_url_masked() {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let location = parse("postgres://berth:s3cret@127.0.0.1:1/berth?connect_timeout=2");
        let error = open(&location)
            .err()
            .expect("connected to port 1")
            .to_string();
        assert!(
            error.contains("postgres://berth:****@127.0.0.1:1/berth"),
            "{error}"
        );
        assert!(!error.contains("s3cret"), "{error}");
    }
}
