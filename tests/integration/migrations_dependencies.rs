//! A Compose project's PostgreSQL migrated as a managed dependency: planned with a provision
//! and a bind step (its data not copied, the plan says so), applied until the database is
//! ready and the app deployed on its URL, verified (the dependency's health read back), and
//! cleaned up with it. An external PostgreSQL whose URL a bundle names (a Heroku add-on) is
//! imported instead: checked from the target server, bound, verified, and on cleanup only
//! Berth's record of it goes.

use berth_crds::dependency_resource::{DependencyResource, DependencySource};
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, eventually_explained};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::{evidence_of, verdict_but_backups};
use crate::dependency_resources::{docker, registry_image};
use crate::deploy_support::{WAIT, ready_server, remove_server};

fn compose(image: &str) -> String {
    format!(
        "services:\n  web:\n    image: berth/sample-app:1\n    ports: [\"8080:8080\"]\n    \
         environment:\n      DATABASE_URL: postgres://shop:compose-pw@db:5432/shop\n  db:\n    \
         image: {image}\n    environment:\n      POSTGRES_PASSWORD: compose-pw\n"
    )
}

/// Applies, resuming while the deployment step waits for the database (a retriable
/// `dependency_not_ready`), until every step has its receipt.
async fn apply_until_completed(member: &Rest, planned: &Value) -> Value {
    apply_with_secrets(member, planned, json!({})).await
}

async fn apply_with_secrets(member: &Rest, planned: &Value, secrets: Value) -> Value {
    let receipts = std::sync::Mutex::new(json!([]));
    eventually_explained(WAIT * 2, "apply completed", || async {
        let prior = receipts.lock().unwrap().clone();
        let body = json!({"plan": planned, "confirmedPlanDigest": planned["planDigest"],
                          "priorReceipts": prior, "secretValues": secrets});
        let applied = member.post("/migrations/apply", body).await.ok();
        *receipts.lock().unwrap() = applied["receipts"].clone();
        match (
            applied["state"].as_str(),
            applied["failure"]["code"].as_str(),
        ) {
            (Some("completed"), _) => Ok(applied),
            (_, Some("dependency_not_ready")) => Err(format!("waiting: {}", applied["failure"])),
            _ => panic!("apply stopped: {applied}"),
        }
    })
    .await
}

#[tokio::test]
async fn a_compose_postgres_becomes_a_managed_dependency_bound_to_the_app() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _) = ready_server(&owner).await;
    let image = registry_image("berth/postgres:15");
    let source = json!({"source": {"provider": "compose",
        "files": {"compose.yaml": compose(&image)}, "target": {"deploymentTargetId": server}}});
    let planned = member.post("/migrations/plan", source).await.ok();
    assert_eq!(planned["state"], "ready", "{planned}");
    let steps: Vec<&str> = planned["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    for id in [
        "dependency:provision:db",
        "dependency:bind:db:web:DATABASE_URL",
    ] {
        assert!(steps.contains(&id), "{id} in {steps:?}");
    }
    let warnings = planned["warnings"].to_string();
    assert!(warnings.contains("its data is not copied"), "{warnings}");

    let applied = apply_until_completed(&member, &planned).await;
    let receipts = applied["receipts"].clone();
    let dependencies = Api::<DependencyResource>::namespaced(client.clone(), &org.namespace);
    let [database] = &dependencies.list(&Default::default()).await.unwrap().items[..] else {
        panic!("one dependency resource")
    };
    assert_eq!(database.spec.kind.as_str(), "postgres");
    assert_eq!(database.spec.image.as_deref(), Some(image.as_str()));
    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let [web] = &resources.list(&Default::default()).await.unwrap().items[..] else {
        panic!("one resource: web")
    };
    let bindings: Vec<(&str, &str)> = web
        .spec
        .dependency_bindings
        .iter()
        .map(|b| (b.target_name.as_str(), b.dependency_resource_id.as_str()))
        .collect();
    assert_eq!(bindings, [("DATABASE_URL", database.name_any().as_str())]);

    let passed = verdict_but_backups(&member, &planned, &receipts).await;
    let health = dependency_evidence(&passed);
    assert_eq!(health["evaluation"], "passed", "{health}");
    assert_eq!(health["summary"]["lifecycleStatus"], "ready", "{health}");
    assert_no_backup_yet(&passed);

    let body = json!({"plan": planned, "receipts": receipts,
        "confirmedPlanDigest": planned["planDigest"], "confirmDataLoss": true});
    let cleaned = owner.post("/migrations/cleanup", body).await.ok();
    assert_eq!(cleaned["state"], "completed", "{cleaned}");
    let commands = cleaned["actions"].to_string();
    for command in ["UnbindResourceDependency", "DeleteDependencyResource"] {
        assert!(commands.contains(command), "{command} in {commands}");
    }
    // Gone once the app's container left its network (the resource's deletion runs on).
    eventually(WAIT, "the migrated dependency deleted", || async {
        let gone = dependencies
            .get_opt(&database.name_any())
            .await
            .ok()?
            .is_none();
        gone.then_some(())
    })
    .await;
    remove_server(&owner, &server).await;
    let volume = format!("berth-dep-{}-{}-data", org.namespace, database.name_any());
    docker(&["volume", "rm", &volume]);
}

