//! PreviewPolicy and PreviewEnvironment: a review copy of a resource per pull request.
//!
//! A PreviewPolicy says, for a project or one resource, which pull requests get a preview and
//! what they may see. A PreviewEnvironment is one pull request's preview: the webhook of a
//! pull request (or CI, by REST) creates it and moves its head; the controller makes an
//! Environment of kind `preview` and a copy of the resource in it, deploys the head commit at
//! the preview's own host name, and on deletion removes everything it made.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::PolicyChange;
use crate::limits::OBJECT_NAME_MAX;
pub use berth_vocabulary::previews::{
    PreviewDatabase, PreviewDomainValues, PreviewSeed, render_preview_domain,
};

/// Label on everything a preview made (its environment, resource, attempts): the preview's
/// name, so a cleanup check can list what is left of it.
pub const PREVIEW_LABEL: &str = "berth.dev/preview-environment";
/// Label on a PreviewEnvironment naming the resource it previews.
pub const PREVIEW_RESOURCE_LABEL: &str = "berth.dev/preview-of";
/// Finalizer with which the controller removes a preview's environment and resource first.
pub const PREVIEW_FINALIZER: &str = "berth.dev/preview-cleanup";

/// Condition reasons of a PreviewEnvironment.
pub mod reason {
    /// `Ready=False`: more previews of the resource are active than its policy allows.
    pub const QUOTA_REACHED: &str = "PreviewQuotaReached";
    /// `Ready=False`: the resource previewed does not exist.
    pub const RESOURCE_MISSING: &str = "PreviewedResourceMissing";
    /// `Ready=False`: the resource previewed is not built from a git repository, so a pull
    /// request's commit has nothing to deploy; nothing is made.
    pub const SOURCE_NOT_GIT: &str = "PreviewSourceNotGit";
    /// `Ready=False`: the head commit's attempt runs.
    pub const DEPLOYING: &str = "Deploying";
    /// `Ready=False`: the head commit's attempt failed.
    pub const DEPLOY_FAILED: &str = "DeployFailed";
    /// `Ready=False`: the head commit runs; its own host name's binding is not Ready yet.
    pub const WAITING_FOR_DOMAIN: &str = "WaitingForDomain";
    /// `Ready=False`: the policy's domain template gives this preview no host name.
    pub const INVALID_DOMAIN_TEMPLATE: &str = "InvalidDomainTemplate";
    /// `Ready=False`: a database of the preview is being filled from a backup; it deploys
    /// after.
    pub const SEEDING_DATABASES: &str = "SeedingDatabases";
    /// `Ready=False`: filling a database of the preview from a backup failed; it does not
    /// deploy.
    pub const DATABASE_SEED_FAILED: &str = "DatabaseSeedFailed";
    /// `Ready=True`: the head commit serves at the preview's URL.
    pub const SERVING: &str = "Serving";
    /// `Ready=False`: the preview passed its time to live and is being removed.
    pub const EXPIRED: &str = "Expired";
}

/// Whether a fork's pull request gets a preview, and with which variables.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ForkPreviews {
    /// No preview for a fork's pull request (the delivery's answer says why).
    #[default]
    Disabled,
    /// A preview without the resource's secret variables.
    WithoutSecrets,
    /// A preview with them (only for forks you trust).
    WithSecrets,
}

