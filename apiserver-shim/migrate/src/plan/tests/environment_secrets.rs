//! The environment's secrets (Railway's shared variables that are secrets): one
//! `environments.set-variable` step with `isSecret` per key and exposure, its value a
//! `$secretRef`, before every resource; its digest, cleanup and apply-time resolution.

use berth_api::environments::SetEnvironmentVariable;
use berth_api::migrations::{Receipt, Scalar};
use serde_json::{Value, json};

use super::*;
use crate::plan::{Unresolved, cleanup_order, plan_digest, resolve_input, secret_refs};

const SENTRY: &str = "environment-secret:SENTRY_DSN:runtime";

/// The fixture with the environment-level secret `SENTRY_DSN` (and `extra` variables).
fn with_sentry(extra: Vec<Value>) -> Value {
    with_spec(|s| {
        let variables = s["variables"].as_array_mut().unwrap();
        variables.push(
            json!({"key": "SENTRY_DSN", "secretRef": "k8s://sentry#dsn", "exposure": "runtime"}),
        );
        variables.extend(extra);
    })
}

fn created(plan: &MigrationPlan) -> Vec<Receipt> {
    plan.steps
        .iter()
        .map(|step| Receipt {
            step_id: step.id.clone(),
            operation_key: step.operation_key.clone(),
            state: "completed".into(),
            output: step
                .produces
                .iter()
                .flat_map(|p| p.keys())
                .map(|name| (name.clone(), Scalar::Text(format!("id-of-{}", step.id))))
                .collect(),
            ownership: "created".into(),
        })
        .collect()
}

#[test]
fn the_step_is_the_environment_variable_route_with_is_secret_and_a_reference() {
    let plan = plan_of(&with_sentry(vec![])).unwrap();
    let planned = serde_json::to_value(step(&plan, SENTRY)).unwrap();
    assert_eq!(
        planned,
        json!({
            "id": SENTRY,
            "operationKey": "environments.set-variable",
            "dependsOn": ["environment:create"],
            "input": {
                "environmentId": {"$ref": "steps.environment:create.output.environmentId"},
                "key": "SENTRY_DSN",
                "value": {"$secretRef": "k8s://sentry#dsn"},
                "exposure": "runtime",
                "kind": "secret",
                "scope": "environment",
                "isSecret": true,
            },
            "cleanup": {
                "operationKey": "environments.unset-variable",
                "ownership": "created-by-receipt",
                "input": {"exposure": "runtime", "scope": "environment"},
            },
        })
    );
    // Apply asks the resolver for it like any other secret reference.
    assert!(secret_refs(&plan).contains(&(SENTRY.to_string(), "k8s://sentry#dsn".to_string())));
    assert_eq!(plan.state, berth_api::migrations::PlanState::Ready);
}

#[test]
fn one_step_per_key_and_exposure_before_every_resource() {
    let build =
        json!({"key": "SENTRY_DSN", "secretRef": "env://SENTRY_BUILD", "exposure": "build-time"});
    let plan = plan_of(&with_sentry(vec![build])).unwrap();
    let ids = ids(&plan);
    let secrets: Vec<_> = ids
        .iter()
        .filter(|id| id.contains("SENTRY_DSN"))
        .copied()
        .collect();
    assert_eq!(
        secrets,
        [
            "environment-secret:SENTRY_DSN:build-time",
            "environment-secret:SENTRY_DSN:runtime"
        ]
    );
    let position = |id: &str| ids.iter().position(|i| *i == id).unwrap();
    let first_resource = ids.iter().position(|i| i.starts_with("resource:")).unwrap();
    for id in secrets {
        assert!(position(id) > position("environment:create"));
        assert!(position(id) < first_resource, "{id} before the resources");
    }
    assert_eq!(ids.len(), fixture_plan().steps.len() + 2);
}

