//! Bundle → plan. TEMPORARY stubs of the planner's API (replaced by the planner's branch).
#![allow(unused_variables)]

use berth_api::migrations::{MigrationBundle, MigrationPlan, Receipt, Step};
use berth_api::validate::FieldError;
use serde_json::{Map, Value};

pub fn parse_bundle(value: &Value) -> Result<MigrationBundle, FieldError> {
    Err(FieldError::new("bundle", "stub"))
}
pub fn plan(bundle: MigrationBundle) -> Result<MigrationPlan, FieldError> {
    Err(FieldError::new("bundle", "stub"))
}
pub fn plan_digest(plan: &MigrationPlan) -> String {
    String::new()
}
pub fn check_plan_shape(plan: &MigrationPlan) -> Result<(), FieldError> {
    Ok(())
}
pub fn attest(key: &[u8], plan_digest: &str) -> String {
    String::new()
}
pub fn attestation_matches(key: &[u8], plan: &MigrationPlan) -> bool {
    false
}
pub fn check_receipts(plan: &MigrationPlan, receipts: &[Receipt]) -> Result<(), FieldError> {
    Ok(())
}
pub enum SecretRef {
    Kubernetes { secret: String, key: String },
    Environment { name: String },
}
pub fn parse_secret_ref(field: &str, text: &str) -> Result<SecretRef, FieldError> {
    Err(FieldError::new(field, "stub"))
}
pub fn secret_refs(plan: &MigrationPlan) -> Vec<(String, String)> {
    Vec::new()
}
pub enum Unresolved {
    Reference { placeholder: String },
    Secret { step_id: String, reason: String },
}
pub fn resolve_input(
    step: &Step,
    receipts: &[Receipt],
    secret: &mut dyn FnMut(&SecretRef) -> Result<String, String>,
) -> Result<Map<String, Value>, Unresolved> {
    Ok(step.input.clone())
}
pub fn cleanup_order(plan: &MigrationPlan, receipts: &[Receipt]) -> Vec<usize> {
    Vec::new()
}
