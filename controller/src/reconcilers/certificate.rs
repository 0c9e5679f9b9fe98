//! Certificate: obtains a certificate for a DomainBinding's host name by ACME (HTTP-01 through
//! the edge proxy of the server that routes it), keeps key and chain in a `kubernetes.io/tls`
//! Secret and renews it two thirds into its lifetime (DESIGN §5b). A pre-flight check runs
//! before every order, so a misconfigured domain never reaches the CA. Imported certificates
//! (`providerKey: imported`) are only watched: expiry in status, a warning as it nears.
//!
//! Idle cost: one requeue at the renewal time; nothing in between.

mod acme;
mod decide;
mod facts;
mod issue;
pub mod preflight;
pub mod schedule;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::certificate::{
    ACME_PROVIDER, Certificate, CertificateStatus, IMPORTED_PROVIDER, REQUESTED_ATTEMPT_ANNOTATION,
};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::resource::Resource as BerthResource;
use berth_crds::server::Server;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};

use decide::{Decision, Stamp, Stored, Tell};
pub use facts::CertificateFacts;
use schedule::{Step, next_step};

use super::policy::{drain, error_policy};
use crate::cache::{Caches, Subscription};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::notices::{Notice, subject};
use crate::status::StatusWriter;

const KIND: &str = "Certificate";
/// How soon a certificate whose binding, resource or server is missing looks again.
const DEPENDENCY_RECHECK: Duration = Duration::from_secs(30);
/// Secret keys of a `kubernetes.io/tls` Secret.
pub const TLS_CERT_KEY: &str = "tls.crt";
pub const TLS_KEY_KEY: &str = "tls.key";

