//! What happens to an organization's objects, beyond the spec's §4: the change feed
//! (`GET /events/stream`), fed by the shim's watch caches so clients follow changes instead of
//! polling, and the audit events (`GET /audit-events`, Appaloft 1.10.5's route and
//! `audit-events.list/v1` shape): who changed what, from REST writes and the objects'
//! Kubernetes Events.

mod audit;
mod feed;

use berth_api::activity::{AuditEventList, FeedEnvelope};
use berth_crds::member::OrganizationRole;

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<FeedEnvelope, _, _>(
            "/events/stream",
            "Follow changes of the organization's resources, deployments, servers, domain \
             bindings, scheduled tasks and runs, notification channels and deliveries, \
             environments and storage volumes as text/event-stream (event `change`: kind, object id, created, updated \
             or deleted, status, summary), from the shim's watch caches; resumable with \
             Last-Event-ID or `after` (an event id); a position no longer kept is answered \
             with a `resync` event to re-read from. Filters: resourceId (the resource, its \
             deployments, domain bindings and tasks), kind (comma-separated: resource, \
             deployment, server, domain-binding, scheduled-task, scheduled-task-run, \
             notification-channel, notification-delivery, environment, storage-volume)",
            feed::stream,
        )
        .event_stream(),
        Endpoint::get::<AuditEventList, _, _>(
            "/audit-events",
            "Who changed what (audit-events.list/v1), newest first: REST writes with their \
             actor, operation and changed fields, and the objects' Kubernetes Events. Filters: \
             resourceId (the resource and its objects), aggregateId (one object); limit \
             1..100, default 50; cursor from nextCursor",
            audit::list,
        ),
    ]
}

/// The caller's organization namespace (members and deploy tokens).
fn namespace_of(caller: &Caller) -> ApiResult<String> {
    Ok(caller
        .require_role(OrganizationRole::Member)?
        .namespace
        .clone())
}

/// A `resourceId` filter: a resource of the caller's organization inside a deploy token's
/// scope, else 404 (another organization's ids are not revealed).
fn resource_filter(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    id: Option<&str>,
) -> ApiResult<Option<String>> {
    let Some(id) = id else {
        return Ok(None);
    };
    let resource = find_in(&state.caches.resources, namespace, id, "resource")?;
    let spec = &resource.spec;
    let visible = caller.sees(ScopeDimension::Resource, id)
        && caller.sees(ScopeDimension::Project, &spec.project_id)
        && caller.sees(ScopeDimension::Environment, &spec.environment_id);
    if !visible {
        return Err(ApiError::not_found("resource", id));
    }
    Ok(Some(id.to_string()))
}
