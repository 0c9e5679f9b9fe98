//! Appaloft's `POST /deployments/cleanup-preview`: CI removes the preview of a pull request
//! it closed (a deploy token needs the `preview-cleanup` workflow command, and the repository
//! in its scope when it names repositories). The same removal as
//! `DELETE /preview-environments/{id}`, answered in Appaloft's cleanup shape.

use axum::extract::State;
use berth_api::previews::{CleanupPreview, CleanupPreviewAnswer};
use berth_crds::member::OrganizationRole;
use berth_crds::preview::{PreviewEnvironment, preview_name};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::{Caller, Principal, ScopeDimension};
use crate::domain::previews::cleanup::{already_clean, answer, ci_answer, remove};
use crate::domain::previews::find;
use crate::domain::resource_access;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

/// The workflow command of a preview's removal from CI.
pub const PREVIEW_CLEANUP: &str = "preview-cleanup";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CleanupPreview, CleanupPreviewAnswer, _, _>(
            "/deployments/cleanup-preview",
            "Remove the preview of a pull request of a resource (pullRequestNumber, or previewId \
         `pr-<n>`) with its environment, resource, containers and route; a deploy token needs \
         the `preview-cleanup` workflow command. Waits up to 45 s: `cleaned`, else \
         `retry-scheduled` while the controller finishes; no such preview is `already-clean`",
            cleanup,
        ),
    ]
}

async fn cleanup(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CleanupPreview>,
) -> ApiResult<Json<CleanupPreviewAnswer>> {
    caller.require_role(OrganizationRole::Member)?;
    let number = body.number()?;
    caller.require_in_scope(ScopeDimension::WorkflowCommand, PREVIEW_CLEANUP)?;
    let resource = resource_access::lookup(&state, &caller, &body.resource_id)
        .map_err(|e| e.with_detail("field", "resourceId"))?;
    let id = preview_name(&resource.name_any(), number);
    let Some(preview) = find(&state, &caller, &id)? else {
        let removal = already_clean(&id, Some(&body.resource_id));
        return Ok(Json(ci_answer(&removal, None)));
    };
    check_repository(&caller, &preview)?;
    let status = remove(&state, &caller, &preview).await?;
    let removal = answer(&preview, status, Timestamp::now());
    Ok(Json(ci_answer(&removal, Some(&preview))))
}

/// A deploy token naming repositories may remove only previews of those.
fn check_repository(caller: &Caller, preview: &PreviewEnvironment) -> ApiResult<()> {
    let Principal::DeployToken { scope, .. } = &caller.principal else {
        return Ok(());
    };
    let name = &preview.spec.source.repository_full_name;
    let allowed = &scope.repository_full_names;
    if allowed.is_empty() || allowed.iter().any(|a| a.eq_ignore_ascii_case(name)) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "this deploy token's scope does not include the repository {name}"
    )))
}
