//! Command line of `berth-shim`. Every option can also come from the environment.

use std::net::SocketAddr;

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "berth-shim",
    version,
    about = "Berth's REST API: serves the interface specification from Berth's custom resources."
)]
pub struct ShimOptions {
    /// Address to listen on.
    #[arg(long, env = "BERTH_SHIM_ADDR", default_value = "127.0.0.1:7070")]
    pub listen: SocketAddr,
    /// Public base URL of the API, ending in `/api` (default: http://<listen>/api).
    #[arg(long, env = "BERTH_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Namespace of sessions, password hashes and system policies.
    #[arg(long, env = "BERTH_SYSTEM_NAMESPACE", default_value = berth_crds::SYSTEM_NAMESPACE)]
    pub system_namespace: String,
    /// Hours a login session lasts.
    #[arg(long, env = "BERTH_SESSION_HOURS", default_value_t = 24 * 7)]
    pub session_hours: u64,
    /// Log format: `text` or `json`.
    #[arg(long, env = "BERTH_LOG_FORMAT", default_value = "text")]
    pub log_format: String,
    /// Directory of the observation store berth-controller records deployment timelines in.
    #[arg(long, env = "BERTH_DATA_DIR", default_value = "/var/lib/berth")]
    pub data_dir: std::path::PathBuf,
    /// Observation store, as berth-controller's option of the same name: a `postgres://` URL
    /// or a SQLite file; default: the SQLite file in the data directory.
    #[arg(
        long,
        env = "BERTH_OBSERVATION_STORE",
        value_name = "URL",
        hide_env_values = true
    )]
    pub observation_store: Option<berth_timeline::StoreLocation>,
}

impl ShimOptions {
    /// Where the observation store is: `--observation-store`, else the data directory's file.
    pub fn observation_store(&self) -> berth_timeline::StoreLocation {
        self.observation_store
            .clone()
            .unwrap_or_else(|| berth_timeline::StoreLocation::in_data_dir(&self.data_dir))
    }
}

impl ShimOptions {
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}/api", self.listen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_observation_store_url_never_shows_its_password() {
        let url = "postgres://berth:s3cret@db:5432/berth";
        let cli = ShimOptions::try_parse_from(["berth-shim", "--observation-store", url]).unwrap();
        assert!(matches!(
            cli.observation_store(),
            berth_timeline::StoreLocation::Postgres(_)
        ));
        assert!(!format!("{cli:?}").contains("s3cret"), "{cli:?}");
        // `--help` would print the variable's value beside the option otherwise.
        let command = ShimOptions::command();
        let option = command
            .get_arguments()
            .find(|arg| arg.get_id() == "observation_store")
            .unwrap();
        assert!(option.is_hide_env_values_set());
    }
}
