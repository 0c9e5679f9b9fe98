//! A value a request brings that must live in a Secret of the organization's namespace (an
//! imported database's URL, a backup bucket's keys): created before the object naming it, so
//! the controller's first look finds it; owned by that object once it exists, so it goes with
//! it; removed again when the object could not be made.

use std::collections::BTreeMap;

use berth_crds::MANAGED_LABEL;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Creates the Secret `name` holding `data` (each value trimmed).
pub async fn keep(
    state: &AppState,
    namespace: &str,
    name: &str,
    data: &[(&str, &str)],
) -> ApiResult<()> {
    let data = data
        .iter()
        .map(|(key, value)| (key.to_string(), ByteString(value.trim().into())))
        .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(data),
        ..Default::default()
    };
    secrets(state, namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// Makes `owner` own the Secret `name`, so deleting it removes the Secret too.
pub async fn hand_over(
    state: &AppState,
    namespace: &str,
    name: &str,
    owner: Option<OwnerReference>,
) -> ApiResult<()> {
    let owner =
        owner.ok_or_else(|| ApiError::internal("the owning object was stored without a uid"))?;
    let patch = json!({ "metadata": { "ownerReferences": [owner] } });
    secrets(state, namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Removes the Secret `name` of an object that was not made (best effort, logged).
pub async fn forget(state: &AppState, namespace: &str, name: &str) {
    let removed = secrets(state, namespace)
        .delete(name, &DeleteParams::default())
        .await;
    if let Err(error) = removed {
        tracing::warn!(secret = %name, %error, "could not remove the Secret of an object not made");
    }
}

fn secrets(state: &AppState, namespace: &str) -> Api<Secret> {
    Api::<Secret>::namespaced(state.client.clone(), namespace)
}
