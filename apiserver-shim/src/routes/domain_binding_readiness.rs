//! `POST /domain-bindings/dns-readiness/inspect` (Appaloft's route and shape): before or after
//! binding a host name, where it resolves (with the DNS server the certificate pre-flight uses),
//! whether that is the resource's server, the A record to create, and whether another binding
//! holds the name. Berth has no DNS provider connectors: discovery, connector, zone and plan say
//! so, and `actions.canShowManualDns` is the way. Nothing is written.

use std::net::IpAddr;

use axum::extract::State;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::member::OrganizationRole;
use berth_remote::dns;
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::normalized_host_name;
use crate::domain::objects::find_in;
use crate::domain::resource_access::lookup;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::domain_binding_readiness::{
    Actions, Conflict, DnsReadiness, InspectDnsReadiness, Plan, ProviderDiscovery, RequiredRecord,
    Resolution, SelectedConnector, ZoneMatch,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::post::<InspectDnsReadiness, DnsReadiness, _, _>(
        "/domain-bindings/dns-readiness/inspect",
        "Where a host name resolves, against the resource's server, before or after binding it",
        inspect,
    )]
}

/// What is inspected: the organization's namespace, the binding (if any), resource, host name
/// and path prefix.
struct Subject {
    namespace: String,
    binding: Option<DomainBinding>,
    resource_id: String,
    hostname: String,
    path_prefix: String,
}

fn refuse_connector_fields(body: &InspectDnsReadiness) -> ApiResult<()> {
    let given = [
        ("connectorKey", body.connector_key.is_some()),
        ("capabilityKey", body.capability_key.is_some()),
        ("records", body.records.is_some()),
        ("ttl", body.ttl.is_some()),
        ("proxied", body.proxied.is_some()),
    ];
    match given.iter().find(|(_, present)| *present) {
        Some((field, _)) => Err(ApiError::validation(
            field,
            format!("{field}: Berth has no DNS provider connectors; create the records by hand"),
        )
        .with_detail("code", "field_not_supported")),
        None => Ok(()),
    }
}

/// The binding named, or the resource and host name given.
fn subject(state: &AppState, caller: &Caller, body: &InspectDnsReadiness) -> ApiResult<Subject> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    if let Some(id) = &body.domain_binding_id {
        let binding = find_in(
            &state.caches.domain_bindings,
            &organization.namespace,
            id,
            "domain binding",
        )?;
        lookup(state, caller, &binding.spec.resource_id)
            .map_err(|_| ApiError::not_found("domain binding", id))?;
        return Ok(Subject {
            namespace: organization.namespace.clone(),
            resource_id: binding.spec.resource_id.clone(),
            hostname: binding.spec.hostname.clone(),
            path_prefix: binding.spec.path_prefix.clone(),
            binding: Some((*binding).clone()),
        });
    }
    let (Some(resource_id), Some(domain_name)) = (&body.resource_id, &body.domain_name) else {
        return Err(ApiError::validation(
            "domainName",
            "domainBindingId, or resourceId and domainName, is required",
        ));
    };
    let hostname = normalized_host_name(domain_name)?;
    let path_prefix = body.path_prefix.clone().unwrap_or_else(|| "/".into());
    if !path_prefix.starts_with('/') {
        return Err(ApiError::validation(
            "pathPrefix",
            "pathPrefix must start with /",
        ));
    }
    lookup(state, caller, resource_id)?;
    Ok(Subject {
        namespace: organization.namespace.clone(),
        binding: None,
        resource_id: resource_id.clone(),
        hostname,
        path_prefix,
    })
}

/// Another binding of the organization holding the same host name and path prefix.
fn conflict(state: &AppState, subject: &Subject) -> Conflict {
    let namespace = subject.namespace.as_str();
    let own = subject.binding.as_ref().map(|b| b.name_any());
    let taken = state.caches.domain_bindings.state().into_iter().find(|b| {
        b.namespace().as_deref() == Some(namespace)
            && b.spec.hostname == subject.hostname
            && b.spec.path_prefix == subject.path_prefix
            && Some(b.name_any()) != own
    });
    let Some(taken) = taken else {
        return Conflict {
            status: "available".into(),
            conflicting_domain_binding_id: None,
            conflicting_resource_id: None,
            conflicting_project_id: None,
            domain_name: None,
            path_prefix: None,
        };
    };
    let project = find_in(
        &state.caches.resources,
        namespace,
        &taken.spec.resource_id,
        "resource",
    )
    .ok()
    .map(|r| r.spec.project_id.clone());
    Conflict {
        status: "conflict".into(),
        conflicting_domain_binding_id: Some(taken.name_any()),
        conflicting_resource_id: Some(taken.spec.resource_id.clone()),
        conflicting_project_id: project,
        domain_name: Some(taken.spec.hostname.clone()),
        path_prefix: Some(taken.spec.path_prefix.clone()),
    }
}

