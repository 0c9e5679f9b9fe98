//! The controller process's own `/healthz` (alive), `/readyz` (able to lead) and `/metrics`, for
//! the kubelet and Prometheus. Not a Resource's health: that is the Resource status and
//! [`crate::health_history`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::context::Context;

pub fn router(context: Arc<Context>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(context)
}

async fn readyz(State(context): State<Arc<Context>>) -> impl IntoResponse {
    if context.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "waiting for the CRDs and the system namespace",
        )
    }
}

async fn metrics(State(context): State<Arc<Context>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        context.metrics.encode(),
    )
}

/// Serves the endpoints until `shutdown` resolves.
pub async fn serve(
    address: SocketAddr,
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!(%address, "serving /metrics, /healthz and /readyz");
    axum::serve(listener, router(context))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