#[test]
fn the_digest_is_stable_and_follows_the_reference() {
    let plan = plan_of(&with_sentry(vec![])).unwrap();
    let mut reordered = with_sentry(vec![]);
    reordered["spec"]["variables"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert_eq!(plan_of(&reordered).unwrap().plan_digest, plan.plan_digest);
    assert_eq!(plan_digest(&plan), plan.plan_digest);
    assert_ne!(plan.plan_digest, fixture_plan().plan_digest);
    let mut other = with_sentry(vec![]);
    other["spec"]["variables"][2]["secretRef"] = json!("k8s://sentry#other");
    assert_ne!(plan_of(&other).unwrap().plan_digest, plan.plan_digest);
}

#[test]
fn cleanup_unsets_it_after_the_resources_and_before_the_environment() {
    let plan = plan_of(&with_sentry(vec![])).unwrap();
    let receipts = created(&plan);
    let order: Vec<&str> = cleanup_order(&plan, &receipts)
        .into_iter()
        .map(|i| receipts[i].step_id.as_str())
        .collect();
    let position = |id: &str| order.iter().position(|i| *i == id).unwrap();
    assert!(position(SENTRY) > position("resource:create:db"));
    assert!(position(SENTRY) < position("environment:create"));
    // A receipt `reused` is never undone (cleanup_order keeps `created` ones only).
    let mut reused = receipts.clone();
    let index = reused.iter().position(|r| r.step_id == SENTRY).unwrap();
    reused[index].ownership = "reused".into();
    assert!(!cleanup_order(&plan, &reused).contains(&index));
}

#[test]
fn apply_fills_the_value_from_the_resolver_only() {
    let plan = plan_of(&with_sentry(vec![])).unwrap();
    let receipts = created(&plan);
    let index = plan.steps.iter().position(|s| s.id == SENTRY).unwrap();
    let planned = &plan.steps[index];
    let input = resolve_input(planned, &receipts[..index], &mut |_| {
        Ok("https://key@sentry.example/1".into())
    })
    .unwrap();
    let mut body = input;
    assert_eq!(
        body.remove("environmentId"),
        Some(json!("id-of-environment:create"))
    );
    let body: SetEnvironmentVariable = serde_json::from_value(Value::Object(body)).unwrap();
    assert_eq!(body.value, "https://key@sentry.example/1");
    assert_eq!(body.is_secret, Some(true));
    assert_eq!(body.kind.as_deref(), Some("secret"));
    // An unreadable reference stops the step with the resolver's reason, never a value.
    let refused = resolve_input(planned, &receipts[..index], &mut |_| {
        Err("there is no Secret sentry in the organization's namespace".into())
    })
    .unwrap_err();
    assert_eq!(
        refused,
        Unresolved::Secret {
            step_id: SENTRY.into(),
            reason: "there is no Secret sentry in the organization's namespace".into()
        }
    );
    // The plan itself holds the reference only.
    let text = serde_json::to_string(&plan).unwrap();
    assert!(!text.contains("sentry.example"));
}

#[test]
fn a_binding_of_the_same_name_is_not_a_conflict() {
    let plan = plan_of(&with_spec(|s| {
        s["variables"].as_array_mut().unwrap().push(
            json!({"key": "DATABASE_URL", "secretRef": "env://DATABASE_URL", "exposure": "runtime"}),
        );
        s["dependencies"] = json!([{"ref": "pg", "name": "Postgres", "kind": "postgres", "providerKey": "railway-postgres",
            "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]}]);
    }))
    .unwrap();
    assert!(
        plan.blockers.iter().all(|b| b.code != "variable_conflict"),
        "{:?}",
        plan.blockers
    );
    assert!(ids(&plan).contains(&"environment-secret:DATABASE_URL:runtime"));
    // A variable of the resource itself still conflicts with the binding.
    let own = with_spec(|s| {
        s["variables"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "DATABASE_URL",
            "secretRef": "env://DATABASE_URL", "exposure": "runtime", "resourceRef": "web"}));
        s["dependencies"] = json!([{"ref": "pg", "name": "Postgres", "kind": "postgres", "providerKey": "railway-postgres",
            "bindings": [{"resourceRef": "web", "targetName": "DATABASE_URL"}]}]);
    });
    let blocked = plan_of(&own).unwrap();
    assert!(
        blocked
            .blockers
            .iter()
            .any(|b| b.code == "variable_conflict")
    );
}
