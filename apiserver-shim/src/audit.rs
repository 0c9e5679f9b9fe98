//! Records who changed what through the REST API. Each request that may write runs with a
//! note pad of its own (a task-local); every write through `crate::write` that names its actor
//! notes the object and the fields it changed; once the request succeeded, the notes go to
//! the observation store with the operation's route; a delete is noted by its handler
//! ([`note_delete`]). Field names only, and values only of flags, so no secret reaches the
//! record. Writes made around the REST API (kubectl, a GitOps tool) are recorded by
//! [`outside_writes`].

pub mod controller_events;
pub mod outside_writes;

use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use berth_api::activity::AuditFieldChange;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use berth_observations::{AuditRecord, ShimStore};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::observation_store::store_call;
use crate::state::AppState;

/// Changed fields listed per write at most; deeper or further ones are summed up by their
/// parent.
const MAX_FIELDS: usize = 50;
/// How deep a changed field is named (`spec.autoDeploy.enabled` is 3).
const MAX_DEPTH: usize = 4;

/// One object one write changed.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteNote {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The resource the object is or belongs to; empty when none.
    pub resource: String,
    pub actor_kind: String,
    pub actor_id: String,
    pub verb: Verb,
    pub changes: Vec<AuditFieldChange>,
}

/// What a write did to its object, or what was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Created,
    Updated,
    Deleted,
    /// A sign-in as the object (a user) with a wrong password.
    SignInFailed,
    /// A credential (a deploy token) that was refused: revoked or expired.
    Refused,
}

impl Verb {
    const ALL: [Verb; 5] = [
        Self::Created,
        Self::Updated,
        Self::Deleted,
        Self::SignInFailed,
        Self::Refused,
    ];

    /// As a stored record's detail and an audit event's type name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Deleted => "deleted",
            Self::SignInFailed => "sign-in-failed",
            Self::Refused => "refused",
        }
    }

    /// The verb a record's detail holds (records from before `verb` was kept carry flags).
    pub fn of_detail(detail: &Value) -> Self {
        let named = detail["verb"].as_str();
        if let Some(verb) = Self::ALL.into_iter().find(|v| Some(v.as_str()) == named) {
            return verb;
        }
        match (detail["deleted"].as_bool(), detail["created"].as_bool()) {
            (Some(true), _) => Self::Deleted,
            (_, Some(true)) => Self::Created,
            _ => Self::Updated,
        }
    }

    /// A record's detail: the verb and the changed fields.
    pub fn detail(self, changes: &[AuditFieldChange]) -> String {
        self.detail_value(changes).to_string()
    }

    fn detail_value(self, changes: &[AuditFieldChange]) -> Value {
        serde_json::json!({
            "verb": self.as_str(),
            "created": self == Self::Created,
            "deleted": self == Self::Deleted,
            "changes": berth_api::wire::to_value(&changes).unwrap_or_default(),
        })
    }
}

/// A refusal to record at once (a refused request has no write to note): `verb` of the
/// `kind` object `namespace/name` by `actor`, described by `summary`. Records sharing an `id`
/// are stored once, which is how a flood of refusals becomes one record per minute.
pub struct Refusal<'a> {
    pub id: String,
    pub verb: Verb,
    pub namespace: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub actor: (&'a str, &'a str),
    pub action: &'a str,
    pub summary: String,
}

/// Stores `refusal` in the background; a failing store loses it with a warning.
pub fn record_refusal(store: &Arc<dyn ShimStore>, refusal: Refusal<'_>) {
    let mut detail = refusal.verb.detail_value(&[]);
    detail["summary"] = Value::String(refusal.summary);
    let record = AuditRecord {
        id: refusal.id,
        namespace: refusal.namespace.to_string(),
        occurred_ms: Timestamp::now().as_millisecond(),
        object_kind: refusal.kind.to_string(),
        object_id: refusal.name.to_string(),
        resource: String::new(),
        actor_kind: refusal.actor.0.to_string(),
        actor_id: refusal.actor.1.to_string(),
        action: refusal.action.to_string(),
        detail: detail.to_string(),
    };
    let store = store.clone();
    tokio::task::spawn_blocking(move || {
        if let Err(error) = store.record_audit(&[record]) {
            tracing::warn!(%error, "a refusal went unrecorded in the audit events");
        }
    });
}

tokio::task_local! {
    static NOTES: Arc<Mutex<Vec<WriteNote>>>;
}

