//! An imported database (a PostgreSQL Berth does not run, started here with `docker run` on the
//! server's edge network) on the stack's `local` server: a URL whose password is wrong keeps the
//! dependency not ready, saying what PostgreSQL answered (never the password); the right URL
//! makes it ready with its connection masked; an app bound to it gets `DATABASE_URL` and writes
//! a row the external database holds; the password shows in no object, event or log line.
//! Deleting the dependency leaves the external database alone and takes its Secrets.

use std::time::Duration;

use berth_crds::condition::{self, READY};
use berth_crds::dependency_resource::{DependencyLifecycleStatus, DependencyResource};
use berth_crds::deployment::DeploymentState;
use berth_tests::{TestNamespace, client, eventually};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::dependency_bindings::{app_bound_to, apply_project, next_attempt, query_as_app};
use crate::dependency_resources::{assert_not_shown, docker, registry_image, wait_ready};
use crate::deployments::{apply, ready_server, teardown};

/// Starting PostgreSQL on two busy cores takes a while; a failed check is retried every 30 s.
const WAIT: Duration = Duration::from_secs(180);

/// The external database: a container of the stack's PostgreSQL image on the edge network
/// (which the app containers are on), reached by its address there.
struct External {
    container: String,
    address: String,
}

impl External {
    async fn start(ns: &TestNamespace, image: &str, password: &str) -> Self {
        // The server's proxy made the edge network; the external database joins it.
        eventually(WAIT, "the edge network", || async {
            docker(&["network", "inspect", "berth-edge"])
                .0
                .then_some(())
        })
        .await;
        let container = format!("berth-test-external-{}", ns.name);
        let (started, said) = docker(&[
            "run",
            "-d",
            "--name",
            &container,
            "--network",
            "berth-edge",
            "-e",
            "POSTGRES_USER=orders",
            "-e",
            &format!("POSTGRES_PASSWORD={password}"),
            "-e",
            "POSTGRES_DB=orders",
            image,
        ]);
        assert!(started, "docker run the external database: {said}");
        let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
        let (_, address) = docker(&["inspect", "-f", format, &container]);
        assert!(!address.is_empty(), "the external database's address");
        Self { container, address }
    }

    fn url(&self, password: &str) -> String {
        format!("postgres://orders:{password}@{}:5432/orders", self.address)
    }

    fn query(&self, sql: &str) -> String {
        docker(&[
            "exec",
            &self.container,
            "psql",
            "-U",
            "orders",
            "-d",
            "orders",
            "-tAc",
            sql,
        ])
        .1
    }
}

impl Drop for External {
    fn drop(&mut self) {
        docker(&["rm", "-fv", &self.container]);
    }
}

async fn put_url(ns: &TestNamespace, url: &str) {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "orders-url" },
        "stringData": { "url": url },
    });
    let params = PatchParams::apply("berth-test").force();
    ns.api::<Secret>()
        .patch("orders-url", &params, &Patch::Apply(secret))
        .await
        .expect("the URL's Secret");
}

#[tokio::test]
async fn an_imported_database_is_checked_from_its_server_and_bound_by_url() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "import").await;
    ready_server(&ns).await;
    apply_project(&ns);
    let image = registry_image("berth/postgres:15");
    let password = format!("ext-{}", ns.name.replace('-', ""));
    let external = External::start(&ns, &image, &password).await;

    // A wrong password: not ready, with what PostgreSQL said and no password.
    put_url(&ns, &external.url("not-the-password")).await;
    let spec = json!({
        "kind": "postgres", "projectId": "shop", "environmentId": "shop-production",
        "serverId": "local", "name": "Orders", "source": "imported", "image": image,
        "connectionSecretRef": { "name": "orders-url" },
    });
    let dependencies = ns.api::<DependencyResource>();
    dependencies
        .create(
            &PostParams::default(),
            &DependencyResource::new("orders", serde_json::from_value(spec).unwrap()),
        )
        .await
        .expect("create the imported DependencyResource");
    let refused = eventually(WAIT, "the wrong password refused", || async {
        let status = dependencies.get("orders").await.ok()?.status?;
        let ready = condition::find(&status.conditions, READY)?.clone();
        ready
            .message
            .contains("password authentication failed")
            .then_some((status, ready))
    })
    .await;
    let (status, ready) = refused;
    assert_eq!(
        status.lifecycle_status,
        Some(DependencyLifecycleStatus::Provisioning)
    );
    assert_eq!(ready.reason, "Unreachable", "{ready:?}");
    assert!(
        ready.message.contains("checked from server local"),
        "{}",
        ready.message
    );
    assert!(!ready.message.contains("not-the-password"));
    let connection = ns
        .api::<Secret>()
        .get_opt("orders-connection")
        .await
        .unwrap();
    assert!(
        connection.is_none(),
        "no connection published before the database answered"
    );

    // The right one: ready, the connection masked, and published for bound apps.
    put_url(&ns, &external.url(&password)).await;
    let ready = wait_ready(&dependencies, "orders").await;
    let shown = ready.status.unwrap().connection.unwrap();
    let masked = format!("postgres://orders:****@{}:5432/orders", external.address);
    assert_eq!(shown.masked_connection, masked);
    assert_eq!(shown.secret_ref.as_deref(), Some("orders-connection"));

    // An app bound to it writes a row the external database holds.
    apply(&app_bound_to(&ns, &image, "orders"));
    let attempt = next_attempt(&ns, None).await;
    let state = attempt.status.as_ref().and_then(|s| s.status);
    assert_eq!(
        state,
        Some(DeploymentState::Succeeded),
        "{:?}",
        attempt.status
    );
    let (written, said) = query_as_app(
        &ns,
        "create table lines (sku text); insert into lines values ('kept')",
    );
    assert!(written, "the app writes through DATABASE_URL: {said}");
    assert_eq!(external.query("select sku from lines"), "kept");
    let kinds =
        "dependencyresources,resources.berth.dev,deployments.berth.dev,events.events.k8s.io";
    assert_not_shown(&ns, kinds, "****", &password);

    // Unbound and deleted: the external database is untouched, Berth's copy of the URL gone.
    teardown(&ns, "app").await;
    dependencies
        .delete("orders", &DeleteParams::default())
        .await
        .unwrap();
    eventually(WAIT, "the dependency and its Secrets gone", || async {
        let secrets = ns.api::<Secret>();
        let gone = dependencies.get_opt("orders").await.ok()?.is_none()
            && secrets.get_opt("orders-connection").await.ok()?.is_none();
        gone.then_some(())
    })
    .await;
    assert_eq!(external.query("select count(*) from lines"), "1");
}
