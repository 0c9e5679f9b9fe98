//! `berth-controller`: runs Berth's reconcilers against a Kubernetes API server.

use berth_controller::options::{Cli, Command};
use clap::Parser;

/// jemalloc returns freed memory to the system after a short decay; glibc's malloc kept most of
/// what a burst of reconciles had freed, so the controller at rest sat near its peak.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli
        .command
        .unwrap_or_else(|| Command::Run(Box::new(cli.run)))
    {
        Command::Crd => {
            for crd in berth_crds::all_crds() {
                print!("---\n{}", berth_crds::render_manifest(&crd));
            }
            Ok(())
        }
        Command::Run(options) => {
            options.logging.init();
            berth_controller::run(*options).await
        }
    }
}
