//! The pure parts of building the diagnostic summary (`berth_api::diagnostics`) from a
//! Resource, its Deployment and its health record.

use berth_api::diagnostics::{Access, Context, DeploymentBlock, LastError, Window};
use berth_api::wire::name_of;
use berth_crds::deployment::Deployment;
use berth_crds::health::{PublicAccess, ResourceHealth, RouteIntentStatus};
use berth_crds::resource::Resource;
use kube::ResourceExt;

pub fn context(resource: &Resource, window: Option<Window>) -> Context {
    let spec = &resource.spec;
    Context {
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        resource_name: spec.name.clone(),
        resource_slug: resource.host_slug(),
        resource_kind: name_of(spec.kind).unwrap_or_default(),
        destination_id: spec.destination_id.clone(),
        server_id: spec.server_id.clone(),
        runtime_strategy: "docker-container".into(),
        build_strategy: match spec.source.as_ref().map(|s| s.kind.as_str()) {
            Some("docker-image") => "prebuilt-image".into(),
            _ => "dockerfile".into(),
        },
        packaging_mode: "split-deploy".into(),
        target_kind: "single-server".into(),
        target_provider_key: "ssh-docker".into(),
        services: spec
            .services
            .iter()
            .filter_map(|s| berth_api::wire::to_value(s).ok())
            .collect(),
        network_profile: spec
            .network_profile
            .as_ref()
            .and_then(|n| berth_api::wire::to_value(n).ok()),
        observation_window: window,
    }
}

pub fn deployment_block(deployment: &Deployment, timeline_count: i64) -> DeploymentBlock {
    let status = deployment.status.clone().unwrap_or_default();
    let source = deployment.spec.source_snapshot.as_ref();
    let state = status
        .status
        .and_then(name_of)
        .unwrap_or_else(|| "created".into());
    DeploymentBlock {
        id: deployment.name_any(),
        lifecycle_phase: state.clone(),
        status: state,
        runtime_plan_id: status.image_ref.clone(),
        source_kind: source.map(|s| s.kind.clone()),
        source_display_name: source.map(|s| {
            s.display_name
                .clone()
                .unwrap_or_else(|| without_userinfo(&s.locator))
        }),
        server_id: deployment.spec.server_id.clone(),
        destination_id: deployment.spec.destination_id.clone(),
        created_at: deployment
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        started_at: status.started_at.as_ref().map(|t| t.0.to_string()),
        finished_at: status.finished_at.as_ref().map(|t| t.0.to_string()),
        timeline_count,
        last_error: status.last_error.as_ref().map(|error| LastError {
            timestamp: error.timestamp.0.to_string(),
            phase: name_of(error.phase).unwrap_or_default(),
            code: name_of(error.code).unwrap_or_default(),
            message: error.message.clone(),
        }),
    }
}

/// A locator as shown: a URL's `user:password@` part never is.
fn without_userinfo(locator: &str) -> String {
    match locator.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((userinfo, host)) if !userinfo.contains('/') => format!("{scheme}://{host}"),
            _ => locator.to_string(),
        },
        None => locator.to_string(),
    }
}

/// The access block: the resource's routes as its status records them, and the verdict the
/// health record reached about the generated one.
pub fn access(resource: &Resource, health: &ResourceHealth) -> Access {
    let status = resource.status.clone().unwrap_or_default();
    let summary = status.access_summary.unwrap_or_default();
    let url = |route: &Option<berth_crds::resource::AppliedAccessRoute>| {
        route.as_ref().map(|r| r.url.clone())
    };
    let public: &PublicAccess = &health.public_access;
    let (state, reason) = match public.status.as_str() {
        "ready" => ("available", None),
        "not-configured" => ("not-configured", public.reason_code.clone()),
        _ => ("unavailable", public.reason_code.clone()),
    };
    let routes: Vec<RouteIntentStatus> = public.route_intent_status.iter().cloned().collect();
    Access {
        status: state.into(),
        generated_url: url(&summary.latest_generated_access_route),
        durable_url: url(&summary.latest_durable_domain_route),
        server_applied_url: url(&summary.latest_server_applied_domain_route),
        planned_url: summary
            .planned_generated_access_route
            .as_ref()
            .map(|r| r.url.clone()),
        latest_access_failure: public.latest_access_failure.clone(),
        selected_route: routes.first().cloned(),
        route_intent_statuses: routes,
        proxy_route_status: status.proxy_route_status.and_then(name_of),
        last_route_realization_deployment_id: status.last_route_realization_deployment_id,
        reason_code: reason,
        phase: public.phase.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locator_is_shown_without_credentials() {
        assert_eq!(
            without_userinfo("https://bot:s3cret@git.example/app.git"),
            "https://git.example/app.git"
        );
        assert_eq!(without_userinfo("/srv/app"), "/srv/app");
        assert_eq!(
            without_userinfo("https://git.example/a@b"),
            "https://git.example/a@b"
        );
    }
}
