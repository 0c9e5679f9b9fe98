//! `berth-shim`: Berth's REST API server.

use std::io::Write as _;

use berth_apiserver_shim::options::{Command, ShimOptions};
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = ShimOptions::parse();
    if options.command == Some(Command::Openapi) {
        return print_openapi();
    }
    options.logging.init();
    berth_apiserver_shim::run(options).await
}

/// `berth-shim openapi`: the document, pretty, on stdout.
fn print_openapi() -> anyhow::Result<()> {
    let document =
        serde_json::to_string_pretty(&berth_apiserver_shim::routes::openapi::document())?;
    match writeln!(std::io::stdout().lock(), "{document}") {
        // A reader that stopped early (`| head`) is not a failure.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => Ok(written?),
    }
}
