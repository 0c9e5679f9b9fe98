//! DomainBinding: routes a host name (and path prefix) to a Resource on the edge proxy of the
//! server it runs on, with TLS from its Certificate (DESIGN §5b). Status says whether the host
//! name resolves to that server, whether the route is applied, and whether the proxy serves
//! the issued certificate, checked by a TLS handshake with SNI through the tunnel; only then
//! is it Ready.

mod served_certificate;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::certificate::{Certificate, CertificateSpec};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::domain_binding::{
    DomainBinding, DomainBindingStatus, HttpPolicy, TLS_MODE_AUTO, TLS_MODE_DISABLED,
    condition_type, reason,
};
use berth_remote::edge_tls::{
    CertificateFiles, DomainRoute, DomainTls, TLS_DIR_IN_CONTAINER, TlsParts, certificate_tag,
    domain_route_id, http_route,
};
use berth_remote::{EdgeProxy, ServerId};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};

use super::certificate::{
    CertificateFacts, TLS_CERT_KEY, TLS_KEY_KEY, preflight, secret_name, serving_server,
};
use super::deployment::plan::{internal_port, upstream_alias};
use super::{RESYNC_AFTER, drain, error_policy};
use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::status::apply_status;

const KIND: &str = "DomainBinding";
/// Removes the binding's routes from the edge proxy before the object goes.
pub const FINALIZER: &str = "berth.dev/domain-binding-route";
/// How soon a binding waiting for its server, resource or certificate looks again (a change
/// of its Certificate wakes it sooner).
const WAIT_RECHECK: Duration = Duration::from_secs(15);

pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let bindings = Api::<DomainBinding>::all(context.client.clone());
    let stream = Controller::new(bindings, watcher::Config::default())
        .watches(
            Api::<Certificate>::all(context.client.clone()),
            watcher::Config::default(),
            |certificate| {
                certificate.namespace().map(|namespace| {
                    ObjectRef::new(&certificate.spec.domain_binding_id).within(&namespace)
                })
            },
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(binding: Arc<DomainBinding>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = binding
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<DomainBinding>::namespaced(context.client.clone(), &namespace);
    let ctx = context.clone();
    finalizer(&api, FINALIZER, binding, |event| async move {
        match event {
            FinalizerEvent::Apply(binding) => apply(&ctx, &namespace, &binding).await,
            FinalizerEvent::Cleanup(binding) => {
                remove_routes(&ctx, &namespace, &binding).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// The proxy of the binding's server, when the server is known and connected.
async fn proxy_of(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
) -> std::result::Result<
    (
        Arc<berth_crds::resource::Resource>,
        Arc<berth_crds::server::Server>,
        Arc<berth_remote::ServerConnection>,
        EdgeProxy,
    ),
    (&'static str, String),
> {
    let (resource, server) = serving_server(&context.caches, namespace, binding)
        .map_err(|m| (condition::reason::DEPENDENCY_MISSING, m))?;
    let id = ServerId {
        namespace: namespace.to_string(),
        name: server.name_any(),
    };
    let connection = context.servers.current(&id).await.ok_or_else(|| {
        (
            reason::SERVER_NOT_READY,
            format!("server {} is not connected yet", id.name),
        )
    })?;
    let proxy = EdgeProxy::new(connection.clone(), &server.spec.docker_socket_path, &id);
    Ok((resource, server, connection, proxy))
}

async fn apply(context: &Context, namespace: &str, binding: &DomainBinding) -> Result<Action> {
    let api = Api::<DomainBinding>::namespaced(context.client.clone(), namespace);
    let now = Timestamp::now();
    let generation = binding.metadata.generation;
    let current = binding.status.clone();
    let mut status = current.clone().unwrap_or_default();
    status.observed_generation = generation;
    let hostname = binding.spec.hostname.clone();
    let set =
        |status: &mut DomainBindingStatus, type_: &str, holds: bool, why: &str, message: String| {
            let value = if holds {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            };
            condition::merge(
                &mut status.conditions,
                Condition::new(type_, value, why, message, generation, now),
            );
        };

    let (resource, server, connection, proxy) = match proxy_of(context, namespace, binding).await {
        Ok(found) => found,
        Err((why, message)) => {
            set(&mut status, READY, false, why, message);
            apply_status(&api, binding, current.as_ref(), &status).await?;
            return Ok(Action::requeue(WAIT_RECHECK));
        }
    };
    status.server_id = Some(server.name_any());
    let http_port = u16::try_from(server.spec.proxy.http_port).unwrap_or(80);
    let https_port = u16::try_from(server.spec.proxy.https_port).unwrap_or(443);

    // Verification: the host name leads to this server, as the CA (and users) resolve it.
    let expected = preflight::Expected {
        hostname: &hostname,
        server_name: &server.name_any(),
        server_host: &server.spec.host,
        http_port,
        dns_server: context.acme.dns_server,
    };
    let verified = match preflight::host_name_resolves_to_server(&expected).await {
        Ok(addresses) => {
            status.resolved_addresses = addresses.iter().map(ToString::to_string).collect();
            let message = format!("{hostname} resolves to server {}", server.name_any());
            set(
                &mut status,
                condition_type::VERIFIED,
                true,
                reason::RESOLVES_TO_SERVER,
                message,
            );
            true
        }
        Err(message) => {
            status.resolved_addresses.clear();
            let why = if message.contains("does not resolve") {
                reason::DOES_NOT_RESOLVE
            } else {
                reason::RESOLVES_ELSEWHERE
            };
            set(&mut status, condition_type::VERIFIED, false, why, message);
            false
        }
    };

    // The certificate: Berth's own under `auto`, or any Certificate naming this binding.
    let tls_wanted = binding.spec.tls_mode != TLS_MODE_DISABLED;
    let certificate = if tls_wanted {
        let certificate = certificate_of(context, namespace, binding).await?;
        status.certificate_id = certificate.as_ref().map(|c| c.name_any());
        certificate
    } else {
        status.certificate_id = None;
        None
    };
    let key_pair = match &certificate {
        Some(certificate) => key_pair(context, namespace, certificate, &hostname, now).await?,
        None => None,
    };

    // The route, with TLS once a key pair is at hand.
    let port = internal_port(&resource)
        .map_err(|e| Error::InvalidSpec(e.message))?
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "resource {} listens on no port (it has no networkProfile): a host name cannot \
                 be routed to it",
                binding.spec.resource_id
            ))
        })?;
    let id = domain_route_id(namespace, &binding.name_any());
    let tls = match &key_pair {
        Some((facts, chain, key)) => {
            let files = CertificateFiles::named(&certificate_tag(&id), &facts.chain_digest);
            put_key_pair_files(&proxy, &files, chain, key).await?;
            Some(DomainTls {
                files,
                redirect_to_port: (binding.spec.http_policy == HttpPolicy::Redirect)
                    .then_some(https_port),
            })
        }
        None => None,
    };
    let route = DomainRoute {
        id: id.clone(),
        hostname: hostname.clone(),
        path_prefix: binding.spec.path_prefix.clone(),
        resource: resource.name_any(),
        dial: format!("{}:{port}", upstream_alias(namespace, &resource.name_any())),
        tls,
    };
    let applied = proxy
        .update_routes(|routes, tls_parts| {
            routes.retain(|r| r["@id"] != id.as_str());
            routes.push(http_route(&route));
            tls_parts.set(&id, Some(&route));
        })
        .await;
    let route_applied = match applied {
        Ok(()) => {
            status.route_status = Some("ready".into());
            let message = format!(
                "edge proxy of server {} routes {hostname}{} to resource {}",
                server.name_any(),
                binding.spec.path_prefix,
                resource.name_any()
            );
            set(
                &mut status,
                condition_type::ROUTE_APPLIED,
                true,
                reason::APPLIED,
                message,
            );
            true
        }
        Err(error) => {
            status.route_status = Some("failed".into());
            set(
                &mut status,
                condition_type::ROUTE_APPLIED,
                false,
                reason::NOT_APPLIED,
                error.to_string(),
            );
            false
        }
    };

    // The served certificate, as a client with SNI gets it.
    let tls_served = match (&key_pair, tls_wanted) {
        (_, false) => {
            set(
                &mut status,
                condition_type::CERTIFICATE_SERVED,
                false,
                reason::TLS_DISABLED,
                "tlsMode is disabled".into(),
            );
            status.served_certificate_sha256 = None;
            true
        }
        (None, true) => {
            let message = match &status.certificate_id {
                Some(name) => format!("waiting for certificate {name}"),
                None => "no Certificate names this binding".to_string(),
            };
            set(
                &mut status,
                condition_type::CERTIFICATE_SERVED,
                false,
                reason::WAITING_FOR_CERTIFICATE,
                message,
            );
            false
        }
        (Some((facts, _, _)), true) => {
            match served_certificate::served_leaf_sha256(&connection, https_port, &hostname).await {
                Ok(served) if served == facts.sha256 => {
                    status.served_certificate_sha256 = Some(served);
                    let message = format!(
                        "port {https_port} presents the issued certificate for {hostname} (valid until {})",
                        facts.not_after
                    );
                    set(
                        &mut status,
                        condition_type::CERTIFICATE_SERVED,
                        true,
                        reason::SERVED,
                        message,
                    );
                    true
                }
                Ok(served) => {
                    let message = format!(
                        "port {https_port} presents certificate {served} for {hostname}, not the issued {}",
                        facts.sha256
                    );
                    status.served_certificate_sha256 = Some(served);
                    set(
                        &mut status,
                        condition_type::CERTIFICATE_SERVED,
                        false,
                        reason::SERVED_CERTIFICATE_DIFFERS,
                        message,
                    );
                    false
                }
                Err(message) => {
                    status.served_certificate_sha256 = None;
                    set(
                        &mut status,
                        condition_type::CERTIFICATE_SERVED,
                        false,
                        reason::SERVED_CERTIFICATE_DIFFERS,
                        message,
                    );
                    false
                }
            }
        }
    };

    status.url = Some(url(
        &hostname,
        &binding.spec.path_prefix,
        key_pair.is_some(),
        http_port,
        https_port,
    ));
    let ready = verified && route_applied && tls_served;
    let (why, message) = if ready {
        (
            condition::reason::RECONCILED,
            format!("{} is served", status.url.clone().unwrap_or_default()),
        )
    } else {
        let waiting: Vec<&str> = status
            .conditions
            .iter()
            .filter(|c| {
                c.type_ != READY
                    && c.status == ConditionStatus::False
                    && c.reason != reason::TLS_DISABLED
            })
            .map(|c| c.type_.as_str())
            .collect();
        (
            condition::reason::DEPENDENCY_MISSING,
            format!("not yet: {}", waiting.join(", ")),
        )
    };
    let was_ready = current
        .as_ref()
        .is_some_and(|c| condition::is_true(&c.conditions, READY));
    set(&mut status, READY, ready, why, message.clone());
    apply_status(&api, binding, current.as_ref(), &status).await?;
    if ready && !was_ready {
        context
            .publish_event(
                &binding.object_ref(&()),
                EventType::Normal,
                "Served",
                message,
            )
            .await;
    }
    Ok(Action::requeue(if ready {
        RESYNC_AFTER
    } else {
        WAIT_RECHECK
    }))
}

fn url(hostname: &str, path_prefix: &str, https: bool, http_port: u16, https_port: u16) -> String {
    match (https, https_port, http_port) {
        (true, 443, _) => format!("https://{hostname}{path_prefix}"),
        (true, port, _) => format!("https://{hostname}:{port}{path_prefix}"),
        (false, _, 80) => format!("http://{hostname}{path_prefix}"),
        (false, _, port) => format!("http://{hostname}:{port}{path_prefix}"),
    }
}

/// The Certificate serving this binding: one that names it, else (under `auto`) Berth's own,
/// created here.
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

/// The certificate's key pair, when it is there, names the host name and has not expired.
async fn key_pair(
    context: &Context,
    namespace: &str,
    certificate: &Certificate,
    hostname: &str,
    now: Timestamp,
) -> Result<Option<(CertificateFacts, Vec<u8>, Vec<u8>)>> {
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
        .filter(|f| f.covers(hostname) && f.not_after > now)
        .map(|facts| (facts, chain.0.clone(), key.0.clone())))
}

/// Uploads the key pair unless the proxy already loads these very files.
async fn put_key_pair_files(
    proxy: &EdgeProxy,
    files: &CertificateFiles,
    chain: &[u8],
    key: &[u8],
) -> Result<()> {
    let config = proxy.config().await?;
    let loaded = TlsParts::of(&config)
        .files
        .iter()
        .any(|f| f["certificate"] == files.certificate.as_str());
    if loaded {
        return Ok(());
    }
    let relative = |path: &str| {
        path.trim_start_matches(TLS_DIR_IN_CONTAINER)
            .trim_start_matches('/')
            .to_string()
    };
    let certificate = format!("tls/{}", relative(&files.certificate));
    let key_file = format!("tls/{}", relative(&files.key));
    proxy
        .put_files(&[(certificate.as_str(), chain), (key_file.as_str(), key)])
        .await?;
    Ok(())
}

/// Takes the binding's routes and certificate off its server's edge proxy.
async fn remove_routes(context: &Context, namespace: &str, binding: &DomainBinding) -> Result<()> {
    let Ok((_, _, _, proxy)) = proxy_of(context, namespace, binding).await else {
        // No server (any more) or not connected: nothing Berth could still reach to clean.
        return Ok(());
    };
    let id = domain_route_id(namespace, &binding.name_any());
    proxy
        .update_routes(|routes, tls| {
            routes.retain(|r| r["@id"] != id.as_str());
            tls.set(&id, None);
        })
        .await?;
    Ok(())
}
