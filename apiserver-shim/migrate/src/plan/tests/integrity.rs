//! Digests and attestation.

use berth_api::migrations::PlanState;
use serde_json::{Value, json};

use super::*;
use crate::plan::{
    attest, attestation_matches, canonical_json, check_plan_shape, hmac_sha256, plan_digest,
};

/// Every array reversed and every object rebuilt with its keys in reverse order.
fn shuffled(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().rev().map(shuffled).collect()),
        Value::Object(map) => {
            let text: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        json!(k),
                        serde_json::to_string(&shuffled(v)).unwrap()
                    )
                })
                .collect();
            serde_json::from_str(&format!("{{{}}}", text.join(","))).unwrap()
        }
        other => other.clone(),
    }
}

#[test]
fn order_of_arrays_and_keys_does_not_matter() {
    let value = with_spec(|s| {
        s["resources"][0]["services"] =
            json!([{"name": "b", "kind": "web"}, {"name": "a", "kind": "api"}]);
        s["dependencies"] = json!([
            {"ref": "x", "name": "X", "kind": "redis", "providerKey": "p", "connectionSecretRef": "env://X_URL",
             "bindings": [{"resourceRef": "worker", "targetName": "X_URL"}, {"resourceRef": "web", "targetName": "X_URL"}]},
            {"ref": "a", "name": "A", "kind": "redis", "providerKey": "p", "connectionSecretRef": "env://A_URL"}
        ]);
        s["sourceWarnings"] = json!(["b", "a"]);
    });
    let plan = plan_of(&value).unwrap();
    let again = plan_of(&shuffled(&value)).unwrap();
    assert_eq!(plan, again);
    // Whitespace around strings and the host name's case are not part of the bundle.
    let padded = with_spec(|s| {
        s["resources"][0]["name"] = json!("  Web ");
        s["domains"][0]["hostname"] = json!("SHOP.example.COM");
    });
    assert_eq!(
        plan_of(&padded).unwrap().plan_digest,
        fixture_plan().plan_digest
    );
}

/// Every leaf of the fixture, edited to another valid value, changes both digests.
#[test]
fn any_edit_changes_the_digests() {
    let base = fixture_plan();
    let mut leaves = Vec::new();
    collect_leaves(&fixture(), String::new(), &mut leaves);
    let mut changed = 0;
    for pointer in &leaves {
        let mut value = fixture();
        let leaf = value.pointer_mut(pointer).unwrap();
        *leaf = match leaf {
            Value::String(text) => json!(format!("{text}x")),
            Value::Number(n) => json!(n.as_u64().unwrap() + 1),
            other => panic!("{other}"),
        };
        let Ok(plan) = plan_of(&value) else { continue };
        assert_ne!(plan.bundle_digest, base.bundle_digest, "{pointer}");
        assert_ne!(plan.plan_digest, base.plan_digest, "{pointer}");
        changed += 1;
    }
    assert!(changed >= 25, "{changed} of {} leaves edited", leaves.len());
}

fn collect_leaves(value: &Value, pointer: String, leaves: &mut Vec<String>) {
    match value {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| collect_leaves(v, format!("{pointer}/{k}"), leaves)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| collect_leaves(v, format!("{pointer}/{i}"), leaves)),
        _ => leaves.push(pointer),
    }
}

#[test]
fn the_plan_digest_covers_six_fields() {
    let plan = fixture_plan();
    assert_eq!(plan_digest(&plan), plan.plan_digest);
    assert!(check_plan_shape(&plan).is_ok());
    let mut edited = plan.clone();
    edited.steps[0].input.insert("name".into(), json!("Shop2"));
    assert_ne!(plan_digest(&edited), plan.plan_digest);
    let mut edited = plan.clone();
    edited.warnings.push("x".into());
    assert_ne!(plan_digest(&edited), plan.plan_digest);
    let mut edited = plan.clone();
    edited.variable_report.clear();
    edited.attestation = Some("hmac-sha256:00".into());
    assert_eq!(plan_digest(&edited), plan.plan_digest);
    // The recipe of MIGRATION.md §2.3 with sorted keys: JCS of the plan minus planDigest.
    let mut value = serde_json::to_value(&plan).unwrap();
    let map = value.as_object_mut().unwrap();
    for key in ["planDigest", "variableReport", "attestation"] {
        map.remove(key);
    }
    let digest = sha2::Sha256::digest(canonical_json(&value).as_bytes());
    assert_eq!(plan.plan_digest, format!("sha256:{}", hex::encode(digest)));
}

use sha2::Digest;

#[test]
fn canonical_json_sorts_keys_by_utf16_and_escapes_like_jcs() {
    let value = json!({"b": 1, "a": [true, null, "x\n\u{1}\"/é"], "\u{e000}": 0, "\u{1f600}": 0});
    assert_eq!(
        canonical_json(&value),
        "{\"a\":[true,null,\"x\\n\\u0001\\\"/é\"],\"b\":1,\"\u{1f600}\":0,\"\u{e000}\":0}"
    );
}

#[test]
fn plan_shape_is_checked() {
    let plan = fixture_plan();
    let mut bad = plan.clone();
    bad.state = PlanState::Blocked;
    assert_eq!(check_plan_shape(&bad).unwrap_err().field, "plan.state");
    let mut bad = plan.clone();
    bad.plan_digest = "sha256:ABC".into();
    assert_eq!(check_plan_shape(&bad).unwrap_err().field, "plan.planDigest");
    let mut bad = plan.clone();
    bad.steps[2].id = "environment:create".into();
    assert_eq!(
        check_plan_shape(&bad).unwrap_err().field,
        "plan.steps[2].id"
    );
    let mut bad = plan.clone();
    bad.steps.swap(0, 1);
    assert_eq!(
        check_plan_shape(&bad).unwrap_err().field,
        "plan.steps[0].dependsOn[0]"
    );
    let mut bad = plan;
    bad.protocol = "v2".into();
    assert_eq!(check_plan_shape(&bad).unwrap_err().field, "plan.protocol");
}

/// RFC 4231 test cases 2 (short key) and 6 (key longer than the block).
#[test]
fn hmac_matches_rfc_4231() {
    assert_eq!(
        hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    assert_eq!(
        hex::encode(hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First"
        )),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
    assert_eq!(
        attest(b"Jefe", "what do ya want for nothing?"),
        "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn an_edited_plan_loses_its_attestation() {
    let key = b"shim key";
    let mut plan = fixture_plan();
    assert!(!attestation_matches(key, &plan));
    plan.attestation = Some(attest(key, &plan.plan_digest));
    assert!(check_plan_shape(&plan).is_ok());
    assert!(attestation_matches(key, &plan));
    assert!(!attestation_matches(b"other key", &plan));
    // Edited, with the digest recomputed as a client can.
    let mut edited = plan.clone();
    edited.steps[0].input.insert("name".into(), json!("Evil"));
    edited.plan_digest = plan_digest(&edited);
    assert!(!attestation_matches(key, &edited));
    // Edited without recomputing: the claimed digest no longer matches the content.
    let mut edited = plan;
    edited.blockers.clear();
    edited.warnings.push("x".into());
    assert!(!attestation_matches(key, &edited));
}
