//! The serving container's state as a Resource's status reports it (`status.runtime`), from the
//! server observer's index: no SSH round trip, and it changes only when Docker reports a change.

use berth_crds::deployment::Deployment;
use berth_crds::resource::{RuntimeHealth, RuntimeLifecycle, RuntimeObservation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::context::Context;
use crate::observer::{Connectivity, ContainerRecord};
use crate::reconcilers::deployment::plan;
use berth_remote::ServerId;

/// What the observer of the serving attempt's server knows about its container.
#[derive(Clone, Debug, PartialEq)]
// One value per reconcile, never stored: the size of a container record costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Seen {
    /// No attempt has succeeded.
    NotDeployed,
    /// The server's Docker events are not followed (yet, or any more).
    Unobserved,
    /// The container as last observed; `None` when the server has no such container.
    Container {
        deployment: String,
        record: Option<ContainerRecord>,
    },
    /// Stopped on request (runtime control): not running, and meant to be so.
    Stopped { deployment: String },
    /// Stopped by Berth for a while (see `holds`): why, until it is started again.
    Held { deployment: String, why: String },
}

/// What was seen, for a runtime stopped on request: a container that does not run is stopped
/// as asked, not failed. One that runs (before drift repair stops it again) is reported as is.
pub fn stopped_on_request(seen: Seen) -> Seen {
    match seen {
        Seen::Container { deployment, record } if !record.as_ref().is_some_and(|r| r.running) => {
            Seen::Stopped { deployment }
        }
        other => other,
    }
}

/// Reads the observer's index for the container of `serving`.
pub fn observe(
    context: &Context,
    namespace: &str,
    resource: &str,
    serving: Option<&Deployment>,
) -> Seen {
    let Some(serving) = serving else {
        return Seen::NotDeployed;
    };
    let id = ServerId {
        namespace: namespace.to_string(),
        name: serving.spec.server_id.clone(),
    };
    let observed = context.observers.get(&id);
    let Some(observed) = observed.filter(|o| o.connectivity() == Connectivity::Live) else {
        return Seen::Unobserved;
    };
    // While a newer attempt retires the older containers (or has just done so, faster than the
    // cache this reconcile read `serving` from), its own is the one that serves.
    let deployment = match context.attempts.replacing(namespace, resource) {
        Some(newer) if newer.order > serving.attempt_order() => newer.order.2,
        _ => serving.name_any(),
    };
    let name = plan::container_name(namespace, resource, &deployment);
    let record = observed.container(&name);
    match context.holds.held(&name) {
        Some(why) if !record.as_ref().is_some_and(|r| r.running) => Seen::Held { deployment, why },
        _ => Seen::Container { deployment, record },
    }
}

/// The `status.runtime` for what was `seen`; `observedAt` keeps its value while the state
/// stays the same, so an unchanged container writes nothing.
pub fn observation(
    seen: &Seen,
    previous: Option<&RuntimeObservation>,
    now: Timestamp,
) -> RuntimeObservation {
    let mut next = describe(seen, now);
    if let Some(previous) = previous.filter(|p| same_state(p, &next)) {
        next.observed_at = previous.observed_at.clone();
    }
    next
}

fn same_state(a: &RuntimeObservation, b: &RuntimeObservation) -> bool {
    (a.lifecycle, a.health, &a.deployment_id, &a.reason_code)
        == (b.lifecycle, b.health, &b.deployment_id, &b.reason_code)
}

fn describe(seen: &Seen, now: Timestamp) -> RuntimeObservation {
    let blank = |lifecycle, health, reason: Option<&str>, message: &str| RuntimeObservation {
        lifecycle,
        health,
        observed_at: Time(now),
        deployment_id: None,
        reason_code: reason.map(str::to_string),
        message: message.to_string(),
        exit_code: None,
        oom_killed: false,
    };
    let (deployment, record) = match seen {
        Seen::NotDeployed => {
            return blank(
                RuntimeLifecycle::NotDeployed,
                RuntimeHealth::Unknown,
                Some("not_deployed"),
                "no deployment has succeeded yet",
            );
        }
        Seen::Unobserved => {
            return blank(
                RuntimeLifecycle::Unknown,
                RuntimeHealth::Unknown,
                Some("server_unobserved"),
                "the server's containers are not observed right now (unreachable, or reconnecting)",
            );
        }
        Seen::Stopped { deployment } => {
            let mut stopped = blank(
                RuntimeLifecycle::Stopped,
                RuntimeHealth::Unknown,
                Some("stopped_on_request"),
                "stopped on request (spec.runtime.desiredState: stopped); drift repair leaves it",
            );
            stopped.deployment_id = Some(deployment.clone());
            return stopped;
        }
        Seen::Held { deployment, why } => {
            let mut held = blank(
                RuntimeLifecycle::Stopped,
                RuntimeHealth::Unknown,
                Some("held"),
                &format!("stopped by Berth while {why}; started again after"),
            );
            held.deployment_id = Some(deployment.clone());
            return held;
        }
        Seen::Container { deployment, record } => (deployment, record),
    };
    let mut observation = match record {
        None => blank(
            RuntimeLifecycle::Missing,
            RuntimeHealth::Unhealthy,
            Some("container_missing"),
            "the serving container is gone from the server",
        ),
        Some(record) if record.running => running(record, now),
        Some(record) => exited(record, now),
    };
    observation.deployment_id = Some(deployment.clone());
    observation
}

