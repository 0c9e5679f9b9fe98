//! Status for kinds whose reconciliation is pure bookkeeping (no remote side effects): users,
//! sessions, members, invitations, deploy tokens, decisions and policies. Each
//! kind says which status fields it owns; one generic controller applies exactly those, so
//! fields other writers own (the REST shim's `lastUsedAt`, say) are never overwritten with
//! stale values.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::condition::{self, Condition};
use k8s_openapi::jiff::Timestamp;

use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::policy::{CONFLICT_RECHECK, RESYNC_AFTER, drain, error_policy};
use crate::cache::Feed;
use crate::cache::Subscription;
use crate::context::Context;
use crate::error::Result;
use crate::status::StatusWriter;

/// What a bookkeeping kind computes: the status fields it owns, and when to look again.
pub trait Bookkept:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static
{
    const KIND: &'static str;

    /// The kind's own status fields, beside `observedGeneration` and `conditions`.
    type Fields: Serialize;

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
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<Self::Fields>;

    /// When a time-based change (an expiry) is due; the object is reconciled again then.
    fn next_change(&self) -> Option<Timestamp> {
        None
    }
}

/// The status fields a bookkeeping kind owns: the standard two and the kind's own `fields`.
/// Only these are applied, so a field another writer owns is never in the patch.
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Owned<F> {
    pub observed_generation: Option<i64>,
    pub conditions: Vec<Condition>,
    #[serde(flatten)]
    pub fields: F,
}

impl<F: Serialize> Owned<F> {
    /// The owned fields as the JSON object applied to the status.
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self).expect("owned status serializes") {
            Value::Object(map) => map,
            _ => unreachable!("a struct serializes to an object"),
        }
    }
}

/// Runs the bookkeeping controller for `K`, on its own watch, until `shutdown`: for a kind
/// nothing else watches.
pub async fn run<K: Bookkept>(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<K>::all(context.client.clone());
    let controller = Controller::new(api, watcher::Config::default());
    drive(controller, context, shutdown).await;
}

/// A cached kind's subscription and store, for [`run_shared`].
pub struct Shared<K: Bookkept> {
    objects: Subscription<K>,
    store: Store<K>,
}

impl<K: Bookkept> Shared<K> {
    /// Subscribes to `feed` (before it runs); [`run_shared`] consumes the subscription.
    pub fn subscribe(feed: &Feed<K>) -> Self {
        Self {
            objects: feed.subscribe(),
            store: feed.store(),
        }
    }
}

/// Runs the bookkeeping controller for a cached `K` on its shared watch until `shutdown`.
pub async fn run_shared<K: Bookkept>(
    context: Arc<Context>,
    shared: Shared<K>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let controller = Controller::for_shared_stream(shared.objects, shared.store);
    drive(controller, context, shutdown).await;
}

/// Runs `controller` with the bookkeeping reconcile until `shutdown`.
async fn drive<K: Bookkept>(
    controller: Controller<K>,
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let stream = controller.graceful_shutdown_on(shutdown).run(
        reconcile::<K>,
        error_policy(K::KIND),
        context,
    );
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
    let owned = object.owned_status(&conditions, now).to_map();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::fixtures::Exchange;
    use berth_crds::session::Session;
    use http::StatusCode;

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

    const SESSION: &str = "/apis/berth.dev/v1alpha1/namespaces/org-acme/sessions/ses-1/status";

    /// A valid session (generation 1) whose status says so.
    fn session() -> Session {
        let mut session: Session = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Session",
            "metadata": {
                "name": "ses-1", "namespace": "org-acme", "generation": 1,
                "resourceVersion": "7",
            },
            "spec": {
                "userId": "usr-1", "clientKind": "cli", "tokenDigest": "a".repeat(64),
                "expiresAt": "2099-01-01T00:00:00Z",
            },
        }))
        .unwrap();
        let at: Timestamp = "2026-01-01T08:00:00Z".parse().unwrap();
        let owned = Value::Object(session.owned_status(&[], at).to_map());
        session.status = serde_json::from_value(owned).unwrap();
        session
    }

    #[tokio::test]
    async fn an_up_to_date_session_costs_no_request() {
        let (context, api, _feeds) = Context::test();
        let script = api.expect_nothing();
        let action = reconcile(Arc::new(session()), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        script.finish().await;
    }

    #[tokio::test]
    async fn a_new_generation_is_applied_over_the_version_read_and_a_lost_race_retried() {
        let (context, api, _feeds) = Context::test();
        let mut session = session();
        session.metadata.generation = Some(2);
        let script = api.serve([
            Exchange::patch(SESSION).returns(&session),
            Exchange::patch(SESSION).rejected(StatusCode::CONFLICT, "Conflict"),
        ]);
        let action = reconcile(Arc::new(session.clone()), context.clone()).await;
        assert_eq!(action.unwrap(), Action::requeue(RESYNC_AFTER));
        let lost = reconcile(Arc::new(session.clone()), context).await;
        assert_eq!(lost.unwrap(), Action::requeue(CONFLICT_RECHECK));
        let sent = script.finish().await;
        assert_eq!(sent[0].query, "&force=true&fieldManager=berth-controller");
        let ready = json!({
            "type": "Ready", "status": "True", "reason": "Reconciled",
            "message": "session is valid", "observedGeneration": 2,
            "lastTransitionTime": "2026-01-01T08:00:00Z",
        });
        let expected = json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Session",
            "metadata": { "resourceVersion": "7" },
            "status": { "observedGeneration": 2, "conditions": [ready] },
        });
        assert_eq!(sent[0].body, expected);
        assert_eq!(sent[1].body, expected);
    }
}
