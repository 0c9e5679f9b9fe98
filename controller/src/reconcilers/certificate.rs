//! Certificate: obtains a certificate for a DomainBinding's host name by ACME (HTTP-01 through
//! the edge proxy of the server that routes it), keeps key and chain in a `kubernetes.io/tls`
//! Secret and renews it two thirds into its lifetime (DESIGN §5b). A pre-flight check runs
//! before every order, so a misconfigured domain never reaches the CA. Imported certificates
//! (`providerKey: imported`) are only watched: expiry in status, a warning as it nears.
//!
//! Idle cost: one requeue at the renewal time; nothing in between.

mod acme;
mod facts;
pub mod preflight;
pub mod schedule;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::certificate::{
    ACME_PROVIDER, Certificate, CertificateStatus, IMPORTED_PROVIDER, REQUESTED_ATTEMPT_ANNOTATION,
    condition_type, reason,
};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::resource::Resource as BerthResource;
use berth_crds::server::Server;
use berth_remote::edge_tls::challenge_route_prefix;
use berth_remote::{EdgeProxy, ServerId};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};

pub use facts::CertificateFacts;
use schedule::{Step, next_step, retry_delay};

use super::{drain, error_policy};
use crate::cache::Caches;
use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::status::apply_status;

const KIND: &str = "Certificate";
/// How soon a certificate whose binding, resource or server is missing looks again.
const DEPENDENCY_RECHECK: Duration = Duration::from_secs(30);
/// Secret keys of a `kubernetes.io/tls` Secret.
pub const TLS_CERT_KEY: &str = "tls.crt";
pub const TLS_KEY_KEY: &str = "tls.key";

pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let certificates = Api::<Certificate>::all(context.client.clone());
    let controller = Controller::new(certificates, watcher::Config::default());
    let by_binding = controller.store();
    let stream = controller
        .watches(
            Api::<DomainBinding>::all(context.client.clone()),
            watcher::Config::default(),
            move |binding| {
                let namespace = binding.namespace();
                let name = binding.name_any();
                by_binding
                    .state()
                    .into_iter()
                    .filter(|c| c.namespace() == namespace && c.spec.domain_binding_id == name)
                    .map(|c| ObjectRef::from_obj(c.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
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

async fn reconcile(certificate: Arc<Certificate>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = certificate
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Certificate>::namespaced(context.client.clone(), &namespace);
    let secrets = Api::<Secret>::namespaced(context.client.clone(), &namespace);
    let now = Timestamp::now();
    let current = certificate.status.clone();
    let mut status = current.clone().unwrap_or_default();
    let generation = certificate.metadata.generation;
    status.observed_generation = generation;
    let secret = secret_name(&certificate);
    status.secret_name = Some(secret.clone());

    let bindings = Api::<DomainBinding>::namespaced(context.client.clone(), &namespace);
    let binding_id = &certificate.spec.domain_binding_id;
    let Some(binding) = bindings.get_opt(binding_id).await? else {
        let message = format!("domain binding {binding_id} does not exist");
        set(
            &mut status,
            READY,
            false,
            condition::reason::DEPENDENCY_MISSING,
            message,
            generation,
            now,
        );
        apply_status(&api, certificate.as_ref(), current.as_ref(), &status).await?;
        return Ok(Action::requeue(DEPENDENCY_RECHECK));
    };
    let hostname = binding.spec.hostname.clone();
    status.hostname = Some(hostname.clone());
    let stored = stored_certificate(&secrets, &secret).await?;
    let provider = certificate
        .spec
        .provider_key
        .as_deref()
        .unwrap_or(ACME_PROVIDER);
    if provider == IMPORTED_PROVIDER {
        return observe_imported(&context, &api, &certificate, current, status, stored, now).await;
    }
    if provider != ACME_PROVIDER {
        return Err(Error::InvalidSpec(format!(
            "providerKey {provider:?} is not supported; use {ACME_PROVIDER:?} or {IMPORTED_PROVIDER:?}"
        )));
    }
    let valid = stored.and_then(|s| s.ok()).filter(|f| f.covers(&hostname));
    record_stored(&mut status, valid.as_ref(), now);
    let requested = certificate
        .annotations()
        .get(REQUESTED_ATTEMPT_ANNOTATION)
        .cloned();
    match next_step(valid.as_ref(), &status, requested.as_deref(), now) {
        Step::Keep { renew_at } => {
            set_settled(&mut status, valid.as_ref(), &hostname, generation, now);
            apply_status(&api, certificate.as_ref(), current.as_ref(), &status).await?;
            Ok(Action::requeue(until(renew_at, now)))
        }
        Step::RetryLater { at } => {
            apply_status(&api, certificate.as_ref(), current.as_ref(), &status).await?;
            Ok(Action::requeue(until(at, now)))
        }
        Step::Issue { renewal } => {
            let attempt = requested.unwrap_or_else(new_attempt_id);
            status.attempt_id = Some(attempt.clone());
            let (why, what) = if renewal {
                (reason::RENEWAL_DUE, "renewing")
            } else {
                (reason::ORDERING, "obtaining")
            };
            let message = format!("attempt {attempt}: {what} a certificate for {hostname}");
            set(
                &mut status,
                condition_type::RENEWING,
                true,
                why,
                message.clone(),
                generation,
                now,
            );
            let written =
                apply_status(&api, certificate.as_ref(), current.as_ref(), &status).await?;
            let before = written.then(|| status.clone()).or(current);
            publish(&context, &certificate, EventType::Normal, why, message).await;
            let outcome = obtain(&context, &namespace, &certificate, &binding).await;
            finish(
                &context,
                &api,
                &secrets,
                &certificate,
                before,
                status,
                outcome,
                valid,
            )
            .await
        }
    }
}

/// Why an attempt failed, sorted the way the status shows it.
struct AttemptFailure {
    reason: &'static str,
    message: String,
}

/// Pre-flight, then the order; the key pair on success.
async fn obtain(
    context: &Context,
    namespace: &str,
    certificate: &Certificate,
    binding: &DomainBinding,
) -> std::result::Result<acme::Issued, AttemptFailure> {
    let preflight_failed = |message: String| AttemptFailure {
        reason: reason::PREFLIGHT_FAILED,
        message,
    };
    let order_failed = |failure: acme::AcmeFailure| AttemptFailure {
        reason: reason::ORDER_FAILED,
        message: failure.message,
    };
    let (_, server) =
        serving_server(&context.caches, namespace, binding).map_err(preflight_failed)?;
    let id = ServerId {
        namespace: namespace.to_string(),
        name: server.name_any(),
    };
    let connection = context
        .servers
        .current(&id)
        .await
        .ok_or_else(|| preflight_failed(format!("server {} is not connected yet", id.name)))?;
    let proxy = EdgeProxy::new(connection, &server.spec.docker_socket_path, &id);
    let hostname = &binding.spec.hostname;
    let expected = preflight::Expected {
        hostname,
        server_name: &id.name,
        server_host: &server.spec.host,
        http_port: u16::try_from(server.spec.proxy.http_port).unwrap_or(80),
        dns_server: context.acme.dns_server,
    };
    let resolved = preflight::host_name_resolves_to_server(&expected)
        .await
        .map_err(preflight_failed)?;
    let prefix = challenge_route_prefix(namespace, &certificate.name_any());
    let address: IpAddr = resolved[0];
    preflight::challenge_path_answers(&expected, address, &proxy, &prefix)
        .await
        .map_err(|m| preflight_failed(format!("pre-flight: {m}")))?;
    let outcome = order_with_account(context, namespace, hostname, &proxy, &prefix).await;
    acme::remove_answers(&proxy, &prefix).await;
    outcome.map_err(order_failed)
}

/// The namespace's account, then the order; once more with a new account when the CA forgot
/// the old one (a test CA restarted).
async fn order_with_account(
    context: &Context,
    namespace: &str,
    hostname: &str,
    proxy: &EdgeProxy,
    prefix: &str,
) -> std::result::Result<acme::Issued, acme::AcmeFailure> {
    let account = acme::account(&context.client, namespace, &context.acme).await?;
    match acme::issue(&account, hostname, proxy, prefix).await {
        Err(failure) if acme::is_unknown_account(&failure) => {
            let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
            let account = acme::create_account(&secrets, &context.acme).await?;
            acme::issue(&account, hostname, proxy, prefix).await
        }
        other => other,
    }
}

#[allow(clippy::too_many_arguments)]
async fn finish(
    context: &Context,
    api: &Api<Certificate>,
    secrets: &Api<Secret>,
    certificate: &Certificate,
    current: Option<CertificateStatus>,
    mut status: CertificateStatus,
    outcome: std::result::Result<acme::Issued, AttemptFailure>,
    previous: Option<CertificateFacts>,
) -> Result<Action> {
    let now = Timestamp::now();
    let generation = certificate.metadata.generation;
    let hostname = status.hostname.clone().unwrap_or_default();
    let attempt = status.attempt_id.clone().unwrap_or_default();
    match outcome {
        Ok(issued) => {
            let facts = CertificateFacts::of_chain(issued.chain_pem.as_bytes()).map_err(|e| {
                Error::InvalidSpec(format!("the CA returned an unreadable chain: {e}"))
            })?;
            store_key_pair(secrets, certificate, &issued).await?;
            status.issued_at = Some(Time(now));
            status.failed_attempts = 0;
            status.next_retry_at = None;
            record_stored(&mut status, Some(&facts), now);
            set_settled(&mut status, Some(&facts), &hostname, generation, now);
            apply_status(api, certificate, current.as_ref(), &status).await?;
            let note = format!(
                "attempt {attempt}: certificate for {hostname} issued, valid until {}, renewal at {}",
                facts.not_after,
                facts.renew_at()
            );
            publish(
                context,
                certificate,
                EventType::Normal,
                reason::ISSUED,
                note,
            )
            .await;
            Ok(Action::requeue(until(facts.renew_at(), now)))
        }
        Err(failure) => {
            status.failed_attempts = status.failed_attempts.saturating_add(1);
            let delay = retry_delay(status.failed_attempts);
            let retry_at =
                Timestamp::from_second(now.as_second() + delay.as_secs() as i64).unwrap_or(now);
            status.next_retry_at = Some(Time(retry_at));
            let message = format!(
                "attempt {attempt} failed ({} in a row): {}; next attempt at {retry_at}",
                status.failed_attempts, failure.message
            );
            set(
                &mut status,
                condition_type::FAILED,
                true,
                failure.reason,
                message.clone(),
                generation,
                now,
            );
            set(
                &mut status,
                condition_type::RENEWING,
                false,
                reason::IDLE,
                "no attempt under way",
                generation,
                now,
            );
            match previous.as_ref() {
                Some(facts) if facts.not_after > now => {
                    set(
                        &mut status,
                        condition_type::ISSUED,
                        true,
                        reason::ISSUED,
                        format!(
                            "the previous certificate stays in use until {}",
                            facts.not_after
                        ),
                        generation,
                        now,
                    );
                    set(
                        &mut status,
                        READY,
                        true,
                        reason::ISSUED,
                        format!(
                            "certificate valid until {}; renewal failing",
                            facts.not_after
                        ),
                        generation,
                        now,
                    );
                }
                _ => {
                    set(
                        &mut status,
                        condition_type::ISSUED,
                        false,
                        failure.reason,
                        message.clone(),
                        generation,
                        now,
                    );
                    set(
                        &mut status,
                        READY,
                        false,
                        failure.reason,
                        message.clone(),
                        generation,
                        now,
                    );
                }
            }
            apply_status(api, certificate, current.as_ref(), &status).await?;
            publish(
                context,
                certificate,
                EventType::Warning,
                failure.reason,
                message,
            )
            .await;
            Ok(Action::requeue(delay))
        }
    }
}

/// An imported key pair: used as it is; its expiry is reported and warned about.
async fn observe_imported(
    context: &Context,
    api: &Api<Certificate>,
    certificate: &Certificate,
    current: Option<CertificateStatus>,
    mut status: CertificateStatus,
    stored: Option<std::result::Result<CertificateFacts, String>>,
    now: Timestamp,
) -> Result<Action> {
    let generation = certificate.metadata.generation;
    let hostname = status.hostname.clone().unwrap_or_default();
    let secret = status.secret_name.clone().unwrap_or_default();
    let facts = match stored {
        None => Err(format!("Secret {secret} does not exist")),
        Some(Err(problem)) => Err(problem),
        Some(Ok(facts)) if !facts.covers(&hostname) => Err(format!(
            "the certificate in Secret {secret} does not name {hostname} (it names {})",
            facts.dns_names.join(", ")
        )),
        Some(Ok(facts)) => Ok(facts),
    };
    let facts = match facts {
        Ok(facts) => facts,
        Err(problem) => {
            record_stored(&mut status, None, now);
            set(
                &mut status,
                condition_type::ISSUED,
                false,
                reason::INVALID_CERTIFICATE,
                problem.clone(),
                generation,
                now,
            );
            set(
                &mut status,
                READY,
                false,
                reason::INVALID_CERTIFICATE,
                problem,
                generation,
                now,
            );
            apply_status(api, certificate, current.as_ref(), &status).await?;
            return Ok(Action::requeue(DEPENDENCY_RECHECK));
        }
    };
    record_stored(&mut status, Some(&facts), now);
    let (ready, why, message) = if facts.not_after <= now {
        (
            false,
            reason::EXPIRED,
            format!("imported certificate expired at {}", facts.not_after),
        )
    } else if now >= facts.renew_at() {
        (
            true,
            reason::EXPIRING_SOON,
            format!(
                "imported certificate expires at {} ({} days); replace the key pair in Secret {secret}",
                facts.not_after,
                facts.days_until_expiry(now)
            ),
        )
    } else {
        (
            true,
            reason::IMPORTED,
            format!("imported certificate valid until {}", facts.not_after),
        )
    };
    set(
        &mut status,
        condition_type::ISSUED,
        true,
        reason::IMPORTED,
        format!("imported from Secret {secret}"),
        generation,
        now,
    );
    let warned_before = current
        .as_ref()
        .and_then(|c| condition::find(&c.conditions, READY))
        .is_some_and(|c| c.reason == why);
    set(
        &mut status,
        READY,
        ready,
        why,
        message.clone(),
        generation,
        now,
    );
    apply_status(api, certificate, current.as_ref(), &status).await?;
    if why != reason::IMPORTED && !warned_before {
        publish(context, certificate, EventType::Warning, why, message).await;
    }
    let next = if now < facts.renew_at() {
        facts.renew_at()
    } else {
        facts.not_after
    };
    Ok(Action::requeue(until(next, now).max(DEPENDENCY_RECHECK)))
}

/// Expiry facts of the certificate in use (or their absence).
fn record_stored(status: &mut CertificateStatus, facts: Option<&CertificateFacts>, now: Timestamp) {
    status.not_after = facts.map(|f| Time(f.not_after));
    status.renew_at = facts.map(|f| Time(f.renew_at()));
    status.days_until_expiry = facts.map(|f| f.days_until_expiry(now));
    status.sha256_fingerprint = facts.map(|f| f.sha256.clone());
    if status.issued_at.is_none() {
        status.issued_at = facts.map(|f| Time(f.not_before));
    }
}

/// Conditions of a certificate in use with nothing under way.
fn set_settled(
    status: &mut CertificateStatus,
    facts: Option<&CertificateFacts>,
    hostname: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let Some(facts) = facts else { return };
    let message = format!(
        "certificate for {hostname} valid until {}; renewal at {}",
        facts.not_after,
        facts.renew_at()
    );
    set(
        status,
        condition_type::ISSUED,
        true,
        reason::ISSUED,
        message.clone(),
        generation,
        now,
    );
    set(
        status,
        condition_type::RENEWING,
        false,
        reason::IDLE,
        "no attempt under way",
        generation,
        now,
    );
    if status.failed_attempts == 0 {
        set(
            status,
            condition_type::FAILED,
            false,
            reason::NOT_FAILED,
            "the latest attempt succeeded",
            generation,
            now,
        );
    }
    set(
        status,
        READY,
        true,
        reason::ISSUED,
        message,
        generation,
        now,
    );
}

fn set(
    status: &mut CertificateStatus,
    type_: &str,
    holds: bool,
    why: &str,
    message: impl Into<String>,
    generation: Option<i64>,
    now: Timestamp,
) {
    let value = if holds {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    condition::merge(
        &mut status.conditions,
        Condition::new(type_, value, why, message, generation, now),
    );
}

/// Writes the key pair into the certificate's `kubernetes.io/tls` Secret, owned by the
/// Certificate so it goes with it.
async fn store_key_pair(
    secrets: &Api<Secret>,
    certificate: &Certificate,
    issued: &acme::Issued,
) -> Result<()> {
    let name = secret_name(certificate);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(berth_crds::MANAGED_LABEL.to_string(), "true".to_string())].into()),
            owner_references: certificate.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [
                (
                    TLS_CERT_KEY.to_string(),
                    ByteString(issued.chain_pem.clone().into_bytes()),
                ),
                (
                    TLS_KEY_KEY.to_string(),
                    ByteString(issued.key_pem.clone().into_bytes()),
                ),
            ]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await?;
    Ok(())
}

async fn publish(
    context: &Context,
    certificate: &Certificate,
    type_: EventType,
    reason: &str,
    note: String,
) {
    context
        .publish_event(&certificate.object_ref(&()), type_, reason, note)
        .await;
}

fn new_attempt_id() -> String {
    let bytes: [u8; 6] = rand::random();
    format!("att-{}", hex::encode(bytes))
}

/// Time from `now` until `at`, at least a second.
fn until(at: Timestamp, now: Timestamp) -> Duration {
    Duration::from_secs(
        u64::try_from(at.as_second() - now.as_second())
            .unwrap_or(0)
            .max(1),
    )
}