/// Which pull requests of a project (or of one resource) get a preview.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "PreviewPolicy",
    namespaced,
    shortname = "bppol",
    category = "berth",
    doc = "Which pull requests of a project or a resource get a preview environment, with which variables, how many at once and for how long.",
    status = "PreviewPolicyStatus",
    printcolumn = r#"{"name":"Project","type":"string","jsonPath":".spec.projectId"}"#,
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceId"}"#,
    printcolumn = r#"{"name":"Forks","type":"string","jsonPath":".spec.forkPreviews"}"#,
    printcolumn = r#"{"name":"Max","type":"integer","jsonPath":".spec.maxActivePreviews"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPolicySpec {
    /// Id (object name) of the Project the policy applies to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub project_id: String,
    /// Id (object name) of one Resource of the project; without it the policy applies to
    /// every resource of the project that has no policy of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub resource_id: Option<String>,
    /// Whether pull requests from the repository itself get previews (default true).
    #[serde(default = "yes")]
    pub same_repository_previews: bool,
    /// Whether (and how) pull requests from forks get previews (default `disabled`).
    #[serde(default)]
    pub fork_previews: ForkPreviews,
    /// Whether previews get the resource's secret variables (default true); a fork's only
    /// with `forkPreviews: with-secrets`.
    #[serde(default = "yes")]
    pub secret_backed_previews: bool,
    /// How many previews of one resource may run at once; the next waits, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_active_previews: Option<u32>,
    /// Hours a preview lives after its last push; then it is removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 8760))]
    pub preview_ttl_hours: Option<u32>,
    /// Id of the environment whose variables previews start from (default: the resource's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub environment_profile_base_environment_id: Option<String>,
    /// Each preview's host name instead of the generated `pr-<n>-<slug>.<server base domain>`,
    /// e.g. `pr-{pr_number}.preview.example.com` (tokens `{pr_number}`, `{preview_id}`,
    /// `{slug}`). Its DNS must already lead to the server (a wildcard record); the preview is
    /// served there through a DomainBinding the preview owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = OBJECT_NAME_MAX), regex(pattern = r"^[A-Za-z0-9.{}_ -]+$"))]
    pub preview_domain_template: Option<String>,
    /// TLS of the preview's host name: `auto` (a certificate by ACME) or `disabled`. Default:
    /// `auto` with a domain template, `disabled` (the generated route, plain HTTP) without;
    /// `auto` without a template serves the generated host name over TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_tls_mode: Option<PreviewTlsMode>,
    /// What a preview gets for each managed database its resource binds: `empty` (default) a
    /// database of its own, `latest-backup` one filled from the newest ready backup of the
    /// bound one (empty when it has none), `none` no database (the copy binds none).
    #[serde(default)]
    pub preview_databases: PreviewDatabases,
}

/// What a preview gets for the managed databases its resource binds. Never production's: an
/// imported database is not copied, and the preview binds none in its place.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PreviewDatabases {
    /// An empty database of the bound one's kind and image, its own.
    #[default]
    Empty,
    /// The same, filled from the newest ready (test-restored) backup of the bound one before
    /// the preview deploys; empty when it has none.
    LatestBackup,
    /// No database: the preview's copy binds none.
    None,
}

/// TLS of a preview's own host name.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PreviewTlsMode {
    /// A certificate by ACME, as any DomainBinding with `tlsMode: auto` gets.
    Auto,
    /// Plain HTTP.
    Disabled,
}

impl PreviewTlsMode {
    /// The spelling of the mode (`auto` or `disabled`), as a DomainBinding's `tlsMode` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => crate::domain_binding::TLS_MODE_AUTO,
            Self::Disabled => crate::domain_binding::TLS_MODE_DISABLED,
        }
    }
}

/// A host name a preview is served at through a DomainBinding of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviewDomain {
    pub hostname: String,
    pub tls_mode: PreviewTlsMode,
}

/// When and by whom a preview policy last changed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPolicyStatus {
    /// When, by whom, and which generation was last acted on.
    #[serde(flatten)]
    pub change: PolicyChange,
    /// Current conditions; `Ready` once the policy applies to the next pull-request events.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

fn yes() -> bool {
    true
}

impl PreviewPolicySpec {
    /// The policy in force where none is configured (Appaloft's defaults).
    pub fn default_for(project_id: &str, resource_id: Option<&str>) -> Self {
        Self {
            project_id: project_id.to_string(),
            resource_id: resource_id.map(str::to_string),
            same_repository_previews: true,
            fork_previews: ForkPreviews::Disabled,
            secret_backed_previews: true,
            max_active_previews: None,
            preview_ttl_hours: None,
            environment_profile_base_environment_id: None,
            preview_domain_template: None,
            preview_tls_mode: None,
            preview_databases: PreviewDatabases::Empty,
        }
    }

    /// The TLS mode in force: as set, else `auto` with a domain template and `disabled`
    /// without.
    pub fn tls_mode_in_force(&self) -> PreviewTlsMode {
        self.preview_tls_mode
            .unwrap_or(match self.preview_domain_template {
                Some(_) => PreviewTlsMode::Auto,
                None => PreviewTlsMode::Disabled,
            })
    }

    /// The host name of its own a preview gets (`None`: only its generated route, plain
    /// HTTP): the template rendered for it, else — with TLS asked for — its generated host
    /// name `generated`; `Err` says why the template renders no host name.
    pub fn preview_domain(
        &self,
        values: &PreviewDomainValues,
        generated: &str,
    ) -> Result<Option<PreviewDomain>, String> {
        let tls_mode = self.tls_mode_in_force();
        let hostname = match &self.preview_domain_template {
            Some(template) => render_preview_domain(template, values)?,
            None if tls_mode == PreviewTlsMode::Auto => generated.to_string(),
            None => return Ok(None),
        };
        Ok(Some(PreviewDomain { hostname, tls_mode }))
    }

