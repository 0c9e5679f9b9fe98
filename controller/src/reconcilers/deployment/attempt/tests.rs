//! The attempt's rules from package on, against an in-memory server: which containers exist
//! afterwards, what the attempt ended with, and how fast a cancel reaches it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use berth_crds::deployment::{
    Deployment, DeploymentErrorCode as Code, DeploymentPhase, DeploymentSpec, DeploymentState,
    DeploymentStatus,
};
use berth_crds::progress::OutputStream;
use tokio::sync::watch;

use super::super::compose::run::StackError;
use super::super::compose::stack::Stack;
use super::super::diagnosis::{Evidence, Listening, ProbeFailure, Unhealthy};
use super::super::package::source::FetchedSource;
use super::super::package_failure::PackageFailure;
use super::super::plan::Plan;
use super::super::plan::tests::sample_plan;
use super::super::probe::ProbeError;
use super::super::progress::{OutputSink, Progress};
use super::super::server_target::Containers;
use super::phases::{self, Guard, Halt, Siblings};
use super::server::AttemptServer;
use crate::attempt_supervisor::Interrupt;
use crate::routes::RoutePlan;
use berth_remote::RemoteError;

/// The attempt under test and its container (see `sample_plan`).
const ATTEMPT: &str = "dep-web-1";
const NEW: &str = "berth-org-acme-web-dep-web-1";
const OLDER: &str = "berth-org-acme-web-dep-web-0";
const NEWER: &str = "berth-org-acme-web-dep-web-2";

#[derive(Clone, Debug, PartialEq)]
struct Container {
    started_by: String,
    running: bool,
    on_edge: bool,
    /// Carries the resource's upstream name.
    serving: bool,
}

/// What the package phase does on the fake server.
enum Packaging {
    Done,
    /// Never finishes: a long build.
    Forever,
    /// Finishes, and meanwhile the attempt is told to stop.
    DoneThen(Interrupt),
}

/// An in-memory server: its containers, and every change made to them.
struct FakeServer {
    containers: Mutex<BTreeMap<String, Container>>,
    changes: Mutex<Vec<String>>,
    healthy: bool,
    /// The restart policy cannot be set (the connection broke after the health check, say).
    restarts_fail: bool,
    packaging: Packaging,
    signal: watch::Sender<Option<Interrupt>>,
}

impl FakeServer {
    fn new(containers: &[(&str, &str)]) -> Self {
        let containers = containers
            .iter()
            .map(|(name, started_by)| {
                let container = Container {
                    started_by: started_by.to_string(),
                    running: true,
                    on_edge: true,
                    serving: true,
                };
                (name.to_string(), container)
            })
            .collect();
        Self {
            containers: Mutex::new(containers),
            changes: Mutex::default(),
            healthy: true,
            restarts_fail: false,
            packaging: Packaging::Done,
            signal: watch::channel(None).0,
        }
    }

    fn change(&self, change: String) {
        self.changes.lock().unwrap().push(change);
    }

    fn changes(&self) -> Vec<String> {
        self.changes.lock().unwrap().clone()
    }

    fn names(&self) -> Vec<String> {
        self.containers.lock().unwrap().keys().cloned().collect()
    }

    fn container(&self, name: &str) -> Option<Container> {
        self.containers.lock().unwrap().get(name).cloned()
    }
}

impl Containers for FakeServer {
    async fn create_container(&self, plan: &Plan, serving: bool) -> Result<bool, RemoteError> {
        let mut containers = self.containers.lock().unwrap();
        if containers.contains_key(&plan.container_name) {
            return Ok(false);
        }
        let container = Container {
            started_by: ATTEMPT.into(),
            running: false,
            on_edge: true,
            serving,
        };
        containers.insert(plan.container_name.clone(), container);
        drop(containers);
        self.change(format!("create {}", plan.container_name));
        Ok(true)
    }

    async fn start(&self, name: &str) -> Result<(), RemoteError> {
        if let Some(container) = self.containers.lock().unwrap().get_mut(name) {
            container.running = true;
        }
        self.change(format!("start {name}"));
        Ok(())
    }

    async fn running_on(&self, name: &str, _network: &str) -> Result<bool, RemoteError> {
        Ok(self.container(name).is_some_and(|c| c.running && c.on_edge))
    }

    async fn remove_container(&self, name: &str) -> Result<bool, RemoteError> {
        let removed = self.containers.lock().unwrap().remove(name).is_some();
        self.change(format!("remove {name}"));
        Ok(removed)
    }
}

