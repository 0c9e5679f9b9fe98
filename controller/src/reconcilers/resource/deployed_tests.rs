//! The `Deployed` condition and `status.deployedState`, case by case, and what a kstatus
//! reader (Flux's and Argo's health checks) makes of a resource whose change is not deployed.

use berth_crds::condition::{Condition, ConditionStatus, READY};
use berth_crds::deployment::{
    Deployment, DeploymentError, DeploymentErrorCode, DeploymentPhase, DeploymentState,
    DeploymentStatus, RollbackTarget,
};
use berth_crds::resource::deployed::{DEPLOYED, SPEC_DIGESTS_ANNOTATION};
use berth_crds::resource::{ProxyRouteStatus, Resource, ResourceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::runtime_state::Seen;
use super::{Observed, decide, new_deployment};

fn now() -> Timestamp {
    "2026-02-01T12:00:00Z".parse().unwrap()
}

fn resource(generation: i64, start: &str) -> Resource {
    let mut resource: Resource = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": {"name": "web", "namespace": "org-acme", "generation": generation},
        "spec": {
            "projectId": "prj-1", "environmentId": "env-1", "serverId": "local",
            "name": "web", "kind": "application",
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "networkProfile": {"internalPort": 8080},
            "runtimeProfile": {"startCommand": start},
        },
    }))
    .unwrap();
    resource.metadata.generation = Some(generation);
    resource
}

/// An attempt made from `resource` as it is, ended (or not) in `state`.
fn attempt(resource: &Resource, name: &str, state: Option<DeploymentState>) -> Deployment {
    let mut deployment = new_deployment(resource, false);
    deployment.metadata.name = Some(name.into());
    deployment.status = Some(DeploymentStatus {
        status: state,
        config_fingerprint: Some("sha256:config-1".into()),
        ..Default::default()
    });
    deployment
}

fn observed(config: Option<&str>) -> Observed {
    Observed {
        route_status: ProxyRouteStatus::Ready,
        runtime: Seen::Container {
            deployment: "dep-web-1".into(),
            record: None,
        },
        stopped: false,
        attempts: 1,
        runtime_control: None,
        bindings: Vec::new(),
        config_fingerprint: config.map(String::from),
    }
}

fn condition<'a>(status: &'a ResourceStatus, type_: &str) -> &'a Condition {
    status.conditions.iter().find(|c| c.type_ == type_).unwrap()
}

/// kstatus's rules for a kind it has no special rules for (sigs.k8s.io/cli-utils
/// `pkg/kstatus/status`, which Flux's health checks and `kubectl wait --for=jsonpath` users
/// rely on): being deleted is `Terminating`; an `observedGeneration` behind
/// `metadata.generation` is `InProgress`; a `Reconciling=True` condition is `InProgress`, a
/// `Stalled=True` one `Failed`; anything else is `Current`. Argo CD's default health for a
/// custom resource reads `Ready` the same way Flux's `Ready`-aware checks do.
fn kstatus(object: &Value) -> &'static str {
    if !object["metadata"]["deletionTimestamp"].is_null() {
        return "Terminating";
    }
    let generation = &object["metadata"]["generation"];
    let observed = &object["status"]["observedGeneration"];
    if !observed.is_null() && observed != generation {
        return "InProgress";
    }
    let conditions = object["status"]["conditions"].as_array().cloned();
    for condition in conditions.unwrap_or_default() {
        match (condition["type"].as_str(), condition["status"].as_str()) {
            (Some("Reconciling"), Some("True")) => return "InProgress",
            (Some("Stalled"), Some("True")) => return "Failed",
            _ => {}
        }
    }
    "Current"
}

