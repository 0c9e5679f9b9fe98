//! Logging set-up. `RUST_LOG` overrides the default filter (except for bollard, see below).

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// For people: one coloured line per event.
    #[default]
    Text,
    /// For log collectors: one JSON object per line.
    Json,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    /// Log format.
    #[arg(long, env = "BERTH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// What is logged when `RUST_LOG` is unset: tokio_postgres logs the database's NOTICEs
/// ("already exists, skipping" on every start) at info, and kube's runtime is chatty.
const DEFAULT_FILTER: &str = "info,kube_runtime=warn,kube_client=warn,tokio_postgres=warn";

impl LogOptions {
    /// Installs the process's log subscriber; call once, first thing.
    pub fn init(&self) {
        let filter = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
            // bollard logs request URIs at debug level, and an image build's URI carries the
            // build args, secret ones included: never below info, whatever `RUST_LOG` asks.
            .add_directive("bollard=info".parse().expect("a valid directive"));
        let builder = tracing_subscriber::fmt().with_env_filter(filter);
        match self.log_format {
            LogFormat::Json => builder.json().init(),
            LogFormat::Text => builder.init(),
        }
    }
}
