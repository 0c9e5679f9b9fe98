//! Writes a Resource's plain variables as the shim's own entries of `spec.variables`, a list
//! keyed by key and exposure: entries another manager (kubectl, GitOps) applied stay theirs.

use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::variable::PlainVariable;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Map, Value, json};

use super::resources_api;
use crate::auth::Caller;
use crate::cache::catch_up;
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
    let fields = own_entries(caller, resource, desired);
    let name = resource.name_any();
    let store = &state.caches.resources;
    let written = apply_fields(&api, store, VARIABLES_FIELD_MANAGER, &name, fields).await?;
    let removed = removed_keys(&resource.spec.variables, &desired.variables);
    match without(&written, &removed) {
        None => Ok(written),
        Some(remaining) => {
            let patched = replace_list(&api, &written, remaining).await?;
            catch_up(store, &patched).await?;
            Ok(patched)
        }
    }
}

/// The apply body: the entries the shim owns after the change, and the Secret reference.
fn own_entries(caller: &Caller, resource: &Resource, desired: &ResourceSpec) -> Value {
    let before = &resource.spec.variables;
    let owned = owned_variables(&resource.metadata, VARIABLES_FIELD_MANAGER, before);
    let mine: Vec<&PlainVariable> = desired
        .variables
        .iter()
        .filter(|v| owned.contains(&variable_key(v)) || !before.contains(v))
        .collect();
    // An empty list is left out rather than sent: that drops this manager's entries just
    // the same.
    let mut spec = Map::new();
    if !mine.is_empty() {
        spec.insert("variables".into(), json!(mine));
    }
    if let Some(secrets_ref) = &desired.secrets_ref {
        spec.insert("secretsRef".into(), secrets_ref.as_str().into());
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
fn without<'a>(written: &'a Resource, removed: &[VariableKey]) -> Option<Vec<&'a PlainVariable>> {
    let variables = &written.spec.variables;
    let remaining: Vec<&PlainVariable> = variables
        .iter()
        .filter(|v| !removed.contains(&variable_key(v)))
        .collect();
    (remaining.len() < variables.len()).then_some(remaining)
}

/// Replaces the whole list (a merge patch), only over the version just written.
async fn replace_list(
    api: &Api<Resource>,
    written: &Resource,
    remaining: Vec<&PlainVariable>,
) -> ApiResult<Resource> {
    // `null` removes the list in a merge patch.
    let list = if remaining.is_empty() {
        Value::Null
    } else {
        json!(remaining)
    };
    let patch = json!({
        "metadata": { "resourceVersion": written.resource_version() },
        "spec": { "variables": list },
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
    fn removed_entries_are_found_by_key_and_exposure() {
        let before = vec![plain("A", "1"), plain("B", "2")];
        let after = vec![plain("B", "changed")];
        assert_eq!(
            removed_keys(&before, &after),
            vec![("A".to_string(), VariableExposure::Runtime)]
        );
    }
}
