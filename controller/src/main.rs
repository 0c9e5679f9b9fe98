//! `berth-controller`: runs Berth's reconcilers against a Kubernetes API server.

use berth_controller::options::{Cli, Command};
use clap::Parser;

/// jemalloc returns freed memory to the system after a short decay; glibc's malloc kept most of
/// what a burst of reconciles had freed, so the controller at rest sat near its peak.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A worker thread's stack: a debug build's poll frames hold whole child futures, and an
/// attempt's path from the task to a Docker call came near tokio's default of 2 MiB. Only
/// touched pages cost memory.
const WORKER_STACK_BYTES: usize = 8 << 20;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
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
