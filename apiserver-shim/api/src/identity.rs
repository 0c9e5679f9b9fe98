//! What the identity route groups share: the `permissions` booleans of a membership and the
//! checks of profile fields (display names, image URLs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::FieldError;

/// Longest display name (users, organizations), as the CRDs allow.
pub const MAX_NAME_LENGTH: usize = crate::limits::NAME_MAX;
/// Longest avatar or logo URL.
pub const MAX_URL_LENGTH: usize = 2048;

/// The six organization permission booleans of spec §2.1.
#[derive(Serialize, Deserialize, JsonSchema, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    pub can_invite_members: bool,
    pub can_list_members: bool,
    pub can_manage_deploy_tokens: bool,
    pub can_remove_members: bool,
    pub can_transfer_ownership: bool,
    pub can_update_member_roles: bool,
}

/// A display name: trimmed, at most [`MAX_NAME_LENGTH`] characters; `None` when blank.
pub fn display_name(field: &str, value: &str) -> Result<Option<String>, FieldError> {
    let trimmed = value.trim();
    if trimmed.chars().count() > MAX_NAME_LENGTH {
        return Err(FieldError::new(
            field,
            format!("{field} must be at most {MAX_NAME_LENGTH} characters"),
        ));
    }
    Ok((!trimmed.is_empty()).then(|| trimmed.to_string()))
}

/// An image URL (http or https); `None` when blank, which clears it.
pub fn image_url(field: &str, value: &str) -> Result<Option<String>, FieldError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let valid = trimmed.len() <= MAX_URL_LENGTH
        && !trimmed.contains(char::is_whitespace)
        && ["https://", "http://"].iter().any(|scheme| {
            trimmed
                .strip_prefix(scheme)
                .is_some_and(|rest| !rest.is_empty())
        });
    if !valid {
        return Err(FieldError::new(
            field,
            format!("{field} must be an http(s) URL of at most {MAX_URL_LENGTH} characters"),
        ));
    }
    Ok(Some(trimmed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_fields_are_checked() {
        assert_eq!(
            display_name("displayName", "  Ada ").unwrap(),
            Some("Ada".into())
        );
        assert_eq!(display_name("displayName", " ").unwrap(), None);
        assert!(display_name("displayName", &"x".repeat(121)).is_err());
        assert_eq!(image_url("avatarUrl", "").unwrap(), None);
        assert!(image_url("avatarUrl", "https://example.com/a.png").is_ok());
        assert!(image_url("avatarUrl", "ftp://example.com/a.png").is_err());
        assert!(image_url("avatarUrl", "https://").is_err());
    }
}
