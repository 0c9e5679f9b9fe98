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

/// Ready when the API server answers.
async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    match state.client.apiserver_version().await {
        Ok(_) => (StatusCode::OK, "ok"),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the Kubernetes API server does not answer",
        ),
    }
}
