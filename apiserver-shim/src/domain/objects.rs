//! The custom resources and Secrets routes read from the caches, or build for a write.

use std::sync::Arc;

use berth_crds::deployment::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};

use crate::error::ApiError;
use crate::state::AppState;

/// The object `name` in `namespace`, or a 404 that does not reveal other organizations' objects.
pub fn find_in<K>(
    store: &Store<K>,
    namespace: &str,
    name: &str,
    kind: &str,
) -> Result<Arc<K>, ApiError>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    store
        .get(&ObjectRef::new(name).within(namespace))
        .ok_or_else(|| ApiError::not_found(kind, name))
}

/// Deployment `name` in `namespace`: from the cache, or from the API server when the cache has
/// not seen it yet (one created a moment ago).
pub async fn find_deployment(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Option<Deployment>, kube::Error> {
    let cached = state
        .caches
        .deployments
        .get(&ObjectRef::new(name).within(namespace));
    match cached {
        Some(deployment) => Ok(Some(Deployment::clone(&deployment))),
        None => {
            Api::<Deployment>::namespaced(state.client.clone(), namespace)
                .get_opt(name)
                .await
        }
    }
}

/// Every object of `store` in `namespace`.
pub fn all_in<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    store
        .state()
        .into_iter()
        .filter(|object| object.namespace().as_deref() == Some(namespace))
        .collect()
}

/// Whether `name` can be a Kubernetes object name (no deployment is named otherwise).
pub fn object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// An empty Secret `name` of `type_`, labelled as Berth's and with `owner_label: <owner's name>`,
/// owned by `owner` so it goes away with it.
pub fn owned_secret<K>(owner: &K, owner_label: &str, name: &str, type_: &str) -> Secret
where
    K: Resource<DynamicType = ()>,
{
    let reference = OwnerReference {
        api_version: K::api_version(&()).into(),
        kind: K::kind(&()).into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                [
                    (berth_crds::MANAGED_LABEL.to_string(), "true".to_string()),
                    (owner_label.to_string(), owner.name_any()),
                ]
                .into(),
            ),
            owner_references: Some(vec![reference]),
            ..Default::default()
        },
        type_: Some(type_.into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_object_names_can_name_a_deployment() {
        assert!(object_name("dep-web-m1x") && object_name("dep-a.b-2"));
        assert!(!object_name("../dep") && !object_name("Dep-1") && !object_name("a/b"));
    }
}
