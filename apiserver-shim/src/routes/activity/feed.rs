//! `GET /events/stream`: the change log of the shim's watch caches (`crate::changes`) as an
//! event stream, only the caller's organization and what a deploy token's scope covers. Each
//! event's id is its position in the log; a client that reconnects with it (Last-Event-ID or
//! `after`) gets every change after it, or a `resync` when those are no longer kept.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use berth_api::activity::{CHANGE_SCHEMA_VERSION, ChangeEvent, ChangeKind, FeedEnvelope};
use berth_api::wire::name_of;
use futures::Stream;
use kube::ResourceExt;
use tokio::sync::mpsc;

use super::{namespace_of, resource_filter};
use berth_crds::condition::{ConditionStatus, READY, find as find_condition};
use berth_crds::environment::Environment;
use berth_crds::server::ServerStatus;

use crate::auth::{Caller, ScopeDimension};
use crate::changes::{Change, ChangeLog, ChangedObject, Gap, position};
use crate::domain::deployments;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::state::AppState;

/// What one stream sends.
struct Filter {
    namespace: String,
    resource: Option<String>,
    kinds: Vec<ChangeKind>,
}

/// Where the client resumes: the sequence after which to send, or a gap to report first.
fn start(log: &ChangeLog, query: &QueryParams, headers: &HeaderMap) -> ApiResult<Result<u64, Gap>> {
    let (field, text) = match query.string("after")? {
        Some(text) => ("after", text.to_string()),
        None => match headers.get("last-event-id") {
            Some(value) => (
                "Last-Event-ID",
                value.to_str().unwrap_or_default().trim().to_string(),
            ),
            // A new client: only what changes from now on.
            None => return Ok(Ok(log.latest())),
        },
    };
    let well_formed = text
        .split_once('-')
        .is_some_and(|(e, s)| e.parse::<u64>().is_ok() && s.parse::<u64>().is_ok());
    if !well_formed {
        return Err(ApiError::validation(
            field,
            format!("{field} must be the id of an event this stream sent (EPOCH-SEQUENCE)"),
        ));
    }
    Ok(log.parse_position(&text))
}

fn kinds(query: &QueryParams) -> ApiResult<Vec<ChangeKind>> {
    let Some(text) = query.string("kind")? else {
        return Ok(ChangeKind::ALL.to_vec());
    };
    text.split(',')
        .map(|name| {
            ChangeKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == name.trim())
                .ok_or_else(|| {
                    let allowed: Vec<&str> = ChangeKind::ALL.iter().map(|k| k.as_str()).collect();
                    ApiError::validation(
                        "kind",
                        format!(
                            "kind must be a comma-separated list of: {}",
                            allowed.join(", ")
                        ),
                    )
                    .with_detail("allowed", allowed)
                })
        })
        .collect()
}

pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    query: QueryParams,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    known_params(&query, &["after", "resourceId", "kind"])?;
    let namespace = namespace_of(&caller)?;
    let log = state.caches.changes.clone();
    let start = start(&log, &query, &headers)?;
    let filter = Filter {
        resource: resource_filter(&state, &caller, &namespace, query.string("resourceId")?)?,
        kinds: kinds(&query)?,
        namespace,
    };
    let (sender, mut receiver) = mpsc::channel(64);
    tokio::spawn(follow(log, caller, filter, start, sender));
    let events = futures::stream::poll_fn(move |context| receiver.poll_recv(context));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Sends every change the caller may see as the log grows, until the client leaves.
