//! Whether the serving deployment runs the declared spec: the `Deployed` condition and
//! `status.deployedState`. Pure: the spec digests each attempt recorded when it was made
//! (`berth_crds::resource::deployed`) against the spec now, and the serving attempt's
//! configuration fingerprint against the configuration now.
//!
//! `Ready` says whether something serves; this says whether it is what was declared. The two
//! are apart on purpose: a change that is not deployed leaves the old version serving, which
//! kstatus (and Flux's or Argo's health checks) must keep reading as healthy.

use berth_crds::GENERATION_ANNOTATION;
use berth_crds::condition::Condition;
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use berth_crds::resource::deployed::{
    CONFIGURATION, DEPLOYED, DeployedState, current_digests, reason, recorded_digests,
    undeployed_fields,
};
use kube::ResourceExt;

use super::attempts::state;
use crate::conditions::Stamp;

/// The deployed state and the `Deployed` condition of `resource`, whose attempts are
/// `deployments` (oldest first) and whose configuration fingerprints `config` now.
pub(super) fn deployed_state(
    resource: &Resource,
    deployments: &[Deployment],
    serving: Option<&Deployment>,
    config: Option<&str>,
    stamp: Stamp,
) -> (Option<DeployedState>, Condition) {
    let Some(serving) = serving else {
        let condition = stamp.fails(
            DEPLOYED,
            reason::NOT_DEPLOYED,
            "no deployment has succeeded yet",
        );
        return (None, condition);
    };
    let generation = resource.metadata.generation;
    let deployed_generation = generation_of(serving);
    let current = current_digests(resource);
    let Some(recorded) = deployed_digests(serving, deployments) else {
        // Made before attempts recorded their spec: only an unchanged generation says anything.
        let up_to_date = deployed_generation.is_some() && deployed_generation == generation;
        let state = DeployedState {
            up_to_date,
            deployment_id: serving.name_any(),
            deployed_generation,
            ..DeployedState::default()
        };
        let condition = if up_to_date {
            stamp.holds(DEPLOYED, reason::SPEC_DEPLOYED, runs_declared(serving))
        } else {
            stamp.unknown(
                DEPLOYED,
                reason::DEPLOYED_SPEC_UNKNOWN,
                format!(
                    "deployment {} was made from an earlier generation before Berth recorded \
                     what each attempt deploys; deploy to compare",
                    serving.name_any()
                ),
            )
        };
        return (Some(state), condition);
    };
    let mut changes = undeployed_fields(&recorded, &current);
    let used = serving
        .status
        .as_ref()
        .and_then(|s| s.config_fingerprint.as_deref());
    if let (Some(used), Some(now)) = (used, config)
        && used != now
    {
        changes.push(CONFIGURATION.to_string());
    }
    let deploying = deploying(deployments, serving, &current);
    let state = DeployedState {
        up_to_date: changes.is_empty(),
        deployment_id: serving.name_any(),
        deployed_generation,
        changes_not_deployed: changes,
        deploying_id: deploying.map(ResourceExt::name_any),
    };
    let condition = if state.up_to_date {
        stamp.holds(DEPLOYED, reason::SPEC_DEPLOYED, runs_declared(serving))
    } else {
        let latest = deployments
            .last()
            .filter(|d| d.name_any() != serving.name_any());
        stamp.fails(
            DEPLOYED,
            reason::CHANGES_NOT_DEPLOYED,
            not_deployed(resource, serving, &state, latest),
        )
    };
    (Some(state), condition)
}

fn runs_declared(serving: &Deployment) -> String {
    format!("deployment {} runs the declared spec", serving.name_any())
}

/// What `ChangesNotDeployed` says: the fields, what still serves, and how to deploy.
fn not_deployed(
    resource: &Resource,
    serving: &Deployment,
    deployed: &DeployedState,
    latest: Option<&Deployment>,
) -> String {
    let fields = deployed.changes_not_deployed.join(", ");
    let made_from = deployed
        .deployed_generation
        .map(|g| format!(" (generation {g})"))
        .unwrap_or_default();
    let head = format!(
        "changes not deployed: {fields}; deployment {}{made_from} still serves",
        serving.name_any()
    );
    if let Some(id) = &deployed.deploying_id {
        return format!("{head}; deployment {id} is deploying them");
    }
    let failed = latest
        .filter(|d| state(d).is_some_and(DeploymentState::is_terminal))
        .filter(|d| state(d) != Some(DeploymentState::Succeeded))
        .map(|d| format!("; the latest attempt {} ended {}", d.name_any(), outcome(d)))
        .unwrap_or_default();
    format!(
        "{head}{failed}. Deploy with `berth deploy {name}`, `POST /api/deployments` \
         {{\"resourceId\":\"{name}\",…}}, or set spec.autoDeploy.enabled: true",
        name = resource.name_any()
    )
}

fn outcome(deployment: &Deployment) -> String {
    let status = deployment.status.as_ref();
    let state = status
        .and_then(|s| s.status)
        .map(|s| format!("{s:?}").to_lowercase())
        .unwrap_or_default();
    match status.and_then(|s| s.last_error.as_ref()) {
        Some(error) => format!("{state} ({:?})", error.code),
        None => state,
    }
}

/// The spec digests the serving attempt deploys. A rollback runs an earlier attempt's image,
/// so its `source` is that attempt's.
fn deployed_digests(
    serving: &Deployment,
    deployments: &[Deployment],
) -> Option<std::collections::BTreeMap<String, String>> {
    let mut recorded = recorded_digests(serving.annotations())?;
    let target = serving.spec.rollback_of.as_ref().and_then(|rollback| {
        deployments
            .iter()
            .find(|d| d.name_any() == rollback.deployment_id)
    });
    if let Some(source) = target
        .and_then(|t| recorded_digests(t.annotations()))
        .and_then(|digests| digests.get("source").cloned())
    {
        recorded.insert("source".into(), source);
    }
    Some(recorded)
}

/// An attempt newer than the serving one, still running, that carries the spec as it is now.
fn deploying<'a>(
    deployments: &'a [Deployment],
    serving: &Deployment,
    current: &std::collections::BTreeMap<String, String>,
) -> Option<&'a Deployment> {
    let after_serving = deployments
        .iter()
        .skip_while(|d| d.name_any() != serving.name_any())
        .skip(1);
    after_serving
        .filter(|d| !state(d).is_some_and(DeploymentState::is_terminal))
        .filter(|d| {
            recorded_digests(d.annotations())
                .is_some_and(|recorded| undeployed_fields(&recorded, current).is_empty())
        })
        .last()
}

fn generation_of(deployment: &Deployment) -> Option<i64> {
    deployment
        .annotations()
        .get(GENERATION_ANNOTATION)
        .and_then(|g| g.parse().ok())
}
