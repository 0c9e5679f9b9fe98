//! `GET /audit-events`: writes as the observation store recorded them (`crate::audit`: through
//! the REST API, and around it with kubectl or a GitOps tool), refusals, and the Kubernetes
//! Events of the organization's objects (live from the shim's cache, and kept in the store once
//! the API server expired them), merged newest first. A page ends at `(time, id)`; the next one starts below it.

use std::collections::HashSet;

use axum::extract::State;
use berth_api::activity::{
    AUDIT_LIST_SCHEMA_VERSION, AuditActor, AuditEvent, AuditEventList, AuditFieldChange,
    AuditSource,
};
use berth_observations::{AuditQuery, AuditRecord};
use k8s_openapi::api::events::v1::Event as KubeEvent;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::{namespace_of, resource_filter};
use crate::audit::Verb;
use crate::audit::controller_events::{self, CONTROLLER_ACTOR};
use crate::audit::outside_writes::FIELD_MANAGER_ACTOR;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::deployments;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 100;

/// One item and where it sorts.
struct Item {
    at_ms: i64,
    event: AuditEvent,
}

fn parse_cursor(text: &str) -> ApiResult<(i64, String)> {
    text.split_once('-')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_string())))
        .filter(|(_, id)| !id.is_empty())
        .ok_or_else(|| {
            ApiError::validation("cursor", "cursor must be a nextCursor this list returned")
        })
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<AuditEventList>> {
    known_params(&query, &["resourceId", "aggregateId", "limit", "cursor"])?;
    let namespace = namespace_of(&caller)?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)? as usize;
    let before = query.string("cursor")?.map(parse_cursor).transpose()?;
    let resource = resource_filter(&state, &caller, &namespace, query.string("resourceId")?)?;
    let object = query.string("aggregateId")?.map(str::to_string);
    let store_query = AuditQuery {
        namespace: namespace.clone(),
        resource: resource.clone(),
        object: object.clone(),
        before: before.clone(),
        limit: limit + 1,
    };
    let records = store_call(&state.observations, "audit events", move |store| {
        store.audit_records(&store_query)
    })
    .await?;
    // A kept Event shows as the live one while that lives (its latest occurrence).
    let mut items: Vec<Item> = state
        .caches
        .kube_events
        .state()
        .iter()
        .filter(|e| e.namespace().as_deref() == Some(namespace.as_str()))
        .filter_map(|e| from_kube_event(&state, &caller, e))
        .filter(|item| {
            resource
                .as_ref()
                .is_none_or(|r| item.event.resource_id.as_ref() == Some(r))
        })
        .filter(|item| {
            object
                .as_ref()
                .is_none_or(|o| &item.event.aggregate_id == o)
        })
        .collect();
    let live: HashSet<String> = items
        .iter()
        .map(|item| item.event.audit_event_id.clone())
        .collect();
    items.extend(
        records
            .iter()
            .filter(|r| !live.contains(&r.id) && record_visible(&caller, r))
            .map(from_record),
    );
    let key = |item: &Item| (item.at_ms, item.event.audit_event_id.clone());
    items.retain(|item| before.as_ref().is_none_or(|b| key(item) < *b));
    items.sort_by_key(|item| std::cmp::Reverse(key(item)));
    let has_more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = has_more
        .then(|| items.last())
        .flatten()
        .map(|last| format!("{}-{}", last.at_ms, last.event.audit_event_id));
    Ok(Json(AuditEventList {
        schema_version: AUDIT_LIST_SCHEMA_VERSION.into(),
        items: items.into_iter().map(|item| item.event).collect(),
        next_cursor,
        generated_at: Timestamp::now().to_string(),
    }))
}

