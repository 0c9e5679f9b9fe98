//! Removing a preview, for a person (`DELETE /preview-environments/{id}`) and for CI
//! (`POST /deployments/cleanup-preview`): the PreviewEnvironment is deleted and the
//! controller's finalizer removes its environment, resource, containers and route before it
//! goes. The answer waits a while for that, so a caller usually learns `cleaned`; otherwise
//! `retry-scheduled`, and the controller keeps going. Deleting again is harmless.

use std::time::Duration;

use berth_api::previews::{CleanupPreviewAnswer, CleanupStatus, PreviewCleanupAnswer};
use berth_crds::preview::PreviewEnvironment;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use super::summary::source_binding_fingerprint;
use crate::auth::Caller;
use crate::cache::wait_gone_within;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::write;

/// How long a removal's answer waits for the controller to finish (a container stop and a
/// route removal take seconds; the rest goes on after the answer).
pub const CLEANUP_WAIT: Duration = Duration::from_secs(45);
/// When a `retry-scheduled` answer suggests asking again.
const RETRY_AFTER: SignedDuration = SignedDuration::from_secs(30);

/// Deletes `preview` and waits up to [`CLEANUP_WAIT`] for it to be gone.
pub async fn remove(
    state: &AppState,
    caller: &Caller,
    preview: &PreviewEnvironment,
) -> ApiResult<CleanupStatus> {
    let namespace = preview.namespace().unwrap_or_default();
    let api = Api::<PreviewEnvironment>::namespaced(state.client.clone(), &namespace);
    let marked = write::delete(&api, preview, &DeleteParams::default(), caller).await?;
    if marked.is_none() {
        return Ok(CleanupStatus::Cleaned);
    }
    tracing::info!(preview = %preview.name_any(), %namespace, "preview removal requested");
    let store = &state.caches.preview_environments;
    Ok(match wait_gone_within(store, preview, CLEANUP_WAIT).await {
        Ok(()) => CleanupStatus::Cleaned,
        Err(()) => CleanupStatus::RetryScheduled,
    })
}

/// Appaloft's delete answer for `preview` removed with `status`.
pub fn answer(
    preview: &PreviewEnvironment,
    status: CleanupStatus,
    now: Timestamp,
) -> PreviewCleanupAnswer {
    let spec = &preview.spec;
    let cleaned = status == CleanupStatus::Cleaned;
    let pending = status == CleanupStatus::RetryScheduled;
    PreviewCleanupAnswer {
        status,
        attempt_id: preview.uid().unwrap_or_else(|| preview.name_any()),
        preview_environment_id: preview.name_any(),
        resource_id: spec.resource_id.clone(),
        source_binding_fingerprint: source_binding_fingerprint(&spec.resource_id, &spec.source),
        preview_environment_status: "cleanup-requested".into(),
        cleaned_runtime: cleaned,
        removed_route: cleaned,
        removed_source_link: cleaned,
        removed_provider_metadata: false,
        updated_feedback: false,
        retryable: pending.then_some(true),
        next_retry_at: pending.then(|| (now + RETRY_AFTER).to_string()),
    }
}

/// The answer when there is no such preview (never was, or already removed).
pub fn already_clean(id: &str, resource_id: Option<&str>) -> PreviewCleanupAnswer {
    PreviewCleanupAnswer {
        status: CleanupStatus::AlreadyClean,
        attempt_id: id.to_string(),
        preview_environment_id: id.to_string(),
        resource_id: resource_id.unwrap_or_default().to_string(),
        source_binding_fingerprint: String::new(),
        preview_environment_status: "cleanup-requested".into(),
        cleaned_runtime: false,
        removed_route: false,
        removed_source_link: false,
        removed_provider_metadata: false,
        updated_feedback: false,
        retryable: None,
        next_retry_at: None,
    }
}

/// The same removal as CI's `cleanupPreviewResponseSchema` tells it.
pub fn ci_answer(
    removal: &PreviewCleanupAnswer,
    preview: Option<&PreviewEnvironment>,
) -> CleanupPreviewAnswer {
    let status = preview.and_then(|p| p.status.clone()).unwrap_or_default();
    CleanupPreviewAnswer {
        source_fingerprint: removal.source_binding_fingerprint.clone(),
        status: removal.status,
        cleaned_runtime: removal.cleaned_runtime,
        removed_server_applied_route: removal.removed_route,
        removed_source_link: removal.removed_source_link,
        project_id: preview.map(|p| p.spec.project_id.clone()),
        environment_id: status.environment_id,
        resource_id: removal.resource_id.clone(),
        server_id: status.server_id,
        deployment_id: status.deployment_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::previews::summary::tests::preview;

    #[test]
    fn a_removal_says_how_far_it_got() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let web = preview("acme/shop");
        let done = answer(&web, CleanupStatus::Cleaned, now);
        assert!(done.cleaned_runtime && done.removed_route && done.retryable.is_none());
        assert_eq!(done.preview_environment_status, "cleanup-requested");
        let pending = answer(&web, CleanupStatus::RetryScheduled, now);
        assert!(!pending.cleaned_runtime && pending.retryable == Some(true));
        assert_eq!(
            pending.next_retry_at.as_deref(),
            Some("2027-01-15T08:00:30Z")
        );
        let gone = already_clean("web-pr-9", Some("web"));
        assert_eq!(gone.status, CleanupStatus::AlreadyClean);
        let ci = ci_answer(&done, Some(&web));
        assert_eq!(ci.source_fingerprint, done.source_binding_fingerprint);
        assert_eq!(ci.project_id.as_deref(), Some("shop"));
        assert!(ci.removed_server_applied_route);
    }
}
