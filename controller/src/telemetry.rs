//! Logging set-up. `RUST_LOG` overrides the default filter (except for bollard, see below).

use tracing_subscriber::EnvFilter;

pub fn init(format: &str) {
    // tokio_postgres logs the database's NOTICEs ("already exists, skipping" on every
    // start) at info.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| {
            EnvFilter::new("info,kube_runtime=warn,kube_client=warn,tokio_postgres=warn")
        })
        // bollard logs request URIs at debug level, and an image build's URI carries the build
        // args, secret ones included: never below info, whatever `RUST_LOG` asks.
        .add_directive("bollard=info".parse().expect("a valid directive"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}
