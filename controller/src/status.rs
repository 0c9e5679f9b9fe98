//! Status writes: server-side apply on `/status`, only when something changed.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::FIELD_MANAGER;
use crate::error::Result;

/// One status write of `object`: server-side apply on `/status` under our field manager,
/// optionally only over the version `object` was read at, or as another field manager.
///
/// `StatusWriter::new(&api, &object).if_unchanged().apply(current, &status)`
pub struct StatusWriter<'a, K> {
    api: &'a Api<K>,
    target: Target<'a, K>,
}

/// Whom a write addresses and how: everything that decides the patch, without the API.
struct Target<'a, K> {
    object: &'a K,
    manager: &'a str,
    if_unchanged: bool,
}

/// The PATCH one write sends, if any.
#[derive(Debug, PartialEq)]
enum StatusPatch {
    /// The status already is what is wanted.
    Nothing,
    /// A JSON merge patch, for a write that drops fields.
    Merge(Value),
    /// A server-side apply.
    Apply(Value),
}

impl<'a, K> StatusWriter<'a, K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    /// A write of `object`'s status as our field manager, whatever its version now.
    pub fn new(api: &'a Api<K>, object: &'a K) -> Self {
        let target = Target {
            object,
            manager: FIELD_MANAGER,
            if_unchanged: false,
        };
        Self { api, target }
    }

    /// Only if `object` is still at the version it was read at: for a status concluded from a
    /// read that another writer may have overtaken (a 409 Conflict says so; the other write's
    /// watch event brings a fresh reconcile).
    pub fn if_unchanged(mut self) -> Self {
        self.target.if_unchanged = true;
        self
    }

    /// As field manager `manager`, for a writer whose fields must survive the applies of the
    /// kind's own reconciler (a server-side apply drops the fields its manager stops sending).
    pub fn as_manager(mut self, manager: &'a str) -> Self {
        self.target.manager = manager;
        self
    }

    /// Writes the whole `status` unless it equals `current`; whether a write happened.
    pub async fn apply<S>(&self, current: Option<&S>, status: &S) -> Result<bool>
    where
        S: Serialize + PartialEq,
    {
        let patch = self.target.status_patch(current, status);
        self.send(patch).await
    }

    /// Writes only the status fields in `fields` (the writer's share; other writers own the
    /// rest). `Ok(false)` when another write overtook it (409): its watch event brings a fresh
    /// reconcile.
    pub async fn apply_fields(&self, fields: &serde_json::Map<String, Value>) -> Result<bool> {
        let patch = self.target.fields_patch(fields);
        match self.send(patch).await {
            Err(error) if error.is_conflict() => Ok(false),
            written => written,
        }
    }

    async fn send(&self, patch: StatusPatch) -> Result<bool> {
        let name = self.target.object.name_any();
        match patch {
            StatusPatch::Nothing => return Ok(false),
            StatusPatch::Merge(patch) => {
                let params = PatchParams {
                    field_manager: Some(self.target.manager.into()),
                    ..PatchParams::default()
                };
                self.api
                    .patch_status(&name, &params, &Patch::Merge(&patch))
                    .await?
            }
            StatusPatch::Apply(patch) => {
                let params = PatchParams::apply(self.target.manager).force();
                self.api
                    .patch_status(&name, &params, &Patch::Apply(&patch))
                    .await?
            }
        };
        Ok(true)
    }
}

impl<K: Resource<DynamicType = ()>> Target<'_, K> {
    fn status_patch<S>(&self, current: Option<&S>, status: &S) -> StatusPatch
    where
        S: Serialize + PartialEq,
    {
        if current == Some(status) {
            return StatusPatch::Nothing;
        }
        // Kubernetes 1.20's server-side apply turns a field our manager stops sending into a
        // `null`, which the schema then rejects; a merge patch that removes it explicitly works.
        if let Some(removal) = current.and_then(|current| removal_patch(current, status)) {
            let metadata = self.metadata();
            return StatusPatch::Merge(
                serde_json::json!({ "metadata": metadata, "status": removal }),
            );
        }
        self.server_side_apply(serde_json::json!(status))
    }

    fn fields_patch(&self, fields: &serde_json::Map<String, Value>) -> StatusPatch {
        self.server_side_apply(Value::Object(fields.clone()))
    }

    fn server_side_apply(&self, status: Value) -> StatusPatch {
        StatusPatch::Apply(serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "metadata": self.metadata(),
            "status": status,
        }))
    }

    /// The version precondition, when the write must not overtake another.
    fn metadata(&self) -> Value {
        match self.object.resource_version().filter(|_| self.if_unchanged) {
            Some(version) => serde_json::json!({ "resourceVersion": version }),
            None => serde_json::json!({}),
        }
    }
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

    fn project(version: &str) -> berth_crds::project::Project {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Project",
            "metadata": {"name": "p", "resourceVersion": version},
            "spec": {"name": "P"},
        }))
        .unwrap()
    }

    fn target(
        object: &berth_crds::project::Project,
        if_unchanged: bool,
    ) -> Target<'_, berth_crds::project::Project> {
        Target {
            object,
            manager: FIELD_MANAGER,
            if_unchanged,
        }
    }

    fn applied(metadata: Value, status: Value) -> StatusPatch {
        use berth_crds::project::Project;
        StatusPatch::Apply(json!({
            "apiVersion": Project::api_version(&()), "kind": Project::kind(&()),
            "metadata": metadata, "status": status,
        }))
    }

    #[test]
    fn an_unchanged_status_is_not_written() {
        let object = project("5");
        let status = json!({"count": 1});
        let patch = target(&object, true).status_patch(Some(&status), &status);
        assert_eq!(patch, StatusPatch::Nothing);
    }

    #[test]
    fn a_changed_status_is_applied_with_a_version_only_if_unchanged() {
        let object = project("5");
        let (before, after) = (json!({"count": 1}), json!({"count": 2}));
        let anyway = target(&object, false).status_patch(Some(&before), &after);
        assert_eq!(anyway, applied(json!({}), after.clone()));
        let guarded = target(&object, true).status_patch(Some(&before), &after);
        assert_eq!(guarded, applied(json!({"resourceVersion": "5"}), after));
    }

    #[test]
    fn a_status_dropping_a_field_is_merged_with_an_explicit_null() {
        let object = project("5");
        let (before, after) = (json!({"count": 1, "url": "u"}), json!({"count": 1}));
        let patch = target(&object, true).status_patch(Some(&before), &after);
        let expected = json!({
            "metadata": {"resourceVersion": "5"},
            "status": {"count": 1, "url": null},
        });
        assert_eq!(patch, StatusPatch::Merge(expected));
    }

    #[test]
    fn owned_fields_are_applied_alone() {
        let object = project("5");
        let fields = json!({"evaluation": {"state": "ok"}});
        let Value::Object(map) = fields.clone() else {
            unreachable!()
        };
        let patch = target(&object, true).fields_patch(&map);
        assert_eq!(patch, applied(json!({"resourceVersion": "5"}), fields));
    }
}
