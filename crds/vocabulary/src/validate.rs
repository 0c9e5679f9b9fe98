//! Field checks that need nothing but the request: the shim runs them before it touches the
//! cluster (and answers a 422 naming the field), the CLI before it sends. Checks that need
//! cluster state (does the project exist, is the slug free) stay in the shim.

use std::fmt;

/// A field that breaks a rule: its JSON path (`networkProfile.hostPort`), what is allowed,
/// and the bounds when the rule is a range or a length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// The values allowed, when the rule is a list of them.
    pub allowed: Vec<String>,
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            message: message.into(),
            min: None,
            max: None,
            allowed: Vec::new(),
        }
    }

    /// The error of a value that must be one of `allowed`.
    pub fn not_one_of(field: &str, allowed: &[&str]) -> Self {
        Self {
            allowed: allowed.iter().map(|value| value.to_string()).collect(),
            ..Self::new(
                field,
                format!("{field} must be one of: {}", allowed.join(", ")),
            )
        }
    }

    fn with_max(mut self, max: usize) -> Self {
        self.max = i64::try_from(max).ok();
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FieldError {}

pub type Checked = Result<(), FieldError>;

/// Rejects an empty or whitespace-only required string (spec §8: length >= 1).
pub fn non_empty(field: &str, value: &str) -> Checked {
    if value.trim().is_empty() {
        return Err(FieldError::new(
            field,
            format!("{field} must be at least 1 character"),
        ));
    }
    Ok(())
}

/// A required string of 1..=`max` characters.
pub fn bounded(field: &str, value: &str, max: usize) -> Checked {
    non_empty(field, value)?;
    if value.chars().count() > max {
        return Err(
            FieldError::new(field, format!("{field} must be at most {max} characters"))
                .with_max(max),
        );
    }
    Ok(())
}

/// An optional string of 1..=`max` characters.
pub fn optional_text(field: &str, value: Option<&String>, max: usize) -> Checked {
    value.map_or(Ok(()), |text| bounded(field, text, max))
}

/// An optional integer within `min..=max`.
pub fn in_range(field: &str, value: Option<i64>, min: i64, max: i64) -> Checked {
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(FieldError {
            min: Some(min),
            max: Some(max),
            ..FieldError::new(field, format!("{field} must be from {min} to {max}"))
        }),
        _ => Ok(()),
    }
}

/// A DNS label of 1..=`max` characters (the CRDs' `DNS_LABEL_PATTERN`): lowercase letters,
/// digits and dashes, not starting or ending with a dash. Slugs and service names are labels.
pub fn dns_label(field: &str, value: &str, max: usize) -> Checked {
    let valid = (1..=max).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if valid {
        return Ok(());
    }
    Err(FieldError::new(
        field,
        format!(
            "{field} must be 1-{max} lowercase letters, digits or dashes, not starting or ending with a dash"
        ),
    )
    .with_max(max))
}

/// An optional URL path: 1..=`URL_PATH_MAX` characters starting with `/`.
pub fn absolute_path(field: &str, value: Option<&String>) -> Checked {
    optional_text(field, value, crate::limits::URL_PATH_MAX)?;
    if value.is_some_and(|p| !p.starts_with('/')) {
        return Err(FieldError::new(field, format!("{field} must start with /")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field_and_the_bounds() {
        let error = bounded("name", &"x".repeat(121), 120).unwrap_err();
        assert_eq!((error.field.as_str(), error.max), ("name", Some(120)));
        let error = in_range("port", Some(0), 1, 65_535).unwrap_err();
        assert_eq!((error.min, error.max), (Some(1), Some(65_535)));
        assert_eq!(error.to_string(), "port must be from 1 to 65535");
        assert!(non_empty("name", " ").is_err());
        assert!(dns_label("slug", "web-1", 63).is_ok());
        for bad in ["", "-a", "a-", "A", "a_b"] {
            assert_eq!(dns_label("slug", bad, 63).unwrap_err().field, "slug");
        }
        assert!(absolute_path("path", Some(&"api".to_string())).is_err());
        assert!(absolute_path("path", None).is_ok());
    }
}