/// A PostgreSQL outside Berth (the stand-in for a Heroku add-on), published on the host's
/// loopback, where the `local` server's host-network check container reaches it.
struct ExternalPostgres {
    container: String,
    url: String,
}

impl ExternalPostgres {
    fn start(image: &str) -> Self {
        let container = format!("berth-t-migr-external-{}", berth_tests::random_suffix());
        let (password, port) = ("ext-pw-4711-s3cr3t", 15478);
        docker(&["rm", "-fv", &container]);
        let (started, why) = docker(&[
            "run",
            "-d",
            "--name",
            &container,
            "-p",
            &format!("127.0.0.1:{port}:5432"),
            "-e",
            &format!("POSTGRES_PASSWORD={password}"),
            "-e",
            "POSTGRES_USER=shop",
            "-e",
            "POSTGRES_DB=shop",
            image,
        ]);
        assert!(started, "an external PostgreSQL: {why}");
        let url = format!("postgres://shop:{password}@127.0.0.1:{port}/shop");
        Self { container, url }
    }
}

impl Drop for ExternalPostgres {
    fn drop(&mut self) {
        docker(&["rm", "-fv", &self.container]);
    }
}

#[tokio::test]
async fn an_external_postgres_named_by_url_is_imported_checked_and_bound() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _) = ready_server(&owner).await;
    let client_image = registry_image("berth/postgres:15");
    let external = ExternalPostgres::start(&client_image);
    let bundle = json!({
        "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
        "metadata": {"name": "shop", "source": {"provider": "heroku"}},
        "spec": {
            "project": {"name": "Shop"},
            "environment": {"name": "production", "kind": "production"},
            "target": {"deploymentTargetId": server},
            "resources": [{"ref": "web", "name": "Web",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "network": {"internalPort": 8080}}],
            "dependencies": [{"ref": "database", "name": "DATABASE_URL", "kind": "postgres",
                "providerKey": "heroku-postgresql", "sourceMode": "imported-external",
                "connectionSecretRef": "env://DATABASE_URL", "image": client_image,
                "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]}],
        }
    });
    let planned = member
        .post("/migrations/plan", json!({ "bundle": bundle }))
        .await
        .ok();
    assert_eq!(planned["state"], "ready", "{planned}");
    let steps = planned["steps"].to_string();
    for id in [
        "dependency:import:database",
        "dependency:bind:database:web:DATABASE_URL",
    ] {
        assert!(steps.contains(id), "{id} in {steps}");
    }

    let secrets = json!({ "DATABASE_URL": external.url });
    let applied = apply_with_secrets(&member, &planned, secrets).await;
    let receipts = applied["receipts"].clone();
    let dependencies = Api::<DependencyResource>::namespaced(client.clone(), &org.namespace);
    let [database] = &dependencies.list(&Default::default()).await.unwrap().items[..] else {
        panic!("one dependency resource")
    };
    assert_eq!(database.spec.source, DependencySource::Imported);
    let passed = verdict_but_backups(&member, &planned, &receipts).await;
    let health = dependency_evidence(&passed);
    assert_eq!(health["summary"]["lifecycleStatus"], "ready", "{health}");
    assert_no_backup_yet(&passed);
    let password = "ext-pw-4711-s3cr3t";
    for shown in [&planned, &applied, &passed] {
        assert!(
            !shown.to_string().contains(password),
            "the URL's password never shows"
        );
    }

    let body = json!({"plan": planned, "receipts": receipts,
        "confirmedPlanDigest": planned["planDigest"], "confirmDataLoss": true});
    let cleaned = owner.post("/migrations/cleanup", body).await.ok();
    assert_eq!(cleaned["state"], "completed", "{cleaned}");
    let (still_there, _) = docker(&["exec", &external.container, "pg_isready", "-q"]);
    assert!(
        still_there,
        "cleanup forgets the import, never the database itself"
    );
    remove_server(&owner, &server).await;
}

/// The verdict's reading of the migrated dependency (its show query).
fn dependency_evidence(verdict: &Value) -> &Value {
    evidence_of(verdict, "ShowDependencyResourceQuery")
}

/// Verify needs a look while the migrated database has no backup (Appaloft's rule).
fn assert_no_backup_yet(verdict: &Value) {
    assert_eq!(verdict["state"], "attention", "{verdict}");
    let backups = evidence_of(verdict, "ListDependencyResourceBackupsQuery");
    assert_eq!(backups["evaluation"], "attention", "{backups}");
    assert_eq!(backups["summary"]["itemCount"], 0, "{backups}");
}
