//! Bundle → plan, without I/O. The plan is deterministic: the same bundle, with its arrays and
//! keys in any order, gives the same steps and digests. Berth goes beyond Appaloft here
//! (MIGRATION.md §4, §5): duplicates and oversized bundles are refused, arrays sort by code
//! point, digests are JCS, and a plan can carry the shim's attestation.

mod attest;
mod canonical;
mod checks;
mod digest;
mod limits;
mod managed;
mod receipts;
mod resource;
mod secrets;
mod shape;
mod steps;
mod validate;

#[cfg(test)]
mod tests;

use berth_api::migrations::{
    BUNDLE_API_VERSION, BUNDLE_KIND, Blocker, MigrationBundle, MigrationPlan, PROTOCOL, PlanState,
};
use berth_api::validate::FieldError;
use serde_json::{Value, json};

pub use attest::{attest, attestation_matches, hmac_sha256};
pub use digest::{bundle_digest, canonical_json, is_sha256, plan_digest};
pub use limits::{
    BUNDLE_MAX, DEPENDENCIES_MAX, DOMAINS_MAX, RESOURCES_MAX, STRING_MAX, VARIABLES_MAX,
    VOLUMES_MAX,
};
pub use receipts::{Unresolved, check_plan_shape, check_receipts, cleanup_order, resolve_input};
pub use secrets::{SecretRef, parse_secret_ref, secret_refs};

/// `{"$ref": "steps.<step>.output.<name>"}`.
fn placeholder(step: &str, output: &str) -> Value {
    json!({"$ref": format!("steps.{step}.output.{output}")})
}

/// A reason the plan cannot be applied, at `path` of the bundle.
fn blocker(code: &str, path: &str, message: String) -> Blocker {
    Blocker {
        code: code.into(),
        path: path.into(),
        message,
    }
}

/// Reads a bundle strictly: size first, then the shape (an unknown key is refused by its path,
/// `bundle.spec.resources[0].foo`), then `apiVersion` and `kind`. Messages name keys and types,
/// never a value.
pub fn parse_bundle(value: &Value) -> Result<MigrationBundle, FieldError> {
    limits::check_value(value)?;
    let bundle: MigrationBundle = serde_path_to_error::deserialize(value).map_err(|error| {
        let path = match error.path().to_string() {
            path if path == "." => "bundle".to_string(),
            path => format!("bundle.{path}"),
        };
        shape_error(&path, &error.into_inner().to_string())
    })?;
    check_envelope(&bundle)?;
    Ok(bundle)
}

/// A serde message reduced to what it may say: the unknown or missing key, or the expected
/// type (serde's "invalid type: string \"…\"" would echo the value).
fn shape_error(path: &str, message: &str) -> FieldError {
    let quoted = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
            .map(str::to_string)
    };
    // serde_path_to_error's path already ends with the unknown key.
    if quoted("unknown field `").is_some() {
        return FieldError::new(path, format!("{path} is not a known key"));
    }
    if let Some(key) = quoted("missing field `") {
        let field = format!("{path}.{key}");
        return FieldError::new(&field, format!("{field} is required"));
    }
    let expected = message
        .rsplit_once(", expected ")
        .map(|(_, expected)| format!(": expected {expected}"))
        .unwrap_or_default();
    FieldError::new(
        path,
        format!("{path} has the wrong type or value{expected}"),
    )
}

fn check_envelope(bundle: &MigrationBundle) -> Result<(), FieldError> {
    if bundle.api_version.trim() != BUNDLE_API_VERSION {
        return Err(FieldError::not_one_of(
            "bundle.apiVersion",
            &[BUNDLE_API_VERSION],
        ));
    }
    if bundle.kind.trim() != BUNDLE_KIND {
        return Err(FieldError::not_one_of("bundle.kind", &[BUNDLE_KIND]));
    }
    Ok(())
}

/// Validates and canonicalises the bundle, then derives the steps, blockers, warnings, the
/// variable report and both digests. The attestation is the shim's to add.
pub fn plan(mut bundle: MigrationBundle) -> Result<MigrationPlan, FieldError> {
    check_envelope(&bundle)?;
    let value = serde_json::to_value(&bundle)
        .map_err(|_| FieldError::new("bundle", "bundle does not serialize"))?;
    limits::check_value(&value)?;
    canonical::normalize(&mut bundle);
    validate::check(&bundle)?;
    canonical::sort(&mut bundle);
    let mut found = resource::Findings::default();
    let steps = steps::build(&bundle, &mut found);
    checks::review(&bundle, &mut found);
    let mut blockers = found.blockers;
    blockers.extend(bundle.spec.source_blockers.iter().cloned());
    blockers.sort_by(|a, b| (&a.path, &a.code, &a.message).cmp(&(&b.path, &b.code, &b.message)));
    blockers.dedup();
    let mut warnings = found.warnings;
    warnings.sort();
    warnings.dedup();
    let mut plan = MigrationPlan {
        protocol: PROTOCOL.into(),
        state: if blockers.is_empty() {
            PlanState::Ready
        } else {
            PlanState::Blocked
        },
        bundle_digest: bundle_digest(&bundle),
        plan_digest: String::new(),
        steps,
        blockers,
        warnings,
        variable_report: checks::variable_report(&bundle),
        attestation: None,
    };
    plan.plan_digest = plan_digest(&plan);
    Ok(plan)
}
