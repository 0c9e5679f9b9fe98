//! Status writes: server-side apply on `/status`, only when something changed.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::FIELD_MANAGER;
use crate::error::Result;

/// Applies `status` to `object`'s status subresource unless it equals `current`.
/// Returns whether a write happened.
pub async fn apply_status<K, S>(
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    write_status(api, object, current, status, None).await
}

/// Like [`apply_status`], but only if `object` is still at the version it was read at: for a
/// status concluded from a read that another writer may have overtaken (a 409 Conflict says
/// so; the other write's watch event brings a fresh reconcile).
pub async fn apply_status_if_unchanged<K, S>(
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    let version = object.resource_version();
    write_status(api, object, current, status, version.as_deref()).await
}

async fn write_status<K, S>(
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
    version: Option<&str>,
) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    let metadata = match version {
        Some(version) => serde_json::json!({ "resourceVersion": version }),
        None => serde_json::json!({}),
    };
    if current == Some(status) {
        return Ok(false);
    }
    // Kubernetes 1.20's server-side apply turns a field our manager stops sending into a
    // `null`, which the schema then rejects; a merge patch that removes it explicitly works.
    if let Some(removal) = current.and_then(|current| removal_patch(current, status)) {
        api.patch_status(
            &object.name_any(),
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&serde_json::json!({ "metadata": metadata, "status": removal })),
        )
        .await?;
        return Ok(true);
    }
    server_side_apply(
        api,
        object,
        FIELD_MANAGER,
        metadata,
        &serde_json::json!(status),
    )
    .await?;
    Ok(true)
}

/// Applies only the status fields in `fields` (the caller's share; other writers own the rest),
/// and only over the version `object` was read at. `Ok(false)` when another write overtook it
/// (409): its watch event brings a fresh reconcile.
pub async fn apply_owned_fields_if_unchanged<K>(
    api: &Api<K>,
    object: &K,
    fields: &serde_json::Map<String, Value>,
) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    apply_fields_as_if_unchanged(api, object, FIELD_MANAGER, fields).await
}

/// [`apply_owned_fields_if_unchanged`] as another field manager, for a writer whose fields
/// must survive the applies of the kind's own reconciler (a server-side apply drops the fields
/// its manager stops sending).
pub async fn apply_fields_as_if_unchanged<K>(
    api: &Api<K>,
    object: &K,
    manager: &str,
    fields: &serde_json::Map<String, Value>,
) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let metadata = serde_json::json!({ "resourceVersion": object.resource_version() });
    let status = Value::Object(fields.clone());
    match server_side_apply(api, object, manager, metadata, &status).await {
        Err(error) if error.is_conflict() => Ok(false),
        written => written.map(|()| true),
    }
}

/// The one status write: server-side apply of `status` under `manager`.
async fn server_side_apply<K>(
    api: &Api<K>,
    object: &K,
    manager: &str,
    metadata: Value,
    status: &Value,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": metadata,
        "status": status,
    });
    api.patch_status(
        &object.name_any(),
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(())
}

/// A JSON merge patch from `current` to `desired` when `desired` drops a field `current` has
/// (`None` otherwise: server-side apply handles additions and changes).
fn removal_patch<S: Serialize>(current: &S, desired: &S) -> Option<Value> {
    let current = serde_json::to_value(current).ok()?;
    let desired = serde_json::to_value(desired).ok()?;
    let (patch, removes) = merge_patch(&current, &desired);
    removes.then_some(patch)
}

/// The merge patch turning `current` into `desired`, and whether it removes anything.
fn merge_patch(current: &Value, desired: &Value) -> (Value, bool) {
    let (Value::Object(current), Value::Object(desired)) = (current, desired) else {
        return (desired.clone(), false);
    };
    let mut patch = serde_json::Map::new();
    let mut removes = false;
    for (key, value) in desired {
        let (entry, removed) = match current.get(key) {
            Some(before) => merge_patch(before, value),
            None => (value.clone(), false),
        };
        removes |= removed;
        patch.insert(key.clone(), entry);
    }
    for key in current.keys().filter(|k| !desired.contains_key(*k)) {
        removes = true;
        patch.insert(key.clone(), Value::Null);
    }
    (Value::Object(patch), removes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dropped_nested_field_becomes_an_explicit_null() {
        let current = json!({"summary": {"planned": {"url": "u"}, "status": "ready"}, "count": 1});
        let desired = json!({"summary": {"status": "ready"}, "count": 2});
        let patch = removal_patch(&current, &desired).unwrap();
        assert_eq!(
            patch,
            json!({"summary": {"planned": null, "status": "ready"}, "count": 2})
        );
        assert_eq!(removal_patch(&desired, &current), None);
    }
}
