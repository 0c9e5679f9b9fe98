//! Records the writes made around the REST API — `kubectl apply` or `edit`, a GitOps tool — in
//! the audit events beside the REST API's own. Kubernetes keeps no user on an object, so the
//! actor is the field manager the API server names (`kubectl-client-side-apply`,
//! `argocd-controller`); what changed is found by comparing the object with its previous
//! version (field names only, values only of flags, as for REST writes).
//!
//! It follows the change log of the shim's caches (and, for the kinds the change feed does not
//! carry — projects, members, tokens, credentials, policies, databases, backup targets — their
//! caches' versions) and keeps the last version of each audited object. A write by one of
//! Berth's own managers (`berth-shim`, `berth-controller`, …) is not recorded here: the REST
//! middleware records REST writes with the person who made them, and the controller's are its
//! bookkeeping. A record is named by the object's uid and
//! resourceVersion, so shims side by side store each write once. What changed while no shim
//! was watching is not known and not recorded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use berth_observations::{AuditRecord, ShimStore};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::broadcast::error::RecvError;

use super::{Verb, changed_fields, store_records};
use crate::cache::Caches;
use crate::changes::{ChangedObject, Gap};

/// The actor kind of a write made around the REST API.
pub const FIELD_MANAGER_ACTOR: &str = "field-manager";
/// Managers whose writes are Berth's own.
const BERTH_MANAGERS: &str = "berth-";
/// Rewritten on every client-side apply: its change says nothing the spec's does not.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Changes are recorded together once this long has passed since the first of a batch.
const BATCH: Duration = Duration::from_millis(200);
/// A failed write is tried again after this long.
const RETRY: Duration = Duration::from_secs(5);

/// The last version seen of each audited object (as compared), by (kind, namespace, name).
type Versions = HashMap<(String, String, String), Value>;

/// Runs until the process ends.
pub async fn run(caches: Caches, store: Arc<dyn ShimStore>) {
    let log = caches.changes.clone();
    let mut wake = log.subscribe();
    let mut watched = caches.watched_versions.subscribe();
    let mut versions = Versions::new();
    let mut position = None;
    let mut unstored: Vec<AuditRecord> = Vec::new();
    loop {
        match position {
            None => {
                versions = seed(&caches);
                position = Some(log.latest());
            }
            Some(after) => match log.since(after) {
                // Fell behind the log: what it missed is unknown; start again from the cache.
                Err(Gap) => {
                    position = None;
                    continue;
                }
                Ok(changes) => {
                    let now_ms = Some(Timestamp::now().as_millisecond());
                    for change in &changes {
                        let Some((kind, object)) = fed_kind(&change.object) else {
                            continue;
                        };
                        let object = (!change.deleted).then_some(object).flatten();
                        let key = (kind, change.object.namespace(), change.object.name());
                        unstored.extend(observe(&mut versions, key, object, now_ms));
                    }
                    position = Some(changes.last().map_or(after, |c| c.sequence));
                }
            },
        }
        if !unstored.is_empty()
            && store_records(&store, &unstored, "writes made around the REST API").await
        {
            unstored.clear();
        } else if !unstored.is_empty() {
            tokio::time::sleep(RETRY).await;
            continue;
        }
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    return;
                }
                tokio::time::sleep(BATCH).await;
            }
            version = watched.recv() => match version {
                Ok(version) => {
                    let key = (version.kind.clone(), version.namespace.clone(), version.name.clone());
                    let now_ms = Some(Timestamp::now().as_millisecond());
                    unstored.extend(observe(&mut versions, key, version.object.clone(), now_ms));
                }
                // What it missed is unknown: start again from the caches.
                Err(RecvError::Lagged(_)) => position = None,
                Err(RecvError::Closed) => return,
            },
        }
    }
}

/// Every audited object the caches hold now, as the versions later ones are compared with.
fn seed(caches: &Caches) -> Versions {
    fn add<K: kube::Resource<DynamicType = ()> + Serialize>(
        versions: &mut Versions,
        objects: Vec<Arc<K>>,
    ) {
        for object in objects {
            let (kind, json) = kind_and_json(object.as_ref());
            let key = (
                kind,
                object.namespace().unwrap_or_default(),
                object.name_any(),
            );
            observe(versions, key, json, None);
        }
    }
    let mut versions = Versions::new();
    let v = &mut versions;
    add(v, caches.resources.state());
    add(v, caches.servers.state());
    add(v, caches.environments.state());
    add(v, caches.domain_bindings.state());
    add(v, caches.storage_volumes.state());
    add(v, caches.scheduled_tasks.state());
    add(v, caches.notification_channels.state());
    add(v, caches.members.state());
    add(v, caches.projects.state());
    add(v, caches.deploy_tokens.state());
    add(v, caches.ssh_credentials.state());
    add(v, caches.threshold_policies.state());
    add(v, caches.retention_policies.state());
    add(v, caches.dependency_resources.state());
    add(v, caches.backup_targets.state());
    add(v, caches.backup_policies.state());
    versions
}