    /// Whether a preview of a pull request (from a fork or not) gets secret variables.
    pub fn gives_secrets(&self, fork: bool) -> bool {
        self.secret_backed_previews && (!fork || self.fork_previews == ForkPreviews::WithSecrets)
    }
}

/// The git host a pull request lives on.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PreviewProvider {
    Github,
    Gitlab,
    Gitea,
    /// Started from CI by REST (`POST /deployments` with `preview`), no forge webhook.
    Api,
}

/// The pull request a preview shows.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestSource {
    pub provider: PreviewProvider,
    /// `owner/name` of the repository the pull request is opened against.
    #[schemars(length(min = 1, max = 255))]
    pub repository_full_name: String,
    /// `owner/name` of the repository its head lives in (another one for a fork).
    #[schemars(length(min = 1, max = 255))]
    pub head_repository_full_name: String,
    /// Clone URL of the head's repository.
    #[schemars(length(min = 1, max = 2048))]
    pub head_repository_url: String,
    /// Number of the pull request (GitLab: the merge request's iid).
    #[schemars(range(min = 1))]
    pub pull_request_number: u64,
    /// Branch the pull request merges into.
    #[schemars(length(max = 255))]
    pub base_ref: String,
    /// Branch of the head.
    #[schemars(length(max = 255))]
    pub head_ref: String,
    /// Commit the preview deploys.
    #[schemars(length(min = 7, max = 64))]
    pub head_sha: String,
}

impl PullRequestSource {
    /// Whether the head lives in another repository than the base.
    pub fn is_fork(&self) -> bool {
        !self
            .head_repository_full_name
            .eq_ignore_ascii_case(&self.repository_full_name)
    }
}

/// One pull request's preview of a resource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "PreviewEnvironment",
    namespaced,
    shortname = "bprev",
    category = "berth",
    doc = "A pull request's preview of a resource: its head commit deployed in an environment of its own at its own URL, removed with everything it made when the pull request closes.",
    status = "PreviewEnvironmentStatus",
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceId"}"#,
    printcolumn = r#"{"name":"PR","type":"integer","jsonPath":".spec.source.pullRequestNumber"}"#,
    printcolumn = r#"{"name":"Head","type":"string","jsonPath":".spec.source.headSha"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".status.url"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PreviewEnvironmentSpec {
    /// Id (object name) of the Project.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub project_id: String,
    /// Id (object name) of the Resource previewed.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub resource_id: String,
    /// The pull request and the head commit to deploy.
    pub source: PullRequestSource,
    /// Whether the preview gets the resource's secret variables (decided by the policy when
    /// the pull request's event arrived).
    #[serde(default)]
    pub with_secrets: bool,
    /// When the head last moved; the time to live counts from here.
    pub pushed_at: Time,
}

/// What the controller made for a preview and how it serves.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewEnvironmentStatus {
    /// Id of the preview's own Environment (kind `preview`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    /// Id of the Resource copied into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_resource_id: Option<String>,
    /// Id of the Server it runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// Where the preview answers, once it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The attempt of the current head commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// The commit that serves at the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_sha: Option<String>,
    /// When the preview is removed unless its head moves again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// The databases of its own, one per managed database the resource binds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub databases: Vec<PreviewDatabase>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: the head commit serves at `url`; otherwise why not.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The name of the preview `preview`'s own database in place of `dependency`: both names, or
/// — when that is longer than a DNS label (its container and network are named after it) — a
/// shortened preview name and a digest of both.
pub fn preview_dependency_name(preview: &str, dependency: &str) -> String {
    let joined = format!("{preview}-{dependency}");
    if joined.len() <= crate::limits::DNS_LABEL_MAX {
        return joined;
    }
    use sha2::{Digest, Sha256};
    let digest = hex::encode(&Sha256::digest(joined.as_bytes())[..6]);
    let stem: String = preview.chars().take(40).collect();
    format!("{}-{digest}", stem.trim_end_matches('-'))
}

/// The object name of the preview of pull request `number` of `resource`.
pub fn preview_name(resource: &str, number: u64) -> String {
    let suffix = format!("-pr-{number}");
    let keep = OBJECT_NAME_MAX.saturating_sub(suffix.len());
    let stem: String = resource.chars().take(keep).collect();
    format!("{}{suffix}", stem.trim_end_matches('-'))
}

/// The name of the attempt that deploys `sha` in the preview `preview`: the preview's name
/// (which its resource copy and attempts share) and the commit's first 12 characters. The
/// controller creates it; `POST /deployments` with `preview` answers with it beforehand.
pub fn preview_attempt_name(preview: &str, sha: &str) -> String {
    let short: String = sha.chars().take(12).collect();
    format!("{preview}-{short}")
}