async fn follow(
    log: Arc<ChangeLog>,
    caller: Caller,
    filter: Filter,
    start: Result<u64, Gap>,
    sender: mpsc::Sender<Result<Event, Infallible>>,
) {
    let mut wake = log.subscribe();
    let mut after = match start {
        Ok(after) => after,
        Err(Gap) => {
            let latest = log.latest();
            if sender.send(Ok(resync(&log, latest))).await.is_err() {
                return;
            }
            latest
        }
    };
    loop {
        wake.borrow_and_update();
        match log.since(after) {
            Ok(changes) => {
                for change in &changes {
                    after = change.sequence;
                    if !shows(&caller, &filter, change) {
                        continue;
                    }
                    let event = change_event(log.epoch, change);
                    if sender.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
            }
            // The client read more slowly than the log turned over.
            Err(Gap) => {
                after = log.latest();
                if sender.send(Ok(resync(&log, after))).await.is_err() {
                    return;
                }
            }
        }
        tokio::select! {
            changed = wake.changed() => if changed.is_err() { return },
            () = sender.closed() => return,
        }
    }
}

fn resync(log: &ChangeLog, latest: u64) -> Event {
    let id = position(log.epoch, latest);
    let envelope = FeedEnvelope::Resync {
        schema_version: CHANGE_SCHEMA_VERSION.into(),
        event_id: id.clone(),
        reason: "changes after the given id are no longer kept; read the objects again".into(),
    };
    sse(&envelope, "resync", id)
}

fn sse(envelope: &FeedEnvelope, name: &str, id: String) -> Event {
    Event::default()
        .event(name)
        .id(id)
        .json_data(berth_api::wire::Wire(envelope))
        .unwrap_or_else(|_| Event::default().event(name))
}

/// Whether the caller may see the change and asked for it.
fn shows(caller: &Caller, filter: &Filter, change: &Change) -> bool {
    let object = &change.object;
    if object.namespace() != filter.namespace || !filter.kinds.contains(&object.kind()) {
        return false;
    }
    let ids = Ids::of(object);
    if filter
        .resource
        .as_ref()
        .is_some_and(|wanted| ids.resource.as_ref() != Some(wanted))
    {
        return false;
    }
    match object {
        ChangedObject::Deployment(d) => deployments::visible(caller, d),
        ChangedObject::Server(s) => caller.sees(ScopeDimension::Target, &s.name_any()),
        ChangedObject::Resource(_)
        | ChangedObject::DomainBinding(_)
        | ChangedObject::ScheduledTask(_)
        | ChangedObject::ScheduledTaskRun(_)
        | ChangedObject::NotificationChannel(_)
        | ChangedObject::NotificationDelivery(_)
        | ChangedObject::Environment(_)
        | ChangedObject::StorageVolume(_) => {
            let sees = |dimension, id: &Option<String>| {
                id.as_ref().is_none_or(|id| caller.sees(dimension, id))
            };
            sees(ScopeDimension::Resource, &ids.resource)
                && sees(ScopeDimension::Project, &ids.project)
                && sees(ScopeDimension::Environment, &ids.environment)
        }
    }
}

/// The related ids a change names.
#[derive(Default)]
struct Ids {
    resource: Option<String>,
    project: Option<String>,
    environment: Option<String>,
    server: Option<String>,
}

impl Ids {
    fn of(object: &ChangedObject) -> Self {
        match object {
            ChangedObject::Resource(r) => Self {
                resource: Some(r.name_any()),
                project: Some(r.spec.project_id.clone()),
                environment: Some(r.spec.environment_id.clone()),
                server: r.spec.server_id.clone(),
            },
            ChangedObject::Deployment(d) => Self {
                resource: Some(d.spec.resource_id.clone()),
                project: Some(d.spec.project_id.clone()),
                environment: Some(d.spec.environment_id.clone()),
                server: Some(d.spec.server_id.clone()),
            },
            ChangedObject::Server(_) => Self::default(),
            ChangedObject::DomainBinding(b) => Self {
                resource: Some(b.spec.resource_id.clone()),
                server: b
                    .status
                    .as_ref()
                    .and_then(|s| s.server_id.clone())
                    .or_else(|| b.spec.server_id.clone()),
                ..Self::default()
            },
            ChangedObject::ScheduledTask(t) => Self {
                resource: Some(t.spec.resource_id.clone()),
                ..Self::default()
            },
            ChangedObject::ScheduledTaskRun(r) => Self {
                resource: Some(r.spec.resource_id.clone()),
                ..Self::default()
            },
            ChangedObject::NotificationChannel(c) => Self {
                project: c.spec.project_id.clone(),
                ..Self::default()
            },
            ChangedObject::NotificationDelivery(d) => Self {
                project: d.spec.project_id.clone(),
                ..Self::default()
            },
            ChangedObject::Environment(e) => Self {
                project: Some(e.spec.project_id.clone()),
                environment: Some(e.name_any()),
                ..Self::default()
            },
            ChangedObject::StorageVolume(v) => Self {
                project: Some(v.spec.project_id.clone()),
                environment: Some(v.spec.environment_id.clone()),
                ..Self::default()
            },
        }
    }
}

/// The object's status after the change, and a line for people.
fn status_and_summary(change: &Change) -> (Option<String>, String) {
    let object = &change.object;
    let (status, detail) = status_and_detail(object);
    let kind = object.kind().as_str();
    let what = match &status {
        Some(status) => status.clone(),
        None => name_of(change.change_type).unwrap_or_default(),
    };
    let mut summary = format!("{kind} {} {what}", object.name());
    if change.deleted {
        summary = format!("{kind} {} deleted", object.name());
    } else if let Some(detail) = detail {
        summary.push_str(&format!(" ({detail})"));
    }
    (status, summary)
}

/// The object's status word, and a detail that tells it apart (a step, a host name, a name).
fn status_and_detail(object: &ChangedObject) -> (Option<String>, Option<String>) {
    match object {
        ChangedObject::Deployment(d) => {
            let status = d.status.as_ref();
            (
                status.and_then(|s| s.status).and_then(name_of),
                status
                    .and_then(|s| s.current_step.as_ref())
                    .map(|step| step.label.clone()),
            )
        }
        ChangedObject::Resource(r) => (
            r.status
                .as_ref()
                .and_then(|s| s.last_deployment_status)
                .and_then(name_of),
            None,
        ),
        ChangedObject::Server(s) => (s.status.as_ref().map(server_status), None),
        ChangedObject::DomainBinding(b) => (
            b.status.as_ref().and_then(|s| s.route_status.clone()),
            Some(b.spec.hostname.clone()),
        ),
        ChangedObject::ScheduledTask(t) => (
            name_of(t.spec.state),
            t.status
                .as_ref()
                .and_then(|s| s.next_run_at.as_ref())
                .map(|at| format!("next run {at}")),
        ),
        ChangedObject::ScheduledTaskRun(r) => (
            Some(r.run_status().as_str().to_string()),
            Some(format!("task {}", r.spec.task_id)),
        ),
        ChangedObject::NotificationChannel(c) => (
            c.status
                .as_ref()
                .and_then(|s| s.last_delivery.as_ref())
                .and_then(|d| name_of(d.status)),
            Some(c.spec.name.clone()),
        ),
        ChangedObject::NotificationDelivery(d) => {
            (name_of(d.delivery_status()), name_of(d.spec.event))
        }
        ChangedObject::Environment(e) => (environment_status(e), Some(e.spec.name.clone())),
        ChangedObject::StorageVolume(v) => (
            v.status
                .as_ref()
                .and_then(|s| find_condition(&s.conditions, READY))
                .map(|ready| ready_word(ready.status).to_string()),
            Some(v.spec.name.clone()),
        ),
    }
}

/// A server's lifecycle, or whether it answers when it has none.
fn server_status(status: &ServerStatus) -> String {
    let reachability = if status.reachable {
        "reachable"
    } else {
        "unreachable"
    };
    status
        .lifecycle_status
        .and_then(name_of)
        .unwrap_or_else(|| reachability.into())
}

/// An environment's state: archived, locked (with `locked` in the spec, before the controller
/// writes it) or its lifecycle status.
fn environment_status(environment: &Environment) -> Option<String> {
    let lifecycle = environment
        .status
        .as_ref()
        .and_then(|s| s.lifecycle_status)
        .and_then(name_of);
    match lifecycle.as_deref() {
        Some("archived") => lifecycle,
        _ if environment.spec.locked => Some("locked".into()),
        _ => lifecycle,
    }
}

fn ready_word(status: ConditionStatus) -> &'static str {
    match status {
        ConditionStatus::True => "ready",
        ConditionStatus::False => "not-ready",
        ConditionStatus::Unknown => "unknown",
    }
}

