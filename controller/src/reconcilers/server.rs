//! Server: reach it over SSH (host key pinned), report facts, Docker and the edge proxy in status,
//! and guard its deletion while resources or deployments reference it.

pub mod observe;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, DELETION_BLOCKED};
use berth_crds::dependency_resource::{DependencyResource, DependencySource};
use berth_crds::deployment::Deployment;
use berth_crds::resource::Resource as BerthResource;
use berth_crds::server::{Server, ServerStatus};
use berth_crds::ssh_credential::SshCredential;
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};

use self::observe::observe;
use self::status::desired;
use super::fresh::with_current_finalizers;
use super::policy::{drain, error_policy};
use crate::cache::Subscription;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::observer_tasks;
use crate::reconcilers::event_reason;
use crate::server_connections::{credential_key, endpoint, pinned_host_key, server_id};
use crate::status::StatusWriter;
use berth_remote::error::reason as remote_reason;
use berth_remote::{EdgeProxy, ProxyChange};

const KIND: &str = "Server";
/// Removes the edge proxy and closes the connection before a Server goes away.
pub const FINALIZER: &str = "berth.dev/server-cleanup";
/// Re-check of a healthy server. Its observer notices a broken connection or Docker within
/// seconds and wakes the reconciler; this is only the safety net (and the `lastContactAt`
/// heartbeat).
const HEALTHY_RECHECK: Duration = Duration::from_secs(300);
/// Re-check of a server that is not (fully) working, or whose deletion is blocked.
const UNHEALTHY_RECHECK: Duration = Duration::from_secs(5);

