//! `GET /deployments/{deploymentId}` (`deployments.show/v1`): the attempt, where it stands,
//! what it relates to, how it failed, and what can be done with it now.

use axum::extract::{Path, State};
use berth_api::deployment_records::{
    AttemptStatus, AttemptTimeline, LatestFailure, RecoverySummary, RelatedContext, RelatedObject,
    SHOW_SCHEMA_VERSION, SectionError, ShowDeployment,
};
use berth_crds::deployment::DeploymentState;
use berth_crds::progress::{Level, Source};
use berth_observations::TimelineKey;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::actions::rollback_candidates;
use super::record::summary;
use super::{Attempt, find};
use crate::auth::Caller;
use crate::domain::deployments::attempt_state;
use crate::domain::objects::find_in;
use crate::error::ApiResult;
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ShowDeployment>> {
    let attempt = find(&state, &caller, &id).await?;
    let deployment = &attempt.deployment;
    let mut section_errors = Vec::new();
    let key = TimelineKey::new(
        deployment.namespace().unwrap_or_default(),
        deployment.spec.resource_id.clone(),
        id.clone(),
    );
    let count = match store_call(&state.observations, "deployment timelines", move |store| {
        store.count(&key)
    })
    .await
    {
        Ok(count) => count,
        Err(_) => {
            section_errors.push(unavailable("timeline"));
            0
        }
    };
    let candidates = match rollback_candidates(&state, &caller, deployment).await {
        Ok(candidates) => candidates.len(),
        Err(_) => {
            section_errors.push(unavailable("recovery"));
            0
        }
    };
    let record = summary(deployment, attempt.resource.as_deref(), count);
    let current = attempt_state(deployment);
    Ok(Json(ShowDeployment {
        schema_version: SHOW_SCHEMA_VERSION.into(),
        status: AttemptStatus {
            current,
            created_at: record.created_at.clone(),
            started_at: record.started_at.clone(),
            finished_at: record.finished_at.clone(),
            rollback_of_deployment_id: record.rollback_of_deployment_id.clone(),
        },
        related_context: Some(related(&state, &attempt)),
        timeline: AttemptTimeline {
            created_at: record.created_at.clone(),
            started_at: record.started_at.clone(),
            finished_at: record.finished_at.clone(),
            timeline_count: count,
        },
        latest_failure: record.last_error.as_ref().map(|error| LatestFailure {
            timestamp: error.timestamp.clone(),
            source: Source::Platform,
            phase: error.phase,
            level: Level::Error,
            message: error.message.clone(),
            code: error.code.clone(),
        }),
        recovery_summary: recovery(&attempt, current, candidates),
        next_actions: [
            "timeline",
            "resource-detail",
            "resource-health",
            "diagnostic-summary",
        ]
        .map(String::from)
        .to_vec(),
        section_errors,
        generated_at: Timestamp::now().to_string(),
        deployment: record,
    }))
}

fn unavailable(section: &str) -> SectionError {
    SectionError {
        section: section.into(),
        code: "observation_store_unavailable".into(),
        category: "infra".into(),
        phase: "read".into(),
        retriable: true,
    }
}

/// What can be done now, and why not.
fn recovery(attempt: &Attempt, current: DeploymentState, candidates: usize) -> RecoverySummary {
    let resource_left = attempt.resource.is_some();
    let retryable = resource_left && current.is_terminal() && current != DeploymentState::Succeeded;
    let mut blocked = Vec::new();
    if !resource_left {
        blocked.push("resource_not_found".to_string());
    }
    if candidates == 0 {
        blocked.push("rollback_candidate_missing".to_string());
    }
    RecoverySummary {
        source: "deployments.recovery-readiness".into(),
        retryable,
        redeployable: resource_left,
        rollback_ready: resource_left && candidates > 0,
        rollback_candidate_count: i64::try_from(candidates).unwrap_or(i64::MAX),
        blocked_reason_codes: blocked,
        cancelable: !attempt.removed && !current.is_terminal(),
    }
}

/// The project, environment, resource and server as they are now (ids alone when gone).
fn related(state: &AppState, attempt: &Attempt) -> RelatedContext {
    let spec = &attempt.deployment.spec;
    let namespace = attempt.deployment.namespace().unwrap_or_default();
    let bare = |id: &str| RelatedObject {
        id: id.into(),
        name: None,
        slug: None,
        kind: None,
        host: None,
        port: None,
        provider_key: None,
    };
    let caches = &state.caches;
    let project = find_in(&caches.projects, &namespace, &spec.project_id, "project").ok();
    let environment = find_in(
        &caches.environments,
        &namespace,
        &spec.environment_id,
        "environment",
    )
    .ok();
    let server = find_in(&caches.servers, &namespace, &spec.server_id, "server").ok();
    RelatedContext {
        project: RelatedObject {
            name: project.as_ref().map(|p| p.spec.name.clone()),
            slug: project.as_ref().and_then(|p| p.spec.slug.clone()),
            ..bare(&spec.project_id)
        },
        environment: RelatedObject {
            name: environment.as_ref().map(|e| e.spec.name.clone()),
            kind: environment.as_ref().map(|e| e.spec.kind.clone()),
            ..bare(&spec.environment_id)
        },
        resource: RelatedObject {
            name: attempt.resource.as_ref().map(|r| r.spec.name.clone()),
            slug: attempt.resource.as_ref().map(|r| r.host_slug()),
            kind: attempt
                .resource
                .as_ref()
                .and_then(|r| serde_json::to_value(r.spec.kind).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
            ..bare(&spec.resource_id)
        },
        server: Some(RelatedObject {
            name: server.as_ref().and_then(|s| s.spec.name.clone()),
            host: server.as_ref().map(|s| s.spec.host.clone()),
            port: server.as_ref().map(|s| i64::from(s.spec.port)),
            provider_key: Some("generic-ssh".into()),
            ..bare(&spec.server_id)
        }),
    }
}