#[test]
fn a_changed_start_command_is_not_deployed_while_the_old_version_serves_and_stays_ready() {
    let v1 = resource(1, "serve v1");
    let deployments = [attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded))];
    let v2 = resource(2, "serve v2");
    let status = decide(&v2, None, &deployments, observed(None), now());
    let ready = condition(&status, READY);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (ConditionStatus::True, "Serving")
    );
    let deployed = condition(&status, DEPLOYED);
    assert_eq!(deployed.status, ConditionStatus::False);
    assert_eq!(deployed.reason, "ChangesNotDeployed");
    assert_eq!(deployed.observed_generation, Some(2));
    assert_eq!(
        deployed.message,
        "changes not deployed: runtimeProfile; deployment dep-web-1 (generation 1) still \
         serves. Deploy with `berth deploy web`, `POST /api/deployments` \
         {\"resourceId\":\"web\",…}, or set spec.autoDeploy.enabled: true"
    );
    let state = status.deployed_state.clone().unwrap();
    assert!(!state.up_to_date);
    assert_eq!(state.deployment_id, "dep-web-1");
    assert_eq!(state.deployed_generation, Some(1));
    assert_eq!(state.changes_not_deployed, ["runtimeProfile"]);
    assert_eq!(state.deploying_id, None);

    // What Flux or Argo sees: healthy and current, no Reconciling or Stalled abused.
    let mut object = serde_json::to_value(&v2).unwrap();
    object["status"] = serde_json::to_value(&status).unwrap();
    assert_eq!(kstatus(&object), "Current");
    let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, [READY, DEPLOYED]);
}

#[test]
fn the_kstatus_rules_do_tell_progress_and_failure() {
    // The rules above are not vacuous: the same object reads otherwise when it should.
    let v2 = resource(2, "serve v2");
    let mut object = serde_json::to_value(&v2).unwrap();
    object["status"] = json!({"observedGeneration": 1, "conditions": []});
    assert_eq!(kstatus(&object), "InProgress");
    object["status"] = json!({"observedGeneration": 2, "conditions": [
        {"type": "Stalled", "status": "True"}]});
    assert_eq!(kstatus(&object), "Failed");
}

#[test]
fn once_an_attempt_of_the_new_spec_succeeds_the_spec_is_deployed() {
    let v1 = resource(1, "serve v1");
    let v2 = resource(2, "serve v2");
    let mut deployments = vec![
        attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded)),
        attempt(&v2, "dep-web-2", Some(DeploymentState::Running)),
    ];
    let status = decide(&v2, None, &deployments, observed(None), now());
    let state = status.deployed_state.unwrap();
    assert_eq!(state.deploying_id.as_deref(), Some("dep-web-2"));
    let deployed = condition_of(&status.conditions, DEPLOYED);
    assert!(
        deployed
            .message
            .ends_with("still serves; deployment dep-web-2 is deploying them"),
        "{}",
        deployed.message
    );
    deployments[1].status.as_mut().unwrap().status = Some(DeploymentState::Succeeded);
    let status = decide(&v2, None, &deployments, observed(None), now());
    let deployed = condition_of(&status.conditions, DEPLOYED);
    assert_eq!(deployed.status, ConditionStatus::True);
    assert_eq!(deployed.reason, "SpecDeployed");
    assert_eq!(
        deployed.message,
        "deployment dep-web-2 runs the declared spec"
    );
    assert!(status.deployed_state.unwrap().up_to_date);
}

fn condition_of<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
    conditions.iter().find(|c| c.type_ == type_).unwrap()
}

#[test]
fn a_failed_attempt_of_the_change_is_named() {
    let v1 = resource(1, "serve v1");
    let v2 = resource(2, "serve v2");
    let mut failed = attempt(&v2, "dep-web-2", Some(DeploymentState::Failed));
    failed.status.as_mut().unwrap().last_error = Some(DeploymentError {
        timestamp: Time(now()),
        phase: DeploymentPhase::Verify,
        code: DeploymentErrorCode::HealthCheckFailed,
        message: "unhealthy".into(),
    });
    let deployments = [
        attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded)),
        failed,
    ];
    let status = decide(&v2, None, &deployments, observed(None), now());
    let deployed = condition_of(&status.conditions, DEPLOYED);
    assert!(
        deployed.message.contains(
            "still serves; the latest attempt dep-web-2 ended failed (HealthCheckFailed). Deploy"
        ),
        "{}",
        deployed.message
    );
}

