//! The diagnostic summary's proxy block: the resource's route as the server's edge proxy
//! (Caddy) holds it, read through the admin API over the tunnel, and a preview of the same
//! route as Traefik `docker-labels`, for people who compare with a Traefik-based platform.
//! Both pass through the resource's masker.

use std::time::Duration;

use berth_crds::health::ResourceHealth;
use berth_crds::masking::Masker;
use berth_crds::resource::Resource;
use berth_crds::server::{ProxyKind, Server};
use berth_remote::EdgeProxy;
use berth_remote::edge_proxy::route_id;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::Value;

use crate::domain::servers::server_connection;
use crate::services::server_access::server_id;
use crate::state::AppState;
use berth_api::diagnostics::{Proxy, Section, SourceError, TlsRoute, Warning};
use berth_api::wire::name_of;

/// How long reading the proxy's configuration may take.
const READ_WITHIN: Duration = Duration::from_secs(15);
const ACTION: &str = "read the edge proxy's configuration";

/// The proxy block; with `include_configuration`, its sections read from the server now.
pub async fn block(
    state: &AppState,
    resource: &Resource,
    server: Option<&Server>,
    health: &ResourceHealth,
    include_configuration: bool,
    masker: &Masker,
    errors: &mut Vec<SourceError>,
) -> (Proxy, usize) {
    let mut proxy = summary(resource, health);
    if !include_configuration {
        return (proxy, 0);
    }
    proxy.configuration_included = true;
    let Some(server) = server.filter(|s| s.spec.proxy.kind != ProxyKind::None) else {
        proxy.configuration_status = Some("not-configured".into());
        return (proxy, 0);
    };
    let routes = match read_routes(state, server).await {
        Ok(routes) => routes,
        Err(message) => {
            proxy.reason_code = Some("proxy_configuration_unavailable".into());
            proxy.phase = Some("proxy-configuration-read".into());
            errors.push(SourceError {
                source: "proxy".into(),
                code: "proxy_configuration_unavailable".into(),
                category: "infra".into(),
                phase: "proxy-configuration-read".into(),
                retryable: true,
                related_entity_id: Some(server.name_any()),
                related_state: None,
                message,
            });
            return (proxy, 0);
        }
    };
    proxy.configuration_generated_at = Some(Timestamp::now().to_string());
    proxy.route_count = routes.len();
    let own_id = route_id(
        &resource.namespace().unwrap_or_default(),
        &resource.name_any(),
    );
    let own = routes
        .iter()
        .find(|r| r.get("@id").and_then(Value::as_str) == Some(own_id.as_str()));
    let Some(own) = own else {
        proxy.configuration_status = Some("not-configured".into());
        proxy.warnings.push(Warning {
            code: "route_not_applied".into(),
            message: "the edge proxy holds no route for this resource".into(),
            details: serde_json::json!({ "routeId": own_id }),
        });
        return (proxy, 0);
    };
    let (sections, masked) = sections(own, masker);
    proxy.configuration_status = Some("applied".into());
    proxy.section_count = sections.len();
    proxy.sections = sections;
    (proxy, masked)
}

/// The block from what the health record already knows, without the configuration.
fn summary(resource: &Resource, health: &ResourceHealth) -> Proxy {
    let tls_routes = resource
        .status
        .as_ref()
        .and_then(|s| s.access_summary.as_ref())
        .and_then(|a| a.latest_generated_access_route.as_ref())
        .map(|route| TlsRoute {
            hostname: route.hostname.clone(),
            path_prefix: route.path_prefix.clone(),
            tls_mode: "disabled".into(),
            scheme: "http".into(),
            automation: "disabled".into(),
            certificate_source: "none".into(),
            platform_certificate_managed: false,
            message: "generated routes are served over HTTP".into(),
        })
        .into_iter()
        .collect();
    let route_status = resource.status.as_ref().and_then(|s| s.proxy_route_status);
    Proxy {
        status: section_status(&health.proxy.status).into(),
        provider_key: health.proxy.provider_key.clone(),
        proxy_route_status: route_status.and_then(name_of),
        configuration_included: false,
        configuration_status: None,
        tls_routes,
        reason_code: health.proxy.reason_code.clone(),
        phase: health
            .proxy
            .reason_code
            .as_ref()
            .map(|_| "proxy-route-realization".into()),
        ..Proxy::default()
    }
}

/// The proxy section's status from the health record's proxy verdict.
fn section_status(proxy: &str) -> &'static str {
    match proxy {
        "ready" => "available",
        "not-ready" => "unavailable",
        "not-configured" => "not-configured",
        _ => "unknown",
    }
}

