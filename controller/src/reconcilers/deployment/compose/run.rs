//! A stack on the server's Docker: its network, its long-lived service containers (kept when
//! unchanged, replaced when their settings or image changed, started in dependency order with
//! `depends_on` conditions waited for), the routed container's stack membership, and the
//! removal of services the Compose file no longer has.

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::{ContainerCreateBody, EndpointSettings, HealthStatusEnum};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, ListContainersOptionsBuilder,
};

use super::file::{Condition, Dependency};
use super::stack::{SETTINGS_LABEL, Stack, StackService, settings_digest};
use crate::reconcilers::deployment::container_settings::apply_settings;
use crate::reconcilers::deployment::server_target::Target;
use berth_crds::{NAMESPACE_LABEL, RESOURCE_LABEL, SIDECAR_LABEL, owner_labels};
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, is_not_found};

/// How long a service may take to become healthy (or to complete) before its dependents give
/// up.
const CONDITION_TIMEOUT: Duration = Duration::from_secs(120);
const CONDITION_POLL: Duration = Duration::from_millis(500);
/// How long a replaced sidecar has to stop.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Why a stack's service could not be brought up.
#[derive(Debug)]
pub enum StackError {
    Remote(RemoteError),
    /// A dependency did not reach its condition in time, or a service exited.
    Service(String),
}

impl From<RemoteError> for StackError {
    fn from(error: RemoteError) -> Self {
        Self::Remote(error)
    }
}

impl std::fmt::Display for StackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Remote(error) => error.fmt(f),
            Self::Service(message) => f.write_str(message),
        }
    }
}

/// Brings every service but the routed one to its planned state, dependencies first, and
/// waits for what the routed service depends on; returns what each service did.
pub async fn bring_up(target: &Target, stack: &Stack) -> Result<Vec<String>, StackError> {
    let labels = owner_labels(&stack.routed().settings.labels);
    target.ensure_network(&stack.network, &labels).await?;
    let mut done = Vec::new();
    for service in stack.sidecars() {
        wait_for(target, stack, &service.depends_on).await?;
        done.push(reconcile_sidecar(target, service).await?);
    }
    wait_for(target, stack, &stack.routed().depends_on).await?;
    Ok(done)
}

/// Keeps a service's container when it runs with the same settings and image; otherwise
/// replaces it. Returns what happened, for the output.
async fn reconcile_sidecar(target: &Target, service: &StackService) -> Result<String, StackError> {
    let image = image_id(target, service.image.reference()).await?;
    let digest = settings_digest(service, &image);
    let name = &service.container;
    let existing = inspect(target, name).await?;
    if let Some((running, current)) = &existing {
        if current.as_deref() == Some(digest.as_str()) {
            if !running {
                target.start(name).await?;
                return Ok(format!("{}: started again (unchanged)", service.name));
            }
            return Ok(format!("{}: unchanged, kept running", service.name));
        }
        target.stop(name, STOP_GRACE).await?;
        target.remove_container(name).await?;
    }
    create(target, service, &digest).await?;
    target.start(name).await?;
    let verb = if existing.is_some() {
        "replaced"
    } else {
        "started"
    };
    Ok(format!("{}: {verb}", service.name))
}

async fn create(target: &Target, service: &StackService, digest: &str) -> Result<(), StackError> {
    let mut body = ContainerCreateBody {
        image: Some(service.image.reference().to_string()),
        ..Default::default()
    };
    apply_settings(&mut body, &service.settings);
    let labels = body.labels.get_or_insert_default();
    labels.insert(SETTINGS_LABEL.into(), digest.to_string());
    if let Some((network, aliases)) = &service.settings.network {
        body.host_config.get_or_insert_default().network_mode = Some(network.clone());
        body.networking_config = Some(bollard::models::NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                network.clone(),
                EndpointSettings {
                    aliases: Some(aliases.clone()),
                    ..Default::default()
                },
            )])),
        });
    }
    let options = CreateContainerOptionsBuilder::new()
        .name(&service.container)
        .build();
    docker_call(
        &target.connection,
        "creating a stack service container",
        target.docker.create_container(Some(options), body),
    )
    .await?;
    Ok(())
}

