//! Dependency bindings on the stack's `local` server. An app bound to a managed PostgreSQL gets
//! `DATABASE_URL` from the dependency's Secret and reaches it on the dependency's private
//! network: its command health check runs a query, so a deploy only succeeds when the app can.
//! A binding made before its dependency exists fails its attempt naming the variable, and the
//! app deploys by itself once the dependency has its connection; a row the app writes survives
//! a redeploy of the app and a `docker rm -f` of the database; credentials rotated while the app
//! queries without pause refuse no query, and the old login is refused afterwards; a dependency
//! of another environment is refused. No password shows in a Resource, Deployment, event or log
//! line.

use std::time::Duration;

use berth_crds::dependency_resource::DependencyResource;
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
pub(crate) fn apply_project(ns: &TestNamespace) {
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
    app_bound_to(ns, image, "db")
}

/// The worker of [`app_manifest`] bound to dependency `dependency`.
pub(crate) fn app_bound_to(ns: &TestNamespace, image: &str, dependency: &str) -> String {
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
            "dependencyBindings": [{ "dependencyResourceId": dependency, "targetName": "DATABASE_URL" }],
        },
    })
    .to_string()
}

/// The attempt after `previous` (the resource's latest once it differs), once it has ended.
pub(crate) async fn next_attempt(ns: &TestNamespace, previous: Option<&str>) -> Deployment {
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

/// The app's running container.
fn app_container(ns: &TestNamespace) -> Option<String> {
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
    names.lines().next().map(str::to_string)
}

/// The app's connection is encrypted, and its certificate is checked: psql from the app over
/// its `DATABASE_URL` (`sslmode=verify-full` with the organization's authority, which Berth
/// put into the container) uses TLS, and the same URL by the server's address instead of the
/// name its certificate carries is refused.
fn assert_verified_tls(ns: &TestNamespace, database: &str) {
    let (_, ssl) = query_as_app(
        ns,
        "select ssl from pg_stat_ssl where pid = pg_backend_pid()",
    );
    assert_eq!(ssl, "t", "the app's connection uses TLS");
    let container = app_container(ns).expect("the app's container");
    let (_, ca) = docker(&[
        "exec",
        &container,
        "head",
        "-1",
        "/etc/berth/database-ca.crt",
    ]);
    assert_eq!(
        ca, "-----BEGIN CERTIFICATE-----",
        "the authority in the app's container"
    );
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
    let (_, address) = docker(&["inspect", "-f", format, database]);
    let by_address = format!(
        "psql \"$(echo \"$DATABASE_URL\" | sed 's/@[^:]*:/@{address}:/')\" -tAc 'select 1'"
    );
    let (connected, said) = docker_said(&["exec", &container, "sh", "-c", &by_address]);
    assert!(
        !connected,
        "a name the certificate does not carry is refused: {said}"
    );
    assert!(said.contains("does not match host name"), "{said}");
}

/// The query run in the app's own container, with its environment.
pub(crate) fn query_as_app(ns: &TestNamespace, sql: &str) -> (bool, String) {
    let Some(container) = app_container(ns) else {
        return (false, "no running app container".into());
    };
    docker(&["exec", &container, "sh", "-c", &app_query(sql)])
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
    assert_verified_tls(&ns, &format!("berth-dep-{}-db", ns.name));

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
    assert!(docker(&["rm", "-fv", &database]).0);
    eventually(WAIT, "the app reads its row after the repair", || async {
        let (ok, rows) = query_as_app(&ns, "select body from notes");
        (ok && rows == "kept").then_some(())
    })
    .await;

    // Resources, Deployments, events and the controller's log: where the password must not show.
    let kinds = "resources.berth.dev,deployments.berth.dev,events.events.k8s.io";
    let first_password = password(&ns, "db").await;
    let rotated = rotation_refuses_no_query_then_the_old_login(&ns, &third).await;
    for secret in [first_password, password(&ns, "db").await] {
        assert_not_shown(&ns, kinds, "DATABASE_URL", &secret);
    }
    refuses_a_dependency_of_another_environment(&ns, &image, &rotated).await;
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

/// `docker` with what it printed on both streams (psql says why a login failed on stderr).
fn docker_said(args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    let mut said = String::from_utf8_lossy(&output.stdout).to_string();
    said.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.success(), said)
}

/// Whether psql's words say the database refused the login (not that a container went away
/// between `docker ps` and `docker exec`, which is the test's race, not a failed request).
fn login_refused(said: &str) -> bool {
    said.contains("password authentication failed") || said.contains("not permitted to log in")
}

/// Credentials rotated while the app queries its database without pause: no query is
/// refused a login; the app redeploys by itself on the new login; then the old login is
/// refused and the new one reads the row. Answers the app's latest attempt.
async fn rotation_refuses_no_query_then_the_old_login(
    ns: &TestNamespace,
    serving: &Deployment,
) -> Deployment {
    let secret = ns
        .api::<k8s_openapi::api::core::v1::Secret>()
        .get("db-connection")
        .await
        .unwrap();
    let old_url = String::from_utf8(secret.data.unwrap()["url"].0.clone()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let queries = {
        let (namespace, stop) = (ns.name.clone(), stop.clone());
        tokio::task::spawn_blocking(move || {
            let (mut answered, mut refused) = (0, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let name = format!("name=berth-{namespace}-app-");
                let (_, names) = docker(&["ps", "--filter", &name, "--format", "{{.Names}}"]);
                for container in names.lines() {
                    let query = app_query("select body from notes");
                    let (ok, said) = docker_said(&["exec", container, "sh", "-c", &query]);
                    if ok && said.trim() == "kept" {
                        answered += 1;
                    } else if login_refused(&said) {
                        refused.push(said);
                    }
                }
            }
            (answered, refused)
        })
    };
    let patch = json!({ "spec": { "rotateCredentials": "1" } });
    let dependencies = ns.api::<DependencyResource>();
    dependencies
        .patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let rotated = eventually(WAIT, "the old login revoked", || async {
        let credentials = dependencies.get("db").await.ok()?.status?.credentials?;
        (credentials.user == "berth_r1" && credentials.revoking.is_none()).then_some(credentials)
    })
    .await;
    assert_eq!(rotated.rotation.as_deref(), Some("1"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (answered, refused) = queries.await.unwrap();
    assert!(
        refused.is_empty(),
        "refused logins during the rotation: {refused:?}"
    );
    assert!(
        answered > 10,
        "the app queried throughout ({answered} answers)"
    );

    // The app moved to the new login by itself, and the old one no longer logs in.
    let latest = next_attempt(ns, serving.metadata.name.as_deref()).await;
    assert_ended(&latest, DeploymentState::Succeeded);
    let (_, names) = docker(&[
        "ps",
        "--filter",
        &format!("name=berth-{}-app-", ns.name),
        "--format",
        "{{.Names}}",
    ]);
    let container = names.lines().next().expect("the app runs");
    let old = format!("psql \"{old_url}\" -tAc 'select 1'");
    let (ok, said) = docker_said(&["exec", container, "sh", "-c", &old]);
    assert!(
        !ok && login_refused(&said),
        "the old login still works: {ok}"
    );
    assert_eq!(query_as_app(ns, "select body from notes").1, "kept");
    latest
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
    cannot_reach_another_environments_database(ns).await;
}

/// The serving app reaches its own database's port, and not the other environment's, by name
/// or by address: each database's network holds only the apps bound to it.
async fn cannot_reach_another_environments_database(ns: &TestNamespace) {
    wait_ready(&ns.api(), "staging-db").await;
    let staging = format!("berth-dep-{}-staging-db", ns.name);
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
    let (_, address) = docker(&["inspect", "-f", format, &staging]);
    assert!(!address.is_empty(), "the staging database's address");
    let container = app_container(ns).expect("the app's container");
    let ready = |host: &str| {
        let probe = format!("pg_isready -h {host} -p 5432 -t 3");
        docker_said(&["exec", &container, "sh", "-c", &probe])
    };
    let own = format!("berth-dep-{}-db", ns.name);
    assert!(ready(&own).0, "the app reaches its own database");
    for host in [staging.as_str(), address.as_str()] {
        let (reached, said) = ready(host);
        assert!(!reached, "the app reached {host}: {said}");
    }
}
