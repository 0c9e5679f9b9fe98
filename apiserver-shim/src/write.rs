//! Writes through the API server: server-side apply under the shim's field manager, recording
//! who made the change, then waiting until the cache shows it. `variables` lists are maps keyed
//! by key and exposure, so the shim claims only the entries it owns and leaves the rest to the
//! other managers (kubectl, GitOps) that applied them. Deletes go through [`delete`], which
//! notes them in the audit events.

use std::collections::HashSet;
use std::fmt::Debug;

use berth_crds::variable::{PlainVariable, VariableExposure};
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::Caller;
use crate::cache::catch_up;
use crate::error::ApiError;
use crate::state::FIELD_MANAGER;

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
    }
    apply_fields(api, store, FIELD_MANAGER, &name, value).await
}

/// Deletes `object` for `caller` and notes it in the audit events; the object as the API
/// server left it while finalizers hold it, `None` once it is gone (or was already: someone
/// else's delete, not noted as this caller's).
pub async fn delete<K>(
    api: &Api<K>,
    object: &K,
    params: &DeleteParams,
    caller: &Caller,
) -> Result<Option<K>, ApiError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = object.name_any();
    let marked = match api.delete(&name, params).await {
        Ok(outcome) => outcome.left(),
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let kind = K::kind(&());
    let resource = match kind.as_ref() {
        "Resource" => name.clone(),
        _ => serde_json::to_value(object)
            .ok()
            .and_then(|v| v.pointer("/spec/resourceId")?.as_str().map(str::to_string))
            .unwrap_or_default(),
    };
    let namespace = object.namespace().unwrap_or_default();
    crate::audit::note_delete(&kind, &namespace, &name, &resource, caller.actor());
    Ok(marked)
}

/// Applies `fields` (any part of the object: metadata, some of the spec) as `manager`, which
/// then owns exactly these fields, and waits until `store` has the result.
pub async fn apply_fields<K>(
    api: &Api<K>,
    store: &Store<K>,
    manager: &str,
    name: &str,
    mut fields: Value,
) -> Result<K, ApiError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    if let Some(map) = fields.as_object_mut() {
        map.insert("apiVersion".into(), K::api_version(&()).into());
        map.insert("kind".into(), K::kind(&()).into());
        map.entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
            .ok_or_else(|| ApiError::internal("metadata is not an object"))?
            .insert("name".into(), name.into());
    }
    let before = api
        .namespace()
        .and_then(|namespace| store.get(&ObjectRef::new(name).within(namespace)))
        .and_then(|cached| serde_json::to_value(cached.as_ref()).ok());
    let written = api
        .patch(
            name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&fields),
        )
        .await?;
    if let Ok(after) = serde_json::to_value(&written) {
        crate::audit::note_write(&K::kind(&()), before.as_ref(), &after, &fields);
    }
    catch_up(store, &written).await?;
    Ok(written)
}

/// The annotations naming who made a change, for a partial apply.
pub fn actor_annotations(caller: &Caller) -> Value {
    let (kind, id) = caller.actor();
    serde_json::json!({ UPDATED_BY_KIND: kind, UPDATED_BY_ID: id })
}

/// A `variables` entry's identity: its map keys.
pub type VariableKey = (String, VariableExposure);

/// The entries of `spec.variables` that `manager` owns according to `meta.managedFields`.
/// A manager that owned the list before it became a map (an atomic list) owns all of it.
pub fn owned_variables(
    meta: &ObjectMeta,
    manager: &str,
    variables: &[PlainVariable],
) -> HashSet<VariableKey> {
    let mut owned = HashSet::new();
    let sets = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.manager.as_deref() == Some(manager))
        .filter_map(|entry| entry.fields_v1.as_ref())
        .filter_map(|fields| fields.0.pointer("/f:spec/f:variables")?.as_object());
    for set in sets {
        let entries: Vec<&str> = set.keys().filter_map(|k| k.strip_prefix("k:")).collect();
        if entries.is_empty() {
            owned.extend(variables.iter().map(variable_key));
        }
        owned.extend(entries.into_iter().filter_map(parse_entry_key));
    }
    owned
}

/// `variables` without the entries `manager` does not own, for a full-object apply that must
/// not claim what other managers applied.
pub fn only_owned(
    meta: &ObjectMeta,
    manager: &str,
    variables: &[PlainVariable],
) -> Vec<PlainVariable> {
    let owned = owned_variables(meta, manager, variables);
    variables
        .iter()
        .filter(|v| owned.contains(&variable_key(v)))
        .cloned()
        .collect()
}

pub fn variable_key(variable: &PlainVariable) -> VariableKey {
    (variable.key.clone(), variable.exposure)
}

/// A managedFields list-entry key, `{"exposure":"runtime","key":"A"}`, as a [`VariableKey`].
fn parse_entry_key(text: &str) -> Option<VariableKey> {
    let value: Value = serde_json::from_str(text).ok()?;
    let exposure = serde_json::from_value(value.get("exposure")?.clone()).ok()?;
    Some((value.get("key")?.as_str()?.to_string(), exposure))
}

/// Merges `status` into an object's status subresource (a JSON merge patch under the shim's
/// field manager, so fields other writers own are left alone) and waits for the cache.
pub async fn merge_status<K>(
    api: &kube::Api<K>,
    store: &Store<K>,
    name: &str,
    status: serde_json::Value,
) -> Result<K, ApiError>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = kube::api::PatchParams {
        field_manager: Some(crate::state::FIELD_MANAGER.into()),
        ..Default::default()
    };
    let patch = serde_json::json!({ "status": status });
    let written = api
        .patch_status(name, &params, &kube::api::Patch::Merge(&patch))
        .await?;
    crate::cache::catch_up(store, &written).await?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};

    fn plain(key: &str) -> PlainVariable {
        PlainVariable {
            key: key.into(),
            value: "v".into(),
            exposure: VariableExposure::Runtime,
        }
    }

    fn managed(manager: &str, variables: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(
                serde_json::json!({"f:spec": {"f:variables": variables}}),
            )),
            ..Default::default()
        }
    }

    #[test]
    fn a_manager_owns_only_the_entries_it_applied() {
        let meta = ObjectMeta {
            managed_fields: Some(vec![
                managed(
                    "kubectl",
                    serde_json::json!({r#"k:{"exposure":"runtime","key":"A"}"#: {".": {}}}),
                ),
                managed(
                    FIELD_MANAGER,
                    serde_json::json!({r#"k:{"exposure":"runtime","key":"B"}"#: {".": {}}}),
                ),
            ]),
            ..Default::default()
        };
        let variables = vec![plain("A"), plain("B")];
        assert_eq!(
            only_owned(&meta, FIELD_MANAGER, &variables),
            vec![plain("B")]
        );
        assert_eq!(only_owned(&meta, "kubectl", &variables), vec![plain("A")]);
        assert!(only_owned(&meta, "other", &variables).is_empty());
    }

    #[test]
    fn an_atomic_list_owner_owns_every_entry() {
        let meta = ObjectMeta {
            managed_fields: Some(vec![managed(FIELD_MANAGER, serde_json::json!({}))]),
            ..Default::default()
        };
        let variables = vec![plain("A"), plain("B")];
        assert_eq!(only_owned(&meta, FIELD_MANAGER, &variables), variables);
    }
}
