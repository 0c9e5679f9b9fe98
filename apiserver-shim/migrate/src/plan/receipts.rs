//! What apply, status, verify and cleanup check of a plan and its receipts, and how a step's
//! placeholders are filled from earlier receipts and the secret resolver.

use std::collections::HashSet;

use berth_api::migrations::{MigrationPlan, PROTOCOL, PlanState, Receipt, Scalar, Step};
use berth_api::validate::FieldError;
use serde_json::{Map, Value};

use super::attest::ATTESTATION_PREFIX;
use super::digest::{is_lower_hex_64, is_sha256};
use super::secrets::{SecretRef, parse_secret_ref, secret_placeholder};

/// The plan's form, before its digest is recomputed: protocol, digest patterns, state agreeing
/// with the blockers, step ids unique and each `dependsOn` naming an earlier step (apply runs
/// steps in array order).
pub fn check_plan_shape(plan: &MigrationPlan) -> Result<(), FieldError> {
    if plan.protocol != PROTOCOL {
        return Err(FieldError::not_one_of("plan.protocol", &[PROTOCOL]));
    }
    for (field, digest) in [
        ("plan.bundleDigest", &plan.bundle_digest),
        ("plan.planDigest", &plan.plan_digest),
    ] {
        if !is_sha256(digest) {
            return Err(FieldError::new(
                field,
                format!("{field} must match ^sha256:[a-f0-9]{{64}}$"),
            ));
        }
    }
    let attested = plan.attestation.as_deref().map(|a| {
        a.strip_prefix(ATTESTATION_PREFIX)
            .is_some_and(is_lower_hex_64)
    });
    if attested == Some(false) {
        return Err(FieldError::new(
            "plan.attestation",
            "plan.attestation must match ^hmac-sha256:[a-f0-9]{64}$",
        ));
    }
    let blocked = !plan.blockers.is_empty();
    if (plan.state == PlanState::Blocked) != blocked {
        return Err(FieldError::new(
            "plan.state",
            "plan.state must be blocked exactly when the plan has blockers",
        ));
    }
    check_steps(plan)
}

/// Ids present and unique; each `dependsOn` an earlier step.
fn check_steps(plan: &MigrationPlan) -> Result<(), FieldError> {
    let mut seen = HashSet::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if step.id.trim().is_empty() || step.operation_key.trim().is_empty() {
            return Err(FieldError::new(
                &format!("plan.steps[{i}]"),
                format!("plan.steps[{i}] needs an id and an operationKey"),
            ));
        }
        if let Some(j) = step
            .depends_on
            .iter()
            .position(|d| !seen.contains(d.as_str()))
        {
            let field = format!("plan.steps[{i}].dependsOn[{j}]");
            return Err(FieldError::new(
                &field,
                format!("{field} must name an earlier step"),
            ));
        }
        if !seen.insert(step.id.as_str()) {
            let field = format!("plan.steps[{i}].id");
            return Err(FieldError::new(&field, format!("{field} must be unique")));
        }
    }
    Ok(())
}

/// Appaloft's prefix rule: at most one receipt per step, receipt *i* of step *i* (id and
/// operation), every output the step produces present, `completed`, and `created` or `reused`.
pub fn check_receipts(plan: &MigrationPlan, receipts: &[Receipt]) -> Result<(), FieldError> {
    if receipts.len() > plan.steps.len() {
        return Err(FieldError {
            max: i64::try_from(plan.steps.len()).ok(),
            ..FieldError::new(
                "receipts",
                format!(
                    "receipts must be at most one per step ({})",
                    plan.steps.len()
                ),
            )
        });
    }
    receipts
        .iter()
        .zip(&plan.steps)
        .enumerate()
        .try_for_each(|(i, (receipt, step))| check_receipt(i, receipt, step))
}

/// Receipt `i` against step `i`.
fn check_receipt(i: usize, receipt: &Receipt, step: &Step) -> Result<(), FieldError> {
    let field = |name: &str| format!("receipts[{i}].{name}");
    if receipt.step_id != step.id {
        let field = field("stepId");
        return Err(FieldError::new(
            &field,
            format!(
                "{field} must be {} (receipts follow the plan's steps in order)",
                step.id
            ),
        ));
    }
    if receipt.operation_key != step.operation_key {
        let field = field("operationKey");
        return Err(FieldError::new(
            &field,
            format!("{field} must be {}", step.operation_key),
        ));
    }
    for name in step.produces.iter().flat_map(|p| p.keys()) {
        if !receipt.output.contains_key(name) {
            let field = field(&format!("output.{name}"));
            return Err(FieldError::new(
                &field,
                format!("{field} is required: step {} produces it", step.id),
            ));
        }
    }
    if receipt.state != "completed" {
        return Err(FieldError::not_one_of(&field("state"), &["completed"]));
    }
    if !matches!(receipt.ownership.as_str(), "created" | "reused") {
        return Err(FieldError::not_one_of(
            &field("ownership"),
            &["created", "reused"],
        ));
    }
    Ok(())
}

