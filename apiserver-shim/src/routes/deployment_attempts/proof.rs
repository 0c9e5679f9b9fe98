//! `GET /deployments/{deploymentId}/proof` (`deployments.proof/v1`): whether an attempt serves,
//! from its outcome (an attempt succeeds only after its health check passed), the timeline of
//! its verify phase, the serving container the server's observer reports, the route the
//! resource's access summary says the edge proxy holds, and — for the attempt that serves —
//! a Docker inspect and one request through the edge proxy made now (the resource's live
//! health). The verdict is decided from those facts alone ([`verdict`]).

use axum::extract::{Path, State};
use berth_api::deployment_proof::{
    CheckStatus, DeploymentProof, EvidenceReference, Fingerprint, ObservedAccess, ObservedArtifact,
    ObservedCheck, ObservedConfiguration, ObservedProof, ObservedRecovery, ObservedRoute,
    ObservedWorkload, PROOF_SCHEMA_VERSION, PlannedArtifact, PlannedProof, PlannedSource,
    ProofMismatch, ProofVerdict, RuntimeTarget, UnavailableEvidence, VerificationStep,
};
use berth_crds::deployment::{Deployment, DeploymentPhase, DeploymentState, DeploymentStatus};
use berth_crds::health::{Check, ResourceHealth};
use berth_crds::resource::{AppliedAccessRoute, Resource};
use berth_observations::TimelineKey;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use sha2::{Digest, Sha256};

use super::actions::rollback_candidates;
use super::record::summary;
use super::{Attempt, find};
use crate::auth::Caller;
use crate::domain::deployments::attempt_state;
use crate::domain::resource_health::{HealthQuery, assemble};
use crate::error::ApiResult;
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

/// What the verdict is drawn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Facts {
    pub status: DeploymentState,
    /// Whether this attempt's container is the one serving (`None`: not known).
    pub serving: Option<bool>,
    pub health: CheckStatus,
    pub access: CheckStatus,
}

/// The verdict: an attempt that has not succeeded proves nothing served; one that succeeded
/// but no longer serves is stale; one that serves is verified when its health and (if it has a
/// route) its access pass, failed when either failed, and partially verified otherwise.
pub fn verdict(facts: Facts) -> ProofVerdict {
    use CheckStatus::{Failed, Passed, Skipped};
    match facts.status {
        DeploymentState::Succeeded => {}
        s if s.is_terminal() => return ProofVerdict::Failed,
        _ => return ProofVerdict::Unverified,
    }
    if facts.serving == Some(false) {
        return ProofVerdict::Stale;
    }
    if facts.health == Failed || facts.access == Failed {
        return ProofVerdict::Failed;
    }
    let access_ok = matches!(facts.access, Passed | Skipped);
    if facts.serving == Some(true) && facts.health == Passed && access_ok {
        ProofVerdict::Verified
    } else {
        ProofVerdict::PartiallyVerified
    }
}

fn digest(value: &impl serde::Serialize) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

fn check_status(text: &str) -> CheckStatus {
    match text {
        "passed" => CheckStatus::Passed,
        "failed" => CheckStatus::Failed,
        "skipped" => CheckStatus::Skipped,
        _ => CheckStatus::Unavailable,
    }
}

fn planned(deployment: &Deployment, resource: Option<&Resource>) -> PlannedProof {
    let record = summary(deployment, resource, 0);
    let plan = &record.runtime_plan;
    let rebuild = plan.build_strategy != "prebuilt-image";
    let mut effects = vec!["replace-workload", "verify-health-policy"];
    if rebuild {
        effects.insert(0, "rebuild-artifact");
    }
    let proxied = resource.is_some_and(|r| {
        r.status
            .as_ref()
            .and_then(|s| s.access_summary.as_ref())
            .is_some_and(|a| a.planned_generated_access_route.is_some())
    });
    let mut steps = vec![VerificationStep {
        kind: "internal-http".into(),
        label: "health check of the new container".into(),
    }];
    if proxied {
        effects.push("apply-route");
        steps.push(VerificationStep {
            kind: "public-http".into(),
            label: "a request through the edge proxy".into(),
        });
    }
    PlannedProof {
        source: PlannedSource {
            reference: plan.source.locator.clone(),
            revision: record.source_commit_sha.clone(),
        },
        artifact: PlannedArtifact {
            intent: plan.runtime_artifact.as_ref().map(|a| a.intent.clone()),
            reference: record.image_ref.clone(),
        },
        resource_profile: Fingerprint {
            fingerprint: resource.map(|r| digest(&r.spec)).unwrap_or_default(),
        },
        configuration: Fingerprint {
            fingerprint: record
                .environment_snapshot
                .fingerprint
                .clone()
                .unwrap_or_default(),
        },
        runtime_target: RuntimeTarget {
            kind: "single-server".into(),
            provider_key: "generic-ssh".into(),
        },
        verification_steps: steps,
        expected_effects: effects.into_iter().map(String::from).collect(),
    }
}

