//! The Resource reconciler's pure parts, case by case: which attempt the spec calls for, which
//! attempts the history drops, and the exact status and `Ready` condition each observation
//! produces (integration tests and users read these texts).

use berth_crds::condition::{Condition, ConditionStatus, READY};
use berth_crds::deployment::{Deployment, DeploymentState, DeploymentStatus};
use berth_crds::resource::{
    AccessSummary, AppliedAccessRoute, PlannedAccessRoute, ProxyRouteStatus, Resource,
    ResourceSpec, ResourceStatus, RuntimeHealth, RuntimeLifecycle,
};
use berth_crds::runtime_control::{DesiredRuntimeState, RuntimeControlStatus};
use berth_crds::server::{ProxyKind, Server, ServerSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::{Value, json};

use super::runtime_state::Seen;
use super::{Observed, decide, expired_attempts, needs_deployment, new_deployment};

fn now() -> Timestamp {
    "2026-02-01T12:00:00Z".parse().unwrap()
}

fn earlier() -> Timestamp {
    "2026-01-01T08:00:00Z".parse().unwrap()
}

fn spec(overrides: Value) -> ResourceSpec {
    let mut spec = json!({
        "projectId": "prj-1", "environmentId": "env-1", "serverId": "local",
        "name": "web", "kind": "application",
        "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
        "networkProfile": { "internalPort": 8080 },
        "autoDeploy": { "enabled": false },
    });
    for (key, value) in overrides.as_object().unwrap() {
        spec[key] = value.clone();
    }
    serde_json::from_value(spec).unwrap()
}

fn resource(generation: i64, auto_deploy: bool) -> Resource {
    with_spec(
        generation,
        json!({ "autoDeploy": { "enabled": auto_deploy } }),
    )
}

fn with_spec(generation: i64, overrides: Value) -> Resource {
    let mut resource = Resource::new("web", spec(overrides));
    resource.metadata.namespace = Some("org-acme".into());
    resource.metadata.generation = Some(generation);
    resource
}

fn server() -> Server {
    Server::new(
        "local",
        serde_json::from_value::<ServerSpec>(json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
            "proxy": { "kind": "caddy", "httpPort": 8080, "httpsPort": 8443 },
        }))
        .unwrap(),
    )
}

fn ended(resource: &Resource, state: DeploymentState) -> Deployment {
    let mut deployment = new_deployment(resource, true);
    deployment.status = Some(DeploymentStatus {
        status: Some(state),
        ..Default::default()
    });
    deployment
}

fn named(resource: &Resource, name: &str, state: DeploymentState) -> Deployment {
    let mut deployment = ended(resource, state);
    deployment.metadata.name = Some(name.into());
    deployment
}

fn observed(route_status: ProxyRouteStatus, runtime: Seen, attempts: usize) -> Observed {
    Observed {
        route_status,
        runtime,
        stopped: false,
        attempts,
        runtime_control: None,
        bindings: Vec::new(),
        config_fingerprint: None,
    }
}

/// The status's `Ready` condition, as a list to compare with [`ready`].
fn ready_condition(status: &ResourceStatus) -> Vec<Condition> {
    let ready = status.conditions.iter().filter(|c| c.type_ == READY);
    ready.cloned().collect()
}

/// The one `Ready` condition a first status carries.
fn ready(status: ConditionStatus, reason: &str, message: &str) -> Vec<Condition> {
    vec![Condition::new(
        READY,
        status,
        reason,
        message,
        Some(2),
        now(),
    )]
}

fn control(applied: DesiredRuntimeState) -> RuntimeControlStatus {
    let latest = serde_json::from_value(json!({
        "runtimeControlAttemptId": "rtc-web-2", "operation": "stop", "status": "succeeded",
        "startedAt": "2026-01-01T08:00:00Z", "runtimeState": "stopped", "phases": [],
        "desiredState": "stopped",
    }))
    .unwrap();
    RuntimeControlStatus {
        applied_state: applied,
        latest,
    }
}

fn serving_container(deployment: &str) -> Seen {
    Seen::Container {
        deployment: deployment.into(),
        record: None,
    }
}