fn change_event(epoch: u64, change: &Change) -> Event {
    let id = position(epoch, change.sequence);
    let ids = Ids::of(&change.object);
    let (status, summary) = status_and_summary(change);
    let envelope = FeedEnvelope::Change {
        schema_version: CHANGE_SCHEMA_VERSION.into(),
        change: ChangeEvent {
            event_id: id.clone(),
            sequence: change.sequence,
            kind: change.object.kind(),
            object_id: change.object.name(),
            change_type: change.change_type,
            occurred_at: change.at.to_string(),
            status,
            resource_id: ids.resource,
            project_id: ids.project,
            environment_id: ids.environment,
            server_id: ids.server,
            summary,
        },
    };
    sse(&envelope, "change", id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{CallerOrganization, Principal};
    use berth_api::deploy_tokens::DeployTokenScope;
    use berth_crds::member::OrganizationRole;
    use berth_crds::server::{Server, ServerSpec};

    fn server(namespace: &str, name: &str) -> ChangedObject {
        let spec: ServerSpec = serde_json::from_value(serde_json::json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
        }))
        .unwrap();
        let mut server = Server::new(name, spec);
        server.metadata.namespace = Some(namespace.into());
        ChangedObject::Server(Arc::new(server))
    }

    fn caller(scope: Option<DeployTokenScope>) -> Caller {
        let principal = match scope {
            Some(scope) => Principal::DeployToken {
                token_id: "dtk-1".into(),
                scope,
            },
            None => Principal::User {
                user_id: "usr-1".into(),
                email: "a@example.com".into(),
                session_id: "ses-1".into(),
            },
        };
        Caller {
            principal,
            organization: Some(CallerOrganization {
                id: "acme".into(),
                namespace: "org-a".into(),
                role: OrganizationRole::Member,
                member_id: None,
            }),
        }
    }

    fn change(object: ChangedObject) -> Change {
        Change {
            sequence: 1,
            at: k8s_openapi::jiff::Timestamp::now(),
            deleted: false,
            change_type: berth_api::activity::ChangeType::Created,
            object,
        }
    }

    #[test]
    fn only_the_callers_organization_kinds_and_scope_are_shown() {
        let filter = Filter {
            namespace: "org-a".into(),
            resource: None,
            kinds: ChangeKind::ALL.to_vec(),
        };
        let member = caller(None);
        assert!(shows(&member, &filter, &change(server("org-a", "srv-1"))));
        assert!(!shows(&member, &filter, &change(server("org-b", "srv-1"))));
        let deployments_only = Filter {
            namespace: "org-a".into(),
            resource: None,
            kinds: vec![ChangeKind::Deployment],
        };
        assert!(!shows(
            &member,
            &deployments_only,
            &change(server("org-a", "srv-1"))
        ));
        let scoped = caller(Some(DeployTokenScope {
            deployment_target_ids: vec!["srv-2".into()],
            ..DeployTokenScope::default()
        }));
        assert!(!shows(&scoped, &filter, &change(server("org-a", "srv-1"))));
        assert!(shows(&scoped, &filter, &change(server("org-a", "srv-2"))));
        // A resource filter leaves out what belongs to no resource.
        let one_resource = Filter {
            resource: Some("res-1".into()),
            ..filter
        };
        assert!(!shows(
            &member,
            &one_resource,
            &change(server("org-a", "srv-1"))
        ));
    }

    #[test]
    fn a_position_must_be_well_formed_and_one_not_kept_is_a_gap() {
        let log = ChangeLog::default();
        log.push(false, server("org-a", "srv-1"));
        let headers = HeaderMap::new();
        let fresh = start(&log, &QueryParams::from_pairs(&[]), &headers).unwrap();
        assert_eq!(fresh, Ok(1), "a new client starts after the latest change");
        let mine = position(log.epoch, 0);
        let resumed = start(
            &log,
            &QueryParams::from_pairs(&[("after", &mine)]),
            &headers,
        );
        assert_eq!(resumed.unwrap(), Ok(0));
        let old = start(
            &log,
            &QueryParams::from_pairs(&[("after", "1-1")]),
            &headers,
        );
        assert_eq!(old.unwrap(), Err(Gap));
        let error = start(&log, &QueryParams::from_pairs(&[("after", "x")]), &headers);
        assert_eq!(error.unwrap_err().body.details["field"], "after");
        let mut bad = HeaderMap::new();
        bad.insert("last-event-id", "42".parse().unwrap());
        let error = start(&log, &QueryParams::from_pairs(&[]), &bad).unwrap_err();
        assert_eq!(error.body.details["field"], "Last-Event-ID");
    }
}
