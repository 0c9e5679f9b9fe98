//! Records when a deploy token last authenticated a request (`status.lastUsedAt`), at most once
//! per [`INTERVAL`] per token and off the request path, so using a token costs no write latency
//! and a busy CI job does not turn every request into an etcd write.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use berth_crds::deploy_token::DeployToken;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

use crate::state::{AppState, FIELD_MANAGER};

/// How stale `lastUsedAt` may get.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// When this process last wrote `lastUsedAt`, by `namespace/name`: requests that arrive before
/// the cache shows the write must not write again.
fn recent() -> &'static Mutex<HashMap<String, Instant>> {
    static RECENT: OnceLock<Mutex<HashMap<String, Instant>>> = OnceLock::new();
    RECENT.get_or_init(Default::default)
}

/// Whether `last_used` is recent enough to skip a write at `now`.
pub fn fresh(last_used: Option<&Time>, now: Timestamp) -> bool {
    last_used.is_some_and(|at| {
        now.duration_since(at.0)
            .try_into()
            .is_ok_and(|age: Duration| age < INTERVAL)
    })
}

/// Notes that `token` just authenticated a request.
pub fn note(state: &AppState, token: &DeployToken) {
    let now = Timestamp::now();
    if fresh(
        token.status.as_ref().and_then(|s| s.last_used_at.as_ref()),
        now,
    ) {
        return;
    }
    let namespace = token.namespace().unwrap_or_default();
    let name = token.name_any();
    {
        let mut recent = recent().lock().expect("last-used lock");
        let key = format!("{namespace}/{name}");
        if recent.get(&key).is_some_and(|at| at.elapsed() < INTERVAL) {
            return;
        }
        recent.retain(|_, at| at.elapsed() < INTERVAL);
        recent.insert(key, Instant::now());
    }
    let api = Api::<DeployToken>::namespaced(state.client.clone(), &namespace);
    tokio::spawn(async move {
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let patch = serde_json::json!({ "status": { "lastUsedAt": Time(now) } });
        if let Err(error) = api
            .patch_status(&name, &params, &Patch::Merge(&patch))
            .await
        {
            // Only bookkeeping failed; the request itself was served.
            tracing::warn!(token = %name, %error, "could not record lastUsedAt");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_at_most_once_a_minute() {
        let now: Timestamp = "2030-01-01T00:10:00Z".parse().unwrap();
        assert!(!fresh(None, now));
        let recent = Time("2030-01-01T00:09:30Z".parse().unwrap());
        assert!(fresh(Some(&recent), now));
        let old = Time("2030-01-01T00:08:00Z".parse().unwrap());
        assert!(!fresh(Some(&old), now));
    }
}
