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
}

impl ShimOptions {
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}/api", self.listen))
    }
}
