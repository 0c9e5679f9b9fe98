//! Dependency bindings on the stack's `local` server. An app bound to a managed PostgreSQL gets
//! `DATABASE_URL` from the dependency's Secret and reaches it on the dependency's private
//! network: its command health check runs a query, so a deploy only succeeds when the app can.
//! A binding made before its dependency exists fails its attempt naming the variable, and the
//! app deploys by itself once the dependency has its connection; a row the app writes survives
//! a redeploy of the app and a `docker rm -f` of the database; a dependency of another
//! environment is refused. The password shows in no Resource, Deployment, event or log line.

use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentErrorCode, DeploymentState};
use berth_crds::resource::Resource;
use berth_tests::{TestNamespace, client, eventually};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::dependency_resources::{
    assert_not_shown, create, docker, password, registry_image, wait_ready,
};
use crate::deployments::{apply, ready_server, teardown};

/// Starting PostgreSQL on two busy cores takes a while.
const WAIT: Duration = Duration::from_secs(180);

/// The query the app's health check (and the test, as the app) runs with its `DATABASE_URL`.
fn app_query(sql: &str) -> String {
    format!("psql \"$DATABASE_URL\" -tAc \"{sql}\"")
}

/// Project `shop` and its environment `shop-production`, which the app and the database share.
fn apply_project(ns: &TestNamespace) {
    let objects = json!({ "apiVersion": "v1", "kind": "List", "items": [
        { "apiVersion": "berth.dev/v1alpha1", "kind": "Project",
          "metadata": { "name": "shop", "namespace": ns.name }, "spec": { "name": "Shop" } },
        { "apiVersion": "berth.dev/v1alpha1", "kind": "Environment",
          "metadata": { "name": "shop-production", "namespace": ns.name },
          "spec": { "projectId": "shop", "name": "production", "kind": "production" } },
    ]});
    apply(&objects.to_string());
}

/// A worker on the PostgreSQL image (for its `psql`) bound to `db` as `DATABASE_URL`; healthy
/// once a query through the binding answers.
fn app_manifest(ns: &TestNamespace, image: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "app", "namespace": ns.name },
        "spec": {
            "projectId": "shop", "environmentId": "shop-production", "serverId": "local",
            "name": "app", "kind": "worker",
            "source": { "kind": "docker-image", "locator": image },
            "runtimeProfile": {
                "startCommand": "exec sleep 100000",
                "healthCheck": { "type": "command", "command": app_query("select 1"),
                                 "intervalSeconds": 1, "retries": 60 },
            },
            "autoDeploy": { "enabled": true },
            "dependencyBindings": [{ "dependencyResourceId": "db", "targetName": "DATABASE_URL" }],
        },
    })
    .to_string()
}

/// The attempt after `previous` (the resource's latest once it differs), once it has ended.
async fn next_attempt(ns: &TestNamespace, previous: Option<&str>) -> Deployment {
    let resources = ns.api::<Resource>();
    let id = eventually(WAIT, "a new attempt", || async {
        let id = resources
            .get("app")
            .await
            .ok()?
            .status?
            .last_deployment_id?;
        (Some(id.as_str()) != previous).then_some(id)
    })
    .await;
    let deployments = ns.api::<Deployment>();
    eventually(WAIT, &format!("{id} ended"), || async {
        let deployment = deployments.get_opt(&id).await.ok()??;
        let ended = deployment.status.as_ref()?.status?.is_terminal();
        ended.then_some(deployment)
    })
    .await
}

fn assert_ended(deployment: &Deployment, state: DeploymentState) {
    let status = deployment.status.as_ref().unwrap();
    assert_eq!(status.status, Some(state), "{status:?}");
}

/// The query run in the app's own container, with its environment.
fn query_as_app(ns: &TestNamespace, sql: &str) -> (bool, String) {
    let name = format!("name=berth-{}-app-", ns.name);
    let (_, names) = docker(&[
        "ps",
        "--filter",
        &name,
        "--filter",
        "status=running",
        "--format",
        "{{.Names}}",
    ]);
    let Some(container) = names.lines().next() else {
        return (false, "no running app container".into());
    };
    docker(&["exec", container, "sh", "-c", &app_query(sql)])
}