impl AttemptServer for FakeServer {
    async fn fetch_source(
        &self,
        _plan: &Plan,
        _output: &OutputSink,
    ) -> Result<Option<FetchedSource>, PackageFailure> {
        Ok(None)
    }

    async fn package(
        &self,
        _plan: &Plan,
        _fetched: Option<&FetchedSource>,
        _output: &OutputSink,
    ) -> Result<Option<Stack>, PackageFailure> {
        match &self.packaging {
            Packaging::Done => Ok(None),
            Packaging::Forever => std::future::pending().await,
            Packaging::DoneThen(interrupt) => {
                self.signal.send_replace(Some(interrupt.clone()));
                Ok(None)
            }
        }
    }

    async fn bring_up_stack(&self, _stack: &Stack) -> Result<Vec<String>, StackError> {
        Ok(Vec::new())
    }

    async fn remove_dropped_services(&self, _namespace: &str, _resource: &str, _stack: &Stack) {}

    async fn probe_until_healthy(&self, plan: &Plan) -> Result<(), ProbeError> {
        let running = self
            .container(&plan.container_name)
            .is_some_and(|c| c.running);
        if self.healthy && running {
            Ok(())
        } else {
            Err(ProbeError::Unhealthy(Unhealthy {
                failure: ProbeFailure::Status {
                    status: 500,
                    body: String::new(),
                },
                tries: 4,
                waited: std::time::Duration::from_secs(8),
            }))
        }
    }

    async fn failure_evidence(&self, plan: &Plan) -> Evidence {
        let running = self
            .container(&plan.container_name)
            .is_some_and(|c| c.running);
        Evidence {
            running,
            exit_code: Some(0),
            listening: Some(Listening {
                reachable: vec![8080],
                loopback: Vec::new(),
            }),
            ..Evidence::default()
        }
    }

    async fn release_restarts(&self, _plan: &Plan) -> Result<(), RemoteError> {
        match self.restarts_fail {
            true => Err(RemoteError::Timeout {
                operation: "setting the restart policy",
                after: std::time::Duration::from_secs(30),
            }),
            false => Ok(()),
        }
    }

    async fn ensure_promoted(&self, plan: &Plan) -> Result<(), RemoteError> {
        if let Some(container) = self
            .containers
            .lock()
            .unwrap()
            .get_mut(&plan.container_name)
        {
            container.serving = true;
        }
        self.change(format!("promote {}", plan.container_name));
        Ok(())
    }

    async fn ensure_route(
        &self,
        route_id: &str,
        target: Option<(&RoutePlan, &str, u16)>,
    ) -> Result<bool, RemoteError> {
        match target {
            Some(_) => self.change(format!("route {route_id}")),
            None => self.change(format!("unroute {route_id}")),
        }
        Ok(true)
    }

    async fn resource_containers(
        &self,
        _namespace: &str,
        _resource: &str,
    ) -> Result<Vec<(String, String)>, RemoteError> {
        let containers = self.containers.lock().unwrap();
        let listed = containers.iter();
        Ok(listed
            .map(|(name, c)| (name.clone(), c.started_by.clone()))
            .collect())
    }

    async fn retire(&self, name: &str) -> Result<(), RemoteError> {
        self.containers.lock().unwrap().remove(name);
        self.change(format!("retire {name}"));
        Ok(())
    }

    async fn log_tail(
        &self,
        _name: &str,
        _lines: usize,
    ) -> Result<Vec<(OutputStream, String)>, String> {
        Ok(vec![(OutputStream::Stderr, "listening on :9999".into())])
    }

    async fn prune_built_images(&self, _namespace: &str, _resource: &str, _serving: &str) {}
}

/// The other attempts of the resource, as the cache would tell.
#[derive(Default)]
struct FakeSiblings {
    succeeded_before: bool,
    newer: HashSet<String>,
}

impl Siblings for FakeSiblings {
    fn interruption(&self) -> Option<Interrupt> {
        None
    }

    fn any_succeeded(&self) -> bool {
        self.succeeded_before
    }

    fn is_newer(&self, name: &str) -> bool {
        self.newer.contains(name)
    }
}

fn deployment() -> Deployment {
    let spec: DeploymentSpec = serde_json::from_value(serde_json::json!({
        "resourceId": "web", "projectId": "prj-1", "environmentId": "env-1",
        "serverId": "local",
    }))
    .unwrap();
    let mut deployment = Deployment::new(ATTEMPT, spec);
    deployment.metadata.namespace = Some("org-acme".into());
    deployment
}

