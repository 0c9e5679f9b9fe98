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
    pub observation_store: Option<berth_observations::StoreLocation>,
    /// Seconds between the server observer's monitoring samples, as berth-controller's option
    /// of the same name (5..=3600): samples older than two intervals are `stale`, gaps longer
    /// than 2.5 intervals are `missing-samples`.
    #[arg(
        long,
        env = "BERTH_MONITORING_INTERVAL_SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(5..=3600)
    )]
    pub monitoring_interval_seconds: u64,
    /// Hours raw monitoring samples are kept (1..=87600), reported as `rawRetentionHours`.
    #[arg(
        long,
        env = "BERTH_MONITORING_RETENTION_HOURS",
        default_value_t = 168,
        value_parser = clap::value_parser!(u64).range(1..=87_600)
    )]
    pub monitoring_retention_hours: u64,
    /// DNS server (`address:port`) DNS readiness resolves host names with, as berth-controller's
    /// certificate pre-flight (the same option); the system resolver when unset.
    #[arg(long, env = "BERTH_ACME_DNS")]
    pub acme_dns: Option<SocketAddr>,
}

impl ShimOptions {
    /// Where the observation store is: `--observation-store`, else the data directory's file.
    pub fn observation_store(&self) -> berth_observations::StoreLocation {
        self.observation_store
            .clone()
            .unwrap_or_else(|| berth_observations::StoreLocation::in_data_dir(&self.data_dir))
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
            berth_observations::StoreLocation::Postgres(_)
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

    #[test]
    fn monitoring_defaults_to_30_seconds_and_a_week_and_refuses_intervals_below_5_seconds() {
        let cli = ShimOptions::try_parse_from(["berth-shim"]).unwrap();
        assert_eq!(cli.monitoring_interval_seconds, 30);
        assert_eq!(cli.monitoring_retention_hours, 168);
        let cli = ShimOptions::try_parse_from([
            "berth-shim",
            "--monitoring-interval-seconds",
            "5",
            "--monitoring-retention-hours",
            "24",
        ])
        .unwrap();
        assert_eq!(cli.monitoring_interval_seconds, 5);
        assert_eq!(cli.monitoring_retention_hours, 24);
        for bad in [
            ["--monitoring-interval-seconds", "4"],
            ["--monitoring-retention-hours", "0"],
        ] {
            let args = ["berth-shim", bad[0], bad[1]];
            assert!(ShimOptions::try_parse_from(args).is_err(), "{bad:?}");
        }
    }
}
