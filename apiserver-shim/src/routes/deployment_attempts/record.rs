//! A Deployment object as the REST record of its attempt (Appaloft's `DeploymentSummary` with
//! what Berth knows besides): no I/O, so the list, the show answer and the change feed render
//! live and archived attempts alike.

use berth_api::build::BuildStrategy;
use berth_api::deployment_records::{
    DeploymentFailure, DeploymentSummary, DeploymentTarget, DeploymentTrigger, EnvironmentSnapshot,
    PlanExecution, PlanSource, PlanTarget, RuntimeArtifact, RuntimePlan, ScheduledRetry,
    SnapshotVariable, TriggerKind,
};
use berth_crds::config::ConfigScope;
use berth_crds::deployment::{Deployment, DeploymentError};
use berth_crds::masking::looks_secret;
use berth_crds::resource::Resource;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use kube::ResourceExt;

use crate::cache::CREATED_BY_MANAGER;
use crate::domain::deployments::{attempt_state, source_commit};
use crate::domain::time::{created_at, timestamp};

/// The five steps of every attempt (spec §6 `step.total`).
const STEPS: [&str; 5] = ["detect", "plan", "package", "deploy", "verify"];
/// Field managers that are Berth itself.
const SYSTEM_MANAGERS: [&str; 2] = ["berth-controller", "berth-shim"];

/// Who or what started the attempt: the actor the shim recorded, else the field manager that
/// created it (Berth's own managers are `system`).
pub fn trigger(deployment: &Deployment) -> DeploymentTrigger {
    let kind = TriggerKind::parse(deployment.spec.trigger.as_deref());
    let annotations = deployment.annotations();
    // Attempts berth-controller starts on its own (it creates them without a field manager
    // name of its own).
    let by_controller = matches!(
        kind,
        TriggerKind::ResourceCreated | TriggerKind::AutoDeploy | TriggerKind::ConfigChange
    );
    let (actor_kind, actor_id) = match (
        annotations.get(UPDATED_BY_KIND),
        annotations.get(UPDATED_BY_ID),
        annotations.get(CREATED_BY_MANAGER),
    ) {
        (Some(kind), Some(id), _) => (Some(kind.clone()), Some(id.clone())),
        _ if by_controller => (Some("system".into()), Some("berth-controller".into())),
        (_, _, Some(manager)) if SYSTEM_MANAGERS.contains(&manager.as_str()) => {
            (Some("system".into()), Some(manager.clone()))
        }
        (_, _, Some(manager)) => (Some("user".into()), Some(manager.clone())),
        _ => (None, None),
    };
    DeploymentTrigger {
        kind,
        actor_kind,
        actor_id,
    }
}

fn failure(error: &DeploymentError) -> DeploymentFailure {
    DeploymentFailure {
        timestamp: timestamp(&error.timestamp),
        phase: error.phase,
        code: error.code.as_str().into(),
        message: error.message.clone(),
    }
}

/// Appaloft's build strategy names for what the attempt does with its source.
fn build_strategy(
    deployment: &Deployment,
    source_kind: &str,
    resource: Option<&Resource>,
) -> &'static str {
    if deployment.spec.rollback_of.is_some() || source_kind == "docker-image" {
        return "prebuilt-image";
    }
    let declared = resource
        .and_then(|r| r.spec.runtime_profile.as_ref())
        .and_then(|p| p.strategy);
    match declared {
        Some(BuildStrategy::WorkspaceCommands) => "workspace-commands",
        Some(BuildStrategy::Static) => "static-artifact",
        Some(BuildStrategy::PrebuiltImage) => "prebuilt-image",
        Some(BuildStrategy::DockerCompose) => "compose-deploy",
        _ => "dockerfile",
    }
}