/// An object's kind (as its CRD names it) and the object as JSON.
fn kind_and_json<K: kube::Resource<DynamicType = ()> + Serialize>(
    object: &K,
) -> (String, Option<Value>) {
    (K::kind(&()).into_owned(), serde_json::to_value(object).ok())
}

/// Keeps `object` as the newest version of `key` (forgets the key when it went); the record
/// of the write that made it, if one is due — never while seeding (`now_ms` none).
fn observe(
    versions: &mut Versions,
    key: (String, String, String),
    object: Option<Value>,
    now_ms: Option<i64>,
) -> Option<AuditRecord> {
    let kind = key.0.clone();
    let Some(object) = object else {
        versions.remove(&key);
        return None;
    };
    let view = compared_part(&object);
    let before = versions.insert(key, view.clone());
    outside_write(&kind, before.as_ref(), &view, now_ms?)
}

/// The kinds of the change feed that people declare with kubectl, with the object as JSON;
/// attempts, runs and deliveries are Berth's own records.
fn fed_kind(object: &ChangedObject) -> Option<(String, Option<Value>)> {
    Some(match object {
        ChangedObject::Resource(o) => kind_and_json(o.as_ref()),
        ChangedObject::Server(o) => kind_and_json(o.as_ref()),
        ChangedObject::Environment(o) => kind_and_json(o.as_ref()),
        ChangedObject::DomainBinding(o) => kind_and_json(o.as_ref()),
        ChangedObject::StorageVolume(o) => kind_and_json(o.as_ref()),
        ChangedObject::ScheduledTask(o) => kind_and_json(o.as_ref()),
        ChangedObject::NotificationChannel(o) => kind_and_json(o.as_ref()),
        ChangedObject::Deployment(_)
        | ChangedObject::ScheduledTaskRun(_)
        | ChangedObject::NotificationDelivery(_) => return None,
    })
}

/// What a write is judged by: the spec, labels, annotations (but the last applied
/// configuration) and who manages which fields.
fn compared_part(object: &Value) -> Value {
    let metadata = &object["metadata"];
    let mut kept = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "labels",
        "managedFields",
    ] {
        if let Some(value) = metadata.get(field) {
            kept.insert(field.to_string(), value.clone());
        }
    }
    if let Some(Value::Object(annotations)) = metadata.get("annotations") {
        let mut annotations = annotations.clone();
        annotations.remove(LAST_APPLIED);
        kept.insert("annotations".into(), Value::Object(annotations));
    }
    serde_json::json!({"metadata": kept, "spec": object["spec"]})
}

/// The record of the write that turned `before` (`None`: not seen before) into `after`,
/// unless Berth made it or it changed nothing recorded.
pub fn outside_write(
    kind: &str,
    before: Option<&Value>,
    after: &Value,
    now_ms: i64,
) -> Option<AuditRecord> {
    let (manager, operation) = writer(before, after)?;
    if manager.starts_with(BERTH_MANAGERS) {
        return None;
    }
    let (verb, changes) = match before {
        None => (Verb::Created, Vec::new()),
        Some(before) => match changed_fields(before, after) {
            changes if changes.is_empty() => return None,
            changes => (Verb::Updated, changes),
        },
    };
    let text = |pointer: &str| after.pointer(pointer).and_then(Value::as_str);
    let name = text("/metadata/name")?.to_string();
    let resource = match kind {
        "Resource" => name.clone(),
        _ => text("/spec/resourceId").unwrap_or_default().to_string(),
    };
    Some(AuditRecord {
        id: format!(
            "kub-{}-{}",
            text("/metadata/uid")?,
            text("/metadata/resourceVersion")?
        ),
        namespace: text("/metadata/namespace").unwrap_or_default().to_string(),
        occurred_ms: now_ms,
        object_kind: kind.to_string(),
        object_id: name,
        resource,
        actor_kind: FIELD_MANAGER_ACTOR.into(),
        actor_id: manager,
        action: format!("{operation} through the Kubernetes API"),
        detail: verb.detail(&changes),
    })
}

