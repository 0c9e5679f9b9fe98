//! What an attempt will do, computed without any I/O: container name, labels, environment, health
//! check and the edge-proxy route (spec §2.2 "Network profile", "Access profile"; the route
//! itself comes from [`crate::routes`]).

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::common::SourceDescriptor;
use berth_crds::preview::{PREVIEW_LABEL, preview_network};
use berth_crds::resource::{
    ExposureMode, HealthCheckKind, Resource, RestartPolicy, UpstreamProtocol,
};
use berth_crds::server::Server;
use berth_crds::{
    DEPLOYMENT_LABEL, ENVIRONMENT_LABEL, MANAGED_LABEL, NAMESPACE_LABEL, PROJECT_LABEL,
    RESOURCE_LABEL,
};
use berth_remote::edge_failures::route_vars;
use berth_remote::edge_proxy::EDGE_NETWORK;
use kube::ResourceExt;
use serde_json::{Value, json};

use berth_crds::deployment::DeploymentErrorCode as Code;

mod packaging;
mod storage;

use super::container_settings::ContainerSettings;
use crate::routes::{InvalidPort, RoutePlan, exposure, internal_port, route};

pub use self::storage::{AttachedVolumes, VolumeMount};

pub use self::packaging::{
    BUILT_REPOSITORY_PREFIX, BuildPlan, Commands, DEFAULT_DOCKERFILE, GitOrigin, Origin, Packaging,
    Recipe, built_repository, built_service_tag, built_tag, packaging_of, slash_path,
};

/// What tells that a new container is healthy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A GET of `path` on `port` answering `expected_status`.
    Http {
        path: String,
        port: u16,
        expected_status: u16,
    },
    /// The port accepting a connection (`upstreamProtocol: tcp`).
    Tcp { port: u16 },
    /// A command run in the container by `/bin/sh -c` exiting 0.
    Command { command: String },
    /// No port and no command (a worker): still running, never restarted, once the start
    /// period is over.
    Running,
}

/// A health check with its defaults resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthPlan {
    pub probe: Probe,
    pub interval: Duration,
    pub timeout: Duration,
    pub retries: u32,
    pub start_period: Duration,
}

impl HealthPlan {
    /// The port probed, if the check is one of a port.
    pub fn port(&self) -> Option<u16> {
        match self.probe {
            Probe::Http { port, .. } | Probe::Tcp { port } => Some(port),
            Probe::Command { .. } | Probe::Running => None,
        }
    }
}

/// Everything the deploy and verify phases need.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub container_name: String,
    /// The resource's [`upstream_alias`].
    pub upstream: String,
    /// The Docker network the container serves on: the shared edge network, or a preview's
    /// own ([`serving_network`]).
    pub network: String,
    pub image: String,
    /// How the package phase gets `image` onto the server.
    pub packaging: Packaging,
    pub labels: HashMap<String, String>,
    /// Runtime variables as Docker's `KEY=value` list; filled from the effective config
    /// (`config::apply_to`), empty until then.
    pub env: Vec<String>,
    /// Build-time variables, passed as Docker build args to image builds only.
    pub build_args: HashMap<String, String>,
    /// Secret values of the configuration: masked in anything recorded from the container.
    pub secret_values: Vec<String>,
    pub restart_policy: RestartPolicy,
    /// Docker does not restart the container until it passed its health check: an attempt's
    /// new container that crashes at start is a failed deploy (with its exit code kept), not
    /// a restart loop. Off for a container drift repair starts.
    pub restart_held: bool,
    /// `runtimeProfile.startCommand`: run by `/bin/sh -c` in place of the image's command.
    pub start_command: Option<String>,
    /// The Compose service settings of a stack's routed container (filled in by the package
    /// phase, which reads the Compose file).
    pub compose: Option<Box<ContainerSettings>>,
    /// The port the app listens on; `None` for one that listens on none (a worker).
    pub internal_port: Option<u16>,
    pub health: HealthPlan,
    pub route: Option<RoutePlan>,
    /// Host port the container port is published on (`direct-port` exposure).
    pub host_port: Option<u16>,
    /// What the resource's storage attachments mount into the container.
    pub volumes: Vec<VolumeMount>,
    /// Private networks of the managed dependencies the resource binds, joined after creation;
    /// put in by `config` with the bindings' URLs.
    pub dependency_networks: Vec<String>,
    /// Files put into the container before it starts (the certificate authority a bound
    /// database's URL names); put in by `config` with the bindings' URLs.
    pub files: Vec<ContainerFile>,
}

/// A file put into a container before it starts; never a secret (it is world-readable there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerFile {
    /// Absolute path in the container.
    pub path: String,
    pub contents: String,
}

/// Why an attempt cannot be planned; the message goes into `lastError`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub code: Code,
    pub message: String,
}

fn plan_error(code: Code, message: impl Into<String>) -> PlanError {
    PlanError {
        code,
        message: message.into(),
    }
}