fn runtime_plan(deployment: &Deployment, resource: Option<&Resource>) -> RuntimePlan {
    let name = deployment.name_any();
    let source = deployment.spec.source_snapshot.clone();
    let (kind, locator, display_name) = match &source {
        Some(s) => (
            s.kind.clone(),
            s.locator.clone(),
            s.display_name.clone().unwrap_or_else(|| s.locator.clone()),
        ),
        None => ("none".into(), String::new(), "no source".into()),
    };
    let strategy = build_strategy(deployment, &kind, resource);
    let image = deployment
        .status
        .as_ref()
        .and_then(|s| s.image_ref.clone())
        .or_else(|| {
            deployment
                .spec
                .rollback_of
                .as_ref()
                .map(|r| r.image_ref.clone())
        });
    let profile = resource.and_then(|r| r.spec.runtime_profile.as_ref());
    let intent = if strategy == "prebuilt-image" {
        "prebuilt-image"
    } else {
        "build-image"
    };
    RuntimePlan {
        id: format!("{name}-plan"),
        source: PlanSource {
            kind,
            locator,
            display_name,
        },
        build_strategy: strategy.into(),
        packaging_mode: "split-deploy".into(),
        runtime_artifact: Some(RuntimeArtifact {
            kind: "image".into(),
            intent: intent.into(),
            image: image.clone(),
        }),
        execution: PlanExecution {
            kind: "docker-container".into(),
            port: resource
                .and_then(|r| r.spec.network_profile.as_ref())
                .map(|n| n.internal_port),
            image,
            health_check_path: profile
                .and_then(|p| p.health_check.as_ref())
                .map(|h| h.path.clone()),
            start_command: profile.and_then(|p| p.start_command.clone()),
        },
        target: PlanTarget {
            kind: "single-server".into(),
            provider_key: "generic-ssh".into(),
            server_ids: vec![deployment.spec.server_id.clone()],
        },
        detect_summary: match &deployment.spec.rollback_of {
            Some(r) => format!("rollback to {}: {} again", r.deployment_id, r.image_ref),
            None => format!(
                "{strategy} from {}",
                deployment
                    .spec
                    .source_snapshot
                    .as_ref()
                    .map_or("no source", |s| s.kind.as_str())
            ),
        },
        steps: STEPS.iter().map(|s| s.to_string()).collect(),
        generated_at: created_at(&deployment.metadata),
    }
}

fn environment_snapshot(deployment: &Deployment) -> EnvironmentSnapshot {
    let variables = deployment
        .spec
        .variables
        .iter()
        .map(|v| {
            let secret = looks_secret(&v.key, &v.value);
            SnapshotVariable {
                key: v.key.clone(),
                value: if secret {
                    "****".into()
                } else {
                    v.value.clone()
                },
                scope: ConfigScope::Deployment.as_str().into(),
                exposure: crate::domain::variables::exposure_name(v.exposure).into(),
                is_secret: secret,
                kind: if secret { "secret" } else { "plain-config" }.into(),
            }
        })
        .collect();
    EnvironmentSnapshot {
        id: format!("{}-config", deployment.name_any()),
        environment_id: deployment.spec.environment_id.clone(),
        created_at: created_at(&deployment.metadata),
        precedence: ConfigScope::PRECEDENCE
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
        variables,
        fingerprint: deployment
            .status
            .as_ref()
            .and_then(|s| s.config_fingerprint.clone()),
    }
}

