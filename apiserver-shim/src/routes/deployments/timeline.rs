//! Deployment timelines as berth-controller records them in the observation store: the steps
//! and build output the progress stream interleaves, and `GET
//! /resources/{resourceId}/deployments/{deploymentId}/timeline`, which serves an attempt's
//! whole timeline after the stream (or the Deployment object) is gone.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::progress::{ProgressEvent, Source, StreamStatus};
use berth_observations::{ShimStore, StoreError, TimelineEntry, TimelineKey};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::auth::Caller;
use crate::domain::objects::find_deployment;
use crate::domain::resource_access::{lookup, masker};
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

pub use berth_api::deployments::{TIMELINE_SCHEMA_VERSION, Timeline, TimelineItem};

/// Entries read from the store at once.
const PAGE: usize = 500;
/// Most entries one timeline request returns.
const MAX_LIMIT: u64 = 1_000;

/// Runs a store call off the async threads.
async fn blocking<T: Send + 'static>(
    store: &Arc<dyn ShimStore>,
    call: impl FnOnce(&dyn ShimStore) -> Result<T, StoreError> + Send + 'static,
) -> ApiResult<T> {
    store_call(store, "deployment timelines", call).await
}

/// Follows one attempt's timeline as it runs: its build output and its steps (the controller
/// records each step there at once, and writes the status later, or only at the end).
pub struct TimelineFollower {
    store: Arc<dyn ShimStore>,
    key: TimelineKey,
    after: i64,
}

impl TimelineFollower {
    pub fn new(store: Arc<dyn ShimStore>, key: TimelineKey) -> Self {
        Self {
            store,
            key,
            after: 0,
        }
    }

    /// Output lines and running steps recorded since the last call (one page); empty when the
    /// store fails, since the stream's own events still report the attempt. The outcome is
    /// left to the status, which the stream ends with.
    pub async fn next_entries(&mut self) -> Vec<ProgressEvent> {
        let (key, after) = (self.key.clone(), self.after);
        let read = blocking(&self.store, move |store| store.read(&key, after, PAGE)).await;
        let entries: Vec<TimelineEntry> = read.unwrap_or_default();
        if let Some(last) = entries.last() {
            self.after = last.sequence;
        }
        entries
            .into_iter()
            .filter(|entry| {
                let event = &entry.event;
                event.source == Source::Application || event.status == StreamStatus::Running
            })
            .map(|entry| entry.event)
            .collect()
    }

    /// Every entry not yet returned.
    pub async fn remaining_entries(&mut self) -> Vec<ProgressEvent> {
        let mut entries = Vec::new();
        loop {
            let before = self.after;
            entries.extend(self.next_entries().await);
            if self.after == before {
                return entries;
            }
        }
    }
}

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path((resource_id, deployment_id)): Path<(String, String)>,
    query: QueryParams,
) -> ApiResult<Json<Timeline>> {
    known_params(&query, &["after", "limit"])?;
    let after = query.integer("after", 0, i64::MAX as u64, 0)? as i64;
    let limit = query.integer("limit", 1, MAX_LIMIT, PAGE as u64)? as usize;
    let resource = lookup(&state, &caller, &resource_id)?;
    let namespace = resource.namespace().unwrap_or_default();
    let key = TimelineKey::new(&namespace, &resource_id, &deployment_id);
    let deployment = find_deployment(&state, &namespace, &deployment_id)
        .await?
        .filter(|d| d.spec.resource_id == resource_id);
    let read_key = key.clone();
    let (entries, recorded) = blocking(&state.observations, move |store| {
        // One more than asked tells whether the timeline goes on.
        let entries = store.read(&read_key, after, limit + 1)?;
        let recorded = !entries.is_empty() || store.count(&read_key)? > 0;
        Ok((entries, recorded))
    })
    .await?;
    if deployment.is_none() && !recorded {
        return Err(ApiError::not_found("deployment", &deployment_id));
    }
    let masker = masker(&state, &caller, &resource).await?;
    let more = entries.len() > limit;
    let entries: Vec<TimelineItem> = entries
        .into_iter()
        .take(limit)
        .map(|entry| TimelineItem {
            sequence: entry.sequence,
            event: ProgressEvent {
                message: masker.mask(&entry.event.message),
                ..entry.event
            },
        })
        .collect();
    Ok(Json(Timeline {
        schema_version: TIMELINE_SCHEMA_VERSION.into(),
        resource_id,
        deployment_id,
        status: deployment.and_then(|d| d.status).and_then(|s| s.status),
        next_after: more.then(|| entries.last().map(|e| e.sequence)).flatten(),
        entries,
        generated_at: Timestamp::now().to_string(),
    }))
}