/// The server the name must lead to: the binding's, else the resource's; its id and host.
fn target_server(state: &AppState, subject: &Subject) -> Option<(String, String)> {
    let namespace = subject.namespace.as_str();
    let resource = find_in(
        &state.caches.resources,
        namespace,
        &subject.resource_id,
        "resource",
    )
    .ok()?;
    let id = subject
        .binding
        .as_ref()
        .and_then(|b| b.spec.server_id.clone())
        .or_else(|| resource.spec.server_id.clone())?;
    let server = find_in(&state.caches.servers, namespace, &id, "server").ok()?;
    Some((id, server.spec.host.clone()))
}

fn addresses(list: &[IpAddr]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

/// Resolves the name and the server's host; the verdict and the A records to create.
async fn resolve(
    state: &AppState,
    hostname: &str,
    server: Option<(String, String)>,
) -> (Resolution, Vec<RequiredRecord>) {
    let Some((server_id, host)) = server else {
        let resolution = Resolution {
            status: "no-server".into(),
            addresses: Vec::new(),
            server_id: None,
            server_addresses: Vec::new(),
            message:
                "the resource names no server yet; set its server to know where the name must lead"
                    .into(),
        };
        return (resolution, Vec::new());
    };
    let server_addresses = match dns::server_addresses(&host).await {
        Ok(addresses) => addresses,
        Err(error) => {
            let resolution = Resolution {
                status: "lookup-failed".into(),
                addresses: Vec::new(),
                server_id: Some(server_id),
                server_addresses: Vec::new(),
                message: error,
            };
            return (resolution, Vec::new());
        }
    };
    let records = server_addresses
        .iter()
        .filter(|a| a.is_ipv4())
        .map(|a| RequiredRecord {
            name: hostname.to_string(),
            record_type: "A".into(),
            value: a.to_string(),
            purpose: "domain-routing".into(),
        })
        .collect();
    let (status, resolved, message) = match dns::resolve(hostname, state.config.dns_server).await {
        Err(error) => ("lookup-failed", Vec::new(), error),
        Ok(resolved) => match dns::pointing(&resolved, &server_addresses) {
            dns::Pointing::AtServer => (
                "points-at-server",
                resolved,
                format!("{hostname} resolves to server {server_id}"),
            ),
            dns::Pointing::Elsewhere => (
                "points-elsewhere",
                resolved.clone(),
                format!(
                    "{hostname} resolves to {}, not to server {server_id} ({}); change its A record",
                    addresses(&resolved).join(", "),
                    addresses(&server_addresses).join(", ")
                ),
            ),
            dns::Pointing::Nowhere => (
                "not-resolving",
                resolved,
                format!("{hostname} has no A record; point one at server {server_id} ({host})"),
            ),
        },
    };
    let resolution = Resolution {
        status: status.into(),
        addresses: addresses(&resolved),
        server_id: Some(server_id),
        server_addresses: addresses(&server_addresses),
        message,
    };
    (resolution, records)
}

/// The parts that say Berth has no DNS connector.
fn no_connector(
    hostname: &str,
) -> (
    ProviderDiscovery,
    SelectedConnector,
    ZoneMatch,
    Plan,
    Actions,
) {
    let labels: Vec<&str> = hostname.trim_start_matches("*.").split('.').collect();
    let base_domain = labels[labels.len().saturating_sub(2)..].join(".");
    let manual =
        "Berth does not write DNS records; create the required records at your DNS provider";
    (
        ProviderDiscovery {
            status: "unknown".into(),
            hostname: hostname.to_string(),
            base_domain,
            nameservers: Vec::new(),
            provider_id: "unknown".into(),
            provider_title: "Unknown".into(),
            confidence: "unknown".into(),
            message: "Berth does not detect DNS providers".into(),
        },
        SelectedConnector {
            source: "none".into(),
        },
        ZoneMatch {
            status: "no-dns-connections".into(),
        },
        Plan {
            status: "not-requested".into(),
            message: manual.into(),
        },
        Actions {
            can_apply_dns: false,
            can_connect_provider: false,
            can_show_manual_dns: true,
            reason: manual.into(),
        },
    )
}

async fn inspect(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<InspectDnsReadiness>,
) -> ApiResult<Json<DnsReadiness>> {
    refuse_connector_fields(&body)?;
    let subject = subject(&state, &caller, &body)?;
    let conflict = conflict(&state, &subject);
    let server = target_server(&state, &subject);
    let (resolution, required_records) = resolve(&state, &subject.hostname, server).await;
    let (provider_discovery, selected_connector, zone_match, plan, actions) =
        no_connector(&subject.hostname);
    let ready = resolution.status == "points-at-server" && conflict.status == "available";
    Ok(Json(DnsReadiness {
        domain_binding_id: subject.binding.as_ref().map(|b| b.name_any()),
        resource_id: subject.resource_id,
        domain_name: subject.hostname,
        path_prefix: subject.path_prefix,
        provider_discovery,
        selected_connector,
        zone_match,
        conflict,
        plan,
        actions,
        resolution,
        required_records,
        ready,
    }))
}
