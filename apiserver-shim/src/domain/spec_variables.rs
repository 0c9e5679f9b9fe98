//! Writes a Resource's plain variables as the shim's own entries of `spec.variables`, a list
//! keyed by key and exposure: entries another manager (kubectl, GitOps) applied stay theirs.

use axum::http::StatusCode;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::variable::PlainVariable;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Map, Value, json};

use crate::auth::Caller;
use crate::cache::catch_up;
use crate::domain::resource_access::resources_api;
use crate::error::ApiResult;
use crate::state::{AppState, VARIABLES_FIELD_MANAGER};
use crate::write::{VariableKey, actor_annotations, apply_fields, owned_variables, variable_key};

/// Makes the resource's variables what `desired` lists. The shim applies only its own entries
/// (those it set before and those that change now) under its variables field manager; an entry
/// it deletes that another manager also holds is then removed by a patch.
pub async fn save_variables(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    desired: &ResourceSpec,
) -> ApiResult<Resource> {
    let api = resources_api(state, resource);
    let mut extra = Map::new();
    if let Some(secrets_ref) = &desired.secrets_ref {
        extra.insert("secretsRef".into(), secrets_ref.as_str().into());
    }
    let variables = |r: &Resource| r.spec.variables.clone();
    let write = VariablesWrite {
        api: &api,
        store: &state.caches.resources,
        variables,
    };
    write
        .save(caller, resource, &desired.variables, extra)
        .await
}

/// How often a write is tried again after another writer changed the object. Every variable
/// write makes the controller write the object's status, so under a burst of writes the
/// object keeps changing: a short, growing, jittered pause lets one write through.
const CONFLICT_RETRIES: u32 = 10;

/// The pause before retry `tries` (1-based): 10–20 ms, growing to 100–200 ms.
fn conflict_pause(tries: u32) -> std::time::Duration {
    let base = 10 * u64::from(tries.min(10));
    std::time::Duration::from_millis(base + rand::random_range(0..=base))
}

/// Where an object keeping `spec.variables` (a Resource, an Environment) is written.
pub struct VariablesWrite<'a, K: kube::Resource<DynamicType = ()> + 'static> {
    pub api: &'a Api<K>,
    pub store: &'a kube::runtime::reflector::Store<K>,
    pub variables: fn(&K) -> Vec<PlainVariable>,
}