/// The routes of the edge server, read within [`READ_WITHIN`].
async fn read_routes(state: &AppState, server: &Server) -> Result<Vec<Value>, String> {
    let read = async {
        let (connection, _lease) = server_connection(state, server, ACTION)
            .await
            .map_err(|e| e.body.message.clone())?;
        let proxy = EdgeProxy::new(
            connection,
            &server.spec.docker_socket_path,
            &server_id(server),
        );
        let config = proxy
            .config()
            .await
            .map_err(|e| format!("cannot {ACTION}: {}", e.condition_message()))?;
        Ok(config
            .pointer("/apps/http/servers/edge/routes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    };
    tokio::time::timeout(READ_WITHIN, read)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "cannot {ACTION}: no answer within {} s",
                READ_WITHIN.as_secs()
            ))
        })
}

/// The route as applied and its Traefik preview, masked; and how many values were masked.
pub fn sections(route: &Value, masker: &Masker) -> (Vec<Section>, usize) {
    let applied = serde_json::to_string_pretty(route).unwrap_or_default();
    let (applied, masked_applied) = masker.mask_counted(&applied);
    let labels = traefik_labels(route).join("\n");
    let (labels, masked_labels) = masker.mask_counted(&labels);
    let sections = vec![
        Section {
            id: "caddy-route".into(),
            title: "Caddy route as applied on the server".into(),
            format: "json".into(),
            redacted: masked_applied > 0,
            source: "snapshot".into(),
            content: applied,
        },
        Section {
            id: "traefik-docker-labels".into(),
            title: "The same route as Traefik docker labels (preview)".into(),
            format: "docker-labels".into(),
            redacted: masked_labels > 0,
            source: "provider-rendered".into(),
            content: labels,
        },
    ];
    (sections, masked_applied + masked_labels)
}

/// Traefik labels routing what the Caddy route matches to the same upstream.
fn traefik_labels(route: &Value) -> Vec<String> {
    let id = route
        .get("@id")
        .and_then(Value::as_str)
        .unwrap_or("berth")
        .replace('.', "-");
    let matcher = route.pointer("/match/0");
    let strings = |key: &str| -> Vec<String> {
        matcher
            .and_then(|m| m.get(key))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let hosts: Vec<String> = strings("host")
        .iter()
        .map(|h| format!("Host(`{h}`)"))
        .collect();
    let mut rule = hosts.join(" || ");
    if let Some(prefix) = strings("path").first() {
        rule = format!("({rule}) && PathPrefix(`{prefix}`)");
    }
    let dial = route
        .pointer("/handle/0/upstreams/0/dial")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let port = dial.rsplit_once(':').map_or("", |(_, port)| port);
    vec![
        "traefik.enable=true".into(),
        format!("traefik.http.routers.{id}.rule={rule}"),
        format!("traefik.http.routers.{id}.entrypoints=web"),
        format!("traefik.http.services.{id}.loadbalancer.server.port={port}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn route() -> Value {
        json!({
            "@id": "berth-route.org-a.web",
            "match": [{ "host": ["web.example"], "path": ["/api", "/api/*"] }],
            "handle": [{
                "handler": "reverse_proxy",
                "upstreams": [{ "dial": "berth-web:8080?token=s3cret-value" }],
            }],
        })
    }

    #[test]
    fn the_traefik_preview_routes_the_same_host_path_and_port() {
        let labels = traefik_labels(&json!({
            "@id": "berth-route.org-a.web",
            "match": [{ "host": ["web.example"], "path": ["/api", "/api/*"] }],
            "handle": [{ "upstreams": [{ "dial": "berth-web:8080" }] }],
        }));
        assert!(labels.contains(
            &"traefik.http.routers.berth-route-org-a-web.rule=(Host(`web.example`)) && PathPrefix(`/api`)"
                .to_string()
        ));
        assert!(
            labels.contains(
                &"traefik.http.services.berth-route-org-a-web.loadbalancer.server.port=8080"
                    .to_string()
            )
        );
    }

    #[test]
    fn sections_mask_secret_values_and_say_so() {
        let masker = Masker::new(["s3cret-value"]);
        let (sections, masked) = sections(&route(), &masker);
        assert_eq!(sections.len(), 2);
        assert!(masked >= 1);
        assert!(sections[0].redacted);
        assert_eq!(sections[0].format, "json");
        assert_eq!(sections[1].format, "docker-labels");
        for section in &sections {
            assert!(!section.content.contains("s3cret-value"), "{section:?}");
        }
        assert!(sections[0].content.contains("berth-route.org-a.web"));
    }
}
