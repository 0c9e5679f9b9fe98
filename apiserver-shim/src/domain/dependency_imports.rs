//! An imported dependency's URL: kept in a Secret of the organization's namespace (`<id>-import`,
//! key `url`) that the DependencyResource names and, once it exists, owns — so the Secret goes
//! with it. The controller checks the URL from the server and publishes it for bound apps.

use std::collections::BTreeMap;

use berth_crds::MANAGED_LABEL;
use berth_crds::dependency_resource::{DependencyResource, URL_KEY};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource as _};
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Name of the Secret holding imported dependency `id`'s URL.
pub fn source_secret_name(id: &str) -> String {
    format!("{id}-import")
}

/// Creates the Secret holding `url` for dependency `id` (before the dependency, so its first
/// check finds it).
pub async fn keep_url(state: &AppState, namespace: &str, id: &str, url: &str) -> ApiResult<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(source_secret_name(id)),
            labels: Some(BTreeMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(BTreeMap::from([(
            URL_KEY.to_string(),
            ByteString(url.trim().into()),
        )])),
        ..Default::default()
    };
    secrets(state, namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// Makes `dependency` own its URL's Secret, so deleting it removes the URL too.
pub async fn hand_over(
    state: &AppState,
    namespace: &str,
    dependency: &DependencyResource,
) -> ApiResult<()> {
    let owner = dependency
        .controller_owner_ref(&())
        .ok_or_else(|| ApiError::internal("the dependency resource was stored without a uid"))?;
    let name = source_secret_name(&dependency.metadata.name.clone().unwrap_or_default());
    let patch = json!({ "metadata": { "ownerReferences": [owner] } });
    secrets(state, namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Removes the URL's Secret of an import that did not happen.
pub async fn forget_url(state: &AppState, namespace: &str, id: &str) {
    let removed = secrets(state, namespace)
        .delete(&source_secret_name(id), &DeleteParams::default())
        .await;
    if let Err(error) = removed {
        tracing::warn!(dependency = %id, %error, "could not remove the Secret of a failed import");
    }
}

fn secrets(state: &AppState, namespace: &str) -> Api<Secret> {
    Api::<Secret>::namespaced(state.client.clone(), namespace)
}