/// Prefix of every preview's Docker network on a server (the edge proxy joins them all).
pub const PREVIEW_NETWORK_PREFIX: &str = "berth-preview-";

/// The Docker network a preview's serving container joins instead of the shared edge
/// network: its own, which the edge proxy joins too, so the preview is reached through the
/// proxy but reaches neither production's containers nor another preview's.
pub fn preview_network(namespace: &str, preview: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{namespace}/{preview}").as_bytes());
    format!("{PREVIEW_NETWORK_PREFIX}{}", hex::encode(&digest[..8]))
}

/// The host-name label of a preview: `pr-<n>-<slug>`, one DNS label.
pub fn preview_host_slug(number: u64, resource_slug: &str) -> String {
    let full = format!("pr-{number}-{resource_slug}");
    let label: String = full.chars().take(63).collect();
    label.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> PreviewPolicySpec {
        PreviewPolicySpec::default_for("shop", None)
    }

    #[test]
    fn secrets_follow_the_policy_and_forks_need_with_secrets() {
        let mut p = policy();
        assert!(p.gives_secrets(false));
        assert!(!p.gives_secrets(true));
        p.fork_previews = ForkPreviews::WithoutSecrets;
        assert!(!p.gives_secrets(true));
        p.fork_previews = ForkPreviews::WithSecrets;
        assert!(p.gives_secrets(true));
        p.secret_backed_previews = false;
        assert!(!p.gives_secrets(false) && !p.gives_secrets(true));
    }

    #[test]
    fn names_stay_within_kubernetes_limits() {
        assert_eq!(preview_name("web", 7), "web-pr-7");
        let long = "a".repeat(80);
        assert!(preview_name(&long, 123456).len() <= OBJECT_NAME_MAX);
        assert_eq!(preview_host_slug(7, "web"), "pr-7-web");
        assert!(preview_host_slug(7, &"b".repeat(80)).len() <= 63);
        assert_eq!(
            preview_attempt_name("web-pr-7", &"0123456789abcdef".repeat(3)),
            "web-pr-7-0123456789ab"
        );
    }

    #[test]
    fn a_preview_gets_a_host_name_of_its_own_from_the_template_or_when_tls_is_asked_for() {
        let values = PreviewDomainValues {
            pr_number: 7,
            preview_id: "pr-7",
            slug: "web",
        };
        let generated = "pr-7-web.apps.test";
        let mut p = policy();
        assert_eq!(p.preview_domain(&values, generated), Ok(None));
        p.preview_tls_mode = Some(PreviewTlsMode::Auto);
        let domain = p.preview_domain(&values, generated).unwrap().unwrap();
        assert_eq!(domain.hostname, generated);
        p.preview_domain_template = Some("{preview_id}.previews.test".into());
        p.preview_tls_mode = None;
        let domain = p.preview_domain(&values, generated).unwrap().unwrap();
        assert_eq!(
            (domain.hostname.as_str(), domain.tls_mode),
            ("pr-7.previews.test", PreviewTlsMode::Auto)
        );
        p.preview_tls_mode = Some(PreviewTlsMode::Disabled);
        let domain = p.preview_domain(&values, generated).unwrap().unwrap();
        assert_eq!(domain.tls_mode.as_str(), "disabled");
        p.preview_domain_template = Some("{branch}.previews.test".into());
        assert!(p.preview_domain(&values, generated).is_err());
    }

    #[test]
    fn a_preview_database_name_is_a_dns_label() {
        assert_eq!(preview_dependency_name("web-pr-7", "db"), "web-pr-7-db");
        let long = preview_dependency_name(&"w".repeat(60), "db");
        assert!(long.len() <= 63, "{long}");
        assert_ne!(long, preview_dependency_name(&"w".repeat(60), "cache"));
        assert!(PreviewSeed::Restored.settled() && !PreviewSeed::Waiting.settled());
    }

    #[test]
    fn a_fork_is_another_repository() {
        let mut source = PullRequestSource {
            provider: PreviewProvider::Github,
            repository_full_name: "acme/shop".into(),
            head_repository_full_name: "ACME/shop".into(),
            head_repository_url: "https://example.test/acme/shop.git".into(),
            pull_request_number: 1,
            base_ref: "main".into(),
            head_ref: "feature".into(),
            head_sha: "0123456789abcdef".into(),
        };
        assert!(!source.is_fork());
        source.head_repository_full_name = "mallory/shop".into();
        assert!(source.is_fork());
    }
}
