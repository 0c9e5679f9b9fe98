//! The pure half of a DomainBinding's reconcile: the route its server's edge proxy should
//! carry, and — from what was observed, including how applying that route went and which
//! certificate the proxy then presents — the status, the conditions and the Event. No I/O.

use std::net::IpAddr;
use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::domain_binding::{
    DomainBinding, DomainBindingStatus, HttpPolicy, condition_type, reason,
};
use berth_remote::edge_tls::{
    CertificateFiles, DomainRoute, DomainTls, certificate_tag, domain_route_id,
};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::WAIT_RECHECK;
use crate::conditions::Stamp;
use crate::reconcilers::certificate::CertificateFacts;
use crate::reconcilers::certificate::preflight::ResolutionFailure;
use crate::reconcilers::deployment::plan::upstream_alias;
use crate::reconcilers::policy::RESYNC_AFTER;

/// Reason of the Event sent when a binding becomes ready.
pub const SERVED_EVENT: &str = "Served";

/// Why the binding has no edge proxy to be routed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unplaced {
    /// Its resource or server does not exist, or no server is named; the message says which.
    Missing(String),
    /// The server (named) exists but is not connected.
    NotConnected(String),
}

/// The server whose edge proxy serves the binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub server: String,
    pub resource: String,
    pub http_port: u16,
    pub https_port: u16,
}

/// Where the host name resolves: the addresses when it leads to the server, else why not.
pub type Resolution = Result<Vec<IpAddr>, ResolutionFailure>;

/// A key pair from a Certificate's Secret.
#[derive(Clone)]
pub struct KeyPair {
    pub facts: CertificateFacts,
    pub chain: Vec<u8>,
    pub key: Vec<u8>,
}

/// TLS of the binding, as found after its route was applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tls {
    /// `tlsMode: disabled`.
    Disabled,
    /// TLS is wanted but no key pair can serve it yet (none stored, or it does not name the
    /// host name, or it expired); the Certificate naming the binding, if any.
    Waiting { certificate: Option<String> },
    /// A usable key pair went onto the route; the SHA-256 of the leaf the proxy then presented
    /// for the host name, or why the TLS handshake failed.
    Loaded {
        certificate: String,
        facts: CertificateFacts,
        served: Result<String, String>,
    },
}

/// Everything found about a binding placed on a connected server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub placement: Placement,
    pub resolution: Resolution,
    /// How updating the edge proxy's routes went (the proxy's error text).
    pub route: Result<(), String>,
    pub tls: Tls,
}

/// What a reconcile observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    Unplaced(Unplaced),
    Placed(Box<Placed>),
}

/// The status to write, the Event to send, and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub status: DomainBindingStatus,
    /// Message of the `Served` Event: only when the binding has just become ready.
    pub served_event: Option<String>,
    pub recheck_after: Duration,
}

/// The route the binding's edge proxy should carry; TLS once a usable key pair is at hand.
pub fn route(
    namespace: &str,
    binding: &DomainBinding,
    placement: &Placement,
    port: u16,
    key_pair: Option<&CertificateFacts>,
) -> DomainRoute {
    let id = domain_route_id(namespace, &binding.name_any());
    let tls = key_pair.map(|facts| DomainTls {
        files: CertificateFiles::named(&certificate_tag(&id), &facts.chain_digest),
        redirect_to_port: (binding.spec.http_policy == HttpPolicy::Redirect)
            .then_some(placement.https_port),
    });
    DomainRoute {
        id,
        hostname: binding.spec.hostname.clone(),
        path_prefix: binding.spec.path_prefix.clone(),
        resource: placement.resource.clone(),
        dial: format!("{}:{port}", upstream_alias(namespace, &placement.resource)),
        tls,
    }
}

/// The binding's status from what was observed at `now`.
pub fn decide(binding: &DomainBinding, observed: &Observed, now: Timestamp) -> Decision {
    let current = binding.status.as_ref();
    let mut status = current.cloned().unwrap_or_default();
    status.observed_generation = binding.metadata.generation;
    let stamp = Stamp {
        generation: binding.metadata.generation,
        now,
    };
    let placed = match observed {
        Observed::Unplaced(unplaced) => {
            set(&mut status, stamp, READY, unplaced_verdict(unplaced));
            return Decision {
                status,
                served_event: None,
                recheck_after: WAIT_RECHECK,
            };
        }
        Observed::Placed(placed) => placed,
    };
    let hostname = &binding.spec.hostname;
    status.server_id = Some(placed.placement.server.clone());
    let verified = verification(&mut status, &placed.resolution, hostname, &placed.placement);
    let verified = set(&mut status, stamp, condition_type::VERIFIED, verified);
    status.certificate_id = match &placed.tls {
        Tls::Disabled => None,
        Tls::Waiting { certificate } => certificate.clone(),
        Tls::Loaded { certificate, .. } => Some(certificate.clone()),
    };
    let routed = route_verdict(&mut status, binding, &placed.route, &placed.placement);
    let routed = set(&mut status, stamp, condition_type::ROUTE_APPLIED, routed);
    let served = certificate_verdict(&mut status, &placed.tls, hostname, &placed.placement);
    let served = set(
        &mut status,
        stamp,
        condition_type::CERTIFICATE_SERVED,
        served,
    );
    let tls_served = served || placed.tls == Tls::Disabled;
    let https = matches!(placed.tls, Tls::Loaded { .. });
    let (http_port, https_port) = (placed.placement.http_port, placed.placement.https_port);
    let url = url(
        hostname,
        &binding.spec.path_prefix,
        https,
        http_port,
        https_port,
    );
    status.url = Some(url.clone());
    let ready = readiness(&status, verified && routed && tls_served, &url);
    let message = ready.message.clone();
    let was_ready = current.is_some_and(|c| condition::is_true(&c.conditions, READY));
    let ready = set(&mut status, stamp, READY, ready);
    Decision {
        status,
        served_event: (ready && !was_ready).then_some(message),
        recheck_after: if ready { RESYNC_AFTER } else { WAIT_RECHECK },
    }
}

