//! A Resource's health as the API reports it: what the controller recorded, and with `live`
//! what the server answers now (the health route and an attempt's proof).

mod probes;

use berth_crds::health::{Inputs, ResourceHealth, SourceError, build, overall};
use kube::ResourceExt;

use crate::domain::objects::{find_deployment, find_in};
use crate::services::recent_access_failures;
use crate::state::AppState;

/// What a health read asks for: the route's query, checked.
#[derive(Debug, Default, PartialEq)]
pub struct HealthQuery {
    pub live: bool,
    pub checks: bool,
    pub runtime_probe: bool,
    pub public_access_probe: bool,
}

/// The resource's health as `parsed` asks for it: recorded, and with `live` probed now.
pub async fn assemble(
    state: &AppState,
    resource: &berth_crds::resource::Resource,
    parsed: &HealthQuery,
) -> ResourceHealth {
    let id = resource.name_any();
    let namespace = resource.namespace().unwrap_or_default();
    let latest_id = resource
        .status
        .as_ref()
        .and_then(|s| s.last_deployment_id.clone());
    let mut source_errors = Vec::new();
    let latest = match latest_id {
        Some(name) => match find_deployment(state, &namespace, &name).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(%error, resource = %id, "health: reading the latest deployment failed");
                source_errors.push(SourceError::infra(
                    "deployment",
                    "deployment_unreadable",
                    "deployment-read",
                    "the latest deployment could not be read".into(),
                ));
                None
            }
        },
        None => None,
    };
    let server = resource
        .spec
        .server_id
        .as_ref()
        .and_then(|s| find_in(&state.caches.servers, &namespace, s, "server").ok());
    let mut health = build(&Inputs {
        resource,
        latest: latest.as_ref(),
        server: server.as_deref(),
        now: probes::now(),
    });
    let latest_failure = if parsed.live {
        recent_access_failures::latest_of(&state.observations, resource).await
    } else {
        state
            .recent_access_failures
            .latest_of(&state.observations, resource)
            .await
    };
    match latest_failure {
        Ok(latest) => health.public_access.latest_access_failure = latest,
        Err(_) => source_errors.push(SourceError::infra(
            "public-access",
            "access_failure_evidence_unreadable",
            "access-failure-read",
            "the latest access-failure evidence could not be read".into(),
        )),
    }
    health.source_errors = source_errors;
    if parsed.checks {
        health.checks.push(probes::recorded_runtime_check(&health));
    }
    if parsed.live {
        probes::run(state, resource, server.as_deref(), parsed, &mut health).await;
    }
    health.partial = !health.source_errors.is_empty();
    health.overall = overall(&health).into();
    health
}
