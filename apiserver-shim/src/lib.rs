//! Berth's REST shim: serves the interface specification's endpoints under `/api` by reading
//! Berth's custom resources from reflector caches and writing them with server-side apply, and
//! the web console (compiled into the binary, see [`console`]) at `/`, on the same origin.
#![forbid(unsafe_code)]

pub mod attempt_archive;
pub mod audit;
pub mod auth;
pub mod cache;
pub mod changes;
pub mod console;
pub mod domain;
pub mod error;
pub mod extract;
pub mod json;
pub mod metrics;
pub mod observation_store;
pub mod options;
pub mod ratelimit;
pub mod routes;
pub mod services;
pub mod state;
pub mod token;
pub mod validate;
pub mod write;

use std::sync::Arc;

use kube::Client;

use crate::cache::Caches;
use crate::options::ShimOptions;
use crate::ratelimit::LoginLimiter;
use crate::state::{AppState, Config};

/// Runs the shim until SIGTERM/SIGINT.
pub async fn run(options: ShimOptions) -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let location = options.store.location();
    tracing::info!(store = %location, "opening the observation store");
    let observation_store_driver = location.driver();
    let observations: Arc<dyn berth_observations::ShimStore> =
        tokio::task::spawn_blocking(move || berth_observations::open(&location)).await??;
    let caches = Caches::start(&client);
    tracing::info!("filling caches");
    caches.wait_until_ready().await?;
    tokio::spawn(attempt_archive::run(caches.clone(), observations.clone()));
    tokio::spawn(audit::outside_writes::run(
        caches.clone(),
        observations.clone(),
    ));
    tokio::spawn(audit::controller_events::run(
        caches.clone(),
        observations.clone(),
    ));
    let state = AppState {
        client,
        caches,
        config: Arc::new(Config {
            system_namespace: options.system.system_namespace.clone(),
            public_url: options.public_url(),
            session_ttl: std::time::Duration::from_secs(options.session_hours * 3600),
            observation_store_driver,
            monitoring_interval: options.monitoring_interval.interval(),
            dns_server: options.dns.acme_dns,
        }),
        login_limiter: Arc::new(LoginLimiter::new(observations.clone())),
        metrics: Default::default(),
        terminals: Default::default(),
        server_access: Default::default(),
        server_deletions: Default::default(),
        observations,
        recent_access_failures: Default::default(),
        draining: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind(options.listen).await?;
    tracing::info!(address = %options.listen, "serving the REST API under /api and the console at /");
    let drain = Drain {
        flag: state.draining.clone(),
        period: std::time::Duration::from_secs(options.drain_seconds),
    };
    axum::serve(listener, routes::app(state))
        .with_graceful_shutdown(drain.after_signal())
        .await?;
    tracing::info!("stopped");
    Ok(())
}

/// What happens between SIGTERM and the listener closing.
struct Drain {
    flag: Arc<std::sync::atomic::AtomicBool>,
    period: std::time::Duration,
}

impl Drain {
    /// Resolves when the shim should stop accepting connections: after the signal and the
    /// drain period, during which it still serves but reports itself not ready.
    async fn after_signal(self) {
        berth_process::shutdown::on_signal().await;
        if !self.period.is_zero() {
            self.flag.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(
                seconds = self.period.as_secs(),
                "draining before the listener closes"
            );
            tokio::time::sleep(self.period).await;
        }
    }
}
