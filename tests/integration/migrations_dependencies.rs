//! A Compose project's PostgreSQL migrated as a managed dependency: planned with a provision
//! and a bind step (its data not copied, the plan says so), applied until the database is
//! ready and the app deployed on its URL, verified (the dependency's health read back), and
//! cleaned up with it.

use berth_crds::dependency_resource::DependencyResource;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, eventually_explained};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::verdict;
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
    let receipts = std::sync::Mutex::new(json!([]));
    eventually_explained(WAIT * 2, "apply completed", || async {
        let prior = receipts.lock().unwrap().clone();
        let body = json!({"plan": planned, "confirmedPlanDigest": planned["planDigest"],
                          "priorReceipts": prior});
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

    let passed = verdict(&member, &planned, &receipts, "passed").await;
    let health = passed["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["queryName"] == "ShowDependencyResourceQuery")
        .unwrap_or_else(|| panic!("the dependency read back: {passed}"));
    assert_eq!(health["evaluation"], "passed", "{health}");
    assert_eq!(health["summary"]["lifecycleStatus"], "ready", "{health}");

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