/// What the Certificate controller reacts to.
pub struct Inputs {
    pub certificates: Subscription<Certificate>,
    pub bindings: Subscription<DomainBinding>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let certificates = context.caches.certificates.clone();
    let by_binding = certificates.clone();
    let stream = Controller::for_shared_stream(inputs.certificates, certificates)
        .watches_shared_stream(inputs.bindings, move |binding| {
            let namespace = binding.namespace();
            let name = binding.name_any();
            by_binding
                .state()
                .into_iter()
                .filter(|c| c.namespace() == namespace && c.spec.domain_binding_id == name)
                .map(|c| ObjectRef::from_obj(c.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The Secret holding a certificate's key pair.
pub fn secret_name(certificate: &Certificate) -> String {
    certificate
        .spec
        .secret_name
        .clone()
        .unwrap_or_else(|| format!("{}-tls", certificate.name_any()))
}

/// The server whose edge proxy routes a binding: the binding's own, else its resource's.
pub fn serving_server(
    caches: &Caches,
    namespace: &str,
    binding: &DomainBinding,
) -> Result<(Arc<BerthResource>, Arc<Server>), String> {
    let resource_id = &binding.spec.resource_id;
    let resource = Caches::get(&caches.resources, namespace, resource_id)
        .ok_or_else(|| format!("resource {resource_id} does not exist"))?;
    let server_id = binding
        .spec
        .server_id
        .clone()
        .or_else(|| resource.spec.server_id.clone())
        .ok_or_else(|| {
            format!("resource {resource_id} names no server and neither does the binding")
        })?;
    let server = Caches::get(&caches.servers, namespace, &server_id)
        .ok_or_else(|| format!("server {server_id} does not exist"))?;
    Ok((resource, server))
}

/// The key pair stored in `name`, if any: the chain's facts (or why it does not parse).
async fn stored_certificate(
    secrets: &Api<Secret>,
    name: &str,
) -> Result<Option<std::result::Result<CertificateFacts, String>>> {
    let Some(secret) = secrets.get_opt(name).await? else {
        return Ok(None);
    };
    let chain = secret
        .data
        .as_ref()
        .and_then(|d| d.get(TLS_CERT_KEY))
        .map(|c| c.0.clone());
    Ok(Some(match chain {
        Some(chain) => CertificateFacts::of_chain(&chain),
        None => Err(format!("Secret {name} has no {TLS_CERT_KEY}")),
    }))
}

/// One reconcile: the binding and the stored key pair observed, then the imported or the ACME
/// path decides and writes.
async fn reconcile(certificate: Arc<Certificate>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = certificate
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let stamp = Stamp {
        generation: certificate.metadata.generation,
        now: Timestamp::now(),
    };
    let mut status = certificate.status.clone().unwrap_or_default();
    status.observed_generation = stamp.generation;
    let secret = secret_name(&certificate);
    status.secret_name = Some(secret.clone());

    // From the cache: a binding that arrives later wakes the certificates naming it.
    let binding_id = &certificate.spec.domain_binding_id;
    let binding = Caches::get(&context.caches.domain_bindings, &namespace, binding_id);
    let Some(binding) = binding else {
        let decision = decide::binding_missing(status, binding_id, stamp);
        return write(
            &context,
            &certificate,
            certificate.status.as_ref(),
            decision,
        )
        .await;
    };
    status.hostname = Some(binding.spec.hostname.clone());
    let secrets = Api::<Secret>::namespaced(context.client.clone(), &namespace);
    let stored = stored_certificate(&secrets, &secret).await?;
    let provider = certificate
        .spec
        .provider_key
        .as_deref()
        .unwrap_or(ACME_PROVIDER);
    if provider == IMPORTED_PROVIDER {
        let current = certificate.status.as_ref();
        let decision = decide::imported(current, status, stored, stamp);
        return write(&context, &certificate, current, decision).await;
    }
    if provider != ACME_PROVIDER {
        return Err(Error::InvalidSpec(format!(
            "providerKey {provider:?} is not supported; use {ACME_PROVIDER:?} or {IMPORTED_PROVIDER:?}"
        )));
    }
    let found = Found {
        namespace: &namespace,
        certificate: &certificate,
        binding: &binding,
        secrets: &secrets,
    };
    by_acme(&context, found, status, stored, stamp).await
}

/// What the ACME path works on.
struct Found<'a> {
    namespace: &'a str,
    certificate: &'a Certificate,
    binding: &'a DomainBinding,
    secrets: &'a Api<Secret>,
}

/// A certificate Berth obtains: kept, retried later, or ordered now.
async fn by_acme(
    context: &Context,
    found: Found<'_>,
    mut status: CertificateStatus,
    stored: Stored,
    stamp: Stamp,
) -> Result<Action> {
    let (certificate, now) = (found.certificate, stamp.now);
    let hostname = &found.binding.spec.hostname;
    let valid = stored.and_then(|s| s.ok()).filter(|f| f.covers(hostname));
    decide::record_stored(&mut status, valid.as_ref(), now);
    let requested = certificate
        .annotations()
        .get(REQUESTED_ATTEMPT_ANNOTATION)
        .cloned();
    let current = certificate.status.as_ref();
    let requeue_after = match next_step(valid.as_ref(), &status, requested.as_deref(), now) {
        Step::Keep { renew_at } => {
            decide::settle(&mut status, valid.as_ref(), stamp);
            decide::until(renew_at, now)
        }
        Step::RetryLater { at } => decide::until(at, now),
        Step::Issue { renewal } => {
            let attempt = requested.unwrap_or_else(new_attempt_id);
            return attempt_now(context, found, status, &attempt, renewal, valid, stamp).await;
        }
    };
    let decision = Decision {
        status,
        event: None,
        tell: Vec::new(),
        requeue_after,
    };
    write(context, certificate, current, decision).await
}

/// Announces the attempt in status and an Event, makes it, and records its outcome.
async fn attempt_now(
    context: &Context,
    found: Found<'_>,
    mut status: CertificateStatus,
    attempt: &str,
    renewal: bool,
    previous: Option<CertificateFacts>,
    stamp: Stamp,
) -> Result<Action> {
    let certificate = found.certificate;
    let api = Api::<Certificate>::namespaced(context.client.clone(), found.namespace);
    let started = decide::attempt_started(&mut status, attempt, renewal, stamp);
    let current = certificate.status.as_ref();
    let written = StatusWriter::new(&api, certificate)
        .apply(current, &status)
        .await?;
    let before = if written { Some(&status) } else { current };
    publish(context, certificate, started).await;
    let outcome = issue::obtain(context, found.namespace, certificate, found.binding).await;
    let stamp = Stamp {
        now: Timestamp::now(),
        ..stamp
    };
    let decision = match outcome {
        Ok(issued) => {
            let facts = CertificateFacts::of_chain(issued.chain_pem.as_bytes()).map_err(|e| {
                Error::InvalidSpec(format!("the CA returned an unreadable chain: {e}"))
            })?;
            issue::store_key_pair(found.secrets, certificate, &issued).await?;
            decide::issued(status.clone(), &facts, stamp)
        }
        Err(failure) => decide::attempt_failed(status.clone(), &failure, previous.as_ref(), stamp),
    };
    write(context, certificate, before, decision).await
}

/// Writes the decided status (unless it equals `current`), then sends its Event and tells the
/// notifier.
async fn write(
    context: &Context,
    certificate: &Certificate,
    current: Option<&CertificateStatus>,
    decision: Decision,
) -> Result<Action> {
    let namespace = certificate.namespace().unwrap_or_default();
    let api = Api::<Certificate>::namespaced(context.client.clone(), &namespace);
    StatusWriter::new(&api, certificate)
        .apply(current, &decision.status)
        .await?;
    if let Some(event) = decision.event {
        publish(context, certificate, event).await;
    }
    for tell in decision.tell {
        notify(
            context,
            certificate,
            decision.status.hostname.as_deref(),
            tell,
        );
    }
    Ok(Action::requeue(decision.requeue_after))
}

/// Hands the notifier `tell` about `certificate`, linked to the resource its binding serves.
fn notify(context: &Context, certificate: &Certificate, hostname: Option<&str>, tell: Tell) {
    let namespace = certificate.namespace().unwrap_or_default();
    let subject = subject(KIND, &certificate.name_any(), hostname);
    let binding_id = &certificate.spec.domain_binding_id;
    match Caches::get(&context.caches.domain_bindings, &namespace, binding_id) {
        Some(binding) => context.notify_about_resource(
            &namespace,
            &binding.spec.resource_id,
            tell.event,
            subject,
            tell.summary,
        ),
        None => context.notices.send(Notice {
            namespace,
            event: tell.event,
            subject,
            project_id: None,
            resource_id: None,
            summary: tell.summary,
            occurred_at: Timestamp::now(),
        }),
    }
}

async fn publish(context: &Context, certificate: &Certificate, event: decide::Event) {
    let reference = certificate.object_ref(&());
    context
        .publish_event(&reference, event.type_, event.reason, event.message)
        .await;
}

fn new_attempt_id() -> String {
    let bytes: [u8; 6] = rand::random();
    format!("att-{}", hex::encode(bytes))
}

// Declared last: hack/lib/largest_functions.py skips everything after `#[cfg(test)]`.
#[cfg(test)]
mod reconcile_tests;
#[cfg(test)]
mod tests;
