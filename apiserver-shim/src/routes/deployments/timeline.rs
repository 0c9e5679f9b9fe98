//! Deployment timelines as berth-controller records them in the observation store: the build
//! output the progress stream interleaves, and `GET
//! /resources/{resourceId}/deployments/{deploymentId}/timeline`, which serves an attempt's
//! whole timeline after the stream (or the Deployment object) is gone.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::progress::{ProgressEvent, Source};
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

/// Follows the `application` entries (build output) of one attempt's timeline.
pub struct OutputFollower {
    store: Arc<dyn ShimStore>,
    key: TimelineKey,
    after: i64,
}

impl OutputFollower {
    pub fn new(store: Arc<dyn ShimStore>, key: TimelineKey) -> Self {
        Self {
            store,
            key,
            after: 0,
        }
    }

    /// Output recorded since the last call (one page); empty when the store fails, since the
    /// stream's own events still report the attempt.
    pub async fn next_lines(&mut self) -> Vec<ProgressEvent> {
        let (key, after) = (self.key.clone(), self.after);
        let read = blocking(&self.store, move |store| store.read(&key, after, PAGE)).await;
        let entries: Vec<TimelineEntry> = read.unwrap_or_default();
        if let Some(last) = entries.last() {
            self.after = last.sequence;
        }
        entries
            .into_iter()
            .filter(|entry| entry.event.source == Source::Application)
            .map(|entry| entry.event)
            .collect()
    }

    /// Every output line not yet returned.
    pub async fn remaining_lines(&mut self) -> Vec<ProgressEvent> {
        let mut lines = Vec::new();
        loop {
            let before = self.after;
            lines.extend(self.next_lines().await);
            if self.after == before {
                return lines;
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
