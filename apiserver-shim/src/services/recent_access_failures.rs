//! Resources' latest access-failure evidence, read from the observation store, and the recent
//! reads of it that cached health serves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_crds::access_failure::with_current_reason;
use berth_crds::resource::Resource;
use berth_observations::ShimStore;
use kube::ResourceExt;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::observation_store::store_call;

/// `resource`'s latest unexpired evidence, as its diagnostic summary
/// (`access.latestAccessFailure`) and live health show it.
pub async fn latest_of(
    store: &Arc<dyn ShimStore>,
    resource: &Resource,
) -> ApiResult<Option<Value>> {
    let (namespace, name) = (
        resource.namespace().unwrap_or_default(),
        resource.name_any(),
    );
    let record = store_call(store, "access-failure evidence", move |store| {
        store.latest_access_failure(&namespace, &name)
    })
    .await?;
    record
        .map(|r| berth_api::wire::to_value(&with_current_reason(r.evidence)))
        .transpose()
        .map_err(ApiError::internal)
}

/// How long one store read of a resource's latest evidence serves cached health: many
/// clients polling one resource's health then cost the store one read per period.
const RECENT_REUSE: Duration = Duration::from_secs(2);
/// Above this many remembered resources, the expired ones are forgotten.
const RECENT_CAPACITY: usize = 4096;

/// A resource: its namespace and name.
type ResourceKey = (String, String);

/// Recent reads of [`latest_of`], per resource, with when each was read.
#[derive(Default)]
pub struct RecentLatest(Mutex<HashMap<ResourceKey, (Instant, Option<Value>)>>);

impl RecentLatest {
    /// [`latest_of`] as read at most [`RECENT_REUSE`] ago: what `mode=cached` health shows.
    pub async fn latest_of(
        &self,
        store: &Arc<dyn ShimStore>,
        resource: &Resource,
    ) -> ApiResult<Option<Value>> {
        let key = (
            resource.namespace().unwrap_or_default(),
            resource.name_any(),
        );
        let recent = &self.0;
        let remembered = lock(recent)
            .get(&key)
            .filter(|(read_at, _)| read_at.elapsed() < RECENT_REUSE)
            .map(|(_, latest)| latest.clone());
        if let Some(latest) = remembered {
            return Ok(latest);
        }
        let latest = latest_of(store, resource).await?;
        let mut recent = lock(recent);
        if recent.len() >= RECENT_CAPACITY {
            recent.retain(|_, (read_at, _)| read_at.elapsed() < RECENT_REUSE);
        }
        recent.insert(key, (Instant::now(), latest.clone()));
        Ok(latest)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
