//! An imported dependency's URL: kept in a Secret of the organization's namespace (`<id>-import`,
//! key `url`) that the DependencyResource names and, once it exists, owns — so the Secret goes
//! with it. The controller checks the URL from the server and publishes it for bound apps.

use berth_crds::dependency_resource::{DependencyResource, URL_KEY};
use kube::Resource as _;

use super::kept_secrets;
use crate::error::ApiResult;
use crate::state::AppState;

/// Name of the Secret holding imported dependency `id`'s URL.
pub fn source_secret_name(id: &str) -> String {
    format!("{id}-import")
}

/// Creates the Secret holding `url` for dependency `id` (before the dependency, so its first
/// check finds it).
pub async fn keep_url(state: &AppState, namespace: &str, id: &str, url: &str) -> ApiResult<()> {
    let name = source_secret_name(id);
    kept_secrets::keep(state, namespace, &name, &[(URL_KEY, url)]).await
}

/// Makes `dependency` own its URL's Secret, so deleting it removes the URL too.
pub async fn hand_over(
    state: &AppState,
    namespace: &str,
    dependency: &DependencyResource,
) -> ApiResult<()> {
    let name = source_secret_name(&dependency.metadata.name.clone().unwrap_or_default());
    let owner = dependency.controller_owner_ref(&());
    kept_secrets::hand_over(state, namespace, &name, owner).await
}

/// Removes the URL's Secret of an import that did not happen.
pub async fn forget_url(state: &AppState, namespace: &str, id: &str) {
    kept_secrets::forget(state, namespace, &source_secret_name(id)).await
}
