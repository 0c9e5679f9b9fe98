//! Variables as the API spells and checks them: the exposure's name and the key's pattern.

use berth_crds::variable::VariableExposure;

use crate::error::{ApiError, ApiResult};

/// The exposure as the REST API spells it.
pub fn exposure_name(exposure: VariableExposure) -> &'static str {
    exposure.as_str()
}

/// Parses an `exposure` value (query or body), defaulting to `runtime` (spec §8).
pub fn parse_exposure(value: Option<&str>) -> ApiResult<VariableExposure> {
    match value {
        None | Some("runtime") => Ok(VariableExposure::Runtime),
        Some("build-time") => Ok(VariableExposure::BuildTime),
        Some(_) => Err(ApiError::validation(
            "exposure",
            "exposure must be one of: build-time, runtime",
        )
        .with_detail("allowed", vec!["build-time", "runtime"])),
    }
}

/// Checks a variable key: the CRD's pattern, so the API server never sees a bad one.
pub fn validate_key(field: &str, key: &str) -> ApiResult<()> {
    if is_valid_key(key) {
        Ok(())
    } else {
        Err(ApiError::validation(
            field,
            format!(
                "{field} must start with a letter or _ and hold only letters, digits, _ . - (at most 256)"
            ),
        ))
    }
}

/// `^[A-Za-z_][A-Za-z0-9_.-]*$`, at most 256 characters.
pub fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 256
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}
