//! Calls to the observation store from async code. Handlers, services and middleware all read
//! and write the store, so the one way to call it lives outside `routes/`.

use std::sync::Arc;

use berth_observations::{ShimStore, StoreError};

use crate::error::ApiError;

/// Runs an observation-store call off the async threads; a failing store is a 503 naming
/// `what` could not be read (the cause goes to the log).
pub async fn store_call<T: Send + 'static>(
    store: &Arc<dyn ShimStore>,
    what: &'static str,
    call: impl FnOnce(&dyn ShimStore) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || call(store.as_ref()))
        .await
        .map_err(ApiError::internal)?
        .map_err(|error| {
            tracing::warn!(%error, what, "observation store unavailable");
            ApiError::unavailable(format!(
                "{what} are unavailable: the observation store failed"
            ))
        })
}
