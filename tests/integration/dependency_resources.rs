//! Managed dependency resources on the stack's `local` server: a PostgreSQL provisioned from
//! the stack's Debian-built image becomes Ready, keeps a row through a `docker rm -f` of its
//! container (repaired on the same volume), and on deletion loses its container and network
//! but keeps its data volume; a Redis becomes Ready and, deleted with the name typed into
//! `berth.dev/delete-data`, takes its volume with it. No password shows in a status, event or
//! the controller's log. A namespace deleted as a whole (Server and database at once) leaves
//! nothing of the database but its volume on the server.

use std::process::Command;
use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::{
    DELETE_DATA_ANNOTATION, DependencyLifecycleStatus, DependencyResource, DependencyResourceSpec,
};
use berth_tests::{TestNamespace, client, eventually, kubectl, stack_env};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::servers::support::{create_credential, create_server, stack_key, wait_condition};

/// What a managed PostgreSQL's URL asks of TLS: the server's name and chain verified against
/// the organization's authority, put into bound apps at this path.
pub(crate) const TLS_PARAMETERS: &str =
    "?sslmode=verify-full&sslrootcert=/etc/berth/database-ca.crt";

/// Provisioning pulls nothing here, but starting PostgreSQL on two busy cores takes a while.
const WAIT: Duration = Duration::from_secs(180);

/// The local image as the registry names it. The engine the `local` server reaches is the one
/// images.sh builds into, so tagging it there saves a pull that would need the registry's
/// credentials.
pub(crate) fn registry_image(local: &str) -> String {
    let image = format!("127.0.0.1:5000/{local}");
    let tagged = Command::new("docker")
        .args(["tag", local, &image])
        .status()
        .expect("docker CLI (tests only)");
    assert!(
        tagged.success(),
        "docker tag {local} (built by hack/lib/images.sh)"
    );
    image
}

pub(crate) fn docker(args: &[&str]) -> (bool, String) {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success(), text)
}

fn exists(object: &str, name: &str) -> bool {
    docker(&[object, "inspect", name]).0
}

pub(crate) async fn local_server(ns: &TestNamespace) {
    let (private_key, _) = stack_key();
    create_credential(ns, "key", &private_key).await;
    let port: u16 = stack_env("BERTH_SSH_PORT").parse().unwrap();
    let servers = create_server(ns, "local", "127.0.0.1", port, "key", json!({})).await;
    wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
}

pub(crate) async fn create(ns: &TestNamespace, name: &str, kind: &str, image: &str) {
    let spec: DependencyResourceSpec = serde_json::from_value(json!({
        "kind": kind, "projectId": "shop", "environmentId": "shop-production",
        "serverId": "local", "name": format!("{name} of the shop"), "image": image,
    }))
    .unwrap();
    ns.api::<DependencyResource>()
        .create(&PostParams::default(), &DependencyResource::new(name, spec))
        .await
        .expect("create DependencyResource");
}

pub(crate) async fn wait_ready(api: &Api<DependencyResource>, name: &str) -> DependencyResource {
    eventually(WAIT, &format!("{name} Ready"), || async {
        let dependency = api.get_opt(name).await.ok()??;
        let status = dependency.status.as_ref()?;
        let ready = condition::is_true(&status.conditions, READY)
            && status.lifecycle_status == Some(DependencyLifecycleStatus::Ready);
        ready.then_some(dependency)
    })
    .await
}

pub(crate) async fn password(ns: &TestNamespace, name: &str) -> String {
    let secret = ns
        .api::<Secret>()
        .get(&format!("{name}-connection"))
        .await
        .expect("the connection Secret");
    let data = secret.data.expect("Secret data");
    let url = String::from_utf8(data["url"].0.clone()).unwrap();
    let password = String::from_utf8(data["password"].0.clone()).unwrap();
    assert!(password.len() >= 32, "a generated password");
    assert!(url.contains(&password), "the URL carries the password");
    password
}

/// Statuses, events and the controller's log: where the password must never show.
fn assert_password_not_shown(ns: &TestNamespace, password: &str) {
    assert_not_shown(
        ns,
        "dependencyresources,events.events.k8s.io",
        "****",
        password,
    );
}

/// The objects of `kinds` in the namespace show `expected` and never `secret`, nor does the
/// controller's log.
pub(crate) fn assert_not_shown(ns: &TestNamespace, kinds: &str, expected: &str, secret: &str) {
    let objects = kubectl(&["get", kinds, "-n", &ns.name, "-o", "yaml"], None);
    assert!(objects.status.success(), "kubectl get failed");
    let text = String::from_utf8_lossy(&objects.stdout);
    assert!(text.contains(expected), "{expected} is not shown");
    assert!(
        !text.contains(secret),
        "the secret shows in an object or event"
    );
    let log = std::fs::read_to_string(stack_env("BERTH_CONTROLLER_LOG"))
        .expect("read the controller log ($BERTH_CONTROLLER_LOG)");
    assert!(
        !log.contains(secret),
        "the secret shows in the controller's log"
    );
}

