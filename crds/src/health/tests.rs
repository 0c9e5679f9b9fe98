use super::*;
use crate::resource::{
    ProxyRouteStatus, Resource, ResourceStatus, RuntimeHealth, RuntimeLifecycle, RuntimeObservation,
};
use crate::runtime_control::{RuntimeControlAttempt, RuntimeControlState, RuntimeOperation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

fn resource(status: Option<ResourceStatus>) -> Resource {
    let mut resource: Resource = serde_json::from_value(serde_json::json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": {"name": "res-1", "namespace": "org-a"},
        "spec": {"projectId": "p", "environmentId": "e", "name": "Web", "kind": "application"},
    }))
    .unwrap();
    resource.status = status;
    resource
}

fn runtime(lifecycle: RuntimeLifecycle, health: RuntimeHealth) -> RuntimeObservation {
    RuntimeObservation {
        lifecycle,
        health,
        observed_at: Time(Timestamp::UNIX_EPOCH),
        deployment_id: Some("dep-1".into()),
        reason_code: None,
        message: "m".into(),
        exit_code: None,
        oom_killed: false,
    }
}

fn verdict(status: Option<ResourceStatus>) -> ResourceHealth {
    build(&Inputs {
        resource: &resource(status),
        latest: None,
        server: None,
        now: "2026-11-23T00:00:00Z".into(),
    })
}

fn with(runtime: RuntimeObservation, route: ProxyRouteStatus) -> Option<ResourceStatus> {
    Some(ResourceStatus {
        runtime: Some(runtime),
        proxy_route_status: Some(route),
        ..Default::default()
    })
}

#[test]
fn the_latest_runtime_control_comes_from_the_status() {
    use crate::runtime_control::{DesiredRuntimeState, RuntimeControlSpec, RuntimeControlStatus};
    assert_eq!(verdict(None).latest_runtime_control, None);
    let wish = RuntimeControlSpec {
        desired_state: DesiredRuntimeState::Stopped,
        restart_requested_at: None,
    };
    let mut latest = RuntimeControlAttempt::accepted(
        "rtc-res-1-4".into(),
        RuntimeOperation::Stop,
        &wish,
        Time(Timestamp::UNIX_EPOCH),
    );
    latest.status = RuntimeControlState::Blocked;
    latest.blocked_reason = Some("resource-archived".into());
    let status = ResourceStatus {
        runtime_control: Some(RuntimeControlStatus {
            applied_state: DesiredRuntimeState::Running,
            latest,
        }),
        ..Default::default()
    };
    let block = verdict(Some(status)).latest_runtime_control.unwrap();
    let value = serde_json::to_value(&block).unwrap();
    assert_eq!(value["runtimeControlAttemptId"], "rtc-res-1-4");
    assert_eq!(value["operation"], "stop");
    assert_eq!(value["status"], "blocked");
    assert_eq!(value["runtimeState"], "stopping");
    assert_eq!(value["blockedReason"], "resource-archived");
    assert_eq!(value["startedAt"], "1970-01-01T00:00:00Z");
    assert_eq!(
        value["phases"][0],
        serde_json::json!({"phase": "validate", "status": "pending", "errorCode": null})
    );
}

#[test]
fn the_runtime_decides_first_then_the_route() {
    use RuntimeHealth as H;
    use RuntimeLifecycle as L;
    let ready = ProxyRouteStatus::Ready;
    assert_eq!(
        verdict(with(runtime(L::Running, H::Healthy), ready)).overall,
        "healthy"
    );
    assert_eq!(
        verdict(with(runtime(L::Exited, H::Unhealthy), ready)).overall,
        "unhealthy"
    );
    assert_eq!(
        verdict(with(runtime(L::Running, H::Starting), ready)).overall,
        "degraded"
    );
    assert_eq!(
        verdict(with(runtime(L::NotDeployed, H::Unknown), ready)).overall,
        "not-deployed"
    );
    assert_eq!(
        verdict(with(runtime(L::Unknown, H::Unknown), ready)).overall,
        "unknown"
    );
    let stopped = verdict(with(
        runtime(L::Stopped, H::Unknown),
        ProxyRouteStatus::NotReady,
    ));
    assert_eq!(stopped.overall, "stopped");
    assert_eq!(stopped.runtime.lifecycle, "stopped");
    let unobserved = verdict(None);
    assert_eq!(unobserved.overall, "unknown");
    assert_eq!(
        unobserved.runtime.reason_code.as_deref(),
        Some("not_observed")
    );
    assert_eq!(unobserved.public_access.status, "not-configured");
    assert_eq!(unobserved.health_policy.status, "not-configured");
}

/// What the shim answers is what the CLI reads: a record read back from its wire form writes
/// the same wire form (the runtime's states included, which are renamed on the way out).
#[test]
fn a_record_reads_back_from_its_wire_form() {
    let status = with(
        runtime(RuntimeLifecycle::Missing, RuntimeHealth::Starting),
        ProxyRouteStatus::Ready,
    );
    let wire = verdict(status).to_json();
    let read: ResourceHealth = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(read.to_json(), wire);
    assert_eq!(wire["runtime"]["lifecycle"], "unknown");
    assert_eq!(wire["runtime"]["reasonCode"], "runtime_missing");
}
