//! Attempts wait, visibly, for what is not ready yet, and retry what failed for a passing
//! reason: a Server that is not Ready (unreachable, Docker or edge proxy not ready) holds its
//! attempts until it is; an infrastructure fault (SSH, Docker, the proxy's admin API, a
//! timeout) runs the attempt again after a capped exponential backoff. Faults a person must fix
//! (a failing health check, a missing image, a broken build, an invalid spec) are not retried.

use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::deployment::{Deployment, DeploymentErrorCode as Code, DeploymentPhase};
use berth_crds::server::Server;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::cache::Caches;

/// Reason of the `Ready` condition (and of the Event) while an attempt waits for its server.
pub const WAITING_FOR_SERVER: &str = "WaitingForServer";
/// Reason of the `Ready` condition (and of the Event) while a retry is scheduled.
pub const RETRY_SCHEDULED: &str = "RetryScheduled";

/// First retry delay; it doubles with every further retry up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_secs(2);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);

/// Whether `server` can take deployments, or what it is waiting for.
pub fn server_ready(server: &Server) -> Result<(), String> {
    let conditions = server
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    match condition::find(conditions, READY) {
        Some(ready) if ready.status == ConditionStatus::True => Ok(()),
        Some(ready) => Err(ready.message.clone()),
        None => Err("the server has not been reached yet".into()),
    }
}

/// Why the attempt's server cannot take it now, from the cache; `None` when it can.
pub fn server_blocker(caches: &Caches, deployment: &Deployment) -> Option<String> {
    let namespace = deployment.namespace().unwrap_or_default();
    let name = &deployment.spec.server_id;
    match Caches::get(&caches.servers, &namespace, name) {
        None => Some(format!("Server {name} does not exist")),
        Some(server) => server_ready(&server).err(),
    }
}

/// The unfinished attempts on `server`: a change of its readiness may release them.
pub fn attempts_on(deployments: &Store<Deployment>, server: &Server) -> Vec<ObjectRef<Deployment>> {
    let namespace = server.namespace();
    let name = server.name_any();
    deployments
        .state()
        .into_iter()
        .filter(|d| d.namespace() == namespace && d.spec.server_id == name)
        .filter(|d| {
            !d.status
                .as_ref()
                .and_then(|s| s.status)
                .is_some_and(|s| s.is_terminal())
        })
        .map(|d| ObjectRef::from_obj(d.as_ref()))
        .collect()
}

/// Whether a failure with `code` in `phase` is the infrastructure's, so a retry may succeed.
pub fn is_transient(phase: DeploymentPhase, code: Code) -> bool {
    match code {
        Code::ServerUnreachable
        | Code::ServerNotReady
        | Code::RouteSwitchFailed
        | Code::SourceUnreachable
        | Code::DockerError => true,
        // A build may simply take too long; every other phase waits only on the server.
        Code::PhaseTimeout => phase != DeploymentPhase::Package,
        _ => false,
    }
}

/// How long to wait before retry number `retry` (from 1).
pub fn retry_delay(retry: u32) -> Duration {
    let doubled = FIRST_RETRY_DELAY.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
    doubled.min(MAX_RETRY_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::Condition;
    use berth_crds::server::{ServerSpec, ServerStatus};
    use serde_json::json;

    fn server(ready: Option<bool>) -> Server {
        let spec: ServerSpec = serde_json::from_value(json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
        }))
        .unwrap();
        let mut server = Server::new("local", spec);
        server.status = ready.map(|ready| ServerStatus {
            conditions: vec![Condition::new(
                READY,
                if ready {
                    ConditionStatus::True
                } else {
                    ConditionStatus::False
                },
                "ProxyNotReady",
                "the edge proxy is not running yet",
                None,
                k8s_openapi::jiff::Timestamp::now(),
            )],
            ..Default::default()
        });
        server
    }

    #[test]
    fn only_a_ready_server_takes_attempts_and_says_why_not() {
        assert!(server_ready(&server(Some(true))).is_ok());
        assert_eq!(
            server_ready(&server(Some(false))).unwrap_err(),
            "the edge proxy is not running yet"
        );
        assert!(server_ready(&server(None)).is_err());
    }

    #[test]
    fn infrastructure_faults_are_retried_user_faults_are_not() {
        assert!(is_transient(
            DeploymentPhase::Verify,
            Code::RouteSwitchFailed
        ));
        assert!(is_transient(DeploymentPhase::Plan, Code::ServerUnreachable));
        assert!(is_transient(DeploymentPhase::Deploy, Code::PhaseTimeout));
        assert!(!is_transient(DeploymentPhase::Package, Code::PhaseTimeout));
        assert!(!is_transient(
            DeploymentPhase::Verify,
            Code::HealthCheckFailed
        ));
        assert!(!is_transient(
            DeploymentPhase::Package,
            Code::ImagePullFailed
        ));
        assert!(!is_transient(DeploymentPhase::Package, Code::BuildFailed));
    }

    #[test]
    fn retries_back_off_exponentially_up_to_five_minutes() {
        let delays: Vec<u64> = (1..=10).map(|n| retry_delay(n).as_secs()).collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }
}