impl From<InvalidPort> for PlanError {
    fn from(invalid: InvalidPort) -> Self {
        plan_error(Code::InternalPortInvalid, invalid.to_string())
    }
}

fn upstream(resource: &Resource) -> UpstreamProtocol {
    resource
        .spec
        .network_profile
        .as_ref()
        .map_or(UpstreamProtocol::Http, |n| n.upstream_protocol)
}

/// The published host port of a `direct-port` resource.
fn host_port(resource: &Resource) -> Result<Option<u16>, PlanError> {
    if exposure(resource) != ExposureMode::DirectPort {
        return Ok(None);
    }
    let declared = resource
        .spec
        .network_profile
        .as_ref()
        .and_then(|n| n.host_port);
    let Some(port) = declared else {
        return Err(plan_error(
            Code::HostPortMissing,
            "networkProfile.hostPort is required with exposureMode direct-port",
        ));
    };
    u16::try_from(port).map(Some).map_err(|_| {
        plan_error(
            Code::HostPortInvalid,
            format!("networkProfile.hostPort {port} is not a TCP port"),
        )
    })
}

pub use berth_remote::edge_proxy::route_id;

/// Longest name Docker's embedded DNS resolves: one DNS label.
const MAX_DNS_LABEL: usize = 63;

/// Docker name of the container an attempt starts; the proxy dials it by this name through
/// Docker's DNS, which resolved dotted names only intermittently, hence dashes. Docker's DNS
/// does not answer for names longer than one DNS label, so a long name keeps its readable start
/// and ends in a hash of the whole: still unique per attempt, still the same on every call.
pub fn container_name(namespace: &str, resource: &str, deployment: &str) -> String {
    let full = format!("berth-{namespace}-{resource}-{deployment}");
    if full.len() <= MAX_DNS_LABEL {
        return full;
    }
    use sha2::{Digest, Sha256};
    let hash = hex::encode(&Sha256::digest(full.as_bytes())[..6]);
    let keep = MAX_DNS_LABEL - hash.len() - 1;
    let start = full[..keep].trim_end_matches('-');
    format!("{start}-{hash}")
}

/// The resource's stable name on the edge network: the serving container carries it as a
/// network alias and the proxy's route dials only it, so a redeploy moves the alias to the new
/// container and never touches the proxy's configuration (which would close kept-alive client
/// connections). A hash keeps it one DNS label.
pub fn upstream_alias(namespace: &str, resource: &str) -> String {
    use sha2::{Digest, Sha256};
    let hash = hex::encode(&Sha256::digest(format!("{namespace}/{resource}").as_bytes())[..8]);
    format!("berth-upstream-{hash}")
}

/// The network `resource`'s serving container joins: a preview's own (it must not reach
/// production's containers nor another preview's), else the shared edge network.
pub fn serving_network(resource: &Resource) -> String {
    let namespace = resource.namespace().unwrap_or_default();
    match resource.labels().get(PREVIEW_LABEL) {
        Some(preview) => preview_network(&namespace, preview),
        None => EDGE_NETWORK.to_string(),
    }
}

/// The resource's health check with its defaults, for an app on `port` (if any).
fn health_plan(resource: &Resource, port: Option<u16>) -> Result<HealthPlan, PlanError> {
    let check = resource
        .spec
        .runtime_profile
        .as_ref()
        .and_then(|r| r.health_check.clone());
    let secs = |s: i32| Duration::from_secs(u64::try_from(s.max(1)).unwrap_or(1));
    let Some(check) = check else {
        let probe = match port {
            Some(port) => port_probe(resource, "/".into(), port, 200),
            None => Probe::Running,
        };
        return Ok(HealthPlan {
            probe,
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(5),
            retries: 3,
            start_period: Duration::ZERO,
        });
    };
    let probe = match (check.kind, check.command) {
        (HealthCheckKind::Command, Some(command)) => Probe::Command { command },
        (HealthCheckKind::Command, None) => {
            return Err(plan_error(
                Code::HealthCheckInvalid,
                "runtimeProfile.healthCheck.command is required with type command",
            ));
        }
        (HealthCheckKind::Http, _) => {
            let port = check.port.and_then(|p| u16::try_from(p).ok()).or(port);
            let Some(port) = port else {
                return Err(plan_error(
                    Code::HealthCheckInvalid,
                    "an http health check needs a port: set networkProfile.internalPort or \
                     runtimeProfile.healthCheck.port, or use type command",
                ));
            };
            let expected = u16::try_from(check.expected_status_code).unwrap_or(200);
            port_probe(resource, check.path, port, expected)
        }
    };
    Ok(HealthPlan {
        probe,
        interval: secs(check.interval_seconds),
        timeout: secs(check.timeout_seconds),
        retries: u32::try_from(check.retries).unwrap_or(0),
        start_period: Duration::from_secs(u64::try_from(check.start_period_seconds).unwrap_or(0)),
    })
}

