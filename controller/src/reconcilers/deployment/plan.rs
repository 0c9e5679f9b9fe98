//! What an attempt will do, computed without any I/O: container name, labels, environment, health
//! check and the edge-proxy route (spec §2.2 "Network profile", "Access profile").

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::common::SourceDescriptor;
use berth_crds::resource::{
    AccessScheme, BuildStrategy, ExposureMode, GeneratedAccessMode, HealthCheckKind, Resource,
    ResourceKind, RestartPolicy, UpstreamProtocol,
};
use berth_crds::server::{ProxyKind, Server};
use berth_crds::{
    DEPLOYMENT_LABEL, ENVIRONMENT_LABEL, MANAGED_LABEL, NAMESPACE_LABEL, PROJECT_LABEL,
    RESOURCE_LABEL,
};
use berth_remote::edge_failures::route_vars;
use kube::ResourceExt;
use serde_json::{Value, json};

use berth_crds::deployment::DeploymentErrorCode as Code;

mod packaging;
mod storage;

use super::compose::stack::ContainerSettings;

pub use self::storage::{AttachedVolumes, VolumeMount};

pub use self::packaging::{
    BUILT_REPOSITORY_PREFIX, BuildPlan, Commands, DEFAULT_DOCKERFILE, GitOrigin, Origin, Packaging,
    Recipe, built_tag, packaging_of, slash_path,
};

/// Port a static site's file server listens on when the resource names none.
pub const STATIC_SITE_PORT: u16 = 8080;
/// Domain generated hosts live under when the server names none; `*.localhost` resolves to
/// loopback everywhere, so the URL works from the server itself.
pub const DEFAULT_BASE_DOMAIN: &str = "localhost";

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

/// The host-matched route the edge proxy gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutePlan {
    /// Caddy `@id` of the route; one per resource, replaced on every switch.
    pub id: String,
    /// The resource's name, which the route tells the edge proxy's failure evidence.
    pub resource: String,
    pub hostname: String,
    pub path_prefix: String,
    pub url: String,
}

/// Everything the deploy and verify phases need.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub container_name: String,
    /// The resource's [`upstream_alias`].
    pub upstream: String,
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

fn exposure(resource: &Resource) -> ExposureMode {
    resource
        .spec
        .network_profile
        .as_ref()
        .map_or(ExposureMode::ReverseProxy, |n| n.exposure_mode)
}

fn upstream(resource: &Resource) -> UpstreamProtocol {
    resource
        .spec
        .network_profile
        .as_ref()
        .map_or(UpstreamProtocol::Http, |n| n.upstream_protocol)
}

/// The generated route of `resource` on `server`, or `None` when generated access is off or
/// traffic does not go through the edge proxy (`direct-port`, `none`).
pub fn route(resource: &Resource, server: &Server) -> Option<RoutePlan> {
    // Only a Caddy edge proxy is driven by Berth; other kinds have no route to switch. An app
    // that listens on no port has nothing to route to.
    if server.spec.proxy.kind != ProxyKind::Caddy
        || exposure(resource) != ExposureMode::ReverseProxy
        || !matches!(internal_port(resource), Ok(Some(_)))
    {
        return None;
    }
    let access = resource.spec.access_profile.as_ref();
    if access.is_some_and(|a| a.generated_access_mode == GeneratedAccessMode::Disabled) {
        return None;
    }
    let path_prefix = access.map_or("/".to_string(), |a| a.path_prefix.clone());
    let domain = server
        .spec
        .base_domain
        .clone()
        .unwrap_or_else(|| DEFAULT_BASE_DOMAIN.into());
    let hostname = format!("{}.{domain}", resource.host_slug());
    let port = server.spec.proxy.http_port;
    let url = if port == 80 {
        format!("http://{hostname}{path_prefix}")
    } else {
        format!("http://{hostname}:{port}{path_prefix}")
    };
    Some(RoutePlan {
        id: route_id(
            &resource.namespace().unwrap_or_default(),
            &resource.name_any(),
        ),
        resource: resource.name_any(),
        hostname,
        path_prefix,
        url,
    })
}

/// Where a `direct-port` resource answers: the server's host and the published port, no proxy.
pub fn direct_route(resource: &Resource, server: &Server) -> Option<RoutePlan> {
    let network = resource.spec.network_profile.as_ref()?;
    if network.exposure_mode != ExposureMode::DirectPort {
        return None;
    }
    let port = network.host_port?;
    let hostname = server.spec.host.clone();
    Some(RoutePlan {
        id: String::new(),
        resource: resource.name_any(),
        url: format!("http://{hostname}:{port}/"),
        hostname,
        path_prefix: "/".into(),
    })
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

/// Scheme of generated routes: TLS for generated hosts is not issued yet.
pub const ROUTE_SCHEME: AccessScheme = AccessScheme::Http;

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

/// Whether the resource is (or may turn out to be) a static site, whose file server Berth runs
/// on [`STATIC_SITE_PORT`]: declared so, or `auto` with nothing that says otherwise.
pub fn is_static_site(resource: &Resource) -> bool {
    let strategy = resource
        .spec
        .runtime_profile
        .as_ref()
        .and_then(|r| r.strategy);
    resource.spec.kind == ResourceKind::StaticSite || strategy == Some(BuildStrategy::Static)
}

/// The port the container listens on; static sites default to [`STATIC_SITE_PORT`], since
/// Berth runs their file server itself. Without a network profile the app listens on none
/// (a worker or a queue consumer): it gets no route.
pub fn internal_port(resource: &Resource) -> Result<Option<u16>, PlanError> {
    let Some(network) = resource.spec.network_profile.as_ref() else {
        return Ok(is_static_site(resource).then_some(STATIC_SITE_PORT));
    };
    u16::try_from(network.internal_port).map(Some).map_err(|_| {
        plan_error(
            Code::InternalPortInvalid,
            format!("internalPort {} is not a TCP port", network.internal_port),
        )
    })
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
    let labels = HashMap::from([
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
    Ok(Plan {
        container_name: container_name(&namespace, &resource_name, deployment_name),
        upstream: upstream_alias(&namespace, &resource_name),
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
