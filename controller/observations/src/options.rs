//! Where the observation store is, as both binaries take it on their command lines (one flag
//! group, flattened into berth-controller's and berth-shim's options).

use std::path::PathBuf;

use clap::Args;

use crate::StoreLocation;

/// `--data-dir` and `--observation-store`.
#[derive(Args, Debug, Clone)]
pub struct StoreOptions {
    /// Directory of Berth's data: the observation store's SQLite file (shared by berth-controller
    /// and berth-shim) and, for the controller, its copies of git repositories.
    #[arg(long, env = "BERTH_DATA_DIR", default_value = "/var/lib/berth")]
    pub data_dir: PathBuf,
    /// Observation store: a `postgres://` URL (one database for every replica and shim; TLS as
    /// its `sslmode` says, `verify-full` with `sslrootcert=PATH`) or a SQLite file; default:
    /// the SQLite file in the data directory.
    #[arg(
        long,
        env = "BERTH_OBSERVATION_STORE",
        value_name = "URL",
        hide_env_values = true
    )]
    pub observation_store: Option<StoreLocation>,
}

impl StoreOptions {
    /// Where the observation store is: `--observation-store`, else the data directory's file.
    pub fn location(&self) -> StoreLocation {
        self.observation_store
            .clone()
            .unwrap_or_else(|| StoreLocation::in_data_dir(&self.data_dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Binary {
        #[command(flatten)]
        store: StoreOptions,
    }

    #[test]
    fn the_observation_store_url_never_shows_its_password() {
        let url = "postgres://berth:s3cret@db:5432/berth";
        let parsed = Binary::try_parse_from(["berth", "--observation-store", url]).unwrap();
        assert!(matches!(
            parsed.store.location(),
            StoreLocation::Postgres(_)
        ));
        assert!(!format!("{:?}", parsed.store).contains("s3cret"));
        // `--help` would print the variable's value beside the option otherwise.
        let command = Binary::command();
        let option = command
            .get_arguments()
            .find(|arg| arg.get_id() == "observation_store")
            .unwrap();
        assert!(option.is_hide_env_values_set());
    }

    #[test]
    fn the_default_store_is_the_data_directorys_file() {
        let parsed = Binary::try_parse_from(["berth", "--data-dir", "/srv/berth"]).unwrap();
        assert!(matches!(parsed.store.location(), StoreLocation::Sqlite(_)));
    }
}
