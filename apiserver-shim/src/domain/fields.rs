//! Field rules every route applies the same way: confirmations, required text, slugs.

use berth_crds::limits::DNS_LABEL_MAX;

use crate::error::{ApiError, ApiResult};

/// Checks a destructive call's `confirmation.<field>` repeats the target id.
pub fn confirm(
    given: Option<&str>,
    expected: &str,
    field: &str,
    kind: &str,
) -> Result<(), ApiError> {
    match given {
        None => Err(ApiError::validation(
            &format!("confirmation.{field}"),
            format!("confirmation.{field} is required: repeat the {kind} id to confirm"),
        )),
        Some(value) if value == expected => Ok(()),
        Some(_) => Err(ApiError::confirmation_mismatch(field, kind)),
    }
}

/// Rejects an empty or whitespace-only required string (spec §8: length >= 1).
pub fn non_empty(field: &str, value: &str) -> Result<(), ApiError> {
    Ok(berth_api::validate::non_empty(field, value)?)
}

/// A required string of 1..=`max` characters (spec §8: identifiers and filters are >= 1).
pub fn bounded(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    Ok(berth_api::validate::bounded(field, value, max)?)
}

/// A DNS label of 1..=`max` characters (the CRDs' `DNS_LABEL_PATTERN`): lowercase letters,
/// digits and dashes, not starting or ending with a dash. Slugs and service names are labels.
pub fn dns_label(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    Ok(berth_api::validate::dns_label(field, value, max)?)
}

/// The `slug` of a new or renamed organization, project or resource; `max` is the kind's
/// limit (`ORGANIZATION_SLUG_MAX` or `DNS_LABEL_MAX`).
pub fn validate_slug(slug: &str, max: usize) -> Result<(), ApiError> {
    dns_label("slug", slug, max)
}

/// A URL-safe slug from a display name: lowercase letters, digits and single dashes.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug: String = slug.chars().take(DNS_LABEL_MAX).collect();
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "item".to_string()
    } else {
        slug
    }
}

/// `domainName` as a binding holds it (lowercase, no final dot), or a 400 naming the field.
pub fn normalized_host_name(given: &str) -> ApiResult<String> {
    let hostname = given.trim().trim_end_matches('.').to_ascii_lowercase();
    if !is_host_name(&hostname) {
        return Err(ApiError::validation(
            "domainName",
            "domainName must be a host name such as shop.example.com or *.example.com",
        ));
    }
    Ok(hostname)
}

pub use berth_api::previews::is_host_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_dns_labels() {
        assert_eq!(slugify("My Shop!  2"), "my-shop-2");
        assert_eq!(slugify("---"), "item");
        assert_eq!(slugify(&"a".repeat(100)).len(), 63);
    }

    #[test]
    fn slugs_and_labels_share_one_rule_with_a_limit_per_kind() {
        for good in ["a", "web-1", "0", &"a".repeat(58)] {
            assert!(validate_slug(good, 58).is_ok(), "{good}");
        }
        let too_long = "a".repeat(59);
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "é", too_long.as_str()] {
            let error = validate_slug(bad, 58).unwrap_err();
            assert_eq!(error.status, 422, "{bad}");
            assert_eq!(error.body.details["field"], "slug");
            assert_eq!(error.body.details["max"], 58);
        }
        assert!(validate_slug(&too_long, DNS_LABEL_MAX).is_ok());
        let error = dns_label("services[0].name", "Web", DNS_LABEL_MAX).unwrap_err();
        assert_eq!(error.body.details["field"], "services[0].name");
        assert!(error.body.message.contains("1-63 lowercase letters"));
    }

    #[test]
    fn confirmation_must_repeat_the_id() {
        assert!(confirm(Some("prj-1"), "prj-1", "projectId", "project").is_ok());
        assert_eq!(
            confirm(Some("prj-2"), "prj-1", "projectId", "project")
                .unwrap_err()
                .status,
            409
        );
        assert_eq!(
            confirm(None, "prj-1", "projectId", "project")
                .unwrap_err()
                .status,
            422
        );
    }
}