#[test]
fn fields_that_apply_at_once_leave_the_spec_deployed() {
    let v1 = resource(1, "serve v1");
    let deployments = [attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded))];
    let mut v2 = resource(2, "serve v1");
    v2.spec.description = Some("the shop".into());
    v2.spec.auto_deploy.refs = vec!["refs/heads/main".into()];
    v2.spec.deployment_history_limit = Some(3);
    let status = decide(&v2, None, &deployments, observed(None), now());
    let deployed = condition_of(&status.conditions, DEPLOYED);
    assert_eq!(deployed.status, ConditionStatus::True);
    assert_eq!(deployed.observed_generation, Some(2));
    let state = status.deployed_state.unwrap();
    assert!(state.up_to_date);
    assert_eq!(state.deployed_generation, Some(1));
}

#[test]
fn a_configuration_changed_since_the_serving_attempt_is_not_deployed() {
    let v1 = resource(1, "serve v1");
    let deployments = [attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded))];
    let same = decide(
        &v1,
        None,
        &deployments,
        observed(Some("sha256:config-1")),
        now(),
    );
    assert!(same.deployed_state.unwrap().up_to_date);
    let moved = decide(
        &v1,
        None,
        &deployments,
        observed(Some("sha256:config-2")),
        now(),
    );
    assert_eq!(
        moved.deployed_state.unwrap().changes_not_deployed,
        ["configuration"]
    );
    // Not known (its environment is going away): nothing is claimed.
    let unknown = decide(&v1, None, &deployments, observed(None), now());
    assert!(unknown.deployed_state.unwrap().up_to_date);
}

#[test]
fn a_rollback_deploys_the_source_of_the_attempt_it_returns_to() {
    let v1 = resource(1, "serve v1");
    let mut v2 = resource(2, "serve v1");
    v2.spec.source.as_mut().unwrap().locator = "berth/sample-app:2".into();
    let mut rollback = attempt(&v2, "dep-web-3", Some(DeploymentState::Succeeded));
    rollback.spec.rollback_of = Some(RollbackTarget {
        deployment_id: "dep-web-1".into(),
        image_ref: "berth/sample-app:1".into(),
    });
    let deployments = [
        attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded)),
        attempt(&v2, "dep-web-2", Some(DeploymentState::Succeeded)),
        rollback,
    ];
    let status = decide(&v2, None, &deployments, observed(None), now());
    let state = status.deployed_state.unwrap();
    assert_eq!(state.deployment_id, "dep-web-3");
    assert_eq!(state.changes_not_deployed, ["source"]);
}

#[test]
fn nothing_serving_is_not_deployed_and_an_old_attempt_is_unknown() {
    let v1 = resource(1, "serve v1");
    let failed = [attempt(&v1, "dep-web-1", Some(DeploymentState::Failed))];
    let status = decide(&v1, None, &failed, observed(None), now());
    let deployed = condition_of(&status.conditions, DEPLOYED);
    assert_eq!(
        (deployed.status, deployed.reason.as_str()),
        (ConditionStatus::False, "NotDeployed")
    );
    assert_eq!(status.deployed_state, None);

    // Made before attempts recorded their spec: the generation alone decides, or nothing.
    let mut old = attempt(&v1, "dep-web-1", Some(DeploymentState::Succeeded));
    old.metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(SPEC_DIGESTS_ANNOTATION);
    let same = decide(&v1, None, &[old.clone()], observed(None), now());
    assert_eq!(
        condition_of(&same.conditions, DEPLOYED).status,
        ConditionStatus::True
    );
    let later = decide(&resource(2, "x"), None, &[old], observed(None), now());
    let deployed = condition_of(&later.conditions, DEPLOYED);
    assert_eq!(
        (deployed.status, deployed.reason.as_str()),
        (ConditionStatus::Unknown, "DeployedSpecUnknown")
    );
}
