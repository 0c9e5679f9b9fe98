//! A source's PostgreSQL and Redis without a connection secret: provisioned and bound by Berth
//! (their data not copied, the plan says how to restore it); other kinds stay blockers.

use berth_api::dependencies::{
    BindDependency, ImportDependencyResource, ProvisionDependencyResource,
};
use berth_api::migrations::{MigrationPlan, PlanState, Receipt, Scalar};
use serde_json::{Map, Value, json};

use super::*;
use crate::plan::resolve_input;

/// The fixture with a Railway PostgreSQL bound to web and a Redis bound to web and worker.
fn managed_bundle() -> Value {
    with_spec(|s| {
        s["dependencies"] = json!([
            {"ref": "pg", "name": "Postgres", "kind": "postgres", "providerKey": "railway-postgres",
             "image": "postgres:15",
             "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]},
            {"ref": "cache", "name": "Redis", "kind": "redis", "providerKey": "railway-redis",
             "bindings": [{"resourceRef": "worker", "targetName": "REDIS_URL"},
                          {"resourceRef": "web", "targetName": "REDIS_URL"}]}
        ]);
    })
}

#[test]
fn a_postgres_and_a_redis_are_provisioned_and_bound_not_blocked() {
    let plan = plan_of(&managed_bundle()).unwrap();
    assert_eq!(plan.state, PlanState::Ready, "{:?}", plan.blockers);
    assert!(plan.blockers.is_empty());
    let order = ids(&plan);
    let at = |id: &str| order.iter().position(|s| *s == id).expect(id);
    assert!(at("environment:create") < at("dependency:provision:cache"));
    assert!(at("dependency:provision:cache") < at("dependency:provision:pg"));
    assert!(at("dependency:provision:pg") < at("resource:create:db"));
    let bind = step(&plan, "dependency:bind:pg:web:DATABASE_URL");
    assert_eq!(bind.operation_key, "resources.bind-dependency");
    assert_eq!(
        bind.input["dependencyResourceId"],
        json!({"$ref": "steps.dependency:provision:pg.output.dependencyResourceId"})
    );
    assert_eq!(bind.input["targetName"], "DATABASE_URL");
    assert_eq!(
        bind.cleanup.as_ref().unwrap().operation_key,
        "resources.unbind-dependency"
    );
    assert!(at("resource:create:web") < at("dependency:bind:pg:web:DATABASE_URL"));
    assert!(at("dependency:bind:pg:web:DATABASE_URL") < at("deployment:create:web"));
    assert!(
        step(&plan, "deployment:create:worker")
            .depends_on
            .contains(&"dependency:bind:cache:worker:REDIS_URL".to_string())
    );
    let provision = step(&plan, "dependency:provision:pg");
    assert_eq!(provision.operation_key, "dependency-resources.provision");
    assert_eq!(provision.input["kind"], "postgres");
    assert_eq!(provision.input["serverId"], "srv-1");
    assert_eq!(provision.input["name"], "Postgres");
    assert_eq!(provision.input["image"], "postgres:15");
    assert_eq!(
        provision.cleanup.as_ref().unwrap().operation_key,
        "dependency-resources.delete"
    );
    assert!(
        step(&plan, "dependency:provision:cache")
            .input
            .get("image")
            .is_none()
    );
}

#[test]
fn the_plan_says_the_data_is_not_copied_and_how_to_restore_it() {
    let plan = plan_of(&managed_bundle()).unwrap();
    let warning = |name: &str| {
        plan.warnings
            .iter()
            .find(|w| w.starts_with(&format!("Dependency {name} ")))
            .unwrap_or_else(|| panic!("a warning about {name}: {:?}", plan.warnings))
    };
    for name in ["pg", "cache"] {
        assert!(
            warning(name).contains("data is not copied"),
            "{}",
            warning(name)
        );
        assert!(warning(name).contains("/api/dependency-resources/backups/{backupId}/restore"));
    }
    assert!(warning("pg").contains("pg_dump"));
    let report: Vec<_> = plan
        .variable_report
        .iter()
        .filter(|r| r.key.ends_with("_URL"))
        .map(|r| (r.key.as_str(), r.migrated_as.as_str()))
        .collect();
    assert_eq!(
        report,
        [
            ("REDIS_URL", "dependency-binding"),
            ("REDIS_URL", "dependency-binding"),
            ("DATABASE_URL", "dependency-binding"),
        ]
    );
}

fn body<T: serde::de::DeserializeOwned>(mut input: Map<String, Value>, path: &[&str]) -> T {
    for param in path {
        assert!(input.remove(*param).is_some(), "{param}");
    }
    serde_json::from_value(Value::Object(input)).expect("the body of Berth's operation")
}

/// A Heroku add-on or another external PostgreSQL whose URL the bundle names: imported as a
/// dependency resource (checked from the target server) and bound, not set as a plain secret.
fn imported_bundle() -> Value {
    with_spec(|s| {
        s["dependencies"] = json!([
            {"ref": "database", "name": "DATABASE_URL", "kind": "postgres",
             "providerKey": "heroku-postgresql", "sourceMode": "imported-external",
             "connectionSecretRef": "env://DATABASE_URL",
             "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]},
            {"ref": "mongo", "name": "MONGODB_URI", "kind": "mongodb",
             "providerKey": "mongolab", "sourceMode": "imported-external",
             "connectionSecretRef": "env://MONGODB_URI",
             "bindings": [{"resourceRef": "web", "targetName": "MONGODB_URI"}]}
        ]);
    })
}

#[test]
fn an_external_postgres_is_imported_and_bound_and_another_kind_stays_a_secret() {
    let plan = plan_of(&imported_bundle()).unwrap();
    assert_eq!(plan.state, PlanState::Ready, "{:?}", plan.blockers);
    let import = step(&plan, "dependency:import:database");
    assert_eq!(import.operation_key, "dependency-resources.import");
    assert_eq!(
        import.input["connectionUrl"],
        json!({"$secretRef": "env://DATABASE_URL"})
    );
    assert_eq!(import.input["serverId"], "srv-1");
    let bind = step(&plan, "dependency:bind:database:web:DATABASE_URL");
    assert_eq!(bind.operation_key, "resources.bind-dependency");
    assert_eq!(
        bind.input["dependencyResourceId"],
        json!({"$ref": "steps.dependency:import:database.output.dependencyResourceId"})
    );
    let mongo = step(&plan, "dependency:bind:mongo:web:MONGODB_URI");
    assert_eq!(
        mongo.operation_key, "resources.set-secret",
        "Berth does not check MongoDB"
    );
    assert!(!ids(&plan).contains(&"dependency:import:mongo"));
}

/// Every provision, import and bind input, placeholders filled, is a valid body of its route.
#[test]
fn provision_and_bind_inputs_are_the_routes_bodies() {
    for bundle in [managed_bundle(), imported_bundle()] {
        check_bodies(&bundle);
    }
}

fn check_bodies(bundle: &Value) {
    let plan = plan_of(bundle).unwrap();
    let mut receipts = Vec::new();
    for step in &plan.steps {
        let input = resolve_input(step, &receipts, &mut |_| Ok("s3cret".into())).unwrap();
        match step.operation_key.as_str() {
            "dependency-resources.provision" => body::<ProvisionDependencyResource>(input, &[])
                .validate()
                .unwrap(),
            "dependency-resources.import" => body::<ImportDependencyResource>(input, &[])
                .validate()
                .unwrap(),
            "resources.bind-dependency" => body::<BindDependency>(input, &["resourceId"])
                .validate()
                .unwrap(),
            _ => {}
        }
        receipts.push(receipt_of(step));
    }
}

fn receipt_of(step: &berth_api::migrations::Step) -> Receipt {
    let output = step
        .produces
        .iter()
        .flat_map(|p| p.keys())
        .map(|name| (name.clone(), Scalar::Text(format!("id-of-{}", step.id))));
    Receipt {
        step_id: step.id.clone(),
        operation_key: step.operation_key.clone(),
        state: "completed".into(),
        output: output.collect(),
        ownership: "created".into(),
    }
}

#[test]
fn the_order_of_dependencies_does_not_change_the_digest() {
    let plan = plan_of(&managed_bundle()).unwrap();
    let mut reversed = managed_bundle();
    let dependencies = reversed["spec"]["dependencies"].as_array_mut().unwrap();
    dependencies.reverse();
    let again: MigrationPlan = plan_of(&reversed).unwrap();
    assert_eq!(plan.plan_digest, again.plan_digest);
    assert_eq!(ids(&plan), ids(&again));
}

#[test]
fn a_kind_berth_does_not_run_stays_a_blocker() {
    for kind in ["mysql", "mongodb", "clickhouse"] {
        let plan = plan_of(&with_spec(|s| {
            s["dependencies"] = json!([
                {"ref": "store", "name": "Store", "kind": kind, "providerKey": "railway",
                 "bindings": [{"resourceRef": "web", "targetName": "STORE_URL"}]}
            ]);
        }))
        .unwrap();
        assert_eq!(plan.state, PlanState::Blocked);
        let [blocker] = plan.blockers.as_slice() else {
            panic!("one blocker: {:?}", plan.blockers)
        };
        assert_eq!(blocker.code, "dependency_provider_unavailable");
        assert!(blocker.message.contains(&format!("a {kind} without")));
        assert!(blocker.message.contains("postgres and redis"));
        assert!(!ids(&plan).iter().any(|id| id.contains("store")));
    }
}

#[test]
fn an_external_database_without_its_url_is_a_blocker() {
    let plan = plan_of(&with_spec(|s| {
        s["dependencies"] = json!([
            {"ref": "pg", "name": "Postgres", "kind": "postgres", "providerKey": "neon",
             "sourceMode": "imported-external",
             "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]}
        ]);
    }))
    .unwrap();
    let codes: Vec<&str> = plan.blockers.iter().map(|b| b.code.as_str()).collect();
    assert_eq!(codes, ["dependency_connection_missing"]);
    assert!(!ids(&plan).iter().any(|id| id.starts_with("dependency:")));
}