#[test]
fn first_generation_deploys_later_ones_only_with_auto_deploy() {
    let first = resource(1, false);
    assert!(needs_deployment(&first, &[]));
    let done = [ended(&first, DeploymentState::Succeeded)];
    assert!(!needs_deployment(&first, &done));
    assert!(!needs_deployment(&resource(2, false), &done));
    assert!(needs_deployment(&resource(2, true), &done));
    // Enabled for another image repository: blocked until enabled again.
    let mut moved = resource(2, true);
    let mut elsewhere = moved.spec.source.clone().unwrap();
    elsewhere.locator = "berth/other-app:1".into();
    moved.spec.auto_deploy.source_binding_fingerprint =
        Some(berth_crds::resource::source_binding_fingerprint(&elsewhere));
    assert!(!needs_deployment(&moved, &done));
    assert_eq!(
        new_deployment(&resource(2, true), false).name_any(),
        "dep-web-2"
    );
}

#[test]
fn a_first_deployment_left_to_a_request_waits_for_it_and_later_ones_follow_auto_deploy() {
    let mut waiting = resource(1, true);
    waiting.spec.first_deployment = berth_crds::resource::FirstDeployment::OnRequest;
    assert!(
        !needs_deployment(&waiting, &[]),
        "no attempt before one is asked for"
    );
    let requested = [ended(&waiting, DeploymentState::Succeeded)];
    let mut changed = waiting.clone();
    changed.metadata.generation = Some(2);
    assert!(
        needs_deployment(&changed, &requested),
        "auto-deploy after the first"
    );
}

#[test]
fn local_folders_deploy_by_themselves_other_kinds_do_not() {
    let folder = with_spec(
        1,
        json!({ "source": { "kind": "local-folder", "locator": "/srv/site" } }),
    );
    assert!(needs_deployment(&folder, &[]));
    let git = with_spec(
        1,
        json!({ "source": { "kind": "git", "locator": "https://example.com/a.git" } }),
    );
    assert!(!needs_deployment(&git, &[]));
}

#[test]
fn history_drops_the_oldest_finished_attempts_but_never_the_serving_one() {
    let resource = resource(4, true);
    let deployments = [
        named(&resource, "dep-web-1", DeploymentState::Succeeded),
        named(&resource, "dep-web-2", DeploymentState::Failed),
        named(&resource, "dep-web-3", DeploymentState::Failed),
        named(&resource, "dep-web-4", DeploymentState::Failed),
    ];
    let expired: Vec<String> = expired_attempts(&deployments, 1)
        .into_iter()
        .map(|d| d.name_any())
        .collect();
    assert_eq!(expired, ["dep-web-2", "dep-web-3"]);
    assert!(expired_attempts(&deployments, 10).is_empty());
}

#[test]
fn status_counts_every_attempt_and_reports_the_serving_route() {
    let resource = resource(2, true);
    let deployments = [
        named(&resource, "dep-web-1", DeploymentState::Succeeded),
        named(&resource, "dep-web-2", DeploymentState::Failed),
    ];
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 5);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(status.deployment_count, 5);
    assert_eq!(status.last_deployment_id.as_deref(), Some("dep-web-2"));
    assert_eq!(status.last_deployment_status, Some(DeploymentState::Failed));
    assert_eq!(
        status.last_route_realization_deployment_id.as_deref(),
        Some("dep-web-1")
    );
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(status.proxy_route_status, Some(ProxyRouteStatus::Ready));
    let planned = PlannedAccessRoute {
        url: "http://web.localhost:8080/".into(),
        hostname: "web.localhost".into(),
        scheme: berth_crds::resource::AccessScheme::Http,
        provider_key: Some("caddy".into()),
        path_prefix: "/".into(),
        proxy_kind: ProxyKind::Caddy,
        target_port: 8080,
    };
    let latest = AppliedAccessRoute {
        url: planned.url.clone(),
        hostname: planned.hostname.clone(),
        scheme: planned.scheme,
        provider_key: Some("caddy".into()),
        deployment_id: "dep-web-1".into(),
        deployment_status: DeploymentState::Succeeded,
        path_prefix: "/".into(),
        proxy_kind: ProxyKind::Caddy,
        target_port: Some(8080),
        updated_at: "1970-01-01T00:00:00Z".into(),
    };
    let summary = AccessSummary {
        planned_generated_access_route: Some(planned),
        latest_generated_access_route: Some(latest),
        latest_durable_domain_route: None,
        latest_server_applied_domain_route: None,
        proxy_route_status: Some(ProxyRouteStatus::Ready),
    };
    assert_eq!(status.access_summary, Some(summary));
    let runtime = status.runtime.unwrap();
    assert_eq!(runtime.lifecycle, RuntimeLifecycle::Missing);
    assert_eq!(runtime.deployment_id.as_deref(), Some("dep-web-1"));
}

