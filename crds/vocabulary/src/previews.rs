//! What previews are made of, shared by the PreviewPolicy and PreviewEnvironment CRDs and the
//! REST records: a preview's own host name (Appaloft's preview domain template,
//! `pr-{pr_number}.preview.example.com`, rendered for one pull request) and the TLS modes it
//! may have, and the databases a preview has of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{DNS_LABEL_MAX, OBJECT_NAME_MAX};

/// The spellings of `previewTlsMode`: a certificate by ACME, or plain HTTP.
pub const PREVIEW_TLS_MODES: [&str; 2] = ["auto", "disabled"];

/// The spellings of `previewDatabases`: what a preview gets for each managed database its
/// resource binds.
pub const PREVIEW_DATABASES: [&str; 3] = ["empty", "latest-backup", "none"];

/// A database a preview has of its own in place of one its resource binds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewDatabase {
    /// Id of the DependencyResource the resource binds.
    pub dependency_resource_id: String,
    /// Id of the preview's own, which its copy binds instead.
    pub preview_dependency_resource_id: String,
    /// How its filling stands.
    pub seed: PreviewSeed,
    /// The backup it is filled from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_id: Option<String>,
    /// What people should know (why it started empty, why its filling failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a preview database's filling stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PreviewSeed {
    /// It starts empty (as asked, or as no ready backup exists).
    Empty,
    /// It waits to be ready before its backup is restored into it.
    Waiting,
    /// Its backup is being restored into it.
    Restoring,
    /// It holds its backup's data.
    Restored,
    /// Restoring its backup failed; the preview does not deploy.
    Failed,
}

impl PreviewSeed {
    /// Whether the preview may deploy on it.
    pub fn settled(self) -> bool {
        matches!(self, Self::Empty | Self::Restored)
    }
}

/// Tokens a preview domain template may hold: the pull request's number, the preview's id
/// (`pr-<n>`, Appaloft's) and the resource's host slug (Berth's).
pub const DOMAIN_TEMPLATE_TOKENS: [&str; 3] = ["pr_number", "preview_id", "slug"];

/// What a template's tokens stand for in one preview.
pub struct PreviewDomainValues<'a> {
    pub pr_number: u64,
    pub preview_id: &'a str,
    pub slug: &'a str,
}

/// The host name `template` gives the preview described by `values` (lowercase, no final
/// dot), or why it gives none: an unknown or unclosed token, or a result that is not a host
/// name of at least two labels.
pub fn render_preview_domain(
    template: &str,
    values: &PreviewDomainValues,
) -> Result<String, String> {
    let template = template.trim().trim_end_matches('.').to_ascii_lowercase();
    let mut host = String::new();
    let mut rest = template.as_str();
    while let Some(open) = rest.find('{') {
        host.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            return Err(format!(
                "the token opened at {:?} is not closed",
                &rest[open..]
            ));
        };
        let token = rest[open + 1..open + close].trim();
        host.push_str(&token_value(token, values)?);
        rest = &rest[open + close + 1..];
    }
    host.push_str(rest);
    if host.contains('}') {
        return Err("a `}` closes no token".into());
    }
    if !is_host_name(&host) || !host.contains('.') {
        return Err(format!(
            "it renders {host:?}, which is not a host name such as pr-7.preview.example.com \
             (lowercase letters, digits and dashes; labels of at most {DNS_LABEL_MAX})"
        ));
    }
    Ok(host)
}

fn token_value(token: &str, values: &PreviewDomainValues) -> Result<String, String> {
    match token {
        "pr_number" => Ok(values.pr_number.to_string()),
        "preview_id" => Ok(values.preview_id.to_ascii_lowercase()),
        "slug" => Ok(values.slug.to_ascii_lowercase()),
        other => Err(format!(
            "{{{other}}} is not a token; use {}",
            DOMAIN_TEMPLATE_TOKENS
                .map(|t| format!("{{{t}}}"))
                .join(", ")
        )),
    }
}

/// Whether `template` renders a host name for a typical preview (checked when a policy is
/// configured; the controller renders it again for each preview and reports a failure there).
pub fn check_preview_domain_template(template: &str) -> Result<(), String> {
    let typical = PreviewDomainValues {
        pr_number: 7,
        preview_id: "pr-7",
        slug: "web",
    };
    render_preview_domain(template, &typical).map(drop)
}

/// A lowercase DNS name, optionally a wildcard of one label.
pub fn is_host_name(name: &str) -> bool {
    let name = name.strip_prefix("*.").unwrap_or(name);
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= DNS_LABEL_MAX
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= OBJECT_NAME_MAX && name.split('.').all(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str) -> Result<String, String> {
        let values = PreviewDomainValues {
            pr_number: 42,
            preview_id: "PR-42",
            slug: "shop",
        };
        render_preview_domain(template, &values)
    }

    #[test]
    fn tokens_become_the_pull_requests_values() {
        assert_eq!(
            render("pr-{pr_number}.preview.example.com").unwrap(),
            "pr-42.preview.example.com"
        );
        assert_eq!(
            render("{ preview_id }-{slug}.Apps.Example.com.").unwrap(),
            "pr-42-shop.apps.example.com"
        );
    }

    #[test]
    fn what_renders_no_host_name_is_refused_with_the_reason() {
        assert!(
            render("{branch}.example.com")
                .unwrap_err()
                .contains("{branch}")
        );
        assert!(render("pr-{pr_number.example.com").is_err());
        assert!(render("pr}.example.com").is_err());
        assert!(
            render("pr-{pr_number}")
                .unwrap_err()
                .contains("not a host name")
        );
        assert!(render("pr_{pr_number}.example.com").is_err());
        assert!(render(&format!("{}.example.com", "a".repeat(64))).is_err());
        assert!(check_preview_domain_template("{slug}.previews.test").is_ok());
    }

    #[test]
    fn host_names_are_lowercase_labels() {
        assert!(is_host_name("*.example.com"));
        assert!(is_host_name("a-b.example.com"));
        assert!(!is_host_name("-a.example.com"));
        assert!(!is_host_name("A.example.com"));
        assert!(!is_host_name("a..example.com"));
    }
}