/// The field manager (and its operation, `Apply` or `Update`) that made `after`: the one whose
/// entry in `managedFields` is new or changed since `before`, else the latest one. Status
/// writes are no one's write of the object.
fn writer(before: Option<&Value>, after: &Value) -> Option<(String, String)> {
    let entries = |object: &Value| -> Vec<Value> {
        let all = object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array);
        all.into_iter()
            .flatten()
            .filter(|entry| entry["subresource"].as_str().unwrap_or_default().is_empty())
            .cloned()
            .collect()
    };
    let old = before.map(entries).unwrap_or_default();
    let new = entries(after);
    let changed: Vec<&Value> = new.iter().filter(|entry| !old.contains(entry)).collect();
    let candidates = match changed.is_empty() {
        true => new.iter().collect(),
        false => changed,
    };
    let entry = latest(candidates)?;
    let manager = entry["manager"].as_str()?.to_string();
    let operation = entry["operation"].as_str().unwrap_or("Update").to_string();
    Some((manager, operation))
}

/// The entry written last (times are RFC 3339 in UTC, so they sort as text).
fn latest(entries: Vec<&Value>) -> Option<&Value> {
    entries
        .into_iter()
        .max_by_key(|entry| entry["time"].as_str().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, time: &str, subresource: Option<&str>) -> Value {
        let mut entry = json!({"manager": manager, "operation": operation, "time": time,
                               "fieldsV1": {"f:spec": {}}});
        if let Some(subresource) = subresource {
            entry["subresource"] = json!(subresource);
        }
        entry
    }

    fn object(rv: &str, replicas: i64, managed: Vec<Value>) -> Value {
        compared_part(&json!({
            "metadata": {"name": "web", "namespace": "org-a", "uid": "u-1",
                         "resourceVersion": rv, "managedFields": managed,
                         "annotations": {LAST_APPLIED: format!("{{\"replicas\":{replicas}}}")}},
            "spec": {"replicas": replicas, "token": format!("s3cret-{replicas}")},
            "status": {"phase": "Ready"},
        }))
    }

    #[test]
    fn a_kubectl_edit_is_recorded_with_its_manager_and_fields_but_no_values() {
        let rest = entry("berth-shim", "Apply", "2026-12-05T04:00:00Z", None);
        let before = object("10", 1, vec![rest.clone()]);
        let edit = entry("kubectl-edit", "Update", "2026-12-05T04:01:00Z", None);
        let after = object("11", 2, vec![rest, edit]);
        let record = outside_write("Resource", Some(&before), &after, 7).unwrap();
        assert_eq!(record.id, "kub-u-1-11");
        assert_eq!(
            (record.actor_kind.as_str(), record.actor_id.as_str()),
            (FIELD_MANAGER_ACTOR, "kubectl-edit")
        );
        assert_eq!(record.resource, "web");
        assert_eq!(record.action, "Update through the Kubernetes API");
        let detail: Value = serde_json::from_str(&record.detail).unwrap();
        assert_eq!(Verb::of_detail(&detail), Verb::Updated);
        let fields: Vec<&str> = detail["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        // The last applied configuration is no change of its own.
        assert_eq!(fields, ["spec.replicas", "spec.token"]);
        assert!(!record.detail.contains("s3cret"), "{}", record.detail);
    }

    #[test]
    fn berths_own_writes_status_writes_and_no_ops_are_not_recorded() {
        let apply = entry(
            "kubectl-client-side-apply",
            "Update",
            "2026-12-05T04:00:00Z",
            None,
        );
        let before = object("10", 1, vec![apply.clone()]);
        // The shim's REST write: the middleware records it with its person.
        let rest = entry("berth-shim", "Apply", "2026-12-05T04:02:00Z", None);
        let by_rest = object("11", 2, vec![apply.clone(), rest]);
        assert_eq!(outside_write("Resource", Some(&before), &by_rest, 7), None);
        // The controller's status write changes no entry of the object's own.
        let status = entry(
            "berth-controller",
            "Update",
            "2026-12-05T04:03:00Z",
            Some("status"),
        );
        let by_status = object("12", 1, vec![apply.clone(), status]);
        assert_eq!(
            outside_write("Resource", Some(&before), &by_status, 7),
            None
        );
        // An apply of the same manifest again.
        let again = object("13", 1, vec![apply]);
        assert_eq!(outside_write("Resource", Some(&before), &again, 7), None);
    }

    #[test]
    fn an_object_first_seen_after_seeding_was_created_by_its_manager() {
        let apply = entry("argocd-controller", "Apply", "2026-12-05T04:00:00Z", None);
        let created = object("10", 1, vec![apply]);
        let record = outside_write("ScheduledTask", None, &created, 7).unwrap();
        assert_eq!(record.actor_id, "argocd-controller");
        assert_eq!(record.action, "Apply through the Kubernetes API");
        let detail: Value = serde_json::from_str(&record.detail).unwrap();
        assert_eq!(Verb::of_detail(&detail), Verb::Created);
        // A task belongs to no resource unless its spec says so.
        assert_eq!(record.resource, "");
    }
}