/// A condition's verdict, before it is stamped with the generation and time.
struct Verdict {
    holds: bool,
    reason: &'static str,
    message: String,
}

impl Verdict {
    fn new(holds: bool, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            holds,
            reason,
            message: message.into(),
        }
    }
}

/// Merges the condition `type_` with `verdict` into the status; whether it holds.
fn set(status: &mut DomainBindingStatus, stamp: Stamp, type_: &str, verdict: Verdict) -> bool {
    let condition = stamp.judged(type_, verdict.holds, verdict.reason, verdict.message);
    condition::merge(&mut status.conditions, condition);
    verdict.holds
}

fn unplaced_verdict(unplaced: &Unplaced) -> Verdict {
    match unplaced {
        Unplaced::Missing(message) => {
            Verdict::new(false, condition::reason::DEPENDENCY_MISSING, message)
        }
        Unplaced::NotConnected(server) => Verdict::new(
            false,
            reason::SERVER_NOT_READY,
            format!("server {server} is not connected yet"),
        ),
    }
}

/// `Verified`: the host name leads to this server, as the CA (and users) resolve it.
fn verification(
    status: &mut DomainBindingStatus,
    resolution: &Resolution,
    hostname: &str,
    placement: &Placement,
) -> Verdict {
    match resolution {
        Ok(addresses) => {
            status.resolved_addresses = addresses.iter().map(ToString::to_string).collect();
            let message = format!("{hostname} resolves to server {}", placement.server);
            Verdict::new(true, reason::RESOLVES_TO_SERVER, message)
        }
        Err(failure) => {
            status.resolved_addresses.clear();
            let why = if failure.resolves_nowhere() {
                reason::DOES_NOT_RESOLVE
            } else {
                reason::RESOLVES_ELSEWHERE
            };
            Verdict::new(false, why, failure.message())
        }
    }
}

/// `RouteApplied`: the edge proxy took the route.
fn route_verdict(
    status: &mut DomainBindingStatus,
    binding: &DomainBinding,
    applied: &Result<(), String>,
    placement: &Placement,
) -> Verdict {
    match applied {
        Ok(()) => {
            status.route_status = Some("ready".into());
            let message = format!(
                "edge proxy of server {} routes {}{} to resource {}",
                placement.server,
                binding.spec.hostname,
                binding.spec.path_prefix,
                placement.resource
            );
            Verdict::new(true, reason::APPLIED, message)
        }
        Err(error) => {
            status.route_status = Some("failed".into());
            Verdict::new(false, reason::NOT_APPLIED, error.clone())
        }
    }
}

/// `CertificateServed`: the proxy presents the issued certificate, as a client with SNI gets it.
fn certificate_verdict(
    status: &mut DomainBindingStatus,
    tls: &Tls,
    hostname: &str,
    placement: &Placement,
) -> Verdict {
    let https_port = placement.https_port;
    match tls {
        Tls::Disabled => {
            status.served_certificate_sha256 = None;
            Verdict::new(false, reason::TLS_DISABLED, "tlsMode is disabled")
        }
        Tls::Waiting { certificate } => {
            let message = match certificate {
                Some(name) => format!("waiting for certificate {name}"),
                None => "no Certificate names this binding".to_string(),
            };
            Verdict::new(false, reason::WAITING_FOR_CERTIFICATE, message)
        }
        Tls::Loaded { facts, served, .. } => {
            status.served_certificate_sha256 = served.as_ref().ok().cloned();
            match served {
                Ok(served) if *served == facts.sha256 => {
                    let message = format!(
                        "port {https_port} presents the issued certificate for {hostname} (valid until {})",
                        facts.not_after
                    );
                    Verdict::new(true, reason::SERVED, message)
                }
                Ok(served) => {
                    let message = format!(
                        "port {https_port} presents certificate {served} for {hostname}, not the issued {}",
                        facts.sha256
                    );
                    Verdict::new(false, reason::SERVED_CERTIFICATE_DIFFERS, message)
                }
                Err(message) => Verdict::new(false, reason::SERVED_CERTIFICATE_DIFFERS, message),
            }
        }
    }
}

/// `Ready`: served at `url`, or which conditions it still waits for.
fn readiness(status: &DomainBindingStatus, ready: bool, url: &str) -> Verdict {
    if ready {
        return Verdict::new(
            true,
            condition::reason::RECONCILED,
            format!("{url} is served"),
        );
    }
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
    let message = format!("not yet: {}", waiting.join(", "));
    Verdict::new(false, condition::reason::DEPENDENCY_MISSING, message)
}

fn url(hostname: &str, path_prefix: &str, https: bool, http_port: u16, https_port: u16) -> String {
    match (https, https_port, http_port) {
        (true, 443, _) => format!("https://{hostname}{path_prefix}"),
        (true, port, _) => format!("https://{hostname}:{port}{path_prefix}"),
        (false, _, 80) => format!("http://{hostname}{path_prefix}"),
        (false, _, port) => format!("http://{hostname}:{port}{path_prefix}"),
    }
}
