//! Preview environments over REST (Appaloft 1.10.5's `preview-policies.*` and
//! `preview-environments.*`, without the `/api` prefix): the policy of a project or resource
//! (which pull requests get a preview), the previews themselves, and the answers of removing
//! one. Berth adds to Appaloft's preview summary what the controller reports: the URL, the
//! attempt, the commit serving, the head branch, whether it is a fork's and gets secrets, and
//! the `Ready` condition.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::OBJECT_NAME_MAX;
use crate::validate::{Checked, FieldError, bounded, in_range, optional_text};
pub use berth_vocabulary::previews::{
    PREVIEW_DATABASES, PREVIEW_TLS_MODES, PreviewDatabase, PreviewSeed,
    check_preview_domain_template, is_host_name,
};

/// `POST /preview-policies/show` answer's `schemaVersion`.
pub const POLICY_SHOW_SCHEMA: &str = "preview-policies.show/v1";
/// `GET /preview-environments` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "preview-environments.list/v1";
/// `GET /preview-environments/{id}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "preview-environments.show/v1";

/// `GET /preview-environments/leftovers` answer's `schemaVersion`.
pub const LEFTOVERS_SCHEMA: &str = "preview-environments.leftovers/v1";

/// The spellings of `forkPreviews`.
pub const FORK_PREVIEWS: [&str; 3] = ["disabled", "without-secrets", "with-secrets"];
/// `maxActivePreviews` bounds.
pub const MAX_ACTIVE_PREVIEWS: (i64, i64) = (1, 100);
/// `previewTtlHours` bounds (a year at most).
pub const PREVIEW_TTL_HOURS: (i64, i64) = (1, 8760);
/// The values of a preview's `status`.
pub const PREVIEW_STATUSES: [&str; 2] = ["active", "cleanup-requested"];

/// What a policy applies to: every resource of a project, or one resource.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PreviewScopeKind {
    Project,
    Resource,
}

/// Appaloft's `previewPolicyScopeSchema`: `{kind: "project", projectId}` or
/// `{kind: "resource", projectId, resourceId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreviewPolicyScope {
    pub kind: PreviewScopeKind,
    pub project_id: String,
    /// Only with `kind: resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

impl PreviewPolicyScope {
    /// The ids, and `resourceId` exactly when the kind is `resource`.
    pub fn validate(&self) -> Checked {
        bounded("scope.projectId", &self.project_id, OBJECT_NAME_MAX)?;
        match (self.kind, &self.resource_id) {
            (PreviewScopeKind::Resource, Some(id)) => {
                bounded("scope.resourceId", id, OBJECT_NAME_MAX)
            }
            (PreviewScopeKind::Resource, None) => Err(FieldError::new(
                "scope.resourceId",
                "scope.resourceId is required when scope.kind is resource",
            )),
            (PreviewScopeKind::Project, Some(_)) => Err(FieldError::new(
                "scope.resourceId",
                "scope.resourceId goes only with scope.kind resource",
            )),
            (PreviewScopeKind::Project, None) => Ok(()),
        }
    }
}

/// The settings a configure request changes; fields left out take their defaults.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreviewPolicyInput {
    /// Whether pull requests from the repository itself get previews (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_repository_previews: Option<bool>,
    /// `disabled` (default), `without-secrets` or `with-secrets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_previews: Option<String>,
    /// Whether previews get the resource's secret variables (default true; a fork's only with
    /// `forkPreviews: with-secrets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_backed_previews: Option<bool>,
    /// How many previews of one resource run at once (1 to 100; default no limit); the next
    /// waits, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_previews: Option<i64>,
    /// Hours a preview lives after its last push (1 to 8760; default until its pull request
    /// closes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_ttl_hours: Option<i64>,
    /// An environment of the project whose variables previews start from (default the
    /// resource's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_profile_base_environment_id: Option<String>,
    /// Each preview's host name instead of the generated `pr-<n>-<slug>.<server base domain>`,
    /// e.g. `pr-{pr_number}.preview.example.com` (tokens `{pr_number}`, `{preview_id}`,
    /// `{slug}`); its DNS must already lead to the server (a wildcard record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_domain_template: Option<String>,
    /// TLS of the preview's host name: `auto` (a certificate by ACME; the default with a
    /// domain template) or `disabled` (plain HTTP; the default without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_tls_mode: Option<String>,
    /// What a preview gets for each managed database its resource binds: `empty` (default, a
    /// database of its own), `latest-backup` (its own, filled from the newest ready backup of
    /// the bound one) or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_databases: Option<String>,
}

