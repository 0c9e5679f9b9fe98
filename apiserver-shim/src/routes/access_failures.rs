//! Spec §4.7 `GET /resource-access-failures/{requestId}`
//! (`resources.access-failure-evidence.lookup/v1`): the evidence of a request an edge proxy
//! could not serve, found by the request id it answered with (`X-Request-Id`). The controller
//! captures it from the proxy's log into the observation store, where it lives 24 hours.
//!
//! Who may read it: evidence of a resource's route, whoever may see that resource; evidence of
//! an unknown host, the members of the organization owning the server whose proxy answered.
//! Anything else reads as unknown: 404, like an id never seen.
//!
//! The controller reads the log as it is written, but a lookup made the moment the answer
//! arrived may come before the evidence: an id shaped like the proxy's (a UUID) is looked up
//! again for up to [`CAPTURE_LAG`] before it counts as unknown; any other id answers at once.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use berth_crds::access_failure::with_current_reason;
use berth_crds::member::OrganizationRole;
use berth_observations::{AccessFailureRecord, ShimStore, StoreError};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::fields::bounded;
use crate::domain::objects::find_in;
use crate::domain::resource_access::lookup;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::access_failures::{AccessFailureLookup, Filters, RelatedIds};

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::get::<AccessFailureLookup, _, _>(
        "/resource-access-failures/{requestId}",
        "The evidence of a request the edge proxy could not serve (unknown host, no route for \
         the path, upstream down or not ready), by the request id it answered with in \
         X-Request-Id; kept 24 hours (query: resourceId, hostname, path: the evidence must \
         match each one given)",
        show,
    )]
}

/// `schemaVersion` of the answer.
pub const SCHEMA_VERSION: &str = "resources.access-failure-evidence.lookup/v1";
/// Where found evidence comes from: the store's short-retention read model.
const MATCHED_SOURCE: &str = "short-retention-evidence-read-model";
/// How long a lookup waits for evidence the controller may not have captured yet.
pub const CAPTURE_LAG: Duration = Duration::from_millis(1500);
const CAPTURE_POLL: Duration = Duration::from_millis(250);

fn parse_filters(query: &QueryParams) -> ApiResult<Filters> {
    known_params(query, &["resourceId", "hostname", "path"])?;
    let field = |name: &str, max: usize| -> ApiResult<Option<String>> {
        let value = query.string(name)?;
        if let Some(value) = value {
            bounded(name, value, max)?;
        }
        Ok(value.map(str::to_string))
    };
    let filters = Filters {
        resource_id: field("resourceId", 253)?,
        hostname: field("hostname", 253)?,
        path: field("path", 2048)?,
    };
    if filters.path.as_ref().is_some_and(|p| !p.starts_with('/')) {
        return Err(ApiError::validation(
            "path",
            "path must start with `/`, e.g. /api/orders",
        ));
    }
    Ok(filters)
}

/// Whether the evidence matches every filter given (hostnames ignore case, as DNS does).
fn matches(filters: &Filters, record: &AccessFailureRecord) -> bool {
    let affected = &record.evidence.affected;
    filters
        .resource_id
        .as_ref()
        .is_none_or(|id| record.resource.as_ref() == Some(id))
        && filters
            .hostname
            .as_ref()
            .is_none_or(|host| host.eq_ignore_ascii_case(&affected.hostname))
        && filters
            .path
            .as_ref()
            .is_none_or(|path| *path == affected.path)
}

/// Whether the caller may read `record` (see the module's documentation).
fn visible(state: &AppState, caller: &Caller, record: &AccessFailureRecord) -> bool {
    let Ok(organization) = caller.require_role(OrganizationRole::Member) else {
        return false;
    };
    if organization.namespace != record.namespace {
        return false;
    }
    match &record.resource {
        Some(resource) => {
            let cached = find_in(
                &state.caches.resources,
                &record.namespace,
                resource,
                "resource",
            );
            match cached {
                Ok(_) => lookup(state, caller, resource).is_ok(),
                // Deleted since: its name is all a deploy token's scope can be checked against.
                Err(_) => caller.sees(ScopeDimension::Resource, resource),
            }
        }
        None => caller.sees(ScopeDimension::Target, &record.server),
    }
}

