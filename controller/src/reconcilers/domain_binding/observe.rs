//! What a DomainBinding's reconcile reads before it decides: the resource and server from the
//! caches, the server's connection, where the host name resolves, the Certificate naming the
//! binding and its key pair. No status is decided here.

use std::sync::Arc;

use berth_crds::certificate::{Certificate, CertificateSpec};
use berth_crds::domain_binding::{DomainBinding, TLS_MODE_AUTO, TLS_MODE_DISABLED};
use berth_remote::{EdgeProxy, ServerConnection, ServerId};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::decide::{KeyPair, Placement, Resolution, Unplaced};
use crate::cache::Caches;
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

/// The Certificate serving this binding (from the cache): one that names it, else (under
/// `auto`) Berth's own, created here: an idempotent apply, made while observing because the key
/// pair is read from the Certificate it yields.
async fn certificate_of(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
) -> Result<Option<Certificate>> {
    let name = binding.name_any();
    let cached = context.caches.certificates.state();
    let naming = cached.iter().filter(|c| {
        c.namespace().as_deref() == Some(namespace)
            && c.spec.domain_binding_id == name
            && c.metadata.deletion_timestamp.is_none()
    });
    // Berth's own (same name) first; otherwise the oldest, by name for a stable choice.
    if let Some(first) = naming.min_by_key(|c| (c.name_any() != name, c.name_any())) {
        return Ok(Some(Certificate::clone(first)));
    }
    if binding.spec.tls_mode != TLS_MODE_AUTO {
        return Ok(None);
    }
    let certificates = Api::<Certificate>::namespaced(context.client.clone(), namespace);
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

/// The certificate's key pair, when its Secret holds one whose chain parses: from the cache,
/// or from the API server when the cache has none yet (a Secret written moments ago does not
/// wake the binding again).
async fn key_pair(
    context: &Context,
    namespace: &str,
    certificate: &Certificate,
) -> Result<Option<KeyPair>> {
    let name = secret_name(certificate);
    let cached = Caches::get(&context.caches.secrets, namespace, &name);
    if let Some(key_pair) = cached.as_deref().and_then(key_pair_in) {
        return Ok(Some(key_pair));
    }
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    Ok(secrets.get_opt(&name).await?.as_ref().and_then(key_pair_in))
}

/// The key pair `secret` holds, if its chain parses.
fn key_pair_in(secret: &Secret) -> Option<KeyPair> {
    let data = secret.data.as_ref()?;
    let (chain, key) = (data.get(TLS_CERT_KEY)?, data.get(TLS_KEY_KEY)?);
    let facts = CertificateFacts::of_chain(&chain.0).ok()?;
    Some(KeyPair {
        facts,
        chain: chain.0.clone(),
        key: key.0.clone(),
    })
}