/// `Resource` → `resource`, `DomainBinding` → `domain-binding`.
fn kebab(kind: &str) -> String {
    let mut out = String::new();
    for (index, c) in kind.chars().enumerate() {
        if c.is_ascii_uppercase() && index > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// What a deploy token may see of an object: its resource, or the object itself by kind;
/// members see the whole organization.
fn object_visible(caller: &Caller, kind: &str, id: &str, resource: Option<&str>) -> bool {
    if let Some(resource) = resource.filter(|r| !r.is_empty()) {
        return caller.sees(ScopeDimension::Resource, resource);
    }
    let dimension = match kind {
        "Project" => ScopeDimension::Project,
        "Environment" => ScopeDimension::Environment,
        "Server" => ScopeDimension::Target,
        // Organization-wide objects: a scoped token does not see them.
        _ => return !caller.is_limited(),
    };
    caller.sees(dimension, id)
}

fn record_visible(caller: &Caller, record: &AuditRecord) -> bool {
    object_visible(
        caller,
        &record.object_kind,
        &record.object_id,
        Some(&record.resource),
    )
}

fn rfc3339(ms: i64) -> String {
    Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn from_record(record: &AuditRecord) -> Item {
    let detail: serde_json::Value = serde_json::from_str(&record.detail).unwrap_or_default();
    let verb = Verb::of_detail(&detail).as_str();
    let changes: Vec<AuditFieldChange> =
        serde_json::from_value(detail["changes"].clone()).unwrap_or_default();
    let kind = kebab(&record.object_kind);
    let source = match record.actor_kind.as_str() {
        FIELD_MANAGER_ACTOR => AuditSource::KubernetesApi,
        CONTROLLER_ACTOR => AuditSource::KubernetesEvent,
        _ => AuditSource::Rest,
    };
    // A kept Event is typed by its reason.
    let event_type = match detail["eventType"].as_str() {
        Some(reason) => reason.to_string(),
        None => format!("{kind}.{verb}"),
    };
    let mut summary = format!(
        "{} {} {verb} {kind} {}",
        record.actor_kind, record.actor_id, record.object_id
    );
    if let Some(given) = detail["summary"].as_str() {
        summary = given.to_string();
    } else if !changes.is_empty() {
        let fields: Vec<String> = changes
            .iter()
            .map(|c| match c.value {
                Some(value) => format!("{}={value}", c.field),
                None => c.field.clone(),
            })
            .collect();
        summary.push_str(&format!(": {}", fields.join(", ")));
    }
    Item {
        at_ms: record.occurred_ms,
        event: AuditEvent {
            audit_event_id: record.id.clone(),
            aggregate_id: record.object_id.clone(),
            event_type,
            aggregate_kind: kind,
            created_at: rfc3339(record.occurred_ms),
            source,
            actor: AuditActor {
                kind: record.actor_kind.clone(),
                id: record.actor_id.clone(),
            },
            action: record.action.clone(),
            resource_id: (!record.resource.is_empty()).then(|| record.resource.clone()),
            changes,
            summary,
        },
    }
}

/// An Event about one of Berth's objects of the organization, if the caller may see it.
fn from_kube_event(state: &AppState, caller: &Caller, event: &KubeEvent) -> Option<Item> {
    let described = controller_events::describe(&state.caches, event)?;
    if described.kind == "Deployment" {
        let key = ObjectRef::new(&described.name).within(&described.namespace);
        let deployment = state.caches.deployments.get(&key)?;
        if !deployments::visible(caller, &deployment) {
            return None;
        }
    }
    let resource = described.resource.as_deref();
    if !object_visible(caller, &described.kind, &described.name, resource) {
        return None;
    }
    Some(Item {
        at_ms: described.at_ms,
        event: AuditEvent {
            audit_event_id: described.id,
            aggregate_id: described.name,
            aggregate_kind: kebab(&described.kind),
            event_type: described.reason,
            created_at: rfc3339(described.at_ms),
            source: AuditSource::KubernetesEvent,
            actor: AuditActor {
                kind: CONTROLLER_ACTOR.into(),
                id: described.controller,
            },
            action: described.action,
            resource_id: described.resource,
            changes: Vec::new(),
            summary: described.summary,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_kebab_case_and_cursors_are_checked() {
        assert_eq!(kebab("DomainBinding"), "domain-binding");
        assert_eq!(kebab("Resource"), "resource");
        assert_eq!(parse_cursor("17-aud-1").unwrap(), (17, "aud-1".into()));
        let error = parse_cursor("nope").unwrap_err();
        assert_eq!(error.body.details["field"], "cursor");
    }
}
