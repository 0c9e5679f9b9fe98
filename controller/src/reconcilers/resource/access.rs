//! The access summary of a Resource's status: the generated route planned for the next
//! deployment, the one the serving deployment realizes, and the routes of its domain bindings.
//! Pure, but for reading the bindings from the cache.

use std::sync::Arc;

use berth_crds::condition::wire_time;
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::resource::{
    AccessSummary, AppliedAccessRoute, PlannedAccessRoute, ProxyRouteStatus, Resource,
};
use berth_crds::server::{ProxyKind, Server};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::domain_routes::domain_routes;
use crate::context::Context;
use crate::routes::{self, ROUTE_SCHEME, RoutePlan};

/// The resource's DomainBindings, from the cache.
pub(super) fn bindings_of(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Vec<Arc<DomainBinding>> {
    context
        .caches
        .domain_bindings
        .state()
        .into_iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace) && b.spec.resource_id == name)
        .collect()
}

/// The access summary: the generated route planned on `server` and the one `serving`
/// realizes, the domain routes of `bindings`, and whether the edge proxy serves the route.
pub(super) fn summary(
    resource: &Resource,
    server: Option<&Server>,
    serving: Option<&Deployment>,
    route_status: ProxyRouteStatus,
    bindings: &[Arc<DomainBinding>],
) -> AccessSummary {
    let target_port = target_port(resource);
    let generated = generated(resource, server);
    let (durable, applied) =
        domain_routes(bindings.iter().map(AsRef::as_ref), serving, target_port);
    AccessSummary {
        planned_generated_access_route: planned(&generated, target_port),
        latest_generated_access_route: latest(&generated, serving, target_port),
        latest_durable_domain_route: durable,
        latest_server_applied_domain_route: applied,
        proxy_route_status: Some(route_status),
    }
}

/// The port the resource's container listens on; static sites without a network profile
/// listen on Berth's default port.
fn target_port(resource: &Resource) -> i64 {
    routes::internal_port(resource)
        .ok()
        .flatten()
        .map_or(0, i64::from)
}

/// The generated route on the resource's server, and what serves it.
struct Generated {
    route: Option<RoutePlan>,
    proxy_kind: ProxyKind,
    provider_key: Option<String>,
}

/// The server's edge proxy routes the resource, unless it is `direct-port`: the container
/// then answers on the server's own port, no proxy in between.
fn generated(resource: &Resource, server: Option<&Server>) -> Generated {
    if let Some(direct) = server.and_then(|s| routes::direct_route(resource, s)) {
        return Generated {
            route: Some(direct),
            proxy_kind: ProxyKind::None,
            provider_key: None,
        };
    }
    Generated {
        route: server.and_then(|s| routes::route(resource, s)),
        proxy_kind: server.map_or(ProxyKind::Caddy, |s| s.spec.proxy.kind),
        provider_key: Some("caddy".to_string()),
    }
}

/// The generated route the next deployment will serve.
fn planned(generated: &Generated, target_port: i64) -> Option<PlannedAccessRoute> {
    generated.route.as_ref().map(|r| PlannedAccessRoute {
        url: r.url.clone(),
        hostname: r.hostname.clone(),
        scheme: ROUTE_SCHEME,
        provider_key: generated.provider_key.clone(),
        path_prefix: r.path_prefix.clone(),
        proxy_kind: generated.proxy_kind,
        target_port,
    })
}

/// The generated route the serving deployment realizes, as of when it finished.
fn latest(
    generated: &Generated,
    serving: Option<&Deployment>,
    target_port: i64,
) -> Option<AppliedAccessRoute> {
    let (r, d) = generated.route.as_ref().zip(serving)?;
    let finished = d.status.as_ref().and_then(|s| s.finished_at.clone());
    Some(AppliedAccessRoute {
        url: r.url.clone(),
        hostname: r.hostname.clone(),
        scheme: ROUTE_SCHEME,
        provider_key: generated.provider_key.clone(),
        deployment_id: d.name_any(),
        deployment_status: DeploymentState::Succeeded,
        path_prefix: r.path_prefix.clone(),
        proxy_kind: generated.proxy_kind,
        target_port: Some(target_port),
        updated_at: wire_time(&finished.unwrap_or(Time(Timestamp::UNIX_EPOCH))),
    })
}
