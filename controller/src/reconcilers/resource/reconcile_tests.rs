//! The Resource reconcile end to end on a scripted API server: a healthy resource costs no
//! request and no SSH connection; a change costs exactly one status write, whose body is
//! checked field by field.

use std::collections::HashMap;
use std::sync::Arc;

use berth_crds::deployment::{Deployment, DeploymentState, DeploymentStatus};
use berth_crds::resource::{ProxyRouteStatus, Resource, ResourceStatus};
use berth_crds::{DEPLOYMENT_LABEL, MANAGED_LABEL, NAMESPACE_LABEL, RESOURCE_LABEL};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use serde_json::{Value, json};

use super::runtime_state;
use super::{FINALIZER, Observed, decide, new_deployment, reconcile};
use crate::context::Context;
use crate::context::fixtures::{ApiServer, Exchange, StandInServer};
use crate::observer::index::Listed;
use crate::reconcilers::deployment::plan::container_name;
use crate::reconcilers::policy::RESYNC_AFTER;

const NAMESPACE: &str = "org-acme";
const STATUS: &str = "/apis/berth.dev/v1alpha1/namespaces/org-acme/resources/web/status";

/// A resource served by its first attempt on a server whose observer sees the container run
/// and has confirmed its route: nothing to deploy, repair or report anew.
struct Healthy {
    context: Arc<Context>,
    api: ApiServer,
    server: StandInServer,
    resource: Resource,
    serving: Deployment,
}

async fn healthy() -> Healthy {
    let (context, api, mut feeds) = Context::test();
    let server = StandInServer::start(&mut feeds, NAMESPACE, "local").await;
    let resource = resource(1);
    let mut serving = new_deployment(&resource, true);
    serving.metadata.namespace = Some(NAMESPACE.into());
    serving.status = Some(DeploymentStatus {
        status: Some(DeploymentState::Succeeded),
        finished_at: Some(Time("2026-01-01T07:59:00Z".parse().unwrap())),
        ..Default::default()
    });
    feeds.deployments.put(serving.clone());
    let container = container_name(NAMESPACE, "web", "dep-web-1");
    let observed = context
        .observers
        .observe_for_test(&server.id, vec![running(&container)]);
    let epoch = observed
        .route_check_due(NAMESPACE, "web")
        .expect("not confirmed yet");
    observed.confirm_route(NAMESPACE, "web", epoch);
    Healthy {
        context,
        api,
        server,
        resource,
        serving,
    }
}

fn resource(generation: i64) -> Resource {
    let spec = serde_json::from_value(json!({
        "projectId": "prj-1", "environmentId": "env-1", "serverId": "local",
        "name": "web", "kind": "application",
        "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
        "networkProfile": { "internalPort": 8080 },
        "autoDeploy": { "enabled": false },
    }))
    .unwrap();
    let mut resource = Resource::new("web", spec);
    resource.metadata.namespace = Some(NAMESPACE.into());
    resource.metadata.generation = Some(generation);
    resource.metadata.finalizers = Some(vec![FINALIZER.into()]);
    resource
}

fn running(container: &str) -> Listed {
    let labels = [
        (MANAGED_LABEL, "true"),
        (NAMESPACE_LABEL, NAMESPACE),
        (RESOURCE_LABEL, "web"),
        (DEPLOYMENT_LABEL, "dep-web-1"),
    ];
    Listed {
        id: format!("id-{container}"),
        name: container.into(),
        labels: HashMap::from(labels.map(|(k, v)| (k.to_string(), v.to_string()))),
        running: true,
        health: None,
    }
}

/// The status a healthy reconcile at `at` decides, as the API server stores it (JSON).
fn healthy_status(fixture: &Healthy, at: &str) -> ResourceStatus {
    let server = fixture.context.caches.servers.state()[0].clone();
    let serving = Some(&fixture.serving);
    let observed = Observed {
        route_status: ProxyRouteStatus::Ready,
        runtime: runtime_state::observe(&fixture.context, NAMESPACE, "web", serving),
        stopped: false,
        attempts: 1,
        runtime_control: None,
        bindings: Vec::new(),
        config_fingerprint: None,
    };
    let deployments = [fixture.serving.clone()];
    let at: Timestamp = at.parse().unwrap();
    let status = decide(&fixture.resource, Some(&server), &deployments, observed, at);
    serde_json::from_value(serde_json::to_value(status).unwrap()).unwrap()
}

