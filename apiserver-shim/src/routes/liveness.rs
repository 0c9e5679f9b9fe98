//! Liveness and readiness at the origin (not under `/api`).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
}

/// Ready when the API server answers, until the shim begins to drain.
async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.draining.load(std::sync::atomic::Ordering::Relaxed) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    }
    match state.client.apiserver_version().await {
        Ok(_) => (StatusCode::OK, "ok"),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the Kubernetes API server does not answer",
        ),
    }
}
