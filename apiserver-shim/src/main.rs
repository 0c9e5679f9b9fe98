//! `berth-shim`: Berth's REST API server.

use berth_apiserver_shim::cli::ShimOptions;
use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = ShimOptions::parse();
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,kube_runtime=warn,kube_client=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if options.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    berth_apiserver_shim::run(options).await
}