impl PreviewPolicyInput {
    pub fn validate(&self) -> Checked {
        if let Some(fork) = &self.fork_previews
            && !FORK_PREVIEWS.contains(&fork.as_str())
        {
            return Err(FieldError::not_one_of(
                "policy.forkPreviews",
                &FORK_PREVIEWS,
            ));
        }
        let (min, max) = MAX_ACTIVE_PREVIEWS;
        in_range(
            "policy.maxActivePreviews",
            self.max_active_previews,
            min,
            max,
        )?;
        let (min, max) = PREVIEW_TTL_HOURS;
        in_range("policy.previewTtlHours", self.preview_ttl_hours, min, max)?;
        optional_text(
            "policy.environmentProfileBaseEnvironmentId",
            self.environment_profile_base_environment_id.as_ref(),
            OBJECT_NAME_MAX,
        )?;
        if let Some(mode) = &self.preview_tls_mode
            && !PREVIEW_TLS_MODES.contains(&mode.as_str())
        {
            return Err(FieldError::not_one_of(
                "policy.previewTlsMode",
                &PREVIEW_TLS_MODES,
            ));
        }
        if let Some(databases) = &self.preview_databases
            && !PREVIEW_DATABASES.contains(&databases.as_str())
        {
            return Err(FieldError::not_one_of(
                "policy.previewDatabases",
                &PREVIEW_DATABASES,
            ));
        }
        let Some(template) = &self.preview_domain_template else {
            return Ok(());
        };
        bounded("policy.previewDomainTemplate", template, OBJECT_NAME_MAX)?;
        check_preview_domain_template(template).map_err(|why| {
            FieldError::new(
                "policy.previewDomainTemplate",
                format!("policy.previewDomainTemplate gives no host name: {why}"),
            )
        })
    }
}

/// `POST /preview-policies`: creates or replaces the one policy of a scope.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigurePreviewPolicy {
    pub scope: PreviewPolicyScope,
    #[serde(default)]
    pub policy: PreviewPolicyInput,
    /// Accepted for Appaloft's clients; the write is idempotent anyway (same scope, same
    /// object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl ConfigurePreviewPolicy {
    pub fn validate(&self) -> Checked {
        self.scope.validate()?;
        self.policy.validate()?;
        optional_text("idempotencyKey", self.idempotency_key.as_ref(), 255)
    }
}

/// `POST /preview-policies/show`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShowPreviewPolicy {
    pub scope: PreviewPolicyScope,
}

/// Appaloft's `previewPolicySettingsSchema`: every setting, defaults filled in.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPolicySettings {
    pub same_repository_previews: bool,
    /// `disabled`, `without-secrets` or `with-secrets`.
    pub fork_previews: String,
    pub secret_backed_previews: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_previews: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_ttl_hours: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_profile_base_environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_domain_template: Option<String>,
    /// `auto` or `disabled`, as in force (with a template `auto` unless set).
    pub preview_tls_mode: String,
    /// `empty`, `latest-backup` or `none`.
    pub preview_databases: String,
}

/// Appaloft's `previewPolicySummarySchema`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPolicySummary {
    /// The PreviewPolicy in force; absent when the defaults are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The scope asked about (the policy in force may be its project's).
    pub scope: PreviewPolicyScope,
    pub settings: PreviewPolicySettings,
    /// `configured` (a PreviewPolicy of the scope or, for a resource, of its project) or
    /// `default`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// `POST /preview-policies/show` answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPolicyShow {
    pub schema_version: String,
    pub policy: PreviewPolicySummary,
    pub generated_at: String,
}

/// The pull request a preview shows (Appaloft's `previewEnvironmentSourceSummarySchema`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreviewSourceSummary {
    /// `github`, `gitlab`, `gitea` or `api`.
    pub provider: String,
    pub repository_full_name: String,
    pub head_repository_full_name: String,
    pub pull_request_number: u64,
    pub base_ref: String,
    pub head_sha: String,
    /// SHA-256 of the resource id and the repository's identity (no secret in it).
    pub source_binding_fingerprint: String,
}

