//! Where a Resource is reached: the port its container listens on and the route to it, through
//! the edge proxy (generated from the server's base domain) or a published port. Computed
//! without I/O from the Resource and its Server, and read by the reconcilers (the deployment
//! plan, the resource's access summary) and by the observers' access-failure evidence.

use std::fmt;

use berth_crds::resource::{
    AccessScheme, BuildStrategy, ExposureMode, GeneratedAccessMode, Resource, ResourceKind,
};
use berth_crds::server::{ProxyKind, Server};
use berth_remote::edge_proxy::route_id;
use kube::ResourceExt;

/// Port a static site's file server listens on when the resource names none.
pub const STATIC_SITE_PORT: u16 = 8080;
/// Domain generated hosts live under when the server names none; `*.localhost` resolves to
/// loopback everywhere, so the URL works from the server itself.
pub const DEFAULT_BASE_DOMAIN: &str = "localhost";

/// Scheme of generated routes: TLS for generated hosts is not issued yet.
pub const ROUTE_SCHEME: AccessScheme = AccessScheme::Http;

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

/// A declared `internalPort` that is no TCP port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidPort(pub i64);

impl fmt::Display for InvalidPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internalPort {} is not a TCP port", self.0)
    }
}

/// How traffic reaches the resource: through the edge proxy unless its network profile says
/// otherwise.
pub fn exposure(resource: &Resource) -> ExposureMode {
    resource
        .spec
        .network_profile
        .as_ref()
        .map_or(ExposureMode::ReverseProxy, |n| n.exposure_mode)
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
pub fn internal_port(resource: &Resource) -> Result<Option<u16>, InvalidPort> {
    let Some(network) = resource.spec.network_profile.as_ref() else {
        return Ok(is_static_site(resource).then_some(STATIC_SITE_PORT));
    };
    u16::try_from(network.internal_port)
        .map(Some)
        .map_err(|_| InvalidPort(network.internal_port))
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
    let hostname = generated_hostname(&resource.host_slug(), Some(server));
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

/// The host name generated for a resource whose host slug is `slug` on `server`: the slug
/// under the server's base domain.
pub fn generated_hostname(slug: &str, server: Option<&Server>) -> String {
    let domain = server.and_then(|s| s.spec.base_domain.as_deref());
    format!("{slug}.{}", domain.unwrap_or(DEFAULT_BASE_DOMAIN))
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
