//! `GET /deployments/{id}/timeline` and `/timeline/stream`: an attempt's timeline as
//! berth-controller records it in the observation store (steps, build and pull output,
//! outcome), masked once more with what the shim knows to be secret. The stream resumes after
//! the sequence a client last saw (`after`, `cursor` or `Last-Event-ID`), so a client that
//! reconnects misses no entry, and ends once the attempt ended and every entry went out:
//! berth-controller stores an attempt's entries before its status says it ended.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use berth_api::deployment_records::{
    ClosedReason, DeploymentTimeline, EntryKind, EntryStatus, TIMELINE_SCHEMA_VERSION,
    TimelineEntry, TimelineEnvelope,
};
use berth_crds::deployment::DeploymentState;
use berth_crds::masking::Masker;
use berth_crds::progress::{Source, StreamStatus};
use berth_observations::{TimelineEntry as StoredEntry, TimelineKey};
use futures::channel::mpsc;
use futures::{SinkExt, Stream};
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::{Attempt, find};
use crate::auth::Caller;
use crate::domain::deployments::attempt_state;
use crate::domain::resource_access::masker;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 500;
/// How often a stream looks for new entries.
const POLL: Duration = Duration::from_millis(200);
/// How long a stream follows an attempt that does not end.
const DEADLINE: Duration = Duration::from_secs(30 * 60);
/// Entries read from the store at once.
const PAGE: usize = 500;

/// What kind of line a stored entry is.
fn kind(entry: &StoredEntry) -> EntryKind {
    let event = &entry.event;
    if event.source == Source::Application {
        EntryKind::Output
    } else if event.status != StreamStatus::Running {
        EntryKind::Status
    } else if event.message == event.step.label {
        EntryKind::Step
    } else {
        EntryKind::Lifecycle
    }
}

/// A stored entry as the API shows it.
pub fn entry(stored: &StoredEntry, masker: &Masker) -> TimelineEntry {
    let event = &stored.event;
    TimelineEntry {
        deployment_id: event.deployment_id.clone(),
        sequence: stored.sequence,
        cursor: stored.sequence.to_string(),
        occurred_at: event.timestamp.clone(),
        source: event.source,
        kind: kind(stored),
        phase: event.phase,
        level: event.level,
        message: masker.mask(&event.message),
        status: match event.status {
            StreamStatus::Running => EntryStatus::Running,
            StreamStatus::Succeeded => EntryStatus::Succeeded,
            StreamStatus::Failed => EntryStatus::Failed,
        },
        stream: event.stream,
        step: event.step.clone(),
    }
}

fn key(attempt: &Attempt) -> TimelineKey {
    let deployment = &attempt.deployment;
    TimelineKey::new(
        deployment.namespace().unwrap_or_default(),
        deployment.spec.resource_id.clone(),
        deployment.name_any(),
    )
}

async fn masker_of(state: &AppState, caller: &Caller, attempt: &Attempt) -> ApiResult<Masker> {
    match &attempt.resource {
        Some(resource) => masker(state, caller, resource).await,
        // Entries are stored masked; without the resource there is nothing more to mask.
        None => Ok(Masker::default()),
    }
}

/// Where to start: `after`, `cursor` (both a sequence) or the `Last-Event-ID` header.
fn start(query: &QueryParams, headers: Option<&HeaderMap>) -> ApiResult<i64> {
    let max = i64::MAX as u64;
    if query.0.contains_key("after") && query.0.contains_key("cursor") {
        return Err(ApiError::validation(
            "cursor",
            "give after or cursor, not both",
        ));
    }
    for name in ["after", "cursor"] {
        if query.0.contains_key(name) {
            return Ok(query.integer(name, 0, max, 0)? as i64);
        }
    }
    let header = headers.and_then(|h| h.get("last-event-id"));
    match header.map(|v| v.to_str().ok().and_then(|t| t.trim().parse::<i64>().ok())) {
        None => Ok(0),
        Some(Some(sequence)) if sequence >= 0 => Ok(sequence),
        Some(_) => Err(ApiError::validation(
            "Last-Event-ID",
            "Last-Event-ID must be the id of an event this stream sent",
        )),
    }
}

pub async fn page(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<DeploymentTimeline>> {
    known_params(&query, &["after", "cursor", "limit"])?;
    let after = start(&query, None)?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)? as usize;
    let attempt = find(&state, &caller, &id).await?;
    let key = key(&attempt);
    let stored = store_call(&state.observations, "deployment timelines", move |store| {
        store.read(&key, after, limit + 1)
    })
    .await?;
    let masker = masker_of(&state, &caller, &attempt).await?;
    let has_more = stored.len() > limit;
    let entries: Vec<TimelineEntry> = stored
        .iter()
        .take(limit)
        .map(|e| entry(e, &masker))
        .collect();
    Ok(Json(DeploymentTimeline {
        schema_version: TIMELINE_SCHEMA_VERSION.into(),
        deployment_id: id,
        next_cursor: has_more
            .then(|| entries.last().map(|e| e.cursor.clone()))
            .flatten(),
        entries,
        has_more,
    }))
}

pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: QueryParams,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    known_params(&query, &["after", "cursor"])?;
    let after = start(&query, Some(&headers))?;
    let attempt = find(&state, &caller, &id).await?;
    let masker = masker_of(&state, &caller, &attempt).await?;
    let (sender, receiver) = mpsc::channel(64);
    tokio::spawn(follow(state, attempt, masker, after, sender));
    Ok(Sse::new(receiver).keep_alive(KeepAlive::default()))
}

