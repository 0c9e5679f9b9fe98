//! Command line of `berth-shim`. Every option can also come from the environment. Without a
//! subcommand it serves; `berth-shim openapi` prints the API's OpenAPI document and exits.

use std::net::SocketAddr;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "berth-shim",
    version,
    about = "Berth's REST API: serves the interface specification from Berth's custom resources."
)]
pub struct ShimOptions {
    /// Something to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,
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
    #[command(flatten)]
    pub store: berth_observations::StoreOptions,
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
    /// DNS server (`address:port`) DNS readiness resolves host names with, as berth-controller's
    /// certificate pre-flight (the same option); the system resolver when unset.
    #[arg(long, env = "BERTH_ACME_DNS")]
    pub acme_dns: Option<SocketAddr>,
    /// Seconds to keep serving after SIGTERM while /readyz answers 503 (0..=120), so that load
    /// balancers, and a Kubernetes Service's endpoints, stop sending new requests before the
    /// listener closes; requests in flight then finish.
    #[arg(
        long,
        env = "BERTH_SHIM_DRAIN_SECONDS",
        default_value_t = 0,
        value_parser = clap::value_parser!(u64).range(0..=120)
    )]
    pub drain_seconds: u64,
}

/// What `berth-shim` can do besides serving.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print the REST API's OpenAPI document (pretty JSON) to stdout and exit.
    ///
    /// Needs no cluster, so the console's TypeScript types can be generated from it offline.
    Openapi,
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

    #[test]
    fn serving_is_the_default_and_openapi_is_a_subcommand() {
        let serve = ShimOptions::try_parse_from(["berth-shim", "--listen", "0.0.0.0:7070"]);
        assert_eq!(serve.unwrap().command, None);
        let openapi = ShimOptions::try_parse_from(["berth-shim", "openapi"]).unwrap();
        assert_eq!(openapi.command, Some(Command::Openapi));
        assert!(ShimOptions::try_parse_from(["berth-shim", "openapapi"]).is_err());
    }

    #[test]
    fn monitoring_defaults_to_30_seconds_and_refuses_intervals_below_5_seconds() {
        let cli = ShimOptions::try_parse_from(["berth-shim"]).unwrap();
        assert_eq!(cli.monitoring_interval_seconds, 30);
        let cli = ShimOptions::try_parse_from(["berth-shim", "--monitoring-interval-seconds", "5"])
            .unwrap();
        assert_eq!(cli.monitoring_interval_seconds, 5);
        let args = ["berth-shim", "--monitoring-interval-seconds", "4"];
        assert!(ShimOptions::try_parse_from(args).is_err());
    }
}