/// The preview's `Ready` condition.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreviewReadiness {
    /// `True`, `False` or `Unknown` (not reported yet).
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// Appaloft's `previewEnvironmentSummarySchema`, with Berth's additions.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreviewEnvironmentSummary {
    /// The PreviewEnvironment's name (`<resource>-pr-<number>`).
    pub preview_environment_id: String,
    pub project_id: String,
    /// The preview's own environment (kind `preview`); empty until the controller made it.
    pub environment_id: String,
    /// The resource previewed.
    pub resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    pub source: PreviewSourceSummary,
    /// `active`, or `cleanup-requested` once it is being removed.
    pub status: String,
    pub created_at: String,
    /// When its head last moved.
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Berth: where the preview answers, once it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Berth: the attempt of the current head commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// Berth: the commit serving at `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_sha: Option<String>,
    /// Berth: the head branch.
    pub head_ref: String,
    /// Berth: whether the head lives in a fork.
    pub fork: bool,
    /// Berth: whether the preview gets the resource's secret variables.
    pub with_secrets: bool,
    /// Berth: the `Ready` condition.
    pub ready: PreviewReadiness,
    /// Berth: the databases of its own, in place of those the resource binds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub databases: Vec<PreviewDatabase>,
}

/// `GET /preview-environments` answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewEnvironmentList {
    pub schema_version: String,
    pub items: Vec<PreviewEnvironmentSummary>,
    pub generated_at: String,
}

/// `GET /preview-environments/{previewEnvironmentId}` answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewEnvironmentShow {
    pub schema_version: String,
    pub preview_environment: PreviewEnvironmentSummary,
    pub generated_at: String,
}

/// One thing left of a preview that is gone: a Kubernetes object or a container, network or
/// volume on a server still carrying the preview's label.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct PreviewLeftover {
    pub preview_environment_id: String,
    /// `container`, `network` or `volume` on a server, else the Kubernetes kind (`Resource`,
    /// `Environment`, `Deployment`, `DomainBinding`, `DependencyResource`,
    /// `DependencyResourceRestore`).
    pub kind: String,
    pub name: String,
    /// The server holding it; absent for a Kubernetes object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
}

/// A server the leftovers check could not read, and why.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UncheckedServer {
    pub server_id: String,
    pub reason: String,
}

/// `GET /preview-environments/leftovers` answer: what is left of previews that are gone, from
/// the cluster and every server of the organization that answered. Empty `items` with no
/// `uncheckedServers` means nothing is left.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewLeftovers {
    pub schema_version: String,
    pub items: Vec<PreviewLeftover>,
    pub checked_servers: Vec<String>,
    pub unchecked_servers: Vec<UncheckedServer>,
    pub generated_at: String,
}

/// `DELETE /preview-environments/{previewEnvironmentId}` body (optional): Appaloft sends the
/// resource; when given it must be the preview's.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeletePreviewEnvironment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

impl DeletePreviewEnvironment {
    pub fn validate(&self) -> Checked {
        optional_text("resourceId", self.resource_id.as_ref(), OBJECT_NAME_MAX)
    }
}

/// How a removal went.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CleanupStatus {
    /// Removed, with everything it made.
    Cleaned,
    /// There was nothing to remove.
    AlreadyClean,
    /// Removal goes on in the controller (its finalizer holds the object until done).
    RetryScheduled,
}

/// Appaloft's `deletePreviewEnvironmentResponseSchema`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PreviewCleanupAnswer {
    pub status: CleanupStatus,
    /// Names this removal (the preview's uid, or its name when there was none).
    pub attempt_id: String,
    pub preview_environment_id: String,
    pub resource_id: String,
    pub source_binding_fingerprint: String,
    /// Always `cleanup-requested`.
    pub preview_environment_status: String,
    pub cleaned_runtime: bool,
    pub removed_route: bool,
    pub removed_source_link: bool,
    /// Berth leaves nothing at the git host: always false.
    pub removed_provider_metadata: bool,
    /// Berth writes no feedback to the pull request: always false.
    pub updated_feedback: bool,
    /// With `retry-scheduled`: true (ask again later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// With `retry-scheduled`: when asking again makes sense.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<String>,
}

/// `POST /deployments/cleanup-preview`: CI removing the preview of a pull request. Give
/// `pullRequestNumber` or `previewId` (`pr-7`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CleanupPreview {
    pub resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_id: Option<String>,
}