/// Notes a write of `written` (as the API server answered), `before` as the cache held it;
/// `sent` is what the write applied, whose actor annotations say who made it. A write without
/// an actor (the shim's own bookkeeping) or that changed nothing is not noted.
pub fn note_write(kind: &str, before: Option<&Value>, written: &Value, sent: &Value) {
    let annotation = |key: &str| {
        sent.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (Some(actor_kind), Some(actor_id)) =
        (annotation(UPDATED_BY_KIND), annotation(UPDATED_BY_ID))
    else {
        return;
    };
    let changes = before.map(|before| changed_fields(before, written));
    if changes.as_ref().is_some_and(Vec::is_empty) {
        return;
    }
    let text = |pointer: &str| {
        written
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let name = text("/metadata/name");
    let resource = if kind == "Resource" {
        name.clone()
    } else {
        text("/spec/resourceId")
    };
    let note = WriteNote {
        kind: kind.to_string(),
        namespace: text("/metadata/namespace"),
        name,
        resource,
        actor_kind,
        actor_id,
        verb: match before {
            None => Verb::Created,
            Some(_) => Verb::Updated,
        },
        changes: changes.unwrap_or_default(),
    };
    push(note);
}

/// Notes that `actor` (kind, id) deleted (or marked for deletion) the `kind` object
/// `namespace/name`, which is or belongs to `resource` (empty when none).
pub fn note_delete(kind: &str, namespace: &str, name: &str, resource: &str, actor: (&str, &str)) {
    let (actor_kind, actor_id) = actor;
    push(WriteNote {
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        resource: resource.to_string(),
        actor_kind: actor_kind.to_string(),
        actor_id: actor_id.to_string(),
        verb: Verb::Deleted,
        changes: Vec::new(),
    });
}

fn push(note: WriteNote) {
    let _ = NOTES.try_with(|notes| notes.lock().unwrap_or_else(|p| p.into_inner()).push(note));
}

/// The fields that differ between two versions of an object: its spec, labels and
/// annotations (but the actor's, which every write sets).
pub fn changed_fields(before: &Value, after: &Value) -> Vec<AuditFieldChange> {
    let mut changes = Vec::new();
    for (pointer, path) in [
        ("/spec", "spec"),
        ("/metadata/labels", "metadata.labels"),
        ("/metadata/annotations", "metadata.annotations"),
    ] {
        let (mut b, mut a) = (
            before.pointer(pointer).cloned().unwrap_or(Value::Null),
            after.pointer(pointer).cloned().unwrap_or(Value::Null),
        );
        for value in [&mut b, &mut a] {
            if let Some(map) = value.as_object_mut() {
                map.remove(UPDATED_BY_KIND);
                map.remove(UPDATED_BY_ID);
            }
        }
        diff(&b, &a, path, 1, &mut changes);
    }
    changes.truncate(MAX_FIELDS);
    changes
}

fn diff(before: &Value, after: &Value, path: &str, depth: usize, out: &mut Vec<AuditFieldChange>) {
    if before == after {
        return;
    }
    // A map that was absent is an empty one: its new entries are named one by one.
    let empty = Value::Object(serde_json::Map::new());
    let (before, after) = match (before, after) {
        (Value::Null, Value::Object(_)) => (&empty, after),
        (Value::Object(_), Value::Null) => (before, &empty),
        _ => (before, after),
    };
    if let (Value::Object(b), Value::Object(a)) = (before, after)
        && depth < MAX_DEPTH
    {
        let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let null = Value::Null;
            let (bv, av) = (b.get(key).unwrap_or(&null), a.get(key).unwrap_or(&null));
            diff(bv, av, &format!("{path}.{key}"), depth + 1, out);
        }
        return;
    }
    out.push(AuditFieldChange {
        field: path.to_string(),
        value: after.as_bool(),
    });
}

/// Middleware: runs a request that may write with a note pad and records its notes once it
/// succeeded.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().trim_start_matches("/api").to_string())
        .unwrap_or_default();
    let action = format!("{} {route}", request.method());
    let notes = Arc::new(Mutex::new(Vec::new()));
    let response = NOTES.scope(notes.clone(), next.run(request)).await;
    let notes = std::mem::take(&mut *notes.lock().unwrap_or_else(|p| p.into_inner()));
    if notes.is_empty() || !response.status().is_success() {
        return response;
    }
    let records = records(&notes, &action, Timestamp::now().as_millisecond());
    // Recorded before answering, so the writer's next read of the audit events shows it; a
    // failing store does not undo the write, which stands.
    let stored = store_call(&state.observations, "audit events", move |store| {
        store.record_audit(&records)
    })
    .await;
    if stored.is_err() {
        tracing::warn!(%action, "a REST write went unrecorded in the audit events");
    }
    response
}

