//! The pure half of a Resource's reconcile: from its attempts and what was observed of its
//! runtime, the status it should have, with its `Ready` condition and its `Deployed` one
//! (`deployed`). No I/O.

use std::sync::Arc;

use berth_crds::condition::{self, Condition};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::resource::{
    AutoDeployObservation, ProxyRouteStatus, Resource, ResourceStatus, reason,
};
use berth_crds::runtime_control::RuntimeControlStatus;
use berth_crds::server::Server;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::access;
use super::attempts::{serving, state};
use super::deployed;
use super::runtime_state;
use crate::conditions::Stamp;

/// What the reconciler observed of the resource's runtime: its route, its container, and what
/// its attempts, runtime control and domain bindings report.
pub struct Observed {
    pub route_status: ProxyRouteStatus,
    pub runtime: runtime_state::Seen,
    /// The runtime is stopped on request (`status.runtimeControl.appliedState`).
    pub stopped: bool,
    /// How many attempts the resource ever had: its Deployments, and the older attempts whose
    /// timelines the observation store still keeps.
    pub attempts: usize,
    /// `status.runtimeControl` as runtime control left it.
    pub runtime_control: Option<RuntimeControlStatus>,
    /// The resource's domain bindings, for the access summary's domain routes.
    pub bindings: Vec<Arc<DomainBinding>>,
    /// The fingerprint of the resource's configuration now, compared with the serving
    /// attempt's; `None` when it is not known (its scopes are going away).
    pub config_fingerprint: Option<String>,
}

/// The status the resource should have now.
pub fn decide(
    resource: &Resource,
    server: Option<&Server>,
    deployments: &[Deployment],
    observed: Observed,
    now: Timestamp,
) -> ResourceStatus {
    let current = resource.status.clone().unwrap_or_default();
    let route_status = observed.route_status;
    let last = deployments.last();
    let serving = serving(deployments);
    let access = access::summary(resource, server, serving, route_status, &observed.bindings);
    let runtime = runtime_state::observation(&observed.runtime, current.runtime.as_ref(), now);
    let mut status = ResourceStatus {
        deployment_count: i64::try_from(observed.attempts).unwrap_or(i64::MAX),
        last_deployment_id: last.map(|d| d.name_any()),
        last_deployment_status: last.map(|d| state(d).unwrap_or(DeploymentState::Created)),
        access_summary: Some(access),
        proxy_route_status: Some(route_status),
        last_route_realization_deployment_id: serving.map(|d| d.name_any()),
        observed_generation: resource.metadata.generation,
        runtime: Some(runtime),
        runtime_control: observed.runtime_control,
        deployed_state: None,
        auto_deploy: Some(auto_deploy_seen(resource, current.auto_deploy, now)),
        conditions: current.conditions,
    };
    let stamp = Stamp {
        generation: resource.metadata.generation,
        now,
    };
    let ready = readiness(resource, serving, route_status, observed.stopped, stamp);
    condition::merge(&mut status.conditions, ready);
    let config = observed.config_fingerprint.as_deref();
    let (deployed_state, deployed) =
        deployed::deployed_state(resource, deployments, serving, config, stamp);
    status.deployed_state = deployed_state;
    condition::merge(&mut status.conditions, deployed);
    status
}

/// Since when the auto-deploy policy has been the one in the spec: kept while it is the one
/// seen last; a Resource's first policy dates from its creation (generation 1: nobody changed
/// it yet), any other from now, when it is first seen.
fn auto_deploy_seen(
    resource: &Resource,
    seen: Option<AutoDeployObservation>,
    now: Timestamp,
) -> AutoDeployObservation {
    let policy_fingerprint = resource.spec.auto_deploy.fingerprint();
    let created = resource.metadata.creation_timestamp.clone();
    let updated_at = match (seen, resource.metadata.generation, created) {
        (Some(seen), _, _) if seen.policy_fingerprint == policy_fingerprint => return seen,
        (None, Some(1), Some(created)) => created,
        _ => Time(now),
    };
    AutoDeployObservation {
        policy_fingerprint,
        updated_at,
    }
}

/// The `Ready` condition.
///
/// Stopped on request is the desired state reached (as a Deployment scaled to zero is
/// available), so GitOps health checks do not report a deliberate stop as a failure.
/// A field Berth would not honour is said first: what runs is not what was declared.
fn readiness(
    resource: &Resource,
    serving: Option<&Deployment>,
    route_status: ProxyRouteStatus,
    stopped: bool,
    stamp: Stamp,
) -> Condition {
    if let Err(refused) = resource.spec.check_support() {
        return stamp.not_ready(
            condition::reason::INVALID_SPEC,
            format!(
                "spec.{}; nothing is deployed until it is fixed",
                refused.message
            ),
        );
    }
    match (serving, route_status) {
        (Some(_), _) if stopped => stamp.ready(
            reason::STOPPED,
            "stopped on request (spec.runtime.desiredState: stopped); nothing serves",
        ),
        (Some(d), ProxyRouteStatus::Ready) => stamp.ready(
            reason::SERVING,
            format!("deployment {} serves the resource", d.name_any()),
        ),
        (Some(_), _) => stamp.not_ready(
            reason::ROUTE_NOT_READY,
            "the serving container is not running",
        ),
        (None, _) if !resource.spec.first_deployment.is_on_create() => stamp.not_ready(
            reason::NOT_DEPLOYED,
            "not deployed yet: the first deployment waits for a request \
             (spec.firstDeployment: on-request; POST /deployments or `berth deploy`)",
        ),
        (None, _) => stamp.not_ready(reason::NOT_DEPLOYED, "no deployment has succeeded yet"),
    }
}
