//! `GET /deployments` and `GET /deployments/count`: the attempts in the shim's cache (objects
//! that exist) merged with those the archive kept after their objects went, newest first. The
//! cursor is the last item's creation time and name, so a page stays right while attempts
//! start and the controller removes old ones.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use berth_api::common::CountResponse;
use berth_api::deployment_records::DeploymentList;
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::member::OrganizationRole;
use berth_observations::AttemptQuery;
use kube::ResourceExt;

use super::record::summary;
use super::resource_of;
use crate::attempt_archive;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::deployments::{archive_within, attempt_state, visible};
use crate::domain::objects::all_in;
use crate::domain::{environments, projects, servers};
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

const FILTERS: [&str; 5] = [
    "resourceId",
    "projectId",
    "environmentId",
    "serverId",
    "status",
];
const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 500;

/// The filters of one request, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub resource: Option<String>,
    pub project: Option<String>,
    pub environment: Option<String>,
    pub server: Option<String>,
    pub status: Option<DeploymentState>,
}

impl Filters {
    /// Whether `deployment` passes them.
    fn admit(&self, deployment: &Deployment) -> bool {
        let spec = &deployment.spec;
        let same =
            |filter: &Option<String>, value: &String| filter.as_ref().is_none_or(|f| f == value);
        same(&self.resource, &spec.resource_id)
            && same(&self.project, &spec.project_id)
            && same(&self.environment, &spec.environment_id)
            && same(&self.server, &spec.server_id)
            && self.status.is_none_or(|s| s == attempt_state(deployment))
    }
}

/// A status as the wire spells it, or a 422 naming `status`.
fn parse_status(text: &str) -> ApiResult<DeploymentState> {
    serde_json::from_value(serde_json::Value::String(text.into())).map_err(|_| {
        ApiError::validation(
            "status",
            "status must be one of: created, planning, planned, running, cancel-requested, \
             succeeded, failed, canceled, rolled-back",
        )
    })
}

/// Reads and checks the filters: a named object must exist for the caller (404), inside a
/// deploy token's scope (403).
fn filters(state: &AppState, caller: &Caller, query: &QueryParams) -> ApiResult<Filters> {
    let mut filters = Filters::default();
    if let Some(id) = query.string("resourceId")? {
        caller.require_in_scope(ScopeDimension::Resource, id)?;
        crate::domain::resource_access::lookup(state, caller, id)
            .map_err(|e| e.with_detail("field", "resourceId"))?;
        filters.resource = Some(id.into());
    }
    if let Some(id) = query.string("projectId")? {
        caller.require_in_scope(ScopeDimension::Project, id)?;
        projects::lookup(state, caller, id).map_err(|e| e.with_detail("field", "projectId"))?;
        filters.project = Some(id.into());
    }
    if let Some(id) = query.string("environmentId")? {
        caller.require_in_scope(ScopeDimension::Environment, id)?;
        environments::lookup(state, caller, id)
            .map_err(|e| e.with_detail("field", "environmentId"))?;
        filters.environment = Some(id.into());
    }
    if let Some(id) = query.string("serverId")? {
        servers::lookup(state, caller, id).map_err(|e| e.with_detail("field", "serverId"))?;
        filters.server = Some(id.into());
    }
    filters.status = query.string("status")?.map(parse_status).transpose()?;
    Ok(filters)
}

/// `<creation in ms>~<name>`: where the next page starts.
fn cursor_of(deployment: &Deployment) -> String {
    format!("{}~{}", created_ms(deployment), deployment.name_any())
}

fn parse_cursor(text: &str) -> ApiResult<(i64, String)> {
    text.split_once('~')
        .and_then(|(ms, name)| Some((ms.parse().ok()?, name.to_string())))
        .filter(|(_, name)| !name.is_empty())
        .ok_or_else(|| ApiError::validation("cursor", "cursor is not one this API returned"))
}

fn created_ms(deployment: &Deployment) -> i64 {
    deployment
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(0, |t| t.0.as_millisecond())
}

/// Newest first; ties by name, the newer attempt's name sorting after.
fn newest_first(a: &Deployment, b: &Deployment) -> std::cmp::Ordering {
    (created_ms(b), b.name_any()).cmp(&(created_ms(a), a.name_any()))
}

/// The archive query of these filters within the caller's scope.
fn archive_query(namespace: &str, caller: &Caller, filters: &Filters) -> AttemptQuery {
    AttemptQuery {
        resource: filters.resource.clone(),
        project: filters.project.clone(),
        environment: filters.environment.clone(),
        server: filters.server.clone(),
        status: filters
            .status
            .and_then(|s| serde_json::to_value(s).ok()?.as_str().map(str::to_string)),
        ..archive_within(namespace, caller)
    }
}

