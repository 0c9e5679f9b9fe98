//! Writes through the API server: server-side apply under the shim's field manager, recording
//! who made the change, then waiting until the cache shows it.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::Caller;
use crate::cache::catch_up;
use crate::error::ApiError;
use crate::state::FIELD_MANAGER;

/// Annotation naming the kind of actor that last changed an object through the API.
pub const UPDATED_BY_KIND: &str = "berth.dev/updated-by-actor-kind";
/// Annotation naming the actor (user id or deploy token id).
pub const UPDATED_BY_ID: &str = "berth.dev/updated-by-actor-id";

/// Applies `object` (a full desired object: apiVersion, kind, metadata.name, the fields the
/// shim owns) and waits until `store` has the result.
pub async fn apply<K>(
    api: &Api<K>,
    store: &Store<K>,
    caller: Option<&Caller>,
    mut object: K,
) -> Result<K, ApiError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    if let Some(caller) = caller {
        let (kind, id) = caller.actor();
        let annotations = object.annotations_mut();
        annotations.insert(UPDATED_BY_KIND.into(), kind.into());
        annotations.insert(UPDATED_BY_ID.into(), id.into());
    }
    let name = object.name_any();
    let mut value = serde_json::to_value(&object).map_err(ApiError::internal)?;
    // Status belongs to the controllers; an apply must not claim it.
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
        map.insert("apiVersion".into(), K::api_version(&()).into());
        map.insert("kind".into(), K::kind(&()).into());
    }
    let written = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&value),
        )
        .await?;
    catch_up(store, &written).await?;
    Ok(written)
}
