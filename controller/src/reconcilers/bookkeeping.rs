//! Status for kinds whose reconciliation is pure bookkeeping (no remote side effects): users,
//! sessions, members, invitations, deploy tokens, decisions, policies and storage volumes. Each
//! kind says which status fields it owns; one generic controller applies exactly those, so
//! fields other writers own (the REST shim's `lastUsedAt`, say) are never overwritten with
//! stale values.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::condition::{self, Condition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{CONFLICT_RECHECK, RESYNC_AFTER, drain, error_policy};
use crate::context::Context;
use crate::error::Result;
use crate::status::StatusWriter;

/// What a bookkeeping kind computes: the status fields it owns, and when to look again.
pub trait Bookkept:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static
{
    const KIND: &'static str;

    /// An API handle that can write this object's status (namespaced or cluster-wide).
    fn api_for(&self, client: Client) -> Api<Self>;

    /// The object's current status as JSON (`{}` when absent).
    fn status_json(&self) -> Value {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("status").cloned())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    }

    /// The owned status fields, given the current conditions and the time now.
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value>;

    /// When a time-based change (an expiry) is due; the object is reconciled again then.
    fn next_change(&self) -> Option<Timestamp> {
        None
    }
}

/// Runs the bookkeeping controller for `K` until `shutdown`.
pub async fn run<K: Bookkept>(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<K>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile::<K>, error_policy(K::KIND), context);
    drain(K::KIND, stream).await;
}

async fn reconcile<K: Bookkept>(object: Arc<K>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(K::KIND);
    let current = object.status_json();
    let conditions: Vec<Condition> = current
        .get("conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let now = Timestamp::now();
    let owned = object.owned_status(&conditions, now);
    if !is_subset(&owned, &current) {
        let api = object.api_for(context.client.clone());
        // Only over the version read: the shim stamps times like `revokedAt` right after its
        // own spec write, and a stale stamp of ours must not replace the one it returned.
        if !StatusWriter::new(&api, object.as_ref())
            .if_unchanged()
            .apply_fields(&owned)
            .await?
        {
            return Ok(Action::requeue(CONFLICT_RECHECK));
        }
    }
    let until_change = object
        .next_change()
        .and_then(|at| Duration::try_from(at.duration_since(now)).ok())
        .map(|wait| wait + Duration::from_secs(1));
    Ok(Action::requeue(
        until_change.map_or(RESYNC_AFTER, |wait| wait.min(RESYNC_AFTER)),
    ))
}

/// `api_for` of a namespaced kind.
pub fn namespaced_api<K>(object: &K, client: Client) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    Api::namespaced(client, &object.namespace().unwrap_or_default())
}

/// Whether every owned field already has the wanted value (then nothing is written).
fn is_subset(owned: &Map<String, Value>, current: &Value) -> bool {
    owned
        .iter()
        .all(|(key, value)| current.get(key) == Some(value))
}

/// Conditions with `condition` merged in (keeps `lastTransitionTime` unless the status changes).
pub fn with_condition(conditions: &[Condition], condition: Condition) -> Vec<Condition> {
    let mut conditions = conditions.to_vec();
    condition::merge(&mut conditions, condition);
    conditions
}

/// The standard owned fields: `observedGeneration` and `conditions`.
pub fn base_status<K: Resource>(object: &K, conditions: Vec<Condition>) -> Map<String, Value> {
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(object.meta().generation));
    status.insert(
        "conditions".into(),
        serde_json::to_value(conditions).expect("conditions serialize"),
    );
    status
}

/// A timestamp kept once set: the current value of `field`, or `now`.
pub fn stamp_once(current: &Value, field: &str, now: Timestamp) -> Value {
    current
        .get(field)
        .filter(|v| v.is_string())
        .cloned()
        .unwrap_or_else(|| json!(Time(now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_ignores_fields_owned_by_others() {
        let owned = Map::from_iter([("status".to_string(), json!("active"))]);
        assert!(is_subset(
            &owned,
            &json!({"status": "active", "lastUsedAt": "x"})
        ));
        assert!(!is_subset(&owned, &json!({"status": "revoked"})));
        assert!(!is_subset(&owned, &json!({})));
    }

    #[test]
    fn stamps_are_kept_once_set() {
        let now = Timestamp::now();
        assert_eq!(
            stamp_once(&json!({"at": "2020-01-01T00:00:00Z"}), "at", now),
            json!("2020-01-01T00:00:00Z")
        );
        assert_eq!(stamp_once(&json!({}), "at", now), json!(Time(now)));
    }
}