fn running(record: &ContainerRecord, now: Timestamp) -> RuntimeObservation {
    let (health, reason, message) = match record.health.as_deref() {
        Some("unhealthy") => (
            RuntimeHealth::Unhealthy,
            Some("health_check_failing"),
            "the container runs but its health check fails",
        ),
        Some("starting") => (
            RuntimeHealth::Starting,
            Some("health_check_starting"),
            "the container runs; its health check has not passed yet",
        ),
        _ => (RuntimeHealth::Healthy, None, "the container runs"),
    };
    RuntimeObservation {
        lifecycle: RuntimeLifecycle::Running,
        health,
        observed_at: Time(now),
        deployment_id: None,
        reason_code: reason.map(str::to_string),
        message: message.to_string(),
        exit_code: None,
        oom_killed: record.oom_killed,
    }
}

fn exited(record: &ContainerRecord, now: Timestamp) -> RuntimeObservation {
    let code = record
        .exit_code
        .map_or("an unknown code".to_string(), |c| c.to_string());
    let (reason, message) = if record.oom_killed {
        (
            "oom_killed",
            format!("the container was killed for memory (exit code {code})"),
        )
    } else {
        (
            "container_exited",
            format!("the container stopped with exit code {code}"),
        )
    };
    RuntimeObservation {
        lifecycle: RuntimeLifecycle::Exited,
        health: RuntimeHealth::Unhealthy,
        observed_at: Time(now),
        deployment_id: None,
        reason_code: Some(reason.to_string()),
        message,
        exit_code: record.exit_code,
        oom_killed: record.oom_killed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn record(running: bool, exit_code: Option<i64>, oom_killed: bool) -> ContainerRecord {
        ContainerRecord {
            id: "c0ffee".into(),
            deaths: 0,
            died_oom: false,
            stop_requested: false,
            name: "berth-c".into(),
            owner: None,
            proxy_of: None,
            dependency: None,
            running,
            exit_code,
            oom_killed,
            health: None,
        }
    }

    fn seen(record: Option<ContainerRecord>) -> Seen {
        Seen::Container {
            deployment: "dep-web-1".into(),
            record,
        }
    }

    #[test]
    fn a_stopped_container_is_unhealthy_with_its_exit_code_and_oom_flag() {
        let now = at("2026-11-23T10:00:00Z");
        let stopped = observation(&seen(Some(record(false, Some(137), true))), None, now);
        assert_eq!(stopped.lifecycle, RuntimeLifecycle::Exited);
        assert_eq!(stopped.health, RuntimeHealth::Unhealthy);
        assert_eq!(stopped.exit_code, Some(137));
        assert_eq!(stopped.reason_code.as_deref(), Some("oom_killed"));
        assert_eq!(stopped.deployment_id.as_deref(), Some("dep-web-1"));
        let gone = observation(&seen(None), None, now);
        assert_eq!(gone.lifecycle, RuntimeLifecycle::Missing);
    }

    #[test]
    fn observed_at_moves_only_when_the_state_changes() {
        let first = observation(
            &seen(Some(record(true, None, false))),
            None,
            at("2026-11-23T10:00:00Z"),
        );
        assert_eq!(first.health, RuntimeHealth::Healthy);
        let same = observation(
            &seen(Some(record(true, None, false))),
            Some(&first),
            at("2026-11-23T10:05:00Z"),
        );
        assert_eq!(same, first);
        let stopped = observation(
            &seen(Some(record(false, Some(0), false))),
            Some(&first),
            at("2026-11-23T10:06:00Z"),
        );
        assert_eq!(stopped.observed_at, Time(at("2026-11-23T10:06:00Z")));
    }

    #[test]
    fn docker_health_decides_a_running_containers_health() {
        let mut starting = record(true, None, false);
        starting.health = Some("starting".into());
        let now = at("2026-11-23T10:00:00Z");
        assert_eq!(
            observation(&seen(Some(starting)), None, now).health,
            RuntimeHealth::Starting
        );
        assert_eq!(
            observation(&Seen::Unobserved, None, now).lifecycle,
            RuntimeLifecycle::Unknown
        );
        assert_eq!(
            observation(&Seen::NotDeployed, None, now).lifecycle,
            RuntimeLifecycle::NotDeployed
        );
    }

    #[test]
    fn a_container_stopped_on_request_is_stopped_not_failed() {
        let now = at("2026-11-23T10:00:00Z");
        let exited = stopped_on_request(seen(Some(record(false, Some(143), false))));
        let stopped = observation(&exited, None, now);
        assert_eq!(stopped.lifecycle, RuntimeLifecycle::Stopped);
        assert_eq!(stopped.reason_code.as_deref(), Some("stopped_on_request"));
        assert_eq!(stopped.deployment_id.as_deref(), Some("dep-web-1"));
        let gone = stopped_on_request(seen(None));
        assert_eq!(
            observation(&gone, None, now).lifecycle,
            RuntimeLifecycle::Stopped
        );
        // Running by hand until drift repair stops it again: reported as it is.
        let running = stopped_on_request(seen(Some(record(true, None, false))));
        assert_eq!(
            observation(&running, None, now).lifecycle,
            RuntimeLifecycle::Running
        );
    }
}
