//! A preview's own database (issue 44): a PreviewPolicy with `previewDatabases: latest-backup`
//! gives the preview of a resource bound to a managed PostgreSQL a database of its own, filled
//! from the newest ready backup of production's; the preview's app reads its own, a write there
//! leaves production's alone, and closing the pull request takes the database, its container
//! and its volume away.

use std::time::Duration;

use berth_crds::backup::BackupStatus;
use berth_crds::condition::{ConditionStatus, READY, find};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::preview::{PreviewEnvironment, PreviewSeed};
use berth_crds::resource::Resource;
use berth_tests::{TestNamespace, client, eventually};
use serde_json::json;

use crate::backups::{backup, ended, store_server, target, target_ready};
use crate::dependency_resources::{create, docker, psql, registry_image, wait_ready};
use crate::deploy_support::docker_names;
use crate::deployments::apply;
use crate::git_support::GitRepo;
use crate::previews::{DOCKERFILE, page};
use crate::previews::{close, environment_object, object_list, preview_object};

/// A backup, a restore into a fresh PostgreSQL and a build on two busy cores.
const WAIT: Duration = Duration::from_secs(300);
const PREVIEW: &str = "web-pr-3";

/// The environment, the resource `web` bound to `db` (never deployed itself), the policy
/// asking for previews filled from the newest backup, and pull request 3's preview of `head`.
fn manifests(ns: &TestNamespace, repo: &GitRepo, head: &str) -> String {
    let namespace = &ns.name;
    let objects = [
        environment_object(namespace, "shop-production", "shop"),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"projectId": "shop", "environmentId": "shop-production", "serverId": "local",
                "name": "web", "kind": "application", "firstDeployment": "on-request",
                "source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "main"},
                "networkProfile": {"internalPort": 8080},
                "dependencyBindings": [{"dependencyResourceId": "db", "targetName": "DATABASE_URL"}],
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}}}}),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "PreviewPolicy",
            "metadata": {"name": "previews", "namespace": namespace},
            "spec": {"projectId": "shop", "resourceId": "web", "previewDatabases": "latest-backup"}}),
        preview_object(namespace, ("shop", "web"), repo, 3, ("feature", head)),
    ];
    object_list(&objects)
}

fn count(container: &str) -> String {
    let (ok, out) = psql(container, "select count(*) from orders");
    assert!(ok, "{out}");
    out
}

#[tokio::test]
async fn a_preview_gets_its_own_database_filled_from_the_newest_backup_and_closing_takes_it() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "pvdb").await;
    // A server whose edge proxy publishes a port of its own (the preview is served through it),
    // the store server and production's database.
    crate::deployments::ready_server(&ns).await;
    store_server(&ns).await;
    create(&ns, "db", "postgres", &registry_image("berth/postgres:15")).await;
    wait_ready(&ns.api::<DependencyResource>(), "db").await;
    let production = format!("berth-dep-{}-db", ns.name);
    let (written, out) = psql(
        &production,
        "create table orders (id int primary key); \
         insert into orders select g from generate_series(1, 42) g",
    );
    assert!(written, "{out}");
    let directory = format!("/tmp/berth-test-backups/{}", ns.name);
    apply(&target(&ns, "offsite", &directory));
    target_ready(&ns, "offsite", ConditionStatus::True).await;
    apply(&backup(&ns, "db-1", "offsite"));
    let taken = ended(&ns, "db-1").await.status.unwrap();
    assert_eq!(taken.status, BackupStatus::Ready, "{taken:?}");
    // Production moves on after its backup: the preview gets the backup's data.
    assert!(psql(&production, "insert into orders values (1000)").0);

    let repo = GitRepo::new("preview-db");
    repo.write("Dockerfile", DOCKERFILE);
    repo.write("www/index.html", &page("main revision"));
    repo.commit("Main");
    repo.branch("feature");
    repo.write(
        "www/index.html",
        &page("pull request with its own database"),
    );
    let head = repo.commit("PR with a database");
    apply(&manifests(&ns, &repo, &head));

    let previews = ns.api::<PreviewEnvironment>();
    let preview = eventually(WAIT, "the preview Ready with its database", || async {
        let preview = previews.get_opt(PREVIEW).await.ok()??;
        let ready = find(&preview.status.as_ref()?.conditions, READY)?;
        (ready.status == ConditionStatus::True).then_some(preview)
    })
    .await;
    let databases = preview.status.unwrap().databases;
    assert_eq!(databases.len(), 1, "{databases:?}");
    let own = &databases[0];
    assert_eq!(
        (
            own.dependency_resource_id.as_str(),
            own.seed,
            own.backup_id.as_deref()
        ),
        ("db", PreviewSeed::Restored, Some("db-1"))
    );
    let own_id = own.preview_dependency_resource_id.clone();
    let own_container = format!("berth-dep-{}-{own_id}", ns.name);
    assert_eq!(
        count(&own_container),
        "42",
        "the backup's rows, not production's 43"
    );
    assert_eq!(count(&production), "43");

    // The preview's app is bound to its own database, not production's.
    let copy = ns.api::<Resource>().get(PREVIEW).await.unwrap();
    let bound: Vec<_> = copy
        .spec
        .dependency_bindings
        .iter()
        .map(|b| b.dependency_resource_id.clone())
        .collect();
    assert_eq!(bound, vec![own_id.clone()]);
    let app = docker_names(&format!("label=berth.dev/resource={PREVIEW}"));
    assert_eq!(app.len(), 1, "{app:?}");
    let (_, networks) = docker(&[
        "inspect",
        "-f",
        "{{json .NetworkSettings.Networks}}",
        &app[0],
    ]);
    assert!(
        networks.contains(&format!("berth-dep-{}-{own_id}", ns.name)),
        "{networks}"
    );
    assert!(
        !networks.contains(&format!("berth-dep-{}-db\"", ns.name)),
        "{networks}"
    );
    assert!(psql(&own_container, "insert into orders values (2000)").0);
    assert_eq!(
        count(&production),
        "43",
        "a write in the preview leaves production alone"
    );

    // Closed: the preview's database, its container and its volume go; production's stays.
    close(&ns.name, PREVIEW);
    let dependencies = ns.api::<DependencyResource>();
    eventually(WAIT, "the preview's database gone", || async {
        let left = dependencies.get_opt(&own_id).await.ok()?.is_some()
            || docker(&["container", "inspect", &own_container]).0
            || docker(&["volume", "inspect", &format!("{own_container}-data")]).0;
        (!left).then_some(())
    })
    .await;
    assert_eq!(count(&production), "43");
}