/// The verify phase as the timeline recorded it.
async fn verify_entries(
    state: &AppState,
    deployment: &Deployment,
) -> Option<Vec<EvidenceReference>> {
    let key = TimelineKey::new(
        deployment.namespace().unwrap_or_default(),
        deployment.spec.resource_id.clone(),
        deployment.name_any(),
    );
    let entries = store_call(&state.observations, "deployment timelines", move |store| {
        store.read(&key, 0, 5_000)
    })
    .await
    .ok()?;
    Some(
        entries
            .iter()
            .filter(|e| e.event.phase == DeploymentPhase::Verify)
            .filter(|e| e.event.source == berth_crds::progress::Source::Platform)
            .map(|e| EvidenceReference {
                kind: "timeline-entry".into(),
                reference: e.sequence.to_string(),
                summary: e.event.message.clone(),
                observed_at: Some(e.event.timestamp.clone()),
            })
            .collect(),
    )
}

pub async fn proof(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DeploymentProof>> {
    let attempt = find(&state, &caller, &id).await?;
    let deployment = &attempt.deployment;
    let resource = attempt.resource.as_deref();
    let status = attempt_state(deployment);
    let observed_at = Timestamp::now().to_string();
    let serving_id = resource
        .and_then(|r| r.status.as_ref())
        .and_then(|s| s.runtime.as_ref())
        .and_then(|r| r.deployment_id.clone());
    let serving = serving_id.as_ref().map(|s| *s == id);
    // Ask the server now only about the attempt that serves.
    let health = match resource {
        Some(r) if status == DeploymentState::Succeeded && serving != Some(false) => {
            let live = HealthQuery {
                live: true,
                ..HealthQuery::default()
            };
            Some(assemble(&state, r, &live).await)
        }
        _ => None,
    };
    let mut evidence = verify_entries(&state, deployment).await.unwrap_or_default();
    let mut unavailable = Vec::new();
    let observed = observe(
        &attempt,
        serving_id.clone(),
        health.as_ref(),
        &observed_at,
        &mut evidence,
        &mut unavailable,
    );
    let facts = Facts {
        status,
        serving,
        health: observed.health.status,
        access: observed.access.status,
    };
    let candidate = rollback_candidates(&state, &caller, deployment)
        .await
        .ok()
        .and_then(|c| c.first().map(|d| d.name_any()));
    let mismatches = mismatches(&id, facts, &observed);
    Ok(Json(DeploymentProof {
        schema_version: PROOF_SCHEMA_VERSION.into(),
        deployment_id: id,
        resource_id: deployment.spec.resource_id.clone(),
        verdict: verdict(facts),
        planned: planned(deployment, resource),
        observed: ObservedProof {
            recovery: ObservedRecovery {
                reason_code: candidate
                    .is_none()
                    .then(|| "rollback_candidate_missing".into()),
                rollback_candidate_deployment_id: candidate,
            },
            ..observed
        },
        mismatches,
        evidence,
        unavailable_evidence: unavailable,
        generated_at: observed_at,
        state_version: deployment.resource_version().unwrap_or_default(),
    }))
}

/// What is observed of the attempt: its image and container, and the health and access
/// checks of the live read.
fn observe(
    attempt: &Attempt,
    serving_id: Option<String>,
    health: Option<&ResourceHealth>,
    observed_at: &str,
    evidence: &mut Vec<EvidenceReference>,
    unavailable: &mut Vec<UnavailableEvidence>,
) -> ObservedProof {
    let deployment = &attempt.deployment;
    let id = deployment.name_any();
    let status = deployment.status.clone().unwrap_or_default();
    let succeeded = attempt_state(deployment) == DeploymentState::Succeeded;
    let check = |name: &str| health.and_then(|h| h.checks.iter().find(|c| c.name == name));
    // An attempt succeeds only once its health check passed; the live inspect may say it
    // fails now.
    let runtime = check("runtime-container");
    let health_check = health_check(succeeded, runtime);
    if let Some(c) = runtime {
        evidence.push(EvidenceReference {
            kind: "runtime-readback".into(),
            reference: "runtime-container".into(),
            summary: c.message.clone(),
            observed_at: Some(c.observed_at.clone()),
        });
    }
    let route = latest_route(attempt);
    let public = check("public-access");
    let access = match (public, &route) {
        (Some(c), Some(route)) => {
            evidence.push(EvidenceReference {
                kind: "access-observation".into(),
                reference: route.url.clone(),
                summary: c.message.clone(),
                observed_at: Some(c.observed_at.clone()),
            });
            checked_access(c, route, &id, &serving_id)
        }
        (None, None) if health.is_some() => no_route(),
        _ => unchecked_access(succeeded, unavailable),
    };
    for error in health
        .map(|h| h.source_errors.as_slice())
        .unwrap_or_default()
    {
        unavailable.push(UnavailableEvidence {
            kind: "workload".into(),
            reason_code: error.code.to_string(),
            summary: error.message.clone(),
        });
    }
    ObservedProof {
        available: health.is_some(),
        observed_at: observed_at.to_string(),
        artifact: artifact(&status),
        workload: workload(&status, &id, serving_id),
        configuration: configuration(&status),
        health: health_check,
        access,
        recovery: ObservedRecovery {
            rollback_candidate_deployment_id: None,
            reason_code: None,
        },
    }
}

/// The health check: passed when the attempt succeeded (it succeeds only once its health
/// check passed), unless the live inspect of its container (`runtime`) failed.
fn health_check(succeeded: bool, runtime: Option<&Check>) -> ObservedCheck {
    match (succeeded, runtime) {
        (false, _) => ObservedCheck {
            status: CheckStatus::Skipped,
            summary: "the attempt did not succeed".into(),
            reason_code: Some("deployment_not_succeeded".into()),
        },
        (true, Some(c)) if c.status == "failed" => ObservedCheck {
            status: CheckStatus::Failed,
            summary: c.message.clone(),
            reason_code: Some("internal_health_failed".into()),
        },
        (true, _) => ObservedCheck {
            status: CheckStatus::Passed,
            summary: "the new container passed its health check before it took traffic".into(),
            reason_code: None,
        },
    }
}

/// The generated route the resource's access summary says the edge proxy holds.
fn latest_route(attempt: &Attempt) -> Option<AppliedAccessRoute> {
    attempt
        .resource
        .as_ref()
        .and_then(|r| r.status.as_ref())
        .and_then(|s| s.access_summary.as_ref())
        .and_then(|a| a.latest_generated_access_route.clone())
}

/// Access as the request through the edge proxy (`public`) found it on `route`.
fn checked_access(
    public: &Check,
    route: &AppliedAccessRoute,
    id: &str,
    serving_id: &Option<String>,
) -> ObservedAccess {
    let targets = route.deployment_id == id;
    ObservedAccess {
        status: check_status(&public.status),
        summary: public.message.clone(),
        reason_code: public.reason_code.clone(),
        route_targets_workload: Some(targets),
        routes: vec![ObservedRoute {
            url: route.url.clone(),
            route_behavior: "serve".into(),
            expected_deployment_id: id.to_string(),
            observed_deployment_id: serving_id.clone(),
            observed_status: public.status_code.map(i64::from),
            matched: targets && public.status == "passed",
            reason_code: public.reason_code.clone(),
        }],
    }
}

/// Access of a resource the edge proxy does not route: nothing to check.
fn no_route() -> ObservedAccess {
    ObservedAccess {
        status: CheckStatus::Skipped,
        summary: "the resource has no route through the edge proxy".into(),
        reason_code: None,
        route_targets_workload: None,
        routes: Vec::new(),
    }
}

/// Access not checked: unavailable evidence for an attempt that succeeded, skipped otherwise.
fn unchecked_access(succeeded: bool, unavailable: &mut Vec<UnavailableEvidence>) -> ObservedAccess {
    if succeeded {
        unavailable.push(UnavailableEvidence {
            kind: "access".into(),
            reason_code: "public_access_unavailable".into(),
            summary: "no request through the edge proxy could be made".into(),
        });
    }
    ObservedAccess {
        status: if succeeded {
            CheckStatus::Unavailable
        } else {
            CheckStatus::Skipped
        },
        summary: "not checked".into(),
        reason_code: (!succeeded).then(|| "deployment_not_succeeded".into()),
        route_targets_workload: None,
        routes: Vec::new(),
    }
}

/// The image the attempt ran.
fn artifact(status: &DeploymentStatus) -> ObservedArtifact {
    ObservedArtifact {
        available: status.image_ref.is_some(),
        reference: status.image_ref.clone(),
        reason_code: status
            .image_ref
            .is_none()
            .then(|| "artifact_identity_unavailable".into()),
    }
}

/// The container serving the resource (`serving_id`'s), identified when it is the attempt's.
fn workload(status: &DeploymentStatus, id: &str, serving_id: Option<String>) -> ObservedWorkload {
    let serving = serving_id.as_deref() == Some(id);
    ObservedWorkload {
        available: serving_id.is_some(),
        identity: serving
            .then(|| {
                status
                    .container_id
                    .as_ref()
                    .map(|c| c.chars().take(12).collect())
            })
            .flatten(),
        deployment_id: serving_id,
        started_at: status
            .finished_at
            .as_ref()
            .map(crate::domain::time::timestamp),
        reason_code: (!serving).then(|| "workload_generation_mismatch".into()),
    }
}

/// The configuration the attempt ran with, by its fingerprint.
fn configuration(status: &DeploymentStatus) -> ObservedConfiguration {
    ObservedConfiguration {
        available: status.config_fingerprint.is_some(),
        fingerprint: status.config_fingerprint.clone(),
        reason_code: status
            .config_fingerprint
            .is_none()
            .then(|| "configuration_evidence_unavailable".into()),
    }
}

/// Where the facts disagree with what the attempt planned, and what to do about it.
fn mismatches(id: &str, facts: Facts, observed: &ObservedProof) -> Vec<ProofMismatch> {
    let mut found = Vec::new();
    let mut push = |code: &str, expected: String, seen: Option<String>, operations: &[&str]| {
        found.push(ProofMismatch {
            reason_code: code.into(),
            severity: "error".into(),
            expected,
            observed: seen,
            evidence: Vec::new(),
            recommended_operations: operations.iter().map(|o| o.to_string()).collect(),
        });
    };
    if facts.status.is_terminal() && facts.status != DeploymentState::Succeeded {
        let word = serde_json::to_value(facts.status).unwrap_or_default();
        push(
            "deployment_not_succeeded",
            "succeeded".into(),
            word.as_str().map(str::to_string),
            &["deployments.retry", "deployments.timeline"],
        );
    }
    if facts.serving == Some(false) && facts.status == DeploymentState::Succeeded {
        push(
            "workload_generation_mismatch",
            format!("the container of {id} serves"),
            observed.workload.deployment_id.clone(),
            &["deployments.rollback", "deployments.redeploy"],
        );
    }
    if facts.health == CheckStatus::Failed {
        push(
            "internal_health_failed",
            "a running, healthy container".into(),
            Some(observed.health.summary.clone()),
            &["resources.diagnostic-summary", "deployments.redeploy"],
        );
    }
    if facts.access == CheckStatus::Failed {
        push(
            "public_access_failed",
            "the edge proxy serves the route".into(),
            Some(observed.access.summary.clone()),
            &["resources.diagnostic-summary", "deployments.redeploy"],
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckStatus::{Passed, Skipped, Unavailable};

    fn facts(
        status: DeploymentState,
        serving: Option<bool>,
        health: CheckStatus,
        access: CheckStatus,
    ) -> Facts {
        Facts {
            status,
            serving,
            health,
            access,
        }
    }

    #[test]
    fn the_verdict_follows_outcome_serving_and_checks() {
        use DeploymentState::*;
        assert_eq!(
            verdict(facts(Running, None, Skipped, Skipped)),
            ProofVerdict::Unverified
        );
        assert_eq!(
            verdict(facts(Canceled, None, Skipped, Skipped)),
            ProofVerdict::Failed
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(false), Passed, Passed)),
            ProofVerdict::Stale
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(true), Passed, Passed)),
            ProofVerdict::Verified
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(true), Passed, Skipped)),
            ProofVerdict::Verified,
            "no route to check"
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(true), Passed, CheckStatus::Failed)),
            ProofVerdict::Failed
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(true), CheckStatus::Failed, Passed)),
            ProofVerdict::Failed
        );
        assert_eq!(
            verdict(facts(Succeeded, Some(true), Passed, Unavailable)),
            ProofVerdict::PartiallyVerified
        );
        assert_eq!(
            verdict(facts(Succeeded, None, Passed, Passed)),
            ProofVerdict::PartiallyVerified
        );
    }
}