fn records(notes: &[WriteNote], action: &str, now_ms: i64) -> Vec<AuditRecord> {
    notes
        .iter()
        .map(|note| {
            let mut id = [0u8; 8];
            rand::RngCore::fill_bytes(&mut rand::rng(), &mut id);
            AuditRecord {
                id: format!("aud-{}", hex::encode(id)),
                namespace: note.namespace.clone(),
                occurred_ms: now_ms,
                object_kind: note.kind.clone(),
                object_id: note.name.clone(),
                resource: note.resource.clone(),
                actor_kind: note.actor_kind.clone(),
                actor_id: note.actor_id.clone(),
                action: action.to_string(),
                detail: note.verb.detail(&note.changes),
            }
        })
        .collect()
}

/// Stores `records` kept by a background follower (`what` they are, for the warning); false
/// when the store failed, so the follower tries again.
async fn store_records(store: &Arc<dyn ShimStore>, records: &[AuditRecord], what: &str) -> bool {
    let (store, records) = (store.clone(), records.to_vec());
    match tokio::task::spawn_blocking(move || store.record_audit(&records)).await {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::warn!(%error, what, "could not keep audit records");
            false
        }
        Err(error) => {
            tracing::warn!(%error, what, "keeping audit records stopped");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_fields_name_paths_and_only_flags_values() {
        let before = json!({
            "metadata": {"annotations": {UPDATED_BY_ID: "usr-a", "keep": "1"}},
            "spec": {"autoDeploy": {"enabled": true, "refs": ["refs/heads/main"]},
                     "variables": [{"key": "TOKEN", "value": "s3cret"}], "name": "web"},
        });
        let after = json!({
            "metadata": {"annotations": {UPDATED_BY_ID: "usr-b", "keep": "1"}},
            "spec": {"autoDeploy": {"enabled": false, "refs": ["refs/heads/main"]},
                     "variables": [{"key": "TOKEN", "value": "other"}], "name": "web"},
        });
        let changes = changed_fields(&before, &after);
        assert_eq!(
            changes,
            [
                AuditFieldChange {
                    field: "spec.autoDeploy.enabled".into(),
                    value: Some(false)
                },
                AuditFieldChange {
                    field: "spec.variables".into(),
                    value: None
                },
            ]
        );
        assert!(
            !format!("{changes:?}").contains("other"),
            "no values but flags"
        );
        assert!(changed_fields(&before, &before).is_empty());
        // Labels where there were none: each is named.
        let mut labelled = before.clone();
        labelled["metadata"]["labels"] = json!({"team": "checkout"});
        let named: Vec<String> = changed_fields(&before, &labelled)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(named, ["metadata.labels.team"]);
    }

    #[tokio::test]
    async fn notes_are_kept_only_inside_a_request_and_name_the_actor_sent() {
        let written = json!({"metadata": {"name": "web", "namespace": "org-a"},
                             "spec": {"autoDeploy": {"enabled": false}}});
        let before = json!({"metadata": {"name": "web", "namespace": "org-a"},
                            "spec": {"autoDeploy": {"enabled": true}}});
        let sent =
            json!({"metadata": {"annotations": {UPDATED_BY_KIND: "user", UPDATED_BY_ID: "usr-1"}}});
        // Outside a request: nowhere to note, and no panic.
        note_write("Resource", Some(&before), &written, &sent);
        let notes = Arc::new(Mutex::new(Vec::new()));
        NOTES
            .scope(notes.clone(), async {
                note_write("Resource", Some(&before), &written, &sent);
                // No actor sent: the shim's own write.
                note_write("Resource", Some(&before), &written, &json!({}));
                // Nothing changed.
                note_write("Resource", Some(&written), &written, &sent);
            })
            .await;
        let notes = notes.lock().unwrap();
        assert_eq!(notes.len(), 1);
        assert_eq!(
            (notes[0].actor_id.as_str(), notes[0].resource.as_str()),
            ("usr-1", "web")
        );
        let records = records(&notes, "POST /resources/{resourceId}/auto-deploy", 5);
        assert!(records[0].id.starts_with("aud-"));
        assert!(records[0].detail.contains("spec.autoDeploy.enabled"));
    }
}
