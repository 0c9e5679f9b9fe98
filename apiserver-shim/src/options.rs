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
    #[command(flatten)]
    pub system: berth_process::flags::SystemOptions,
    /// Hours a login session lasts.
    #[arg(long, env = "BERTH_SESSION_HOURS", default_value_t = 24 * 7)]
    pub session_hours: u64,
    #[command(flatten)]
    pub logging: berth_process::logging::LogOptions,
    #[command(flatten)]
    pub store: berth_observations::StoreOptions,
    /// The pace berth-controller samples at, as its option of the same name.
    #[command(flatten)]
    pub monitoring_interval: berth_process::flags::MonitoringOptions,
    /// The resolver of DNS readiness, as berth-controller's certificate pre-flight.
    #[command(flatten)]
    pub dns: berth_process::flags::DnsOptions,
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
}
