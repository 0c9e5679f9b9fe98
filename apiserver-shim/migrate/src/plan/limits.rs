//! Size limits of a bundle: a plan is built in memory and echoed by every later call, so a
//! bundle is bounded before anything is derived from it.

use berth_api::migrations::BundleSpec;
use berth_api::validate::{Checked, FieldError};
use serde_json::Value;

/// Longest serialized bundle, in bytes.
pub const BUNDLE_MAX: usize = 1024 * 1024;
/// Longest string anywhere in a bundle, in bytes.
pub const STRING_MAX: usize = 32 * 1024;
pub const RESOURCES_MAX: usize = 200;
pub const VARIABLES_MAX: usize = 2000;
pub const DOMAINS_MAX: usize = 200;
pub const VOLUMES_MAX: usize = 200;
pub const DEPENDENCIES_MAX: usize = 100;

fn too_long(field: &str, max: usize, unit: &str) -> FieldError {
    FieldError {
        max: i64::try_from(max).ok(),
        ..FieldError::new(field, format!("{field} must be at most {max} {unit}"))
    }
}

/// The serialized size and every string's length (keys included), naming the first too long.
pub fn check_value(value: &Value) -> Checked {
    let size = serde_json::to_string(value).map_or(usize::MAX, |text| text.len());
    if size > BUNDLE_MAX {
        return Err(too_long("bundle", BUNDLE_MAX, "bytes serialized"));
    }
    check_strings("bundle", value)
}

fn check_strings(path: &str, value: &Value) -> Checked {
    match value {
        Value::String(text) if text.len() > STRING_MAX => Err(too_long(path, STRING_MAX, "bytes")),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_strings(&format!("{path}[{i}]"), item)),
        Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let path = format!("{path}.{key}");
            match key.len() > STRING_MAX {
                true => Err(too_long(
                    path.get(..64).unwrap_or("bundle"),
                    STRING_MAX,
                    "bytes",
                )),
                false => check_strings(&path, item),
            }
        }),
        _ => Ok(()),
    }
}

/// How many of each item a bundle may hold.
pub fn check_counts(spec: &BundleSpec) -> Checked {
    if spec.resources.is_empty() {
        return Err(FieldError::new(
            "bundle.spec.resources",
            "bundle.spec.resources must hold at least one resource",
        ));
    }
    let counts = [
        ("bundle.spec.resources", spec.resources.len(), RESOURCES_MAX),
        ("bundle.spec.variables", spec.variables.len(), VARIABLES_MAX),
        ("bundle.spec.domains", spec.domains.len(), DOMAINS_MAX),
        ("bundle.spec.volumes", spec.volumes.len(), VOLUMES_MAX),
        (
            "bundle.spec.dependencies",
            spec.dependencies.len(),
            DEPENDENCIES_MAX,
        ),
    ];
    for (field, count, max) in counts {
        if count > max {
            return Err(too_long(field, max, "items"));
        }
    }
    Ok(())
}