/// An HTTP check of `port`, or a connection for `upstreamProtocol: tcp`.
fn port_probe(resource: &Resource, path: String, port: u16, expected_status: u16) -> Probe {
    match upstream(resource) {
        UpstreamProtocol::Tcp => Probe::Tcp { port },
        UpstreamProtocol::Http => Probe::Http {
            path,
            port,
            expected_status,
        },
    }
}

/// Plans an attempt of `deployment_name` for `resource` on `server` from `source`, mounting
/// the StorageVolumes its attachments name (`volumes`, looked up by the caller).
pub fn plan(
    resource: &Resource,
    server: &Server,
    deployment_name: &str,
    source: Option<&SourceDescriptor>,
    volumes: &AttachedVolumes,
) -> Result<Plan, PlanError> {
    let source = source
        .or(resource.spec.source.as_ref())
        .ok_or_else(|| plan_error(Code::SourceMissing, "the resource declares no source"))?;
    let packaging = packaging_of(resource, server, source)?;
    let internal_port = internal_port(resource)?;
    if upstream(resource) == UpstreamProtocol::Tcp
        && exposure(resource) == ExposureMode::ReverseProxy
    {
        return Err(plan_error(
            Code::TcpReverseProxyUnsupported,
            "the edge proxy routes HTTP only; use networkProfile.exposureMode direct-port or none \
             for upstreamProtocol tcp",
        ));
    }
    let host_port = host_port(resource)?;
    let mounts = storage::mounts(resource, volumes)?;
    let runtime = resource.spec.runtime_profile.clone();
    let health = health_plan(resource, internal_port)?;
    let namespace = resource.namespace().unwrap_or_default();
    let resource_name = resource.name_any();
    let mut labels = HashMap::from([
        (MANAGED_LABEL.to_string(), "true".to_string()),
        (RESOURCE_LABEL.to_string(), resource_name.clone()),
        (DEPLOYMENT_LABEL.to_string(), deployment_name.to_string()),
        (PROJECT_LABEL.to_string(), resource.spec.project_id.clone()),
        (
            ENVIRONMENT_LABEL.to_string(),
            resource.spec.environment_id.clone(),
        ),
        (NAMESPACE_LABEL.to_string(), namespace.clone()),
    ]);
    if let Some(preview) = resource.labels().get(PREVIEW_LABEL) {
        labels.insert(PREVIEW_LABEL.to_string(), preview.clone());
    }
    Ok(Plan {
        container_name: container_name(&namespace, &resource_name, deployment_name),
        upstream: upstream_alias(&namespace, &resource_name),
        network: serving_network(resource),
        image: match packaging {
            Packaging::Pull { .. } => source.locator.clone(),
            _ => built_tag(&namespace, &resource_name, deployment_name),
        },
        packaging,
        labels,
        env: Vec::new(),
        build_args: HashMap::new(),
        secret_values: Vec::new(),
        restart_policy: runtime
            .as_ref()
            .map(|r| r.restart_policy)
            .unwrap_or_default(),
        restart_held: false,
        start_command: runtime.and_then(|r| r.start_command),
        compose: None,
        internal_port,
        health,
        route: route(resource, server),
        host_port,
        volumes: mounts,
        dependency_networks: Vec::new(),
        files: Vec::new(),
    })
}

/// A rollback (`spec.rollbackOf`): the plan serves the earlier attempt's image as it is on the
/// server (pulled only if it went missing), so nothing is fetched or built again; every other
/// part of the plan (configuration, health check, route) is the resource's current one.
pub fn serve_image(plan: &mut Plan, image: &str, pull_secret: Option<String>) {
    plan.image = image.to_string();
    plan.packaging = Packaging::Pull { pull_secret };
}

/// The Caddy route sending the resource's host (and path prefix) to `upstream:port`. Each
/// request dials anew (no upstream keep-alive), so it reaches whichever containers carry the
/// upstream name at that moment; a container that stopped listening is skipped for another.
/// Its vars name the resource to the failure evidence and keep successes out of the access log.
pub fn caddy_route(route: &RoutePlan, upstream: &str, port: u16) -> Value {
    let mut matcher = json!({ "host": [route.hostname] });
    let prefix = route.path_prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        matcher["path"] = json!([prefix, format!("{prefix}/*")]);
    }
    json!({
        "@id": route.id,
        "match": [matcher],
        "handle": [route_vars(&route.resource, &route.path_prefix), {
            "handler": "reverse_proxy",
            "upstreams": [{ "dial": format!("{upstream}:{port}") }],
            "transport": { "protocol": "http", "keep_alive": { "enabled": false } },
            "load_balancing": { "try_duration": "5s", "try_interval": "100ms" },
        }],
        "terminal": true,
    })
}

#[cfg(test)]
pub(super) mod tests;