#[tokio::test]
async fn a_bound_app_reaches_its_database_by_url_and_keeps_its_rows() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "bind").await;
    ready_server(&ns).await;
    apply_project(&ns);
    let image = registry_image("berth/postgres:15");

    // Bound before the database exists: the attempt says which variable and why.
    apply(&app_manifest(&ns, &image));
    let first = next_attempt(&ns, None).await;
    assert_ended(&first, DeploymentState::Failed);
    let error = first.status.as_ref().unwrap().last_error.clone().unwrap();
    assert_eq!(error.code, DeploymentErrorCode::DependencyBindingInvalid);
    assert!(error.message.contains("DATABASE_URL"), "{}", error.message);

    // The database comes, and with it its connection: the app deploys by itself.
    create(&ns, "db", "postgres", &image).await;
    wait_ready(&ns.api(), "db").await;
    let second = next_attempt(&ns, first.metadata.name.as_deref()).await;
    assert_ended(&second, DeploymentState::Succeeded);
    let (written, out) = query_as_app(
        &ns,
        "create table notes (body text); insert into notes values ('kept')",
    );
    assert!(written, "the app writes through DATABASE_URL: {out}");

    // A redeploy of the app, then the database container removed by hand: the row stays.
    let patch = json!({ "spec": { "variables": [{ "key": "RELEASE", "value": "2" }] } });
    ns.api::<Resource>()
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let third = next_attempt(&ns, second.metadata.name.as_deref()).await;
    assert_ended(&third, DeploymentState::Succeeded);
    assert_eq!(query_as_app(&ns, "select body from notes").1, "kept");
    let database = format!("berth-dep-{}-db", ns.name);
    assert!(docker(&["rm", "-f", &database]).0);
    eventually(WAIT, "the app reads its row after the repair", || async {
        let (ok, rows) = query_as_app(&ns, "select body from notes");
        (ok && rows == "kept").then_some(())
    })
    .await;

    // Resources, Deployments, events and the controller's log: where the password must not show.
    let kinds = "resources.berth.dev,deployments.berth.dev,events.events.k8s.io";
    assert_not_shown(&ns, kinds, "DATABASE_URL", &password(&ns, "db").await);
    refuses_a_dependency_of_another_environment(&ns, &image, &third).await;
    // The databases go first: teardown waits for every container of the namespace.
    ns.api::<berth_crds::dependency_resource::DependencyResource>()
        .delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    teardown(&ns, "app").await;
    for name in ["db", "staging-db"] {
        docker(&[
            "volume",
            "rm",
            &format!("berth-dep-{}-{name}-data", ns.name),
        ]);
    }
}

/// A second binding to a database of another environment: the next attempt fails naming it,
/// and the serving container stays.
async fn refuses_a_dependency_of_another_environment(
    ns: &TestNamespace,
    image: &str,
    serving: &Deployment,
) {
    let other = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
        "metadata": { "name": "staging-db", "namespace": ns.name },
        "spec": { "kind": "postgres", "projectId": "shop", "environmentId": "shop-staging",
                  "serverId": "local", "name": "staging", "image": image },
    });
    apply(&other.to_string());
    let patch = json!({ "spec": { "dependencyBindings": [
        { "dependencyResourceId": "db", "targetName": "DATABASE_URL" },
        { "dependencyResourceId": "staging-db", "targetName": "STAGING_URL" },
    ]}});
    ns.api::<Resource>()
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let refused = next_attempt(ns, serving.metadata.name.as_deref()).await;
    assert_ended(&refused, DeploymentState::Failed);
    let error = refused.status.as_ref().unwrap().last_error.clone().unwrap();
    assert_eq!(error.code, DeploymentErrorCode::DependencyBindingInvalid);
    assert!(
        error.message.contains("STAGING_URL") && error.message.contains("shop-staging"),
        "{}",
        error.message
    );
    assert_eq!(query_as_app(ns, "select body from notes").1, "kept");
}
