//! What every controller shares besides its inputs: the error policy (retry or wait, a Warning
//! Event on the object), how often an object is looked at again, and draining a controller's
//! output stream.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;

use crate::context::Context;
use crate::error::Error;

/// Longest note of a failure's Warning Event.
const MAX_EVENT_NOTE: usize = 1024;
/// How long to wait before retrying a transient failure.
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Periodic re-check even without changes, to notice drift in what we do not watch.
pub const RESYNC_AFTER: Duration = Duration::from_secs(300);
/// How soon a status write that lost a race (409 Conflict) is redone from fresh reads.
pub const CONFLICT_RECHECK: Duration = Duration::from_millis(200);

/// Shared error policy: an invalid spec waits for a change; anything else retries. Every
/// failure is counted, and (but a lost write race, redone at once) shown on the object as a
/// Warning Event, so `kubectl describe` answers why it is stuck, not only the log.
pub fn error_policy<K>(kind: &'static str) -> impl Fn(Arc<K>, &Error, Arc<Context>) -> Action
where
    K: kube::Resource<DynamicType = ()>,
{
    move |object, error, context| {
        context.metrics.reconcile_failed(kind, error);
        if !error.is_conflict() {
            report_failure(&context, object.object_ref(&()), error);
        }
        if error.is_permanent() {
            tracing::warn!(kind, %error, "waiting for the object to change");
            Action::await_change()
        } else {
            tracing::warn!(kind, %error, "reconcile failed; retrying");
            Action::requeue(RETRY_AFTER)
        }
    }
}

/// Publishes `error` as a Warning Event on the object (in the background: the policy is sync).
fn report_failure(context: &Arc<Context>, object: ObjectReference, error: &Error) {
    let reason = error.event_reason();
    let note = cut(error.to_string(), MAX_EVENT_NOTE);
    let context = context.clone();
    tokio::spawn(async move {
        context
            .publish_event(&object, EventType::Warning, &reason, note)
            .await;
    });
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let end = (0..=max)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(end);
    }
    text
}

/// Drains a controller's output stream, logging each outcome at debug level.
pub async fn drain<K, E, S>(kind: &'static str, stream: S)
where
    K: kube::Resource,
    E: std::fmt::Display,
    S: futures::Stream<Item = Result<(ObjectRef<K>, Action), E>>,
{
    stream
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(kind, object = %object.name, "reconciled"),
                Err(error) => tracing::debug!(kind, %error, "controller event"),
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_note_is_cut_on_a_character_boundary() {
        let note = cut("é".repeat(600), MAX_EVENT_NOTE);
        assert_eq!(note.len(), MAX_EVENT_NOTE);
        assert_eq!(cut("short".into(), MAX_EVENT_NOTE), "short");
        assert_eq!(cut("aé".into(), 2), "a");
    }
}