/// Whether `id` is shaped like the request ids Caddy hands out (a hyphenated UUID).
fn looks_like_request_id(id: &str) -> bool {
    id.len() == 36
        && id.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

async fn read(store: &Arc<dyn ShimStore>, id: &str) -> ApiResult<Option<AccessFailureRecord>> {
    let (store, id) = (Arc::clone(store), id.to_string());
    tokio::task::spawn_blocking(move || store.access_failure(&id))
        .await
        .map_err(ApiError::internal)?
        .map_err(unavailable)
}

fn unavailable(error: StoreError) -> ApiError {
    tracing::warn!(%error, "observation store unavailable");
    ApiError::unavailable("access-failure evidence is unavailable: the observation store failed")
}

/// The record of `id`, waiting out the capture lag for ids the proxy could have handed out.
async fn find(store: &Arc<dyn ShimStore>, id: &str) -> ApiResult<Option<AccessFailureRecord>> {
    let deadline = tokio::time::Instant::now() + CAPTURE_LAG;
    loop {
        let found = read(store, id).await?;
        if found.is_some() || !looks_like_request_id(id) || tokio::time::Instant::now() >= deadline
        {
            return Ok(found);
        }
        tokio::time::sleep(CAPTURE_POLL).await;
    }
}

fn rfc3339(ms: i64) -> String {
    Timestamp::from_millisecond(ms)
        .map(|t| timestamp(&Time(t)))
        .unwrap_or_default()
}

fn related_ids(record: &AccessFailureRecord) -> RelatedIds {
    let route = record.evidence.route.clone().unwrap_or_default();
    RelatedIds {
        resource_id: record.resource.clone(),
        deployment_id: route.deployment_id,
        domain_binding_id: route.domain_binding_id,
        server_id: Some(record.server.clone()),
        destination_id: route.destination_id,
        route_id: route.route_id,
    }
}

fn answer(
    request_id: String,
    filters: Filters,
    record: AccessFailureRecord,
) -> AccessFailureLookup {
    let evidence = with_current_reason(record.evidence.clone());
    AccessFailureLookup {
        schema_version: SCHEMA_VERSION.into(),
        request_id,
        generated_at: timestamp(&Time(Timestamp::now())),
        filters,
        status: "found".into(),
        matched_source: MATCHED_SOURCE.into(),
        related_ids: related_ids(&record),
        next_action: evidence.next_action.clone(),
        captured_at: rfc3339(record.captured_at_ms),
        expires_at: rfc3339(record.expires_at_ms),
        evidence,
    }
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(request_id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<AccessFailureLookup>> {
    bounded("requestId", &request_id, 128)?;
    let filters = parse_filters(&query)?;
    caller.require_role(OrganizationRole::Member)?;
    let not_found = || ApiError::not_found("access failure", &request_id);
    let record = find(&state.observations, &request_id)
        .await?
        .filter(|record| visible(&state, &caller, record) && matches(&filters, record))
        .ok_or_else(not_found)?;
    Ok(Json(answer(request_id, filters, record)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::access_failure::{AccessFailureEvidence, AccessRoute, AffectedRequest};

    fn query(pairs: &[(&str, &str)]) -> QueryParams {
        QueryParams::from_pairs(pairs)
    }

    fn record() -> AccessFailureRecord {
        let evidence = AccessFailureEvidence {
            schema_version: "resource-access-failure/v1".into(),
            request_id: "5f0c2a52-3b8e-4d7e-9d55-0c2f5d1b8a11".into(),
            generated_at: "2030-01-01T00:00:00Z".into(),
            code: "resource_access_upstream_unavailable".into(),
            category: "infra".into(),
            phase: "upstream-connection".into(),
            http_status: 502,
            retriable: true,
            owner_hint: "resource".into(),
            next_action: "check-health".into(),
            affected: AffectedRequest {
                url: "http://shop.localhost/app".into(),
                hostname: "shop.localhost".into(),
                path: "/app".into(),
                method: "GET".into(),
            },
            route: Some(AccessRoute {
                deployment_id: Some("dep-shop-1".into()),
                route_id: Some("berth-route.org-a.shop".into()),
                ..AccessRoute::default()
            }),
            cause_code: None,
            correlation_id: None,
            causation_id: None,
        };
        AccessFailureRecord::captured(
            "org-a",
            "edge",
            Some("shop".into()),
            1_900_000_000_000,
            evidence,
        )
    }

    #[test]
    fn unknown_and_empty_filters_are_refused_by_name() {
        assert_eq!(parse_filters(&query(&[])).unwrap(), Filters::default());
        let bad = [
            (vec![("resource", "shop")], "resource"),
            (vec![("hostname", "")], "hostname"),
            (vec![("path", "app")], "path"),
        ];
        for (pairs, field) in bad {
            let error = parse_filters(&query(&pairs)).unwrap_err();
            assert_eq!(error.status.as_u16(), 422, "{pairs:?}");
            assert_eq!(error.body.details["field"], field, "{error:?}");
        }
    }

    #[test]
    fn every_given_filter_must_match() {
        let record = record();
        let filters = |resource: Option<&str>, host: Option<&str>, path: Option<&str>| Filters {
            resource_id: resource.map(str::to_string),
            hostname: host.map(str::to_string),
            path: path.map(str::to_string),
        };
        assert!(matches(&Filters::default(), &record));
        assert!(matches(
            &filters(Some("shop"), Some("SHOP.localhost"), Some("/app")),
            &record
        ));
        assert!(!matches(&filters(Some("other"), None, None), &record));
        assert!(!matches(&filters(None, Some("x.localhost"), None), &record));
        assert!(!matches(&filters(None, None, Some("/app/x")), &record));
    }

    #[test]
    fn the_answer_carries_related_ids_and_rfc3339_times() {
        let lookup = answer("req".into(), Filters::default(), record());
        assert_eq!(lookup.schema_version, SCHEMA_VERSION);
        assert_eq!(lookup.status, "found");
        assert_eq!(lookup.matched_source, MATCHED_SOURCE);
        assert_eq!(lookup.captured_at, "2030-03-17T17:46:40Z");
        assert_eq!(lookup.expires_at, "2030-03-18T17:46:40Z");
        assert_eq!(lookup.related_ids.server_id.as_deref(), Some("edge"));
        assert_eq!(lookup.related_ids.resource_id.as_deref(), Some("shop"));
        assert_eq!(
            lookup.related_ids.deployment_id.as_deref(),
            Some("dep-shop-1")
        );
        assert_eq!(lookup.next_action, "check-health");
    }

    #[test]
    fn only_uuid_shaped_ids_wait_for_capture() {
        assert!(looks_like_request_id(
            "5f0c2a52-3b8e-4d7e-9d55-0c2f5d1b8a11"
        ));
        assert!(!looks_like_request_id("no-such-request"));
        assert!(!looks_like_request_id(
            "5f0c2a52x3b8e-4d7e-9d55-0c2f5d1b8a11"
        ));
    }
}