/// Runs package, deploy and verify against `server`; returns how it ended and the status.
async fn attempt(
    server: &FakeServer,
    siblings: &FakeSiblings,
) -> (Result<(), Halt>, DeploymentStatus) {
    let deployment = deployment();
    let mut progress = Progress::detached(&deployment);
    let guard = Guard {
        signal: server.signal.subscribe(),
        siblings,
    };
    let plan = sample_plan();
    assert_eq!(plan.container_name, NEW, "the plan the tests expect");
    let outcome = async {
        phases::package(server, &mut progress, &guard, &plan).await?;
        super::roll_out::roll_out(server, &mut progress, &guard, &plan, None).await
    }
    .await;
    // The attempt's end is written here in a real run; then the older containers go.
    if outcome.is_ok() {
        phases::retire_older(server, siblings, &deployment, &plan, None).await;
    }
    (outcome, progress.status)
}

fn stopped(outcome: Result<(), Halt>) -> phases::Stop {
    match outcome {
        Err(Halt::Stop(stop)) => stop,
        other => panic!("expected a stop, got {other:?}"),
    }
}

#[tokio::test]
async fn a_success_retires_older_attempts_containers_and_keeps_a_newer_ones() {
    let server = FakeServer::new(&[(OLDER, "dep-web-0"), (NEWER, "dep-web-2")]);
    let siblings = FakeSiblings {
        succeeded_before: true,
        newer: HashSet::from(["dep-web-2".to_string()]),
    };
    let (outcome, status) = attempt(&server, &siblings).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(server.names(), [NEW, NEWER]);
    let new = server.container(NEW).unwrap();
    assert!(new.running && new.serving, "{new:?}");
    let changes = server.changes();
    // Off the upstream name until healthy, then promoted, then the route, then the old goes.
    let order: Vec<&str> = changes.iter().map(String::as_str).collect();
    assert_eq!(
        order,
        [
            &format!("create {NEW}"),
            &format!("start {NEW}"),
            &format!("promote {NEW}"),
            "route berth-route.org-acme.web",
            &format!("retire {OLDER}"),
        ]
    );
    assert_eq!(status.container_id.as_deref(), Some(NEW));
    assert_eq!(status.phase, Some(DeploymentPhase::Verify));
}

#[tokio::test]
async fn a_failed_health_check_removes_only_the_new_container() {
    let mut server = FakeServer::new(&[(OLDER, "dep-web-0")]);
    server.healthy = false;
    let siblings = FakeSiblings {
        succeeded_before: true,
        ..Default::default()
    };
    let (outcome, status) = attempt(&server, &siblings).await;
    let stop = stopped(outcome);
    assert_eq!(
        (stop.code, stop.phase, stop.state),
        (
            Code::HealthCheckUnexpectedStatus,
            DeploymentPhase::Verify,
            DeploymentState::Failed
        )
    );
    assert!(stop.message.contains("answered 500"), "{}", stop.message);
    assert_eq!(status.phase, Some(DeploymentPhase::Rollback));
    // The old container keeps serving, untouched; the route was never switched.
    assert_eq!(server.names(), [OLDER]);
    assert!(server.container(OLDER).unwrap().running);
    let changes = server.changes();
    assert_eq!(changes.last().unwrap(), &format!("remove {NEW}"));
    assert!(
        !changes
            .iter()
            .any(|c| c.starts_with("route") || c.starts_with("retire"))
    );
}

#[tokio::test]
async fn a_cancel_reaches_a_running_build_at_once_and_nothing_starts() {
    let mut server = FakeServer::new(&[(OLDER, "dep-web-0")]);
    server.packaging = Packaging::Forever;
    let signal = server.signal.clone();
    let siblings = FakeSiblings::default();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        signal.send_replace(Some(Interrupt::Canceled));
    });
    let started = std::time::Instant::now();
    let ran = tokio::time::timeout(Duration::from_secs(5), attempt(&server, &siblings)).await;
    let (outcome, _) = ran.expect("the build must end when canceled");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let stop = stopped(outcome);
    assert_eq!(
        (stop.code, stop.phase, stop.state),
        (
            Code::Canceled,
            DeploymentPhase::Package,
            DeploymentState::Canceled
        )
    );
    assert!(server.changes().is_empty(), "{:?}", server.changes());
    assert_eq!(server.names(), [OLDER]);
}