/// Waits until each dependency reaches its condition.
async fn wait_for(
    target: &Target,
    stack: &Stack,
    dependencies: &[Dependency],
) -> Result<(), StackError> {
    for dependency in dependencies {
        let Some(service) = stack.service(&dependency.service) else {
            continue;
        };
        if service.name == stack.routed || dependency.condition == Condition::Started {
            continue;
        }
        let deadline = tokio::time::Instant::now() + CONDITION_TIMEOUT;
        loop {
            match condition_reached(target, &service.container, dependency.condition).await? {
                Some(true) => break,
                Some(false) => {
                    return Err(StackError::Service(format!(
                        "service {} exited with an error before it completed",
                        service.name
                    )));
                }
                None if tokio::time::Instant::now() >= deadline => {
                    return Err(StackError::Service(format!(
                        "service {} did not become {} within {}s",
                        service.name,
                        match dependency.condition {
                            Condition::Healthy => "healthy",
                            _ => "complete",
                        },
                        CONDITION_TIMEOUT.as_secs()
                    )));
                }
                None => tokio::time::sleep(CONDITION_POLL).await,
            }
        }
    }
    Ok(())
}

/// Whether `container` reached `condition`: yes, failed for good, or not yet (`None`).
async fn condition_reached(
    target: &Target,
    container: &str,
    condition: Condition,
) -> Result<Option<bool>, RemoteError> {
    let inspected = docker_call(
        &target.connection,
        "inspecting a stack service",
        target
            .docker
            .inspect_container(container, None::<InspectContainerOptions>),
    )
    .await?;
    let state = inspected.state.unwrap_or_default();
    Ok(match condition {
        Condition::Healthy => match state.health.and_then(|h| h.status) {
            Some(HealthStatusEnum::HEALTHY) => Some(true),
            // Without a health check of its own, running is what healthy can mean.
            None | Some(HealthStatusEnum::NONE) => state.running.filter(|r| *r),
            _ => None,
        },
        Condition::CompletedSuccessfully => match state.running {
            Some(false) => Some(state.exit_code == Some(0)),
            _ => None,
        },
        Condition::Started => Some(true),
    })
}

/// The running state and settings digest of a container; `None` when it does not exist.
async fn inspect(
    target: &Target,
    name: &str,
) -> Result<Option<(bool, Option<String>)>, RemoteError> {
    let inspected = docker_call(
        &target.connection,
        "inspecting a stack service",
        target
            .docker
            .inspect_container(name, None::<InspectContainerOptions>),
    )
    .await;
    match inspected {
        Ok(container) => {
            let running = container.state.and_then(|s| s.running).unwrap_or(false);
            let digest = container
                .config
                .and_then(|c| c.labels)
                .and_then(|mut labels| labels.remove(SETTINGS_LABEL));
            Ok(Some((running, digest)))
        }
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

async fn image_id(target: &Target, reference: &str) -> Result<String, RemoteError> {
    let image = docker_call(
        &target.connection,
        "inspecting a service image",
        target.docker.inspect_image(reference),
    )
    .await?;
    Ok(image.id.unwrap_or_default())
}

/// The names of the resource's stack service containers on the server.
async fn sidecars_of(
    target: &Target,
    namespace: &str,
    resource: &str,
) -> Result<Vec<String>, RemoteError> {
    let filters = HashMap::from([(
        "label".to_string(),
        vec![
            format!("{SIDECAR_LABEL}=true"),
            format!("{NAMESPACE_LABEL}={namespace}"),
            format!("{RESOURCE_LABEL}={resource}"),
        ],
    )]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker_call(
        &target.connection,
        "listing stack services",
        target.docker.list_containers(Some(options)),
    )
    .await?;
    Ok(containers
        .into_iter()
        .filter_map(|c| c.names?.into_iter().next())
        .map(|name| name.trim_start_matches('/').to_string())
        .collect())
}

/// Removes a deleted resource's stack: its service containers and its network (the volumes
/// stay, as a resource's storage does).
pub async fn remove_stack(
    target: &Target,
    namespace: &str,
    resource: &str,
) -> Result<(), RemoteError> {
    for name in sidecars_of(target, namespace, resource).await? {
        target.remove_container(&name).await?;
    }
    let network = super::stack::stack_network(namespace, resource);
    target.remove_network(&network).await.map(drop)
}

/// Removes the stack's service containers that `stack` no longer has (a service taken out of
/// the Compose file); their volumes stay.
pub async fn remove_dropped(target: &Target, namespace: &str, resource: &str, stack: &Stack) {
    let Ok(containers) = sidecars_of(target, namespace, resource).await else {
        return;
    };
    let wanted = stack.sidecar_containers();
    for name in &containers {
        let name = name.as_str();
        if !name.is_empty()
            && !wanted.iter().any(|w| w == name)
            && let Err(error) = target.retire(name).await
        {
            tracing::warn!(%error, container = %name, "could not remove a dropped stack service");
        }
    }
}
