//! `GET /audit-events`: writes as the observation store recorded them (`crate::audit`: through
//! the REST API, and around it with kubectl or a GitOps tool) and the Kubernetes Events of the organization's objects (from the shim's Event cache),
//! merged newest first. A page ends at `(time, id)`; the next one starts below it.

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
/// An Event's note is cut to this many characters.
const MAX_NOTE: usize = 1024;

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
    let mut items: Vec<Item> = records
        .iter()
        .filter(|r| record_visible(&caller, r))
        .map(from_record)
        .collect();
    items.extend(
        state
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
            }),
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
        _ => AuditSource::Rest,
    };
    let mut summary = format!(
        "{} {} {verb} {kind} {}",
        record.actor_kind, record.actor_id, record.object_id
    );
    if !changes.is_empty() {
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
            event_type: format!("{kind}.{verb}"),
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
    let regarding = event.regarding.as_ref()?;
    if !regarding
        .api_version
        .as_deref()
        .is_some_and(|v| v.starts_with("berth.dev/"))
    {
        return None;
    }
    let kind = regarding.kind.clone()?;
    let name = regarding.name.clone()?;
    let namespace = event.namespace().unwrap_or_default();
    let resource = match kind.as_str() {
        "Resource" => Some(name.clone()),
        "Deployment" => {
            let key = ObjectRef::new(&name).within(&namespace);
            let deployment = state.caches.deployments.get(&key)?;
            if !deployments::visible(caller, &deployment) {
                return None;
            }
            Some(deployment.spec.resource_id.clone())
        }
        "DomainBinding" => {
            let key = ObjectRef::new(&name).within(&namespace);
            Some(
                state
                    .caches
                    .domain_bindings
                    .get(&key)?
                    .spec
                    .resource_id
                    .clone(),
            )
        }
        _ => None,
    };
    if !object_visible(caller, &kind, &name, resource.as_deref()) {
        return None;
    }
    let at = event
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.deprecated_last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    let reason = event.reason.clone().unwrap_or_default();
    let mut note = event.note.clone().unwrap_or_default();
    if note.chars().count() > MAX_NOTE {
        note = note.chars().take(MAX_NOTE).collect();
    }
    let controller = event
        .reporting_controller
        .clone()
        .unwrap_or_else(|| "kubernetes".into());
    Some(Item {
        at_ms: at.as_millisecond(),
        event: AuditEvent {
            audit_event_id: format!("kev-{}", event.metadata.uid.clone().unwrap_or_default()),
            aggregate_id: name,
            aggregate_kind: kebab(&kind),
            event_type: reason.clone(),
            created_at: at.to_string(),
            source: AuditSource::KubernetesEvent,
            actor: AuditActor {
                kind: "controller".into(),
                id: controller,
            },
            action: event.action.clone().unwrap_or_default(),
            resource_id: resource,
            changes: Vec::new(),
            summary: if note.is_empty() { reason } else { note },
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