impl<K> VariablesWrite<'_, K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    /// Makes the object's variables `desired` (the shim's own entries applied, other
    /// managers' kept), with `extra` spec fields applied beside them. `desired` was derived
    /// from `object`, which may be stale: only its difference from `object` is written, over
    /// the version it is written to, so a write that raced this one (another request, another
    /// replica) is kept, not undone.
    pub async fn save(
        &self,
        caller: &Caller,
        object: &K,
        desired: &[PlainVariable],
        extra: Map<String, Value>,
    ) -> ApiResult<K> {
        let change = Change::between(&(self.variables)(object), desired);
        let mut current = object.clone();
        let mut tries = 0;
        loop {
            let desired = change.applied_to(&(self.variables)(&current));
            match self.write(caller, &current, &desired, extra.clone()).await {
                Err(error) if error.status == StatusCode::CONFLICT && tries < CONFLICT_RETRIES => {
                    tries += 1;
                    tokio::time::sleep(conflict_pause(tries)).await;
                    current = self.api.get(&object.name_any()).await?;
                }
                written => return written,
            }
        }
    }

    /// One write of `desired` over `object`'s version: 409 when the object changed since.
    async fn write(
        &self,
        caller: &Caller,
        object: &K,
        desired: &[PlainVariable],
        extra: Map<String, Value>,
    ) -> ApiResult<K> {
        // Removed entries go first, by a patch of the whole list: an apply that drops a
        // list's last entries makes the API server (1.20) write `null`, which the schema
        // refuses.
        let removed = removed_keys(&(self.variables)(object), desired);
        let object = if removed.is_empty() {
            object.clone()
        } else {
            self.remove(&object.name_any(), &removed).await?
        };
        let listed = (self.variables)(&object);
        let mut fields = own_entries(caller, object.meta(), &listed, desired, extra);
        fields["metadata"]["resourceVersion"] = json!(object.resource_version());
        apply_fields(
            self.api,
            self.store,
            VARIABLES_FIELD_MANAGER,
            &object.name_any(),
            fields,
        )
        .await
    }

    /// Removes `removed` from the object as it is now (the cache may lag behind another
    /// manager's write); returns the object written.
    async fn remove(&self, name: &str, removed: &[VariableKey]) -> ApiResult<K> {
        // The patch applies only over the version read; another writer (the controller's
        // finalizer or status) may come in between, so read and try again a few times.
        let mut tries = 0;
        loop {
            let current = self.api.get(name).await?;
            let Some(remaining) = without(&(self.variables)(&current), removed) else {
                return Ok(current);
            };
            match replace_list(self.api, &current, remaining).await {
                Ok(patched) => {
                    catch_up(self.store, &patched).await?;
                    return Ok(patched);
                }
                Err(error) if error.status == StatusCode::CONFLICT && tries < CONFLICT_RETRIES => {
                    tries += 1;
                    tokio::time::sleep(conflict_pause(tries)).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// What a request changes in a variables list: entries set (added or changed) and keys
/// removed, to be applied again to a newer version of the list.
#[derive(Debug, PartialEq)]
struct Change {
    set: Vec<PlainVariable>,
    removed: Vec<VariableKey>,
}

impl Change {
    fn between(before: &[PlainVariable], after: &[PlainVariable]) -> Self {
        Self {
            set: after
                .iter()
                .filter(|v| !before.contains(v))
                .cloned()
                .collect(),
            removed: removed_keys(before, after),
        }
    }

    /// `list` with the removed keys dropped and the set entries in place (or appended).
    fn applied_to(&self, list: &[PlainVariable]) -> Vec<PlainVariable> {
        let mut out: Vec<PlainVariable> = list
            .iter()
            .filter(|v| !self.removed.contains(&variable_key(v)))
            .map(|v| {
                let replaced = self.set.iter().find(|s| variable_key(s) == variable_key(v));
                replaced.unwrap_or(v).clone()
            })
            .collect();
        for entry in &self.set {
            if !out.iter().any(|v| variable_key(v) == variable_key(entry)) {
                out.push(entry.clone());
            }
        }
        out
    }
}

/// The apply body: the entries the shim owns after the change, and `extra` spec fields.
fn own_entries(
    caller: &Caller,
    meta: &kube::api::ObjectMeta,
    before: &[PlainVariable],
    desired: &[PlainVariable],
    mut spec: Map<String, Value>,
) -> Value {
    let owned = owned_variables(meta, VARIABLES_FIELD_MANAGER, before);
    let mine: Vec<&PlainVariable> = desired
        .iter()
        .filter(|v| owned.contains(&variable_key(v)) || !before.contains(v))
        .collect();
    // Nothing of the list is left to this manager when it keeps no entry: the removed ones
    // are gone already.
    if !mine.is_empty() {
        spec.insert("variables".into(), json!(mine));
    }
    json!({
        "metadata": { "annotations": actor_annotations(caller) },
        "spec": spec,
    })
}

fn removed_keys(before: &[PlainVariable], after: &[PlainVariable]) -> Vec<VariableKey> {
    before
        .iter()
        .map(variable_key)
        .filter(|key| !after.iter().any(|v| &variable_key(v) == key))
        .collect()
}

/// The written list without `removed`, or `None` when none of them is left in it.
fn without(variables: &[PlainVariable], removed: &[VariableKey]) -> Option<Vec<PlainVariable>> {
    let remaining: Vec<PlainVariable> = variables
        .iter()
        .filter(|v| !removed.contains(&variable_key(v)))
        .cloned()
        .collect();
    (remaining.len() < variables.len()).then_some(remaining)
}

/// Replaces the whole list (a merge patch), only over the version just read.
async fn replace_list<K>(api: &Api<K>, written: &K, remaining: Vec<PlainVariable>) -> ApiResult<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    // An empty list rather than `null`: the schema refuses `null`.
    let patch = json!({
        "metadata": { "resourceVersion": written.resource_version() },
        "spec": { "variables": remaining },
    });
    let params = PatchParams {
        field_manager: Some(VARIABLES_FIELD_MANAGER.into()),
        ..Default::default()
    };
    Ok(api
        .patch(&written.name_any(), &params, &Patch::Merge(&patch))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::variable::VariableExposure;

    fn plain(key: &str, value: &str) -> PlainVariable {
        PlainVariable {
            key: key.into(),
            value: value.into(),
            exposure: VariableExposure::Runtime,
        }
    }

    #[test]
    fn a_change_applied_to_a_newer_list_keeps_what_others_wrote_since() {
        let seen = vec![plain("A", "1"), plain("B", "2")];
        let desired = vec![plain("B", "changed"), plain("C", "3")];
        let change = Change::between(&seen, &desired);
        // Meanwhile another request added D and changed A.
        let newer = vec![plain("A", "9"), plain("B", "2"), plain("D", "4")];
        assert_eq!(
            change.applied_to(&newer),
            vec![plain("B", "changed"), plain("D", "4"), plain("C", "3")]
        );
        assert_eq!(change.applied_to(&seen), desired);
    }

    #[test]
    fn removed_entries_are_found_by_key_and_exposure() {
        let before = vec![plain("A", "1"), plain("B", "2")];
        let after = vec![plain("B", "changed")];
        assert_eq!(
            removed_keys(&before, &after),
            vec![("A".to_string(), VariableExposure::Runtime)]
        );
    }
}
