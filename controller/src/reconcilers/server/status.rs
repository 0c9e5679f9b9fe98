//! The status a Server should have, planned from what was observed. Pure, so the condition
//! logic is unit-tested without SSH.

use berth_crds::condition::{self, Condition, ConditionStatus};
use berth_crds::server::{Server, ServerFacts, ServerLifecycle, ServerStatus, conditions, reason};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::conditions::Stamp;

/// `lastContactAt` moves at most this often while nothing else changes, so a healthy server
/// does not rewrite its status on every probe.
const CONTACT_GRANULARITY: SignedDuration = SignedDuration::from_secs(60);

/// Why something did not work, as a condition shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub reason: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// What a successful connection told about the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    pub address: String,
    pub host_key_fingerprint: String,
    pub facts: ServerFacts,
}

/// The proxy as observed.
#[derive(Clone, Debug, PartialEq)]
pub enum ProxyObservation {
    /// `spec.proxy.kind: none`.
    Disabled,
    /// Kinds Berth renders configuration for but does not run.
    Unsupported(String),
    /// Container running and admin API answering.
    Running { container: String },
}

/// Everything one reconcile observed. `None` means "not tried" (an earlier step failed).
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub contact: Result<Contact, Failure>,
    pub docker: Option<Result<String, Failure>>,
    pub proxy: Option<Result<ProxyObservation, Failure>>,
}

