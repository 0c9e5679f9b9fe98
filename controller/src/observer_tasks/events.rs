//! The observer's first follower: subscribe to the server's Docker events, list Berth's
//! containers, then follow the events (and re-list on a slow resync) until the subscription
//! breaks; then reconnect with backoff and list again, so no change is lost for good.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::MANAGED_LABEL;
use bollard::Docker;
use bollard::models::{EventMessage, EventMessageTypeEnum};
use bollard::query_parameters::{EventsOptionsBuilder, ListContainersOptionsBuilder};
use futures::StreamExt;
use kube::ResourceExt;

use crate::context::Context;
use crate::observer::index::{Changes, ContainerEvent, Listed, health_in_status};
use crate::observer::{Connectivity, ObservedServer};
use crate::server_connections::server_connection;
use berth_remote::docker::{docker_call, docker_over_ssh_within};
use berth_remote::{ServerConnection, ServerId};

/// A full listing even while events flow: a safety net for anything the stream missed.
const RESYNC: Duration = Duration::from_secs(300);
/// Reconnect backoff after a broken subscription: doubles from the first to the last.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Events replayed from before the listing, so a change between the two is not missed; it
/// also absorbs a small clock skew between the controller and the server.
const REPLAY: Duration = Duration::from_secs(5);

pub async fn observe(context: Arc<Context>, id: ServerId, observed: Arc<ObservedServer>) {
    let mut failures = 0u32;
    loop {
        let outcome = follow(&context, &id, &observed).await;
        match outcome {
            Ok(()) => {
                failures = 0;
                tracing::info!(server = %id, "Docker event stream ended; resubscribing");
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::info!(server = %id, %error, "not observing the server; retrying");
            }
        }
        if observed.set_connectivity(Connectivity::Lost) {
            // The Server reconciler finds out what broke and reports it.
            context.observers.wake.server(&id);
            wake_everything_on(&context, &id);
        }
        tokio::time::sleep(backoff(failures)).await;
    }
}

pub(super) fn backoff(failures: u32) -> Duration {
    let doubled = BACKOFF_FIRST.saturating_mul(1 << failures.min(6));
    doubled.min(BACKOFF_MAX)
}

/// One subscription, from connecting to the stream's end.
async fn follow(
    context: &Arc<Context>,
    id: &ServerId,
    observed: &ObservedServer,
) -> Result<(), String> {
    let (server, connection) = server_connection(context, &id.namespace, &id.name)
        .await
        .map_err(|e| e.to_string())?;
    let socket = server.spec.docker_socket_path.clone();
    // The event stream never ends by itself: only the response headers have a deadline.
    let docker = docker_over_ssh_within(connection.clone(), &socket, connection.timeouts().request);
    let since = unix_seconds_ago(REPLAY).to_string();
    let filters = HashMap::from([
        ("type", vec!["container".to_string()]),
        ("label", vec![format!("{MANAGED_LABEL}=true")]),
    ]);
    let options = EventsOptionsBuilder::new()
        .since(&since)
        .filters(&filters)
        .build();
    let mut events = docker.events(Some(options)).boxed();
    relist(context, id, observed, &connection, &docker).await?;
    observed.bump_epoch();
    if observed.set_connectivity(Connectivity::Live) {
        tracing::info!(server = %id, "following the server's Docker events");
        context.observers.wake.server(id);
        // Whatever happened while nobody watched, each resource checks once.
        wake_everything_on(context, id);
    }
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    loop {
        tokio::select! {
            event = events.next() => match event {
                None => return Ok(()),
                Some(Err(error)) => return Err(error.to_string()),
                Some(Ok(message)) => {
                    let changes = match container_event(message) {
                        Some(event) => observed.apply(&event),
                        None => Changes::default(),
                    };
                    if changes.proxy_started {
                        observed.bump_epoch();
                    }
                    wake(context, id, &changes);
                }
            },
            _ = resync.tick() => relist(context, id, observed, &connection, &docker).await?,
        }
    }
}

/// Lists Berth's containers into the index and wakes the resources whose containers changed.
async fn relist(
    context: &Context,
    id: &ServerId,
    observed: &ObservedServer,
    connection: &ServerConnection,
    docker: &Docker,
) -> Result<(), String> {
    let filters = HashMap::from([("label", vec![format!("{MANAGED_LABEL}=true")])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker_call(
        connection,
        "listing containers",
        docker.list_containers(Some(options)),
    )
    .await
    .map_err(|e| e.to_string())?;
    let listed = containers
        .into_iter()
        .filter_map(|c| {
            let name = c
                .names?
                .into_iter()
                .next()?
                .trim_start_matches('/')
                .to_string();
            Some(Listed {
                id: c.id?,
                name,
                labels: c.labels.unwrap_or_default(),
                running: c.state.is_some_and(|s| s.to_string() == "running"),
                health: c.status.as_deref().and_then(health_in_status),
            })
        })
        .collect();
    let changes = observed.replace(listed);
    wake(context, id, &changes);
    Ok(())
}

fn container_event(message: EventMessage) -> Option<ContainerEvent> {
    if message.typ != Some(EventMessageTypeEnum::CONTAINER) {
        return None;
    }
    let actor = message.actor?;
    Some(ContainerEvent {
        id: actor.id?,
        action: message.action?,
        attributes: actor.attributes.unwrap_or_default(),
    })
}

fn wake(context: &Context, id: &ServerId, changes: &Changes) {
    for (namespace, resource) in &changes.resources {
        context.observers.wake.resource(namespace, resource);
    }
    for (namespace, dependency) in &changes.dependencies {
        context.observers.wake.dependency(namespace, dependency);
    }
    if changes.proxy_started {
        // A restarted proxy holds no routes: every resource it serves writes its own again.
        wake_everything_on(context, id);
    }
    if changes.proxy_stopped {
        // The Server reconciler starts it again (and reports it not Ready meanwhile).
        context.observers.wake.server(id);
    }
}

/// Wakes every Resource deployed to the server, and its managed dependencies.
fn wake_everything_on(context: &Context, id: &ServerId) {
    context.observers.wake.dependencies_on(id);
    for resource in context.caches.resources.state() {
        let here = resource.namespace().as_deref() == Some(id.namespace.as_str())
            && resource.spec.server_id.as_deref() == Some(id.name.as_str());
        if here {
            context
                .observers
                .wake
                .resource(&id.namespace, &resource.name_any());
        }
    }
}

fn unix_seconds_ago(ago: Duration) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(ago).as_secs()
}
