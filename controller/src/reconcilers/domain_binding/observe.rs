//! What a DomainBinding's reconcile reads before it decides: the resource and server from the
//! caches, the server's connection, where the host name resolves, the Certificate naming the
//! binding and its key pair. No status is decided here.

use std::sync::Arc;

use berth_crds::certificate::{Certificate, CertificateSpec};
use berth_crds::domain_binding::{DomainBinding, TLS_MODE_AUTO, TLS_MODE_DISABLED};
use berth_remote::{EdgeProxy, ServerConnection, ServerId};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::decide::{KeyPair, Placement, Resolution, Unplaced};
use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::reconcilers::certificate::{
    CertificateFacts, TLS_CERT_KEY, TLS_KEY_KEY, preflight, secret_name, serving_server,
};
use crate::routes::internal_port;

/// The binding's server, reachable: its facts, the resource served and the proxy to edit.
pub struct Edge {
    pub placement: Placement,
    pub resource: Arc<berth_crds::resource::Resource>,
    pub server: Arc<berth_crds::server::Server>,
    pub connection: Arc<ServerConnection>,
    pub proxy: EdgeProxy,
}

/// The proxy of the binding's server, when the resource and server exist and it is connected.
pub async fn edge(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
) -> std::result::Result<Edge, Unplaced> {
    let (resource, server) =
        serving_server(&context.caches, namespace, binding).map_err(Unplaced::Missing)?;
    let id = ServerId {
        namespace: namespace.to_string(),
        name: server.name_any(),
    };
    let connection = context
        .servers
        .current(&id)
        .await
        .ok_or_else(|| Unplaced::NotConnected(id.name.clone()))?;
    let proxy = EdgeProxy::new(connection.clone(), &server.spec.docker_socket_path, &id);
    let placement = Placement {
        server: server.name_any(),
        resource: resource.name_any(),
        http_port: u16::try_from(server.spec.proxy.http_port).unwrap_or(80),
        https_port: u16::try_from(server.spec.proxy.https_port).unwrap_or(443),
    };
    Ok(Edge {
        placement,
        resource,
        server,
        connection,
        proxy,
    })
}

/// Whether the host name leads to this server, as the CA (and users) resolve it.
pub async fn resolution(context: &Context, binding: &DomainBinding, edge: &Edge) -> Resolution {
    let expected = preflight::Expected {
        hostname: &binding.spec.hostname,
        server_name: &edge.placement.server,
        server_host: &edge.server.spec.host,
        http_port: edge.placement.http_port,
        dns_server: context.acme.dns_server,
    };
    preflight::host_name_leads_to_server(&expected).await
}

/// What TLS the binding can have now: the Certificate serving it (`None` while TLS is
/// disabled or no Certificate names it) and its usable key pair, if any.
pub async fn tls(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
    now: Timestamp,
) -> Result<(Option<String>, Option<KeyPair>)> {
    if binding.spec.tls_mode == TLS_MODE_DISABLED {
        return Ok((None, None));
    }
    let Some(certificate) = certificate_of(context, namespace, binding).await? else {
        return Ok((None, None));
    };
    let key_pair = key_pair(context, namespace, &certificate).await?;
    let usable = key_pair.filter(|k| usable(&k.facts, &binding.spec.hostname, now));
    Ok((Some(certificate.name_any()), usable))
}

/// Whether a stored key pair can serve `hostname` at `now`: it names it and has not expired.
pub fn usable(facts: &CertificateFacts, hostname: &str, now: Timestamp) -> bool {
    facts.covers(hostname) && facts.not_after > now
}

/// The port the resource listens on, which the route dials.
pub fn upstream_port(binding: &DomainBinding, edge: &Edge) -> Result<u16> {
    internal_port(&edge.resource)
        .map_err(|e| Error::InvalidSpec(e.to_string()))?
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "resource {} listens on no port (it has no networkProfile): a host name cannot \
                 be routed to it",
                binding.spec.resource_id
            ))
        })
}

/// The Certificate serving this binding: one that names it, else (under `auto`) Berth's own,
/// created here: an idempotent apply, made while observing because the key pair is read from
/// the Certificate it yields.
async fn certificate_of(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
) -> Result<Option<Certificate>> {
    let certificates = Api::<Certificate>::namespaced(context.client.clone(), namespace);
    let name = binding.name_any();
    let mut naming: Vec<Certificate> = certificates
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.spec.domain_binding_id == name && c.metadata.deletion_timestamp.is_none())
        .collect();
    // Berth's own (same name) first; otherwise the oldest, by name for a stable choice.
    naming.sort_by_key(|c| (c.name_any() != name, c.name_any()));
    if let Some(first) = naming.into_iter().next() {
        return Ok(Some(first));
    }
    if binding.spec.tls_mode != TLS_MODE_AUTO {
        return Ok(None);
    }
    let certificate = Certificate {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: binding.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        spec: CertificateSpec {
            domain_binding_id: name.clone(),
            reason: Default::default(),
            provider_key: None,
            challenge_type: Some("http-01".into()),
            secret_name: None,
        },
        status: None,
    };
    let created = certificates
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&certificate),
        )
        .await?;
    Ok(Some(created))
}

/// The certificate's key pair, when its Secret holds one whose chain parses.
async fn key_pair(
    context: &Context,
    namespace: &str,
    certificate: &Certificate,
) -> Result<Option<KeyPair>> {
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let Some(secret) = secrets.get_opt(&secret_name(certificate)).await? else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    let (Some(chain), Some(key)) = (data.get(TLS_CERT_KEY), data.get(TLS_KEY_KEY)) else {
        return Ok(None);
    };
    Ok(CertificateFacts::of_chain(&chain.0)
        .ok()
        .map(|facts| KeyPair {
            facts,
            chain: chain.0.clone(),
            key: key.0.clone(),
        }))
}
