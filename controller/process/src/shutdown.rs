//! One shutdown signal (SIGTERM or SIGINT) fanned out to every task.

use std::pin::Pin;

use futures::FutureExt;
use futures::future::Shared;

/// A cloneable future that resolves once SIGTERM or SIGINT arrives.
pub type Shutdown = Shared<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>;

pub fn on_signal() -> Shutdown {
    let signal: Pin<Box<dyn Future<Output = ()> + Send + Sync>> = Box::pin(async {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("install SIGTERM handler");
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received; shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received; shutting down"),
        }
    });
    signal.shared()
}