/// What the Server controller reacts to, besides its observers' wake-ups.
pub struct Inputs {
    pub servers: Subscription<Server>,
    pub credentials: Subscription<SshCredential>,
    pub secrets: Subscription<Secret>,
    pub resources: Subscription<BerthResource>,
    pub deployments: Subscription<Deployment>,
    pub woken: UnboundedReceiver<ObjectRef<Server>>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let servers = context.caches.servers.clone();
    let (by_credential, by_secret, by_resource, by_deployment) = (
        servers.clone(),
        servers.clone(),
        servers.clone(),
        servers.clone(),
    );
    let credentials = context.caches.credentials.clone();
    // A credential change (rotated key, Secret fixed) reconnects the servers using it; a
    // resource or deployment change may clear the blocker of a server being deleted.
    let stream = Controller::for_shared_stream(inputs.servers, servers)
        .watches_shared_stream(inputs.credentials, move |credential| {
            let namespace = credential.namespace();
            let name = credential.name_any();
            by_credential
                .state()
                .into_iter()
                .filter(|s| s.namespace() == namespace && s.spec.credential_id == name)
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .collect::<Vec<_>>()
        })
        // The key's Secret may reach its cache after the credential's status reaches this one:
        // whichever arrives last reconnects with the rotated key.
        .watches_shared_stream(inputs.secrets, move |secret| {
            let namespace = secret.namespace();
            let name = secret.name_any();
            let keyed_by_secret: Vec<String> = credentials
                .state()
                .into_iter()
                .filter(|c| {
                    c.namespace() == namespace && c.spec.private_key_secret_ref.name == name
                })
                .map(|c| c.name_any())
                .collect();
            by_secret
                .state()
                .into_iter()
                .filter(|s| {
                    s.namespace() == namespace && keyed_by_secret.contains(&s.spec.credential_id)
                })
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .collect::<Vec<_>>()
        })
        .watches_shared_stream(inputs.resources, move |resource| {
            being_deleted(
                &by_resource,
                resource.namespace(),
                resource.spec.server_id.clone(),
            )
        })
        .watches_shared_stream(inputs.deployments, move |deployment| {
            let server = Some(deployment.spec.server_id.clone());
            being_deleted(&by_deployment, deployment.namespace(), server)
        })
        // Its observer lost or regained the server's Docker events.
        .reconcile_on(inputs.woken)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The named server when it is being deleted: only then do references to it matter.
fn being_deleted(
    servers: &Store<Server>,
    namespace: Option<String>,
    server: Option<String>,
) -> Option<ObjectRef<Server>> {
    let reference = ObjectRef::new(&server?).within(&namespace?);
    let deleting = servers
        .get(&reference)
        .is_some_and(|s| s.metadata.deletion_timestamp.is_some());
    deleting.then_some(reference)
}

/// What keeps the server from being deleted: resources and deployments naming it.
fn delete_blockers(context: &Context, namespace: &str, name: &str) -> Vec<String> {
    let caches = &context.caches;
    let in_namespace =
        |object_namespace: Option<String>| object_namespace.as_deref() == Some(namespace);
    let resources = caches
        .resources
        .state()
        .into_iter()
        .filter(|r| in_namespace(r.namespace()) && r.spec.server_id.as_deref() == Some(name))
        .map(|r| format!("resource/{}", r.name_any()));
    let deployments = caches
        .deployments
        .state()
        .into_iter()
        .filter(|d| in_namespace(d.namespace()) && d.spec.server_id == name)
        .map(|d| format!("deployment/{}", d.name_any()));
    let mut blockers: Vec<String> = resources.chain(deployments).collect();
    blockers.sort();
    blockers
}

/// The managed DependencyResources on server `name`: their containers, networks and volumes
/// live there, and only this server's connection can remove them, so its deletion waits for
/// theirs (an organization's namespace going deletes both at once). Read from the API, not a
/// cache: only a server being deleted asks.
async fn dependencies_on(context: &Context, namespace: &str, name: &str) -> Result<Vec<String>> {
    let api = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    let dependencies = api.list(&ListParams::default()).await?;
    Ok(dependencies
        .items
        .iter()
        .filter(|d| d.spec.server_id == name && d.spec.source == DependencySource::Managed)
        .map(|d| format!("dependencyresource/{}", d.name_any()))
        .collect())
}

async fn reconcile(server: Arc<Server>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = server
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Server>::namespaced(context.client.clone(), &namespace);
    let Some(server) = with_current_finalizers(&api, server, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    if server.metadata.deletion_timestamp.is_some() {
        let mut blockers = delete_blockers(&context, &namespace, &server.name_any());
        blockers.extend(dependencies_on(&context, &namespace, &server.name_any()).await?);
        if !blockers.is_empty() {
            // Blocked: report why and keep the finalizer; cleanup runs once the blockers are gone.
            let current = server.status.as_ref();
            let status = status::blocked(&server, blockers, Timestamp::now());
            StatusWriter::new(&api, server.as_ref())
                .apply(current, &status)
                .await?;
            publish_blocked(&context, &server, current, &status).await;
            return Ok(Action::requeue(UNHEALTHY_RECHECK));
        }
    }
    finalizer(&api, FINALIZER, server, |event| async {
        match event {
            FinalizerEvent::Apply(server) => apply(&server, &context).await,
            FinalizerEvent::Cleanup(server) => cleanup(&server, &context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn apply(server: &Server, context: &Arc<Context>) -> Result<Action> {
    let namespace = server
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Server>::namespaced(context.client.clone(), &namespace);
    let (observation, proxy_change) = observe(context, server).await?;
    if observation
        .docker
        .as_ref()
        .is_some_and(|docker| docker.is_ok())
    {
        observer_tasks::start(context, &server_id(server));
    }
    let current = server.status.as_ref();
    let status = desired(server, &observation, Vec::new(), Timestamp::now());
    StatusWriter::new(&api, server)
        .apply(current, &status)
        .await?;
    publish_changes(context, server, current, &status, proxy_change).await;
    let healthy = condition::is_true(&status.conditions, berth_crds::condition::READY);
    Ok(Action::requeue(if healthy {
        HEALTHY_RECHECK
    } else {
        UNHEALTHY_RECHECK
    }))
}

/// Removes the edge proxy container and closes the connection. An unreachable server (or one
/// whose credential is already gone) does not block deletion forever: the container is left
/// behind and an event says so.
async fn cleanup(server: &Server, context: &Context) -> Result<Action> {
    let id = server_id(server);
    context.observers.stop(&id);
    let reference = server.object_ref(&());
    let connection = match context.servers.current(&id).await {
        Some(connection) => Some(connection),
        None => match credential_key(context, server) {
            Ok(key) => context
                .servers
                .connect(
                    &id,
                    &endpoint(server),
                    &key,
                    pinned_host_key(server).as_deref(),
                )
                .await
                .ok(),
            Err(_) => None,
        },
    };
    match connection {
        Some(connection) => {
            let proxy = EdgeProxy::new(connection, &server.spec.docker_socket_path, &id);
            if proxy.remove().await? {
                let note = format!("removed edge proxy container {}", proxy.names().container);
                context
                    .publish_event(
                        &reference,
                        EventType::Normal,
                        event_reason::PROXY_REMOVED,
                        note,
                    )
                    .await;
            }
            proxy.remove_admin_dir().await?;
        }
        None => {
            let note = "server not reachable during deletion; its edge proxy container, if any, \
                        was left on the host"
                .to_string();
            context
                .publish_event(
                    &reference,
                    EventType::Warning,
                    event_reason::PROXY_NOT_REMOVED,
                    note,
                )
                .await;
        }
    }
    context.servers.remove(&id).await;
    Ok(Action::await_change())
}

/// Tells the notifier a server that was reached (or tried) before cannot be reached now.
fn notify_unreachable(context: &Context, server: &Server, why: &str) {
    let name = server.name_any();
    context.notices.send(crate::notices::Notice {
        namespace: server.namespace().unwrap_or_default(),
        event: berth_crds::notification::NotificationEvent::ServerUnreachable,
        subject: crate::notices::subject("Server", &name, server.spec.name.as_deref()),
        project_id: None,
        resource_id: None,
        summary: why.to_string(),
        occurred_at: k8s_openapi::jiff::Timestamp::now(),
    });
}

/// Events for notable changes: reachability, host key pinned or refused, proxy (re)started.
async fn publish_changes(
    context: &Context,
    server: &Server,
    before: Option<&ServerStatus>,
    after: &ServerStatus,
    proxy_change: Option<ProxyChange>,
) {
    let reference = server.object_ref(&());
    let reachable_before = before
        .and_then(|b| condition::find(&b.conditions, berth_crds::server::conditions::REACHABLE));
    let reachable_after =
        condition::find(&after.conditions, berth_crds::server::conditions::REACHABLE);
    if let Some(now) = reachable_after {
        let changed =
            reachable_before.is_none_or(|was| was.status != now.status || was.reason != now.reason);
        if changed {
            let (type_, reason) = match (now.status, now.reason.as_str()) {
                (ConditionStatus::True, _) => (EventType::Normal, event_reason::REACHABLE),
                (_, remote_reason::HOST_KEY_MISMATCH) => {
                    (EventType::Warning, event_reason::HOST_KEY_MISMATCH)
                }
                _ => (EventType::Warning, event_reason::UNREACHABLE),
            };
            if type_ == EventType::Warning && reachable_before.is_some() {
                notify_unreachable(context, server, &now.message);
            }
            context
                .publish_event(&reference, type_, reason, now.message.clone())
                .await;
        }
    }
    let pinned_before = before.and_then(|b| b.host_key_fingerprint.as_ref());
    if let (None, Some(pinned)) = (pinned_before, after.host_key_fingerprint.as_ref()) {
        let note = format!("host key {pinned} pinned on first contact");
        context
            .publish_event(
                &reference,
                EventType::Normal,
                event_reason::HOST_KEY_PINNED,
                note,
            )
            .await;
    }
    if let Some(change) = proxy_change {
        let verb = match change {
            ProxyChange::Created => "created and started",
            ProxyChange::Recreated => "recreated with new settings",
            ProxyChange::Started | ProxyChange::Unchanged => "started",
        };
        let note = format!(
            "edge proxy {verb}: {} on HTTP port {}",
            server.spec.proxy.image, server.spec.proxy.http_port
        );
        context
            .publish_event(
                &reference,
                EventType::Normal,
                event_reason::PROXY_STARTED,
                note,
            )
            .await;
    }
}

async fn publish_blocked(
    context: &Context,
    server: &Server,
    before: Option<&ServerStatus>,
    after: &ServerStatus,
) {
    let was_blocked = before.is_some_and(|b| condition::is_true(&b.conditions, DELETION_BLOCKED));
    if !was_blocked && condition::is_true(&after.conditions, DELETION_BLOCKED) {
        let note = format!(
            "deletion blocked while referenced by: {}",
            after.delete_blockers.join(", ")
        );
        context
            .publish_event(
                &server.object_ref(&()),
                EventType::Warning,
                event_reason::DELETION_BLOCKED,
                note,
            )
            .await;
    }
}