impl CleanupPreview {
    /// The pull request's number, from either field (they must agree when both are given).
    pub fn number(&self) -> Result<u64, FieldError> {
        bounded("resourceId", &self.resource_id, OBJECT_NAME_MAX)?;
        let from_id = match &self.preview_id {
            None => None,
            Some(id) => Some(
                id.strip_prefix("pr-")
                    .and_then(|n| n.parse::<u64>().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        FieldError::new("previewId", "previewId must read pr-<number>, e.g. pr-7")
                    })?,
            ),
        };
        match (self.pull_request_number, from_id) {
            (Some(0), _) => Err(FieldError::new(
                "pullRequestNumber",
                "pullRequestNumber must be at least 1",
            )),
            (Some(a), Some(b)) if a != b => Err(FieldError::new(
                "previewId",
                "previewId and pullRequestNumber name different pull requests",
            )),
            (Some(n), _) | (None, Some(n)) => Ok(n),
            (None, None) => Err(FieldError::new(
                "pullRequestNumber",
                "give pullRequestNumber or previewId",
            )),
        }
    }
}

/// Appaloft's `cleanupPreviewResponseSchema`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CleanupPreviewAnswer {
    /// The preview's source binding fingerprint.
    pub source_fingerprint: String,
    /// `cleaned`, `already-clean`, or Berth's `retry-scheduled` (removal goes on).
    pub status: CleanupStatus,
    pub cleaned_runtime: bool,
    pub removed_server_applied_route: bool,
    pub removed_source_link: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    pub resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope(value: serde_json::Value) -> PreviewPolicyScope {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_scope_names_a_resource_exactly_when_its_kind_is_resource() {
        assert!(
            scope(json!({"kind": "project", "projectId": "shop"}))
                .validate()
                .is_ok()
        );
        let both = json!({"kind": "resource", "projectId": "shop", "resourceId": "web"});
        assert!(scope(both).validate().is_ok());
        let missing = scope(json!({"kind": "resource", "projectId": "shop"}));
        assert_eq!(missing.validate().unwrap_err().field, "scope.resourceId");
        let extra = scope(json!({"kind": "project", "projectId": "shop", "resourceId": "web"}));
        assert_eq!(extra.validate().unwrap_err().field, "scope.resourceId");
        let empty = scope(json!({"kind": "project", "projectId": ""}));
        assert_eq!(empty.validate().unwrap_err().field, "scope.projectId");
    }

    #[test]
    fn settings_are_checked_field_by_field() {
        let input = |value| serde_json::from_value::<PreviewPolicyInput>(value).unwrap();
        assert!(
            input(json!({"forkPreviews": "with-secrets"}))
                .validate()
                .is_ok()
        );
        let fork = input(json!({"forkPreviews": "always"}))
            .validate()
            .unwrap_err();
        assert_eq!(fork.field, "policy.forkPreviews");
        assert_eq!(fork.allowed.len(), 3);
        let max = input(json!({"maxActivePreviews": 101}))
            .validate()
            .unwrap_err();
        assert_eq!(
            (max.field.as_str(), max.max),
            ("policy.maxActivePreviews", Some(100))
        );
        let ttl = input(json!({"previewTtlHours": 0})).validate().unwrap_err();
        assert_eq!(ttl.field, "policy.previewTtlHours");
        assert!(serde_json::from_value::<PreviewPolicyInput>(json!({"other": 1})).is_err());
    }

    #[test]
    fn a_cleanup_names_its_pull_request_one_way_or_the_other() {
        let body = |number, id: Option<&str>| CleanupPreview {
            resource_id: "web".into(),
            pull_request_number: number,
            preview_id: id.map(str::to_string),
        };
        assert_eq!(body(Some(7), None).number(), Ok(7));
        assert_eq!(body(None, Some("pr-7")).number(), Ok(7));
        assert_eq!(body(Some(7), Some("pr-7")).number(), Ok(7));
        assert_eq!(
            body(Some(7), Some("pr-8")).number().unwrap_err().field,
            "previewId"
        );
        assert_eq!(
            body(None, Some("7")).number().unwrap_err().field,
            "previewId"
        );
        assert_eq!(
            body(None, None).number().unwrap_err().field,
            "pullRequestNumber"
        );
    }

    #[test]
    fn cleanup_statuses_are_spelled_as_appaloft_does() {
        let spelled = serde_json::to_value([
            CleanupStatus::Cleaned,
            CleanupStatus::AlreadyClean,
            CleanupStatus::RetryScheduled,
        ])
        .unwrap();
        assert_eq!(
            spelled,
            json!(["cleaned", "already-clean", "retry-scheduled"])
        );
    }
}
