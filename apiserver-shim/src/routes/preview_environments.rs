//! Preview environments over REST: Appaloft's `GET /preview-environments`,
//! `GET /preview-environments/{previewEnvironmentId}` and `DELETE` of one. A preview is a
//! PreviewEnvironment a pull request's webhook wrote; the controller deploys it and reports
//! in its status, which the summaries show. Reads come from the watch cache.

use axum::extract::{Path, State};
use berth_api::previews::{
    DeletePreviewEnvironment, LEFTOVERS_SCHEMA, LIST_SCHEMA, PREVIEW_STATUSES,
    PreviewCleanupAnswer, PreviewEnvironmentList, PreviewEnvironmentShow,
    PreviewEnvironmentSummary, PreviewLeftovers, SHOW_SCHEMA,
};
use berth_crds::member::OrganizationRole;
use k8s_openapi::jiff::Timestamp;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::objects::all_in;
use crate::domain::previews::cleanup::{already_clean, answer, remove};
use crate::domain::previews::leftovers as left;
use crate::domain::previews::summary::summary;
use crate::domain::previews::{find, lookup, visible_to};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<PreviewEnvironmentList, _, _>(
            "/preview-environments",
            "List pull requests' previews (filters: projectId, environmentId, resourceId, \
             status active|cleanup-requested, pullRequestNumber), with their URL, the commit \
             serving and the Ready condition",
            list,
        ),
        Endpoint::get::<PreviewLeftovers, _, _>(
            "/preview-environments/leftovers",
            "Admins: what is left of previews that are gone — Kubernetes objects, and containers, \
             networks and volumes on the organization's servers, still carrying a preview's \
             label — with the servers read and those that could not be (and why)",
            leftovers,
        ),
        Endpoint::get::<PreviewEnvironmentShow, _, _>(
            "/preview-environments/{previewEnvironmentId}",
            "Show a preview",
            show,
        ),
        Endpoint::delete::<DeletePreviewEnvironment, PreviewCleanupAnswer, _, _>(
            "/preview-environments/{previewEnvironmentId}",
            "Remove a preview with its environment, resource, containers and route (body or \
             query resourceId optional, and then the preview's): waits up to 45 s, answering \
             `cleaned`, else `retry-scheduled` while the controller finishes; an unknown \
             preview is `already-clean`",
            delete,
        ),
    ]
}

/// The largest pull request number a filter takes (no forge counts further).
const PULL_REQUEST_MAX: u64 = i32::MAX as u64;

/// The list filters.
#[derive(Debug, Default, PartialEq)]
struct Filters {
    project: Option<String>,
    environment: Option<String>,
    resource: Option<String>,
    status: Option<String>,
    number: Option<u64>,
}

impl Filters {
    fn parse(query: &QueryParams) -> ApiResult<Self> {
        known_params(
            query,
            &[
                "projectId",
                "environmentId",
                "resourceId",
                "status",
                "pullRequestNumber",
            ],
        )?;
        let text = |name: &str| query.string(name).map(|v| v.map(str::to_string));
        let number = match query.string("pullRequestNumber")? {
            None => None,
            Some(_) => Some(query.integer("pullRequestNumber", 1, PULL_REQUEST_MAX, 1)?),
        };
        Ok(Self {
            project: text("projectId")?,
            environment: text("environmentId")?,
            resource: text("resourceId")?,
            status: query
                .one_of("status", &PREVIEW_STATUSES, None)?
                .map(str::to_string),
            number,
        })
    }

    fn admit(&self, preview: &PreviewEnvironmentSummary) -> bool {
        let same =
            |filter: &Option<String>, value: &str| filter.as_deref().is_none_or(|f| f == value);
        same(&self.project, &preview.project_id)
            && same(&self.environment, &preview.environment_id)
            && same(&self.resource, &preview.resource_id)
            && same(&self.status, &preview.status)
            && self
                .number
                .is_none_or(|n| n == preview.source.pull_request_number)
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<PreviewEnvironmentList>> {
    let filters = Filters::parse(&query)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let mut items: Vec<_> = all_in(&state.caches.preview_environments, &organization.namespace)
        .iter()
        .filter(|preview| visible_to(&caller, preview))
        .map(|preview| summary(preview))
        .filter(|preview| filters.admit(preview))
        .collect();
    items.sort_by(|a, b| {
        (&a.created_at, &a.preview_environment_id).cmp(&(&b.created_at, &b.preview_environment_id))
    });
    Ok(Json(PreviewEnvironmentList {
        schema_version: LIST_SCHEMA.into(),
        items,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn leftovers(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<PreviewLeftovers>> {
    known_params(&query, &[])?;
    let namespace = &caller.require_role(OrganizationRole::Admin)?.namespace;
    let servers = left::server_things(&state, namespace).await;
    let objects = left::kubernetes_objects(&state, namespace);
    // Read last: a preview made meanwhile is not reported as gone.
    let previews = left::previews_in(&state, namespace);
    let found = [objects, servers.found].concat();
    Ok(Json(PreviewLeftovers {
        schema_version: LEFTOVERS_SCHEMA.into(),
        items: left::leftovers(&previews, found),
        checked_servers: servers.checked,
        unchecked_servers: servers.unchecked,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PreviewEnvironmentShow>> {
    let preview = lookup(&state, &caller, &id)?;
    Ok(Json(PreviewEnvironmentShow {
        schema_version: SHOW_SCHEMA.into(),
        preview_environment: summary(&preview),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
    JsonBody(body): JsonBody<DeletePreviewEnvironment>,
) -> ApiResult<Json<PreviewCleanupAnswer>> {
    known_params(&query, &["resourceId"])?;
    body.validate()?;
    let resource_id = body
        .resource_id
        .or(query.string("resourceId")?.map(str::to_string));
    let Some(preview) = find(&state, &caller, &id)? else {
        return Ok(Json(already_clean(&id, resource_id.as_deref())));
    };
    if let Some(given) = &resource_id
        && given != &preview.spec.resource_id
    {
        return Err(ApiError::validation(
            "resourceId",
            format!(
                "resourceId: preview {id} is of resource {}, not {given}",
                preview.spec.resource_id
            ),
        ));
    }
    let status = remove(&state, &caller, &preview).await?;
    Ok(Json(answer(&preview, status, Timestamp::now())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_checked_and_named() {
        let parse = |pairs: &[(&str, &str)]| Filters::parse(&QueryParams::from_pairs(pairs));
        assert_eq!(parse(&[]).unwrap(), Filters::default());
        let some = parse(&[("resourceId", "web"), ("pullRequestNumber", "7")]).unwrap();
        assert_eq!(
            (some.resource.as_deref(), some.number),
            (Some("web"), Some(7))
        );
        assert!(parse(&[("status", "gone")]).is_err());
        assert!(parse(&[("pullRequestNumber", "0")]).is_err());
        assert!(parse(&[("other", "x")]).is_err());
    }
}
