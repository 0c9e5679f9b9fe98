//! berth-controller's calls into the shim (`/internal/`): the leader runs the steps of
//! Migrations written with kubectl through them. The caller proves it is the controller with
//! the token in the Secret `berth-migration-runner` of the system namespace, which the
//! controller makes and only Berth's own service accounts can read; no user token is accepted.

use axum::http::{HeaderMap, header};
use berth_vocabulary::migration_runner::{TOKEN_KEY, TOKEN_SECRET};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::token;

/// Refuses a request that does not carry the controller's token.
pub async fn require_controller(state: &AppState, headers: &HeaderMap) -> ApiResult<()> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| ApiError::unauthenticated("send Authorization: Bearer <token>"))?;
    let expected = controller_token(state).await?;
    // Digests of equal length are compared, so the comparison says nothing of the token.
    match expected {
        Some(expected) if token::digest(&expected) == token::digest(presented) => Ok(()),
        _ => Err(ApiError::unauthenticated(
            "this path is berth-controller's; the token is not its token",
        )),
    }
}

/// The token the controller made, if it made one yet.
async fn controller_token(state: &AppState) -> ApiResult<Option<String>> {
    let api = Api::<Secret>::namespaced(state.client.clone(), &state.config.system_namespace);
    let secret = api.get_opt(TOKEN_SECRET).await?;
    let value = secret
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove(TOKEN_KEY))
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned());
    Ok(value.filter(|token| !token.is_empty()))
}
