//! Keeps the Kubernetes Events about Berth's objects (the controller's reconciles: a deploy
//! failed, a route removed, a retention run) in the audit records: the API server expires Events
//! after an hour, the audit trail keeps them as long as the `audit-rows` policy says. An Event is
//! recorded once, as first seen (its id is its uid, so shims side by side store it once); while
//! the Event itself lives, the audit events show it as it is now (a repeated Event's latest
//! occurrence).

use std::sync::Arc;
use std::time::Duration;

use berth_observations::{AuditRecord, ShimStore};
use k8s_openapi::api::events::v1::Event as KubeEvent;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::store_records;
use crate::cache::Caches;

/// The actor kind of an Event's reporter.
pub const CONTROLLER_ACTOR: &str = "controller";
/// An Event's note is cut to this many characters.
const MAX_NOTE: usize = 1024;
/// Events are recorded together once this long has passed since the first of a batch.
const BATCH: Duration = Duration::from_millis(500);
/// A failed write is tried again after this long.
const RETRY: Duration = Duration::from_secs(5);

/// An Event about one of Berth's objects, as the audit events tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedEvent {
    /// `kev-<uid>`: the live Event's audit event id and its record's.
    pub id: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// The resource the object is or belongs to.
    pub resource: Option<String>,
    /// The latest occurrence, in Unix milliseconds.
    pub at_ms: i64,
    pub reason: String,
    /// The note (cut), or the reason when there is none.
    pub summary: String,
    pub controller: String,
    pub action: String,
}

/// `event` as an audit event, if it is about one of Berth's objects; a deployment's or domain
/// binding's resource is found in the caches.
pub fn describe(caches: &Caches, event: &KubeEvent) -> Option<DescribedEvent> {
    let regarding = event.regarding.as_ref()?;
    let berths = regarding.api_version.as_deref()?.starts_with("berth.dev/");
    if !berths {
        return None;
    }
    let kind = regarding.kind.clone()?;
    let name = regarding.name.clone()?;
    let namespace = event.namespace().unwrap_or_default();
    let resource = match kind.as_str() {
        "Resource" => Some(name.clone()),
        "Deployment" => {
            let key = ObjectRef::new(&name).within(&namespace);
            Some(caches.deployments.get(&key)?.spec.resource_id.clone())
        }
        "DomainBinding" => {
            let key = ObjectRef::new(&name).within(&namespace);
            Some(caches.domain_bindings.get(&key)?.spec.resource_id.clone())
        }
        _ => None,
    };
    let at = event
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.deprecated_last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    let reason = event.reason.clone().unwrap_or_default();
    let note: String = event
        .note
        .as_deref()
        .unwrap_or_default()
        .chars()
        .take(MAX_NOTE)
        .collect();
    Some(DescribedEvent {
        id: format!("kev-{}", event.metadata.uid.clone().unwrap_or_default()),
        namespace,
        kind,
        name,
        resource,
        at_ms: at.as_millisecond(),
        summary: if note.is_empty() {
            reason.clone()
        } else {
            note
        },
        reason,
        controller: event
            .reporting_controller
            .clone()
            .unwrap_or_else(|| "kubernetes".into()),
        action: event.action.clone().unwrap_or_default(),
    })
}

/// The record that keeps `event`.
pub fn record(event: &DescribedEvent) -> AuditRecord {
    AuditRecord {
        id: event.id.clone(),
        namespace: event.namespace.clone(),
        occurred_ms: event.at_ms,
        object_kind: event.kind.clone(),
        object_id: event.name.clone(),
        resource: event.resource.clone().unwrap_or_default(),
        actor_kind: CONTROLLER_ACTOR.into(),
        actor_id: event.controller.clone(),
        action: event.action.clone(),
        detail: json!({"eventType": event.reason, "summary": event.summary}).to_string(),
    }
}

/// Runs until the process ends: records every cached Event once the caches are ready, then
/// each new one; after falling behind the feed, every cached Event again (records already
/// kept are not written twice).
pub async fn run(caches: Caches, store: Arc<dyn ShimStore>) {
    let mut feed = caches.kube_event_feed.subscribe();
    if caches.wait_until_ready().await.is_err() {
        return;
    }
    let mut pending = everything(&caches);
    loop {
        if !pending.is_empty() {
            if !store_records(&store, &pending, "Kubernetes Events").await {
                tokio::time::sleep(RETRY).await;
                continue;
            }
            pending.clear();
        }
        match feed.recv().await {
            Ok(event) => {
                tokio::time::sleep(BATCH).await;
                let mut batch = vec![event];
                loop {
                    match feed.try_recv() {
                        Ok(event) => batch.push(event),
                        Err(TryRecvError::Lagged(_)) => batch = caches.kube_events.state(),
                        Err(_) => break,
                    }
                }
                let described = batch.iter().filter_map(|e| describe(&caches, e));
                pending.extend(described.map(|e| record(&e)));
            }
            Err(RecvError::Lagged(_)) => pending = everything(&caches),
            Err(RecvError::Closed) => return,
        }
    }
}

/// The records of every cached Event.
fn everything(caches: &Caches) -> Vec<AuditRecord> {
    let events = caches.kube_events.state();
    let described = events.iter().filter_map(|e| describe(caches, e));
    described.map(|e| record(&e)).collect()
}