#[test]
fn a_serving_deployment_with_its_route_ready_is_serving() {
    let resource = resource(2, false);
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::True,
            "Serving",
            "deployment dep-web-1 serves the resource"
        )
    );
}

#[test]
fn a_serving_deployment_whose_route_is_not_ready_is_not_ready() {
    let resource = resource(2, false);
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = observed(
        ProxyRouteStatus::NotReady,
        serving_container("dep-web-1"),
        1,
    );
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(status.proxy_route_status, Some(ProxyRouteStatus::NotReady));
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::False,
            "RouteNotReady",
            "the serving container is not running"
        )
    );
}

#[test]
fn without_a_succeeded_deployment_nothing_is_deployed() {
    let resource = resource(2, false);
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Failed)];
    let seen = observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::False,
            "NotDeployed",
            "no deployment has succeeded yet"
        )
    );
    assert_eq!(status.last_route_realization_deployment_id, None);
    let summary = status.access_summary.unwrap();
    assert!(summary.planned_generated_access_route.is_some());
    assert_eq!(summary.latest_generated_access_route, None);
    let runtime = status.runtime.unwrap();
    assert_eq!(runtime.lifecycle, RuntimeLifecycle::NotDeployed);
    assert_eq!(runtime.reason_code.as_deref(), Some("not_deployed"));
}

#[test]
fn a_resource_never_deployed_reports_no_attempt() {
    let resource = resource(2, false);
    let seen = observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 0);
    let status = decide(&resource, None, &[], seen, now());
    assert_eq!(status.deployment_count, 0);
    assert_eq!(status.last_deployment_id, None);
    assert_eq!(status.last_deployment_status, None);
    // No server known: no route is planned.
    let summary = status.access_summary.unwrap();
    assert_eq!(summary.planned_generated_access_route, None);
    assert_eq!(summary.proxy_route_status, Some(ProxyRouteStatus::NotReady));
}

#[test]
fn a_deployment_without_a_status_yet_is_reported_created() {
    let resource = resource(2, false);
    let deployments = [new_deployment(&resource, true)];
    let seen = observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(status.last_deployment_id.as_deref(), Some("dep-web-2"));
    assert_eq!(
        status.last_deployment_status,
        Some(DeploymentState::Created)
    );
}

#[test]
fn stopped_on_request_is_ready_and_stopped() {
    let resource = resource(2, false);
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = Observed {
        stopped: true,
        ..observed(
            ProxyRouteStatus::NotReady,
            Seen::Stopped {
                deployment: "dep-web-1".into(),
            },
            1,
        )
    };
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::True,
            "Stopped",
            "stopped on request (spec.runtime.desiredState: stopped); nothing serves"
        )
    );
    let runtime = status.runtime.unwrap();
    assert_eq!(runtime.lifecycle, RuntimeLifecycle::Stopped);
    assert_eq!(runtime.health, RuntimeHealth::Unknown);
}

#[test]
fn stopped_on_request_before_any_success_is_not_deployed() {
    let resource = resource(2, false);
    let seen = Observed {
        stopped: true,
        ..observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 0)
    };
    let status = decide(&resource, Some(&server()), &[], seen, now());
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::False,
            "NotDeployed",
            "no deployment has succeeded yet"
        )
    );
}

#[test]
fn a_field_berth_would_not_honour_is_an_invalid_spec_even_while_serving() {
    let resource = with_spec(
        2,
        json!({ "autoDeploy": { "enabled": true, "triggerKind": "cron" } }),
    );
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    assert_eq!(
        ready_condition(&status),
        ready(
            ConditionStatus::False,
            "InvalidSpec",
            "spec.autoDeploy.triggerKind must be one of: git-push; nothing is deployed until \
             it is fixed"
        )
    );
}