#[tokio::test]
async fn a_healthy_resource_is_reconciled_without_a_request_or_an_ssh_connection() {
    let mut fixture = healthy().await;
    fixture.resource.status = Some(healthy_status(&fixture, "2026-01-01T08:00:00Z"));
    let script = fixture.api.expect_nothing();
    let action = reconcile(Arc::new(fixture.resource), fixture.context.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(RESYNC_AFTER));
    script.finish().await;
    fixture.server.assert_untouched(&fixture.context).await;
}

#[tokio::test]
async fn the_status_a_reconcile_wrote_is_not_written_again() {
    let fixture = healthy().await;
    let (context, mut resource) = (fixture.context.clone(), fixture.resource.clone());
    let script = fixture
        .api
        .serve([Exchange::patch(STATUS).returns(&resource)]);
    reconcile(Arc::new(resource.clone()), context.clone())
        .await
        .unwrap();
    let sent = script.finish().await;
    // What the API server stored is what the next reconcile reads.
    resource.status = Some(serde_json::from_value(sent[0].body["status"].clone()).unwrap());
    let script = fixture.api.expect_nothing();
    let action = reconcile(Arc::new(resource), context.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(RESYNC_AFTER));
    script.finish().await;
    fixture.server.assert_untouched(&context).await;
}

#[tokio::test]
async fn an_edit_that_needs_no_deployment_is_acknowledged_in_one_status_apply() {
    let mut fixture = healthy().await;
    fixture.resource.status = Some(healthy_status(&fixture, "2026-01-01T08:00:00Z"));
    fixture.resource.metadata.generation = Some(2);
    let resource = fixture.resource.clone();
    let script = fixture
        .api
        .serve([Exchange::patch(STATUS).returns(&resource)]);
    let action = reconcile(Arc::new(resource), fixture.context.clone())
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(RESYNC_AFTER));
    let sent = script.finish().await;
    // A forced server-side apply of the whole status under the controller's field manager.
    assert_eq!(sent[0].query, "&force=true&fieldManager=berth-controller");
    let apply = Some("application/apply-patch+yaml");
    assert_eq!(sent[0].content_type.as_deref(), apply);
    let policy = fixture.resource.spec.auto_deploy.fingerprint();
    assert_eq!(sent[0].body, acknowledged_status(&policy));
    fixture.server.assert_untouched(&fixture.context).await;
}

/// The healthy status at generation 2: only the observed generations moved; the times are
/// those of the status before.
fn acknowledged_status(policy_fingerprint: &str) -> Value {
    let route = json!({
        "hostname": "web.localhost", "pathPrefix": "/", "providerKey": "caddy",
        "proxyKind": "caddy", "scheme": "http", "targetPort": 8080,
        "url": "http://web.localhost:8080/",
    });
    let mut realized = route.clone();
    realized["deploymentId"] = json!("dep-web-1");
    realized["deploymentStatus"] = json!("succeeded");
    realized["updatedAt"] = json!("2026-01-01T07:59:00Z");
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource", "metadata": {},
        "status": {
            "accessSummary": {
                "plannedGeneratedAccessRoute": route,
                "latestGeneratedAccessRoute": realized,
                "proxyRouteStatus": "ready",
            },
            // The policy seen at generation 1 dates from then, as the status before says.
            "autoDeploy": {
                "policyFingerprint": policy_fingerprint, "updatedAt": "2026-01-01T08:00:00Z",
            },
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "Serving",
                "message": "deployment dep-web-1 serves the resource",
                "observedGeneration": 2, "lastTransitionTime": "2026-01-01T08:00:00Z",
            }, {
                // Generation 2 changed nothing an attempt deploys: still the declared spec.
                "type": "Deployed", "status": "True", "reason": "SpecDeployed",
                "message": "deployment dep-web-1 runs the declared spec",
                "observedGeneration": 2, "lastTransitionTime": "2026-01-01T08:00:00Z",
            }],
            "deployedState": {
                "upToDate": true, "deploymentId": "dep-web-1", "deployedGeneration": 1,
            },
            "deploymentCount": 1,
            "lastDeploymentId": "dep-web-1",
            "lastDeploymentStatus": "succeeded",
            "lastRouteRealizationDeploymentId": "dep-web-1",
            "observedGeneration": 2,
            "proxyRouteStatus": "ready",
            "runtime": {
                "deploymentId": "dep-web-1", "lifecycle": "running", "health": "healthy",
                "message": "the container runs", "observedAt": "2026-01-01T08:00:00Z",
                "oomKilled": false,
            },
        },
    })
}