/// The record of `deployment`; `resource` (when it still exists) fills in the plan's port,
/// health check and strategy.
pub fn summary(
    deployment: &Deployment,
    resource: Option<&Resource>,
    timeline_count: i64,
) -> DeploymentSummary {
    let spec = &deployment.spec;
    let status = deployment.status.clone().unwrap_or_default();
    let trigger = trigger(deployment);
    let commit = status.source_commit.as_ref();
    DeploymentSummary {
        id: deployment.name_any(),
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        resource_id: spec.resource_id.clone(),
        target: DeploymentTarget {
            kind: "server-backed".into(),
            server_id: spec.server_id.clone(),
            destination_id: spec
                .destination_id
                .clone()
                .unwrap_or_else(|| "default".into()),
        },
        server_id: Some(spec.server_id.clone()),
        destination_id: spec.destination_id.clone(),
        status: attempt_state(deployment),
        trigger_kind: trigger.kind.lineage(),
        trigger,
        source_deployment_id: spec
            .source_deployment_id
            .clone()
            .or_else(|| spec.rollback_of.as_ref().map(|r| r.deployment_id.clone())),
        rollback_of_deployment_id: spec.rollback_of.as_ref().map(|r| r.deployment_id.clone()),
        source_commit_sha: commit.map(|c| c.sha.clone()).or_else(|| {
            spec.source_snapshot
                .as_ref()
                .and_then(|s| s.commit_sha.clone())
        }),
        source_commit: source_commit(deployment),
        runtime_plan: runtime_plan(deployment, resource),
        environment_snapshot: environment_snapshot(deployment),
        timeline: Vec::new(),
        timeline_count,
        created_at: created_at(&deployment.metadata),
        started_at: status.started_at.as_ref().map(timestamp),
        finished_at: status.finished_at.as_ref().map(timestamp),
        phase: status.phase,
        step: status.current_step.clone(),
        image_ref: status.image_ref.clone(),
        last_error: status.last_error.as_ref().map(failure),
        retry: status.retry.as_ref().map(|r| ScheduledRetry {
            count: r.count,
            next_retry_at: timestamp(&r.next_retry_at),
            last_error: failure(&r.last_error),
        }),
        cancel_requested: spec.cancel_requested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::deployment::DeploymentState;
    use serde_json::json;

    fn deployment(extra: serde_json::Value, annotations: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Deployment",
            "metadata": {
                "name": "dep-web-3", "namespace": "org-a", "annotations": annotations,
                "creationTimestamp": "2030-01-01T00:00:00Z",
            },
            "spec": {
                "resourceId": "web", "projectId": "prj-1", "environmentId": "env-1",
                "serverId": "srv-1", "trigger": "rollback",
                "sourceSnapshot": {"kind": "remote-git", "locator": "https://git.example/a.git", "commitSha": "a".repeat(40)},
                "rollbackOf": {"deploymentId": "dep-web-1", "imageRef": "berth-built/org-a-web:dep-web-1"},
                "variables": [{"key": "API_TOKEN", "value": "hunter2"}, {"key": "MODE", "value": "fast"}],
            },
            "status": extra,
        }))
        .unwrap()
    }

    #[test]
    fn a_rollback_reads_as_appaloft_and_names_what_it_returns_to() {
        let annotations = json!({ UPDATED_BY_KIND: "user", UPDATED_BY_ID: "usr-1" });
        let status = json!({
            "status": "failed", "phase": "verify",
            "lastError": {"timestamp": "2030-01-01T00:01:00Z", "phase": "verify", "code": "health_check_failed", "message": "GET / answered 500"},
        });
        let value =
            berth_api::wire::to_value(&summary(&deployment(status, annotations), None, 7)).unwrap();
        assert_eq!(value["status"], "failed");
        assert_eq!(value["triggerKind"], "rollback");
        assert_eq!(
            value["trigger"],
            json!({"kind": "rollback", "actorKind": "user", "actorId": "usr-1"})
        );
        assert_eq!(value["rollbackOfDeploymentId"], "dep-web-1");
        assert_eq!(value["sourceDeploymentId"], "dep-web-1");
        assert_eq!(value["sourceCommitSha"], "a".repeat(40));
        assert_eq!(value["runtimePlan"]["buildStrategy"], "prebuilt-image");
        assert_eq!(
            value["runtimePlan"]["runtimeArtifact"]["image"],
            "berth-built/org-a-web:dep-web-1"
        );
        assert_eq!(
            value["target"],
            json!({"kind": "server-backed", "serverId": "srv-1", "destinationId": "default"})
        );
        assert_eq!(value["lastError"]["code"], "health_check_failed");
        assert_eq!(value["timelineCount"], 7);
        assert_eq!(value["timeline"], json!([]));
        let variables = &value["environmentSnapshot"]["variables"];
        assert_eq!(
            variables[0]["value"], "****",
            "secret-looking values are masked"
        );
        assert_eq!(variables[1]["value"], "fast");
        assert!(!value.to_string().contains("hunter2"));
    }

    #[test]
    fn the_creator_of_an_applied_attempt_is_its_actor() {
        let kubectl = deployment(
            json!({}),
            json!({ CREATED_BY_MANAGER: "kubectl-client-side-apply" }),
        );
        let trigger = trigger(&kubectl);
        assert_eq!(
            (trigger.actor_kind.as_deref(), trigger.actor_id.as_deref()),
            (Some("user"), Some("kubectl-client-side-apply"))
        );
        let controller = deployment(json!({}), json!({ CREATED_BY_MANAGER: "berth-controller" }));
        assert_eq!(
            super::trigger(&controller).actor_kind.as_deref(),
            Some("system")
        );
        assert_eq!(attempt_state(&controller), DeploymentState::Created);
    }
}
