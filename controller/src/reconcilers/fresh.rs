//! Our finalizer on an object whose cached copy may predate our own last write: re-read
//! around it, and added before the first apply.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::Result;

/// `object` as the API server has it now, when the cached copy may be stale around our
/// finalizer: right after we added it (kube's `finalizer()` would add it again with a JSON-patch
/// `test` that fails with 422), and while the object is being deleted (we may already have
/// removed it, and the object be gone). `None` when the object no longer exists.
pub async fn with_current_finalizers<K>(
    api: &Api<K>,
    object: Arc<K>,
    finalizer: &str,
) -> Result<Option<Arc<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let has_it = object.finalizers().iter().any(|f| f == finalizer);
    if has_it && object.meta().deletion_timestamp.is_none() {
        return Ok(Some(object));
    }
    Ok(api.get_opt(&object.name_any()).await?.map(Arc::new))
}

/// `object` with `finalizer` added (as the API server has it after the patch), or as it is when
/// it has it already or is being deleted. kube's `finalizer()` adds a missing one itself but then
/// waits for the next watch event before it applies; adding it here first lets a new object be
/// applied in the same reconcile (a new Resource's first attempt starts a watch round trip sooner).
pub async fn with_finalizer<K>(api: &Api<K>, object: Arc<K>, finalizer: &str) -> Result<Arc<K>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let has_it = object.finalizers().iter().any(|f| f == finalizer);
    if has_it || object.meta().deletion_timestamp.is_some() {
        return Ok(object);
    }
    let patch = finalizer_patch(object.meta(), finalizer);
    let patched = api
        .patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await?;
    Ok(Arc::new(patched))
}

/// A JSON patch adding `finalizer`, refused by the API server if the object changed since it
/// was read.
fn finalizer_patch(meta: &ObjectMeta, finalizer: &str) -> json_patch::Patch {
    let version = meta.resource_version.clone().unwrap_or_default();
    let add = if meta.finalizers.is_none() {
        json!({ "op": "add", "path": "/metadata/finalizers", "value": [finalizer] })
    } else {
        json!({ "op": "add", "path": "/metadata/finalizers/-", "value": finalizer })
    };
    let operations = json!([
        { "op": "test", "path": "/metadata/resourceVersion", "value": version },
        add,
    ]);
    serde_json::from_value(operations).expect("a JSON patch of two known operations")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_adds_the_finalizer_only_to_the_version_read() {
        let mut meta = ObjectMeta {
            resource_version: Some("7".into()),
            ..Default::default()
        };
        let first = serde_json::to_value(finalizer_patch(&meta, "berth.dev/x")).unwrap();
        assert_eq!(
            first,
            json!([
                { "op": "test", "path": "/metadata/resourceVersion", "value": "7" },
                { "op": "add", "path": "/metadata/finalizers", "value": ["berth.dev/x"] },
            ])
        );
        meta.finalizers = Some(vec!["other".into()]);
        let more = serde_json::to_value(finalizer_patch(&meta, "berth.dev/x")).unwrap();
        assert_eq!(more[1]["path"], "/metadata/finalizers/-");
        assert_eq!(more[1]["value"], "berth.dev/x");
    }
}