pub(crate) fn psql(container: &str, sql: &str) -> (bool, String) {
    docker(&[
        "exec", container, "psql", "-U", "berth", "-d", "app", "-tAc", sql,
    ])
}

async fn wait_gone(api: &Api<DependencyResource>, name: &str) {
    eventually(WAIT, &format!("{name} deleted"), || async {
        matches!(api.get_opt(name).await, Ok(None)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_managed_postgres_is_ready_repaired_without_data_loss_and_deleted_keeping_its_volume() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-pg").await;
    local_server(&ns).await;
    let image = registry_image("berth/postgres:15");
    create(&ns, "db", "postgres", &image).await;
    let api = ns.api::<DependencyResource>();

    let ready = wait_ready(&api, "db").await;
    let status = ready.status.unwrap();
    let container = format!("berth-dep-{}-db", ns.name);
    let volume = format!("{container}-data");
    let connection = status.connection.expect("a connection");
    assert_eq!(
        connection.masked_connection,
        format!("postgres://berth:****@{container}:5432/app{TLS_PARAMETERS}")
    );
    assert_eq!(connection.secret_ref.as_deref(), Some("db-connection"));
    let password = password(&ns, "db").await;
    // Private by default: no host port.
    let (_, ports) = docker(&["port", &container]);
    assert!(ports.is_empty(), "no published port: {ports}");

    let (written, out) = psql(
        &container,
        "create table orders (id int); insert into orders values (42)",
    );
    assert!(written, "write a row: {out}");

    // Drift: the container removed by hand comes back on the same volume, with the row.
    assert!(docker(&["rm", "-fv", &container]).0);
    eventually(WAIT, "the container repaired with its data", || async {
        let (ok, rows) = psql(&container, "select id from orders");
        (ok && rows == "42").then_some(())
    })
    .await;
    wait_ready(&api, "db").await;
    assert_password_not_shown(&ns, &password);

    // Deletion removes container and network, and keeps the data volume.
    api.delete("db", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "db").await;
    assert!(!exists("container", &container), "container removed");
    assert!(!exists("network", &container), "network removed");
    assert!(exists("volume", &volume), "data volume kept");
    docker(&["volume", "rm", &volume]);
}

#[tokio::test]
async fn a_managed_redis_is_ready_and_its_volume_goes_when_the_name_is_typed() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-redis").await;
    local_server(&ns).await;
    let image = registry_image("berth/redis:7");
    create(&ns, "cache", "redis", &image).await;
    let api = ns.api::<DependencyResource>();

    let ready = wait_ready(&api, "cache").await;
    let connection = ready.status.unwrap().connection.unwrap();
    assert!(connection.masked_connection.starts_with("redis://:****@"));
    let password = password(&ns, "cache").await;
    let container = format!("berth-dep-{}-cache", ns.name);
    let (ok, pong) = docker(&[
        "exec",
        "-e",
        &format!("REDISCLI_AUTH={password}"),
        &container,
        "redis-cli",
        "ping",
    ]);
    assert!(
        ok && pong == "PONG",
        "redis answers with the password: {pong}"
    );
    let (_, refused) = docker(&["exec", &container, "redis-cli", "ping"]);
    assert_ne!(
        refused, "PONG",
        "redis refuses clients without the password"
    );
    assert_password_not_shown(&ns, &password);

    let annotate = json!({"metadata": {"annotations": {DELETE_DATA_ANNOTATION: "cache"}}});
    api.patch("cache", &PatchParams::default(), &Patch::Merge(&annotate))
        .await
        .unwrap();
    api.delete("cache", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "cache").await;
    assert!(!exists("container", &container), "container removed");
    assert!(
        !exists("volume", &format!("{container}-data")),
        "data volume removed as asked"
    );
}

/// An organization's namespace deleted as a whole deletes its Server and dependencies at
/// once: the Server waits for them, so the database's container and network leave the host
/// (they were left behind when the Server went first).
#[tokio::test]
async fn a_deleted_namespace_takes_its_databases_container_and_network_off_the_server() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-namespace").await;
    local_server(&ns).await;
    create(&ns, "cache", "redis", &registry_image("berth/redis:7")).await;
    wait_ready(&ns.api::<DependencyResource>(), "cache").await;
    let container = format!("berth-dep-{}-cache", ns.name);
    assert!(exists("container", &container) && exists("network", &container));

    let namespaces = Api::<Namespace>::all(client.clone());
    namespaces
        .delete(&ns.name, &DeleteParams::background())
        .await
        .expect("delete the namespace");
    eventually(WAIT, &format!("namespace {} gone", ns.name), || async {
        matches!(namespaces.get_opt(&ns.name).await, Ok(None)).then_some(())
    })
    .await;
    assert!(!exists("container", &container), "container removed");
    assert!(!exists("network", &container), "network removed");
    docker(&["volume", "rm", &format!("{container}-data")]);
}