#[tokio::test]
async fn a_newer_attempt_stops_this_one_between_package_and_deploy() {
    let mut server = FakeServer::new(&[(OLDER, "dep-web-0")]);
    server.packaging = Packaging::DoneThen(Interrupt::Superseded("dep-web-2".into()));
    let (outcome, _) = attempt(&server, &FakeSiblings::default()).await;
    let stop = stopped(outcome);
    assert_eq!(
        (stop.code, stop.phase, stop.state),
        (
            Code::Superseded,
            DeploymentPhase::Deploy,
            DeploymentState::Canceled
        )
    );
    assert_eq!(stop.message, "superseded by the newer attempt dep-web-2");
    // Nothing was created, so nothing is removed: the old container serves on.
    assert!(server.changes().is_empty(), "{:?}", server.changes());
}

#[tokio::test]
async fn shutdown_leaves_the_attempt_unfinished_and_its_container_in_place() {
    let mut server = FakeServer::new(&[]);
    server.packaging = Packaging::DoneThen(Interrupt::Shutdown);
    let (outcome, _) = attempt(&server, &FakeSiblings::default()).await;
    assert!(matches!(outcome, Err(Halt::Shutdown)), "{outcome:?}");
    assert!(server.changes().is_empty(), "{:?}", server.changes());
}

#[tokio::test]
async fn a_rerun_keeps_its_own_running_container() {
    let server = FakeServer::new(&[(NEW, ATTEMPT), (OLDER, "dep-web-0")]);
    let siblings = FakeSiblings {
        succeeded_before: true,
        ..Default::default()
    };
    let (outcome, _) = attempt(&server, &siblings).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let changes = server.changes();
    assert!(
        !changes
            .iter()
            .any(|c| c == &format!("remove {NEW}") || c == &format!("start {NEW}")),
        "{changes:?}"
    );
    assert_eq!(server.names(), [NEW]);
}

#[tokio::test]
async fn a_rerun_replaces_its_container_left_off_the_edge_network() {
    let server = FakeServer::new(&[(NEW, ATTEMPT)]);
    server
        .containers
        .lock()
        .unwrap()
        .get_mut(NEW)
        .unwrap()
        .on_edge = false;
    let (outcome, _) = attempt(&server, &FakeSiblings::default()).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let changes = server.changes();
    assert_eq!(
        changes[..3],
        [
            format!("remove {NEW}"),
            format!("create {NEW}"),
            format!("start {NEW}")
        ]
    );
}

#[tokio::test]
async fn the_first_attempt_carries_the_upstream_name_from_the_start() {
    let server = FakeServer::new(&[]);
    let (outcome, _) = attempt(&server, &FakeSiblings::default()).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(server.container(NEW).unwrap().serving);
    let changes = server.changes();
    assert!(
        !changes.iter().any(|c| c.starts_with("promote")),
        "{changes:?}"
    );
    // Its route is written during the health check: nothing else serves the name.
    assert!(
        changes.contains(&"route berth-route.org-acme.web".to_string()),
        "{changes:?}"
    );
}

#[tokio::test]
async fn a_failed_first_attempt_leaves_no_route() {
    let mut server = FakeServer::new(&[]);
    server.healthy = false;
    let (outcome, _) = attempt(&server, &FakeSiblings::default()).await;
    stopped(outcome);
    assert_eq!(server.names(), Vec::<String>::new());
    let changes = server.changes();
    let route = "route berth-route.org-acme.web".to_string();
    let written = changes.iter().position(|c| *c == route);
    let removed = changes.iter().position(|c| *c == format!("un{route}"));
    assert!(written < removed && written.is_some(), "{changes:?}");
}

#[tokio::test]
async fn a_failure_after_the_health_check_retires_the_new_container_gracefully() {
    let mut server = FakeServer::new(&[(OLDER, "dep-web-0")]);
    server.restarts_fail = true;
    let siblings = FakeSiblings {
        succeeded_before: true,
        ..Default::default()
    };
    let (outcome, _) = attempt(&server, &siblings).await;
    assert_eq!(stopped(outcome).code, Code::RouteSwitchFailed);
    // It may have taken requests as the upstream: SIGTERM and time to answer, not a kill.
    let changes = server.changes();
    assert!(changes.contains(&format!("retire {NEW}")), "{changes:?}");
    assert!(!changes.contains(&format!("remove {NEW}")), "{changes:?}");
    assert_eq!(server.names(), [OLDER]);
}