/// A placeholder apply could not fill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// A `$ref` to an output no earlier receipt holds (the placeholder text).
    Reference { placeholder: String },
    /// A `$secretRef` the resolver could not read; `reason` never holds the value.
    Secret { step_id: String, reason: String },
}

/// The step's input with every `{"$ref"}` replaced by the receipt output it names and every
/// `{"$secretRef"}` by the resolver's value, at any depth.
pub fn resolve_input(
    step: &Step,
    receipts: &[Receipt],
    secret: &mut dyn FnMut(&SecretRef) -> Result<String, String>,
) -> Result<Map<String, Value>, Unresolved> {
    let mut resolver = Resolver {
        step,
        receipts,
        secret,
    };
    step.input
        .iter()
        .map(|(key, value)| Ok((key.clone(), resolver.value(value)?)))
        .collect()
}

struct Resolver<'a, 'b> {
    step: &'a Step,
    receipts: &'a [Receipt],
    secret: &'b mut dyn FnMut(&SecretRef) -> Result<String, String>,
}

impl Resolver<'_, '_> {
    fn value(&mut self, value: &Value) -> Result<Value, Unresolved> {
        match value {
            Value::Object(map) => {
                if let Some(text) = reference_placeholder(map) {
                    return self.reference(text);
                }
                if let Some(text) = secret_placeholder(map) {
                    return self.secret(text);
                }
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), self.value(v)?)))
                    .collect::<Result<_, _>>()
                    .map(Value::Object)
            }
            Value::Array(items) => items
                .iter()
                .map(|v| self.value(v))
                .collect::<Result<_, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn reference(&self, text: &str) -> Result<Value, Unresolved> {
        let unresolved = || Unresolved::Reference {
            placeholder: text.to_string(),
        };
        let (step_id, name) = parse_reference(text).ok_or_else(unresolved)?;
        let receipt = self
            .receipts
            .iter()
            .find(|r| r.step_id == step_id)
            .ok_or_else(unresolved)?;
        Ok(match receipt.output.get(name).ok_or_else(unresolved)? {
            Scalar::Text(text) => Value::String(text.clone()),
            Scalar::Number(number) => Value::from(*number),
            Scalar::Flag(flag) => Value::Bool(*flag),
        })
    }

    fn secret(&mut self, text: &str) -> Result<Value, Unresolved> {
        let step_id = self.step.id.clone();
        let field = format!("steps.{step_id}.input");
        let reference = parse_secret_ref(&field, text).map_err(|e| Unresolved::Secret {
            step_id: step_id.clone(),
            reason: e.message,
        })?;
        (self.secret)(&reference)
            .map(Value::String)
            .map_err(|reason| Unresolved::Secret { step_id, reason })
    }
}

/// The text of `{"$ref": "<text>"}` (that key alone).
fn reference_placeholder(map: &Map<String, Value>) -> Option<&str> {
    match (map.len(), map.get("$ref")) {
        (1, Some(Value::String(text))) => Some(text),
        _ => None,
    }
}

/// `steps.<id>.output.<name>` → (id, name); the id may hold dots, the name may not.
fn parse_reference(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("steps.")?;
    let (id, name) = rest.rsplit_once(".output.")?;
    (!id.is_empty() && !name.is_empty() && !name.contains('.')).then_some((id, name))
}

/// Indexes of the receipts cleanup undoes, newest first: created by the migration (never
/// `reused`) and of a step with a cleanup.
pub fn cleanup_order(plan: &MigrationPlan, receipts: &[Receipt]) -> Vec<usize> {
    receipts
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, receipt)| {
            let step = plan.steps.get(*i).filter(|s| s.id == receipt.step_id);
            receipt.ownership == "created" && step.is_some_and(|s| s.cleanup.is_some())
        })
        .map(|(i, _)| i)
        .collect()
}
