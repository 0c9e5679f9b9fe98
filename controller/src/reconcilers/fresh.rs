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

/// `object` with `finalizer` added, as the API server has it after the patch; the object as it
/// is now when it is being deleted; `None` when it is gone. kube's `finalizer()` adds a missing
/// one itself but then waits for the next watch event before it applies; adding it here first
/// lets a new object be applied in the same reconcile (a new Resource's first attempt starts a
/// watch round trip sooner). The patch is tried on the cached copy first: only when that copy
/// is stale (the patch's version test fails) is the object read again, so a new object costs
/// one request, not two.
pub async fn with_finalizer<K>(
    api: &Api<K>,
    object: Arc<K>,
    finalizer: &str,
) -> Result<Option<Arc<K>>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    if object.meta().deletion_timestamp.is_some() {
        return with_current_finalizers(api, object, finalizer).await;
    }
    if has_finalizer(object.as_ref(), finalizer) {
        return Ok(Some(object));
    }
    match add_finalizer(api, &object, finalizer).await {
        Err(kube::Error::Api(e)) if e.code == 422 || e.code == 409 => {}
        added => return Ok(Some(Arc::new(added?))),
    }
    // The cached copy was stale (our own earlier patch, or someone else's write).
    let Some(current) = api.get_opt(&object.name_any()).await? else {
        return Ok(None);
    };
    if has_finalizer(&current, finalizer) || current.meta().deletion_timestamp.is_some() {
        return Ok(Some(Arc::new(current)));
    }
    Ok(Some(Arc::new(
        add_finalizer(api, &current, finalizer).await?,
    )))
}

/// Removes `finalizer` from `object` when it has it; a no-op when it does not (or the object is
/// gone). The JSON patch tests the list entry it removes, so a concurrent change of the list
/// fails it (and the reconcile is tried again) instead of removing someone else's.
pub async fn release_finalizer<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(index) = object.finalizers().iter().position(|f| f == finalizer) else {
        return Ok(());
    };
    let path = format!("/metadata/finalizers/{index}");
    let operations = json!([
        { "op": "test", "path": path, "value": finalizer },
        { "op": "remove", "path": path },
    ]);
    let patch: json_patch::Patch =
        serde_json::from_value(operations).expect("a JSON patch of two known operations");
    let params = PatchParams::default();
    match api
        .patch(&object.name_any(), &params, &Patch::<()>::Json(patch))
        .await
    {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        patched => patched.map(drop).map_err(Into::into),
    }
}

fn has_finalizer<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

async fn add_finalizer<K>(api: &Api<K>, object: &K, finalizer: &str) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = finalizer_patch(object.meta(), finalizer);
    let params = PatchParams::default();
    api.patch(&object.name_any(), &params, &Patch::<()>::Json(patch))
        .await
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
    use crate::context::Context;
    use crate::context::fixtures::Exchange;
    use k8s_openapi::api::core::v1::ConfigMap;

    /// What the tests patch: a ConfigMap stands for any kind.
    const PATH: &str = "/api/v1/namespaces/ns/configmaps/web";

    fn config_map(version: &str, finalizers: &[&str]) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some("web".into());
        object.metadata.namespace = Some("ns".into());
        object.metadata.resource_version = Some(version.into());
        object.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
        object
    }

    #[tokio::test]
    async fn a_new_object_gets_the_finalizer_in_one_request() {
        let (context, api_server, _feeds) = Context::test();
        let api = Api::<ConfigMap>::namespaced(context.client.clone(), "ns");
        let added = config_map("2", &["berth.dev/x"]);
        let script = api_server.serve([Exchange::patch(PATH).returns(&added)]);
        let cached = Arc::new(config_map("1", &[]));
        let object = with_finalizer(&api, cached, "berth.dev/x").await.unwrap();
        assert_eq!(object.unwrap().finalizers(), ["berth.dev/x"]);
        let sent = script.finish().await;
        assert_eq!(
            sent[0].body[0]["value"], "1",
            "tested against the cached version"
        );
    }

    #[tokio::test]
    async fn a_stale_cached_copy_is_read_again_and_not_patched_twice() {
        let (context, api_server, _feeds) = Context::test();
        let api = Api::<ConfigMap>::namespaced(context.client.clone(), "ns");
        // Our own earlier patch added the finalizer; the cache has not seen it yet.
        let current = config_map("2", &["berth.dev/x"]);
        let script = api_server.serve([
            Exchange::patch(PATH).rejected(http::StatusCode::UNPROCESSABLE_ENTITY, "Invalid"),
            Exchange::get(PATH).returns(&current),
        ]);
        let cached = Arc::new(config_map("1", &[]));
        let object = with_finalizer(&api, cached, "berth.dev/x").await.unwrap();
        assert_eq!(object.unwrap().resource_version().as_deref(), Some("2"));
        script.finish().await;
    }

    #[tokio::test]
    async fn an_object_gone_meanwhile_is_none() {
        let (context, api_server, _feeds) = Context::test();
        let api = Api::<ConfigMap>::namespaced(context.client.clone(), "ns");
        let script = api_server.serve([
            Exchange::patch(PATH).rejected(http::StatusCode::CONFLICT, "Conflict"),
            Exchange::get(PATH),
        ]);
        let cached = Arc::new(config_map("1", &[]));
        let object = with_finalizer(&api, cached, "berth.dev/x").await.unwrap();
        assert!(object.is_none());
        script.finish().await;
    }

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