/// The live attempts the filters select.
fn live(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    filters: &Filters,
) -> Vec<Arc<Deployment>> {
    all_in(&state.caches.deployments, namespace)
        .into_iter()
        .filter(|d| filters.admit(d) && visible(caller, d))
        .collect()
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<DeploymentList>> {
    let namespace = caller
        .require_role(OrganizationRole::Member)?
        .namespace
        .clone();
    let mut allowed = FILTERS.to_vec();
    allowed.extend(["limit", "cursor"]);
    known_params(&query, &allowed)?;
    let filters = filters(&state, &caller, &query)?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)? as usize;
    let before = query.string("cursor")?.map(parse_cursor).transpose()?;
    let is_before = |d: &Deployment| {
        before
            .as_ref()
            .is_none_or(|(ms, name)| (created_ms(d), d.name_any()) < (*ms, name.clone()))
    };
    let mut page: Vec<Deployment> = live(&state, &caller, &namespace, &filters)
        .into_iter()
        .filter(|d| is_before(d))
        .map(|d| Deployment::clone(&d))
        .collect();
    let archive = AttemptQuery {
        before: before.clone(),
        limit: limit + 1,
        ..archive_query(&namespace, &caller, &filters)
    };
    let rows = store_call(&state.observations, "deployment history", move |store| {
        store.removed_attempts(&archive)
    })
    .await?;
    let live_names: std::collections::HashSet<String> = page.iter().map(|d| d.name_any()).collect();
    page.extend(
        rows.iter()
            .filter_map(attempt_archive::object)
            .filter(|d| !live_names.contains(&d.name_any()) && visible(&caller, d)),
    );
    page.sort_by(newest_first);
    let more = page.len() > limit;
    page.truncate(limit);
    let next_cursor = more.then(|| page.last().map(cursor_of)).flatten();
    let counts = timeline_counts(&state, &namespace, &page).await?;
    let items = page
        .iter()
        // An archived attempt of a deleted (or recreated) resource is no longer history.
        .filter_map(|d| {
            let resource = resource_of(&state, d);
            let archived = !live_names.contains(&d.name_any());
            if archived && resource.is_none() {
                return None;
            }
            let count = counts.get(&d.name_any()).copied().unwrap_or(0);
            Some(summary(d, resource.as_deref(), count))
        })
        .collect();
    Ok(Json(DeploymentList { items, next_cursor }))
}

/// Timeline entries per attempt of the page, one store read per resource.
async fn timeline_counts(
    state: &AppState,
    namespace: &str,
    page: &[Deployment],
) -> ApiResult<BTreeMap<String, i64>> {
    let mut by_resource: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for deployment in page {
        by_resource
            .entry(deployment.spec.resource_id.clone())
            .or_default()
            .push(deployment.name_any());
    }
    let namespace = namespace.to_string();
    store_call(&state.observations, "deployment timelines", move |store| {
        let mut counts = BTreeMap::new();
        for (resource, names) in by_resource {
            counts.extend(store.timeline_counts(&namespace, &resource, &names)?);
        }
        Ok(counts)
    })
    .await
}

pub async fn count(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<CountResponse>> {
    let namespace = caller
        .require_role(OrganizationRole::Member)?
        .namespace
        .clone();
    known_params(&query, &FILTERS)?;
    let filters = filters(&state, &caller, &query)?;
    let live = live(&state, &caller, &namespace, &filters).len();
    let archive = archive_query(&namespace, &caller, &filters);
    let removed = store_call(&state.observations, "deployment history", move |store| {
        store.count_removed(&archive)
    })
    .await?;
    Ok(Json(CountResponse {
        count: live + usize::try_from(removed).unwrap_or(usize::MAX),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_a_422_naming_the_field() {
        assert_eq!(
            parse_cursor("17~dep-web-2").unwrap(),
            (17, "dep-web-2".to_string())
        );
        for bad in ["", "17", "x~dep", "17~"] {
            let error = parse_cursor(bad).unwrap_err();
            assert_eq!(error.status, 422, "{bad}");
            assert_eq!(error.body.details["field"], "cursor");
        }
        assert_eq!(
            parse_status("rolled-back").unwrap(),
            DeploymentState::RolledBack
        );
        assert_eq!(
            parse_status("done").unwrap_err().body.details["field"],
            "status"
        );
    }
}