/// `type_` from an observation: holds with its reason and message, or fails as `Failure` says.
fn condition(
    type_: &str,
    result: Result<(&'static str, String), &Failure>,
    stamp: Stamp,
) -> Condition {
    match result {
        Ok((reason, message)) => stamp.holds(type_, reason, message),
        Err(failure) => stamp.fails(type_, failure.reason, failure.message.clone()),
    }
}

/// `type_` could not be checked because SSH failed first.
fn not_checked(type_: &str, stamp: Stamp) -> Condition {
    stamp.unknown(
        type_,
        reason::NOT_CONNECTED,
        "not checked: the server is not reachable",
    )
}

/// The status `server` should have after `observation`, with `blockers` the objects that keep
/// it from being deleted.
pub fn desired(
    server: &Server,
    observation: &Observation,
    blockers: Vec<String>,
    now: Timestamp,
) -> ServerStatus {
    let current = server.status.clone().unwrap_or_default();
    let generation = server.metadata.generation;
    let stamp = Stamp { generation, now };
    let mut status = ServerStatus {
        reachable: observation.contact.is_ok(),
        host_key_fingerprint: current.host_key_fingerprint.clone(),
        docker_version: current.docker_version.clone(),
        facts: current.facts.clone(),
        lifecycle_status: Some(server.spec.lifecycle_status),
        deactivated_at: deactivated_at(server, &current, now),
        last_contact_at: current.last_contact_at.clone(),
        delete_blockers: blockers,
        observed_generation: generation,
        conditions: current.conditions.clone(),
    };
    if let Ok(contact) = &observation.contact {
        record_contact(&mut status, &current, contact, now);
    }
    if let Some(Ok(version)) = &observation.docker {
        status.docker_version = Some(version.clone());
    }
    let observed = [
        reachable_condition(&observation.contact, stamp),
        docker_condition(observation.docker.as_ref(), stamp),
        proxy_condition(server, observation.proxy.as_ref(), stamp),
    ];
    for observed in observed {
        condition::merge(&mut status.conditions, observed);
    }
    let ready = ready_condition(&status.conditions, stamp);
    condition::merge(&mut status.conditions, ready);
    if let Some(deletion) = deletion_condition(server, &status.delete_blockers, now) {
        condition::merge(&mut status.conditions, deletion);
    }
    status
}

/// When the server became inactive: stamped `now` when this reconcile is the first to see
/// `spec.lifecycleStatus: inactive` (the status still says otherwise), kept while it stays
/// inactive, cleared once it is active again.
fn deactivated_at(server: &Server, current: &ServerStatus, now: Timestamp) -> Option<Time> {
    match server.spec.lifecycle_status {
        ServerLifecycle::Active => None,
        ServerLifecycle::Inactive
            if current.lifecycle_status == Some(ServerLifecycle::Inactive) =>
        {
            current.deactivated_at.clone()
        }
        ServerLifecycle::Inactive => Some(Time(now)),
    }
}

/// What a successful login tells: the host key, the facts, and (at most once a minute while
/// nothing else changes) the time of contact.
fn record_contact(
    status: &mut ServerStatus,
    current: &ServerStatus,
    contact: &Contact,
    now: Timestamp,
) {
    status.host_key_fingerprint = Some(contact.host_key_fingerprint.clone());
    status.facts = Some(contact.facts.clone());
    let stale = current
        .last_contact_at
        .as_ref()
        .is_none_or(|at| now.duration_since(at.0) >= CONTACT_GRANULARITY || !current.reachable);
    if stale {
        status.last_contact_at = Some(Time(now));
    }
}

fn reachable_condition(contact: &Result<Contact, Failure>, stamp: Stamp) -> Condition {
    let result = contact.as_ref().map(|contact| {
        let message = format!(
            "SSH to {} works; host key {}",
            contact.address, contact.host_key_fingerprint
        );
        (reason::CONNECTED, message)
    });
    condition(conditions::REACHABLE, result, stamp)
}

fn docker_condition(docker: Option<&Result<String, Failure>>, stamp: Stamp) -> Condition {
    let Some(docker) = docker else {
        return not_checked(conditions::DOCKER_READY, stamp);
    };
    let result = docker.as_ref().map(|version| {
        (
            reason::DOCKER_RESPONDING,
            format!("Docker {version} answers"),
        )
    });
    condition(conditions::DOCKER_READY, result, stamp)
}

fn proxy_condition(
    server: &Server,
    proxy: Option<&Result<ProxyObservation, Failure>>,
    stamp: Stamp,
) -> Condition {
    let type_ = conditions::PROXY_READY;
    match proxy {
        None => not_checked(type_, stamp),
        Some(Err(failure)) => condition(type_, Err(failure), stamp),
        Some(Ok(ProxyObservation::Running { container })) => stamp.holds(
            type_,
            reason::PROXY_RUNNING,
            format!(
                "edge proxy {container} runs and its admin API answers; HTTP on port {}",
                server.spec.proxy.http_port
            ),
        ),
        Some(Ok(ProxyObservation::Disabled)) => stamp.holds(
            type_,
            reason::PROXY_DISABLED,
            "no edge proxy requested (proxy.kind: none)",
        ),
        Some(Ok(ProxyObservation::Unsupported(kind))) => stamp.fails(
            type_,
            reason::PROXY_KIND_UNSUPPORTED,
            format!("Berth runs only Caddy as edge proxy; {kind} is rendered for previews only"),
        ),
    }
}

/// `Ready` holds when SSH, Docker and the proxy all do; else it names the first that fails.
fn ready_condition(observed: &[Condition], stamp: Stamp) -> Condition {
    let failed = [
        conditions::REACHABLE,
        conditions::DOCKER_READY,
        conditions::PROXY_READY,
    ]
    .into_iter()
    .find_map(|type_| {
        condition::find(observed, type_).filter(|c| c.status != ConditionStatus::True)
    });
    match failed {
        None => stamp.ready(reason::READY, "SSH, Docker and the edge proxy work"),
        Some(failed) => stamp.not_ready(
            &failed.reason,
            format!("{}: {}", failed.type_, failed.message),
        ),
    }
}

/// The status of a server whose deletion waits for `blockers`: what it had, plus the blockers and
/// a `DeletionBlocked` condition naming them. Nothing is probed while deletion is pending.
pub fn blocked(server: &Server, blockers: Vec<String>, now: Timestamp) -> ServerStatus {
    let mut status = server.status.clone().unwrap_or_default();
    if let Some(deletion) = deletion_condition(server, &blockers, now) {
        condition::merge(&mut status.conditions, deletion);
    }
    status.delete_blockers = blockers;
    status
}

/// `DeletionBlocked` while a requested deletion waits; `None` when no deletion is requested.
fn deletion_condition(server: &Server, blockers: &[String], now: Timestamp) -> Option<Condition> {
    server.metadata.deletion_timestamp.as_ref()?;
    let stamp = Stamp {
        generation: server.metadata.generation,
        now,
    };
    Some(if blockers.is_empty() {
        stamp.deletion_unblocked("nothing references this server")
    } else {
        stamp.deletion_blocked(format!(
            "deletion waits until nothing references this server: {}",
            blockers.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::testing::{expected, stamp};
    use berth_crds::condition::{DELETION_BLOCKED, READY};
    use berth_crds::server::ServerSpec;
    use berth_remote::error::reason as remote;

    fn server() -> Server {
        let spec: ServerSpec = serde_json::from_value(serde_json::json!({
            "host": "127.0.0.1", "port": 2222, "credentialId": "key",
        }))
        .unwrap();
        let mut server = Server::new("web-1", spec);
        server.metadata.generation = Some(2);
        server
    }

    fn contact() -> Contact {
        Contact {
            address: "127.0.0.1:2222".into(),
            host_key_fingerprint: "SHA256:host".into(),
            facts: ServerFacts {
                cpus: 2,
                ..Default::default()
            },
        }
    }

    fn healthy() -> Observation {
        Observation {
            contact: Ok(contact()),
            docker: Some(Ok("20.10.24".into())),
            proxy: Some(Ok(ProxyObservation::Running {
                container: "berth-edge-proxy".into(),
            })),
        }
    }

    #[test]
    fn healthy_server_is_ready_with_facts_version_and_pinned_key() {
        let status = desired(&server(), &healthy(), vec![], Timestamp::now());
        assert!(status.reachable);
        assert_eq!(status.docker_version.as_deref(), Some("20.10.24"));
        assert_eq!(status.host_key_fingerprint.as_deref(), Some("SHA256:host"));
        assert_eq!(status.facts.as_ref().unwrap().cpus, 2);
        assert!(status.last_contact_at.is_some());
        for type_ in [
            berth_crds::server::conditions::REACHABLE,
            berth_crds::server::conditions::DOCKER_READY,
            berth_crds::server::conditions::PROXY_READY,
            READY,
        ] {
            assert!(condition::is_true(&status.conditions, type_), "{type_}");
        }
    }

    #[test]
    fn host_key_mismatch_makes_it_unreachable_and_keeps_the_pinned_key() {
        let mut server = server();
        server.status = Some(desired(&server, &healthy(), vec![], Timestamp::now()));
        let observation = Observation {
            contact: Err(Failure::new(
                remote::HOST_KEY_MISMATCH,
                "host key mismatch: expected SHA256:host, got SHA256:evil",
            )),
            docker: None,
            proxy: None,
        };
        let status = desired(&server, &observation, vec![], Timestamp::now());
        assert!(!status.reachable);
        assert_eq!(status.host_key_fingerprint.as_deref(), Some("SHA256:host"));
        let reachable = condition::find(
            &status.conditions,
            berth_crds::server::conditions::REACHABLE,
        )
        .unwrap();
        assert_eq!(reachable.reason, remote::HOST_KEY_MISMATCH);
        assert!(reachable.message.contains("SHA256:evil"));
        let docker = condition::find(
            &status.conditions,
            berth_crds::server::conditions::DOCKER_READY,
        )
        .unwrap();
        assert_eq!(docker.status, ConditionStatus::Unknown);
        let ready = condition::find(&status.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, remote::HOST_KEY_MISMATCH);
        // The last known facts stay visible, dated by lastContactAt.
        assert_eq!(status.facts, server.status.unwrap().facts);
    }

    #[test]
    fn a_second_healthy_probe_changes_nothing() {
        let mut server = server();
        let first = desired(&server, &healthy(), vec![], Timestamp::now());
        server.status = Some(first.clone());
        let second = desired(&server, &healthy(), vec![], Timestamp::now());
        assert_eq!(first, second);
    }

    #[test]
    fn the_time_of_deactivation_is_kept_while_inactive_and_cleared_on_activation() {
        let mut server = server();
        let before = Timestamp::from_second(1_900_000_000).unwrap();
        server.status = Some(desired(&server, &healthy(), vec![], before));
        assert_eq!(server.status.as_ref().unwrap().deactivated_at, None);

        server.spec.lifecycle_status = ServerLifecycle::Inactive;
        let at = Timestamp::from_second(1_900_000_060).unwrap();
        let deactivated = desired(&server, &healthy(), vec![], at);
        assert_eq!(deactivated.deactivated_at, Some(Time(at)));
        assert_eq!(
            deactivated.lifecycle_status,
            Some(ServerLifecycle::Inactive)
        );
        server.status = Some(deactivated);
        let later = Timestamp::from_second(1_900_000_600).unwrap();
        assert_eq!(
            desired(&server, &healthy(), vec![], later).deactivated_at,
            Some(Time(at)),
            "a later probe of the inactive server keeps the time"
        );

        server.spec.lifecycle_status = ServerLifecycle::Active;
        let active = desired(&server, &healthy(), vec![], later);
        assert_eq!(active.deactivated_at, None);
        server.status = Some(active);
        server.spec.lifecycle_status = ServerLifecycle::Inactive;
        let again = desired(&server, &healthy(), vec![], later);
        assert_eq!(
            again.deactivated_at,
            Some(Time(later)),
            "a new deactivation"
        );
    }

    #[test]
    fn disabled_proxy_counts_as_ready() {
        let mut observation = healthy();
        observation.proxy = Some(Ok(ProxyObservation::Disabled));
        let status = desired(&server(), &observation, vec![], Timestamp::now());
        assert!(condition::is_true(&status.conditions, READY));
    }

    #[test]
    fn deletion_with_references_is_blocked_and_says_by_what() {
        let mut server = server();
        server.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let status = desired(
            &server,
            &healthy(),
            vec!["resource/shop-web".into()],
            Timestamp::now(),
        );
        let blocked = condition::find(&status.conditions, DELETION_BLOCKED).unwrap();
        assert_eq!(blocked.status, ConditionStatus::True);
        assert!(blocked.message.contains("resource/shop-web"));
        assert_eq!(status.delete_blockers, vec!["resource/shop-web"]);
    }

    #[test]
    fn a_blocked_deletion_keeps_what_was_observed() {
        let mut server = server();
        server.status = Some(desired(&server, &healthy(), vec![], Timestamp::now()));
        server.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let status = blocked(&server, vec!["deployment/dep-1".into()], Timestamp::now());
        assert!(status.reachable);
        assert!(condition::is_true(&status.conditions, READY));
        assert!(condition::is_true(&status.conditions, DELETION_BLOCKED));
        assert_eq!(status.delete_blockers, vec!["deployment/dep-1"]);
    }

    #[test]
    fn not_checked_is_unknown_because_ssh_failed() {
        let message = "not checked: the server is not reachable";
        let unknown = expected(
            "DockerReady",
            ConditionStatus::Unknown,
            "NotConnected",
            message,
        );
        assert_eq!(not_checked("DockerReady", stamp()), unknown);
    }
}
