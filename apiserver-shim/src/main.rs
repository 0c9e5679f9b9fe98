//! `berth-shim`: Berth's REST API server.

use std::io::Write as _;

use berth_apiserver_shim::cli::{Command, ShimOptions};
use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = ShimOptions::parse();
    if options.command == Some(Command::Openapi) {
        return print_openapi();
    }
    // tokio_postgres logs the database's NOTICEs ("already exists, skipping" on every
    // start) at info.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,kube_runtime=warn,kube_client=warn,tokio_postgres=warn")
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if options.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    berth_apiserver_shim::run(options).await
}

/// `berth-shim openapi`: the document, pretty, on stdout.
fn print_openapi() -> anyhow::Result<()> {
    let document = serde_json::to_string_pretty(&berth_apiserver_shim::openapi::document())?;
    match writeln!(std::io::stdout().lock(), "{document}") {
        // A reader that stopped early (`| head`) is not a failure.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => Ok(written?),
    }
}