fn envelope_event(envelope: &TimelineEnvelope, id: Option<i64>) -> Event {
    let event = Event::default().event("message");
    let event = match id {
        Some(id) => event.id(id.to_string()),
        None => event,
    };
    event
        .json_data(berth_api::wire::Wire(envelope))
        .unwrap_or_else(|_| Event::default().event("message"))
}

/// The attempt's status now: from the cache while its object exists, else as archived (an
/// archived attempt has ended); `None` when the object went without ending.
fn current_state(state: &AppState, attempt: &Attempt) -> Option<DeploymentState> {
    if attempt.removed {
        return Some(attempt_state(&attempt.deployment));
    }
    let deployment = &attempt.deployment;
    let key =
        ObjectRef::new(&deployment.name_any()).within(&deployment.namespace().unwrap_or_default());
    match state.caches.deployments.get(&key) {
        Some(cached) => Some(attempt_state(&cached)),
        // Created a moment ago and not in the cache yet: as it was found.
        None if recently_created(deployment) => Some(attempt_state(deployment)),
        None => None,
    }
}

fn recently_created(deployment: &berth_crds::deployment::Deployment) -> bool {
    let created = deployment.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let recent =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(30);
    created.is_some_and(|created| created > recent)
}

/// Sends entries as they are stored until the attempt ended and all went out, the client
/// left, or the deadline passed.
async fn follow(
    state: AppState,
    attempt: Attempt,
    masker: Masker,
    mut after: i64,
    mut sender: mpsc::Sender<Result<Event, Infallible>>,
) {
    let key = key(&attempt);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        // Read the state before the entries: once it says ended, the entries are all stored.
        let now = current_state(&state, &attempt);
        let ended = now.is_none_or(DeploymentState::is_terminal);
        let read_key = key.clone();
        let read = store_call(&state.observations, "deployment timelines", move |store| {
            store.read(&read_key, after, PAGE)
        })
        .await
        .unwrap_or_default();
        for stored in &read {
            let envelope = TimelineEnvelope::Entry {
                schema_version: TIMELINE_SCHEMA_VERSION.into(),
                entry: entry(stored, &masker),
            };
            if sender
                .send(Ok(envelope_event(&envelope, Some(stored.sequence))))
                .await
                .is_err()
            {
                return;
            }
            after = stored.sequence;
        }
        if read.len() == PAGE {
            continue;
        }
        // Ended before this read: what it returned was the rest of the timeline.
        let reason = if ended {
            Some(match now {
                Some(_) => ClosedReason::Completed,
                None => ClosedReason::SourceEnded,
            })
        } else if tokio::time::Instant::now() >= deadline {
            Some(ClosedReason::IdleTimeout)
        } else {
            None
        };
        if let Some(reason) = reason {
            let closed = TimelineEnvelope::Closed {
                schema_version: TIMELINE_SCHEMA_VERSION.into(),
                reason,
                status: Some(now.unwrap_or_else(|| attempt_state(&attempt.deployment))),
                cursor: (after > 0).then(|| after.to_string()),
            };
            let _ = sender.send(Ok(envelope_event(&closed, None))).await;
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
    use berth_crds::progress::{Level, ProgressEvent};

    fn stored(source: Source, status: StreamStatus, message: &str) -> StoredEntry {
        StoredEntry {
            sequence: 7,
            event: ProgressEvent {
                timestamp: "2030-01-01T00:00:00.000Z".into(),
                source,
                phase: DeploymentPhase::Package,
                level: Level::Info,
                message: message.into(),
                deployment_id: "dep-web-1".into(),
                status,
                step: DeploymentStep {
                    current: 3,
                    total: 5,
                    label: "Building".into(),
                },
                stream: None,
            },
        }
    }

    #[test]
    fn entries_say_what_they_are_and_are_masked() {
        let masker = Masker::new(["hunter2-secret".to_string()]);
        let step = entry(
            &stored(Source::Platform, StreamStatus::Running, "Building"),
            &masker,
        );
        assert_eq!((step.kind, step.cursor.as_str()), (EntryKind::Step, "7"));
        let note = stored(Source::Platform, StreamStatus::Running, "retrying in 2 s");
        assert_eq!(entry(&note, &masker).kind, EntryKind::Lifecycle);
        let output = stored(
            Source::Application,
            StreamStatus::Running,
            "token hunter2-secret",
        );
        let output = entry(&output, &masker);
        assert_eq!(
            (output.kind, output.message.as_str()),
            (EntryKind::Output, "token ****")
        );
        let end = entry(
            &stored(Source::Platform, StreamStatus::Failed, "failed"),
            &masker,
        );
        assert_eq!(
            (end.kind, end.status),
            (EntryKind::Status, EntryStatus::Failed)
        );
    }

    #[test]
    fn a_stream_resumes_after_the_last_event_id_or_after() {
        let none = QueryParams::from_pairs(&[]);
        assert_eq!(start(&none, None).unwrap(), 0);
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", "42".parse().unwrap());
        assert_eq!(start(&none, Some(&headers)).unwrap(), 42);
        let after = QueryParams::from_pairs(&[("after", "12")]);
        assert_eq!(start(&after, Some(&headers)).unwrap(), 12, "the query wins");
        headers.insert("last-event-id", "x".parse().unwrap());
        let error = start(&none, Some(&headers)).unwrap_err();
        assert_eq!(error.body.details["field"], "Last-Event-ID");
        let both = QueryParams::from_pairs(&[("after", "1"), ("cursor", "2")]);
        assert_eq!(start(&both, None).unwrap_err().status, 422);
    }
}