#[test]
fn a_direct_port_resource_is_reached_on_the_servers_own_port_without_a_proxy() {
    let resource = with_spec(
        2,
        json!({ "networkProfile": {
            "internalPort": 8080, "exposureMode": "direct-port", "hostPort": 9000,
        } }),
    );
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    let summary = status.access_summary.unwrap();
    let planned = summary.planned_generated_access_route.unwrap();
    assert_eq!(planned.url, "http://127.0.0.1:9000/");
    assert_eq!(planned.hostname, "127.0.0.1");
    assert_eq!(planned.proxy_kind, ProxyKind::None);
    assert_eq!(planned.provider_key, None);
    assert_eq!(planned.target_port, 8080);
    let latest = summary.latest_generated_access_route.unwrap();
    assert_eq!(latest.proxy_kind, ProxyKind::None);
    assert_eq!(latest.provider_key, None);
}

#[test]
fn the_latest_route_dates_from_when_the_serving_deployment_finished() {
    let resource = resource(2, false);
    let mut serving = named(&resource, "dep-web-1", DeploymentState::Succeeded);
    serving.status.as_mut().unwrap().finished_at = Some(Time(earlier()));
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 1);
    let status = decide(&resource, Some(&server()), &[serving], seen, now());
    let latest = status
        .access_summary
        .unwrap()
        .latest_generated_access_route
        .unwrap();
    assert_eq!(latest.updated_at, "2026-01-01T08:00:00Z");
}

#[test]
fn an_unchanged_ready_condition_keeps_its_transition_time_and_other_conditions_stay() {
    let mut resource = resource(2, false);
    let other = Condition::new(
        "Archived",
        ConditionStatus::False,
        "Active",
        "",
        Some(1),
        earlier(),
    );
    let before = Condition::new(
        READY,
        ConditionStatus::True,
        "Serving",
        "deployment dep-web-0 serves the resource",
        Some(1),
        earlier(),
    );
    resource.status = Some(ResourceStatus {
        conditions: vec![other.clone(), before],
        ..Default::default()
    });
    let deployments = [named(&resource, "dep-web-1", DeploymentState::Succeeded)];
    let seen = observed(ProxyRouteStatus::Ready, serving_container("dep-web-1"), 1);
    let status = decide(&resource, Some(&server()), &deployments, seen, now());
    let mut after = Condition::new(
        READY,
        ConditionStatus::True,
        "Serving",
        "deployment dep-web-1 serves the resource",
        Some(2),
        now(),
    );
    after.last_transition_time = Time(earlier());
    assert_eq!(status.conditions[..2], [other, after]);
    assert_eq!(status.conditions[2].type_, "Deployed");
}

#[test]
fn runtime_control_is_reported_as_runtime_control_left_it() {
    let mut resource = resource(2, false);
    let previous = control(DesiredRuntimeState::Running);
    resource.status = Some(ResourceStatus {
        runtime_control: Some(previous),
        ..Default::default()
    });
    let left = control(DesiredRuntimeState::Stopped);
    let seen = Observed {
        runtime_control: Some(left.clone()),
        ..observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 0)
    };
    let status = decide(&resource, Some(&server()), &[], seen, now());
    assert_eq!(status.runtime_control, Some(left));
    let seen = observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 0);
    let status = decide(&resource, Some(&server()), &[], seen, now());
    assert_eq!(status.runtime_control, None);
}

/// `status.autoDeploy.updatedAt` after a reconcile of `resource` at `at`.
fn policy_updated_at(resource: &Resource, at: Timestamp) -> Timestamp {
    reconciled(resource, at).auto_deploy.unwrap().updated_at.0
}

fn reconciled(resource: &Resource, at: Timestamp) -> ResourceStatus {
    let seen = observed(ProxyRouteStatus::NotReady, Seen::NotDeployed, 0);
    decide(resource, None, &[], seen, at)
}

#[test]
fn the_auto_deploy_policy_dates_from_creation_until_it_changes() {
    let mut resource = resource(1, false);
    resource.metadata.creation_timestamp = Some(Time(earlier()));
    assert_eq!(policy_updated_at(&resource, now()), earlier());

    // Seen once: other changes keep its time.
    resource.status = Some(reconciled(&resource, now()));
    resource.metadata.generation = Some(2);
    let later: Timestamp = "2026-03-01T00:00:00Z".parse().unwrap();
    assert_eq!(policy_updated_at(&resource, later), earlier());

    // Changed: the time the controller sees it.
    resource.spec.auto_deploy.enabled = true;
    assert_eq!(policy_updated_at(&resource, later), later);
}
