//! Receipts, placeholders, secret references and cleanup.

use std::collections::BTreeMap;

use berth_api::migrations::{Receipt, Scalar};
use serde_json::json;

use super::*;
use crate::plan::{
    SecretRef, Unresolved, check_receipts, cleanup_order, parse_secret_ref, resolve_input,
    secret_refs,
};

fn receipt(plan: &MigrationPlan, i: usize, ownership: &str) -> Receipt {
    let step = &plan.steps[i];
    let output = step
        .produces
        .iter()
        .flat_map(|p| p.keys())
        .map(|name| (name.clone(), Scalar::Text(format!("id-{i}"))));
    Receipt {
        step_id: step.id.clone(),
        operation_key: step.operation_key.clone(),
        state: "completed".into(),
        output: output.collect(),
        ownership: ownership.into(),
    }
}

fn receipts(plan: &MigrationPlan, n: usize) -> Vec<Receipt> {
    (0..n).map(|i| receipt(plan, i, "created")).collect()
}

#[test]
fn receipts_are_a_prefix_of_the_steps() {
    let plan = fixture_plan();
    assert!(check_receipts(&plan, &[]).is_ok());
    assert!(check_receipts(&plan, &receipts(&plan, plan.steps.len())).is_ok());
    let mut too_many = receipts(&plan, plan.steps.len());
    too_many.push(too_many[0].clone());
    assert_eq!(
        check_receipts(&plan, &too_many).unwrap_err().field,
        "receipts"
    );
    let mut swapped = receipts(&plan, 3);
    swapped.swap(1, 2);
    assert_eq!(
        check_receipts(&plan, &swapped).unwrap_err().field,
        "receipts[1].stepId"
    );
    let mut wrong_operation = receipts(&plan, 2);
    wrong_operation[1].operation_key = "projects.create".into();
    assert_eq!(
        check_receipts(&plan, &wrong_operation).unwrap_err().field,
        "receipts[1].operationKey"
    );
    let mut missing = receipts(&plan, 2);
    missing[1].output = BTreeMap::new();
    assert_eq!(
        check_receipts(&plan, &missing).unwrap_err().field,
        "receipts[1].output.environmentId"
    );
    let mut failed = receipts(&plan, 1);
    failed[0].state = "failed".into();
    assert_eq!(
        check_receipts(&plan, &failed).unwrap_err().field,
        "receipts[0].state"
    );
    let mut owned = receipts(&plan, 1);
    owned[0].ownership = "borrowed".into();
    assert_eq!(
        check_receipts(&plan, &owned).unwrap_err().field,
        "receipts[0].ownership"
    );
}

#[test]
fn placeholders_resolve_from_receipts_and_the_secret_resolver() {
    let plan = fixture_plan();
    let index = plan
        .steps
        .iter()
        .position(|s| s.id == "resource-secret:web:STRIPE_KEY:runtime")
        .unwrap();
    let step = &plan.steps[index];
    let mut asked = Vec::new();
    let mut resolver = |reference: &SecretRef| {
        asked.push(reference.clone());
        Ok("sk_live_1".to_string())
    };
    let mut prior = receipts(&plan, index);
    let web = prior
        .iter_mut()
        .find(|r| r.step_id == "resource:create:web")
        .unwrap();
    web.output.insert("resourceId".into(), Scalar::Number(42));
    let input = resolve_input(step, &prior, &mut resolver).unwrap();
    assert_eq!(
        serde_json::Value::Object(input),
        json!({"resourceId": 42, "key": "STRIPE_KEY", "value": "sk_live_1", "exposure": "runtime"})
    );
    assert_eq!(
        asked,
        [SecretRef::Environment {
            name: "STRIPE_KEY".into()
        }]
    );
    // Without the resource's receipt the reference is unresolved.
    let unresolved = resolve_input(step, &prior[..2], &mut |_| Ok(String::new())).unwrap_err();
    assert_eq!(
        unresolved,
        Unresolved::Reference {
            placeholder: "steps.resource:create:web.output.resourceId".into()
        }
    );
    let refused = resolve_input(step, &prior, &mut |_| {
        Err("STRIPE_KEY is not in secretValues".into())
    })
    .unwrap_err();
    assert_eq!(
        refused,
        Unresolved::Secret {
            step_id: step.id.clone(),
            reason: "STRIPE_KEY is not in secretValues".into()
        }
    );
    assert_eq!(
        secret_refs(&plan),
        [(step.id.clone(), "env://STRIPE_KEY".to_string())]
    );
}

#[test]
fn cleanup_goes_newest_first_and_skips_reused() {
    let plan = fixture_plan();
    let mut done = receipts(&plan, 5);
    done[1].ownership = "reused".into();
    assert_eq!(cleanup_order(&plan, &done), [4, 3, 2, 0]);
    // A receipt that is not its step's is never cleaned up.
    done[4].step_id = "other".into();
    assert_eq!(cleanup_order(&plan, &done), [3, 2, 0]);
}

#[test]
fn secret_references_parse_without_echoing() {
    assert_eq!(
        parse_secret_ref("f", "k8s://db-conn.v1#DATABASE_URL").unwrap(),
        SecretRef::Kubernetes {
            secret: "db-conn.v1".into(),
            key: "DATABASE_URL".into()
        }
    );
    assert_eq!(
        parse_secret_ref("f", "env://_A1").unwrap(),
        SecretRef::Environment { name: "_A1".into() }
    );
    for bad in [
        "k8s://Db#key",
        "k8s://db",
        "k8s://db#a b",
        "env://lower",
        "env://1A",
        "",
        "vault://x/y",
        "postgres://user:hunter2@db/x",
        "hunter2",
    ] {
        let error = parse_secret_ref("bundle.spec.variables[0].secretRef", bad).unwrap_err();
        assert_eq!(error.field, "bundle.spec.variables[0].secretRef");
        assert!(
            !error.message.contains("hunter2") && !error.message.contains("x/y"),
            "{}",
            error.message
        );
    }
    assert!(
        parse_secret_ref("f", "vault://x")
            .unwrap_err()
            .message
            .contains("vault://")
    );
}
