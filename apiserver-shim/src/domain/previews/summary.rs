//! A PreviewEnvironment as Appaloft's `previewEnvironmentSummarySchema` shows it, with what
//! Berth adds from the controller's status.

use berth_api::previews::{PreviewEnvironmentSummary, PreviewReadiness, PreviewSourceSummary};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::preview::{PreviewEnvironment, PreviewProvider, PullRequestSource};
use kube::ResourceExt;
use sha2::{Digest, Sha256};

use crate::domain::time::{created_at, timestamp};

/// A preview's status as Appaloft spells it.
pub fn status_name(preview: &PreviewEnvironment) -> &'static str {
    match preview.metadata.deletion_timestamp {
        Some(_) => "cleanup-requested",
        None => "active",
    }
}

pub fn provider_name(provider: PreviewProvider) -> &'static str {
    match provider {
        PreviewProvider::Github => "github",
        PreviewProvider::Gitlab => "gitlab",
        PreviewProvider::Gitea => "gitea",
        PreviewProvider::Api => "api",
    }
}

/// Which resource previews which repository: SHA-256 of the resource id, the git host and
/// the repository's name, so it stays the same across pull requests and carries no secret.
pub fn source_binding_fingerprint(resource_id: &str, source: &PullRequestSource) -> String {
    let seed = format!(
        "{resource_id}\n{}\n{}",
        provider_name(source.provider),
        source.repository_full_name.to_ascii_lowercase()
    );
    format!("sha256:{}", hex::encode(Sha256::digest(seed.as_bytes())))
}

/// The `Ready` condition, `Unknown` until the controller reports one.
pub fn readiness(preview: &PreviewEnvironment) -> PreviewReadiness {
    let status = preview.status.clone().unwrap_or_default();
    match condition::find(&status.conditions, READY) {
        Some(ready) => PreviewReadiness {
            status: match ready.status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            }
            .into(),
            reason: ready.reason.clone(),
            message: ready.message.clone(),
        },
        None => PreviewReadiness {
            status: "Unknown".into(),
            reason: "Pending".into(),
            message: "the controller has not reported on this preview yet".into(),
        },
    }
}

/// The summary of `preview`.
pub fn summary(preview: &PreviewEnvironment) -> PreviewEnvironmentSummary {
    let spec = &preview.spec;
    let source = &spec.source;
    let status = preview.status.clone().unwrap_or_default();
    PreviewEnvironmentSummary {
        preview_environment_id: preview.name_any(),
        project_id: spec.project_id.clone(),
        environment_id: status.environment_id.unwrap_or_default(),
        resource_id: spec.resource_id.clone(),
        server_id: status.server_id,
        source: PreviewSourceSummary {
            provider: provider_name(source.provider).into(),
            repository_full_name: source.repository_full_name.clone(),
            head_repository_full_name: source.head_repository_full_name.clone(),
            pull_request_number: source.pull_request_number,
            base_ref: source.base_ref.clone(),
            head_sha: source.head_sha.clone(),
            source_binding_fingerprint: source_binding_fingerprint(&spec.resource_id, source),
        },
        status: status_name(preview).into(),
        created_at: created_at(&preview.metadata),
        updated_at: timestamp(&spec.pushed_at),
        expires_at: status.expires_at.as_ref().map(timestamp),
        url: status.url,
        deployment_id: status.deployment_id,
        serving_sha: status.serving_sha,
        head_ref: source.head_ref.clone(),
        fork: source.is_fork(),
        with_secrets: spec.with_secrets,
        ready: readiness(preview),
        databases: status.databases,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use berth_crds::Condition;
    use berth_crds::preview::{PreviewEnvironmentSpec, PreviewEnvironmentStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// A preview of pull request 7 of `web`, from `head_repository`.
    pub(crate) fn preview(head_repository: &str) -> PreviewEnvironment {
        let at = Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap());
        let spec = PreviewEnvironmentSpec {
            project_id: "shop".into(),
            resource_id: "web".into(),
            source: PullRequestSource {
                provider: PreviewProvider::Github,
                repository_full_name: "acme/shop".into(),
                head_repository_full_name: head_repository.into(),
                head_repository_url: format!("https://github.com/{head_repository}.git"),
                pull_request_number: 7,
                base_ref: "main".into(),
                head_ref: "feature".into(),
                head_sha: "a".repeat(40),
            },
            with_secrets: true,
            pushed_at: at.clone(),
        };
        let mut preview = PreviewEnvironment::new("web-pr-7", spec);
        preview.metadata.creation_timestamp = Some(at);
        preview
    }

    #[test]
    fn a_new_preview_is_active_and_not_yet_reported() {
        let shown = summary(&preview("acme/shop"));
        assert_eq!(shown.preview_environment_id, "web-pr-7");
        assert_eq!(shown.environment_id, "");
        assert_eq!(shown.status, "active");
        assert_eq!(shown.ready.status, "Unknown");
        assert!(!shown.fork && shown.with_secrets);
        assert_eq!(shown.created_at, "2027-01-15T08:00:00Z");
        assert!(
            shown
                .source
                .source_binding_fingerprint
                .starts_with("sha256:")
        );
    }

    #[test]
    fn the_controllers_report_and_a_deletion_show() {
        let mut fork = preview("mallory/shop");
        fork.status = Some(PreviewEnvironmentStatus {
            environment_id: Some("web-pr-7-env".into()),
            url: Some("https://pr-7-web.example.test".into()),
            conditions: vec![Condition {
                type_: READY.into(),
                status: ConditionStatus::False,
                reason: "PreviewQuotaReached".into(),
                message: "3 previews are active".into(),
                last_transition_time: fork.spec.pushed_at.clone(),
                observed_generation: None,
            }],
            ..Default::default()
        });
        fork.metadata.deletion_timestamp = fork.metadata.creation_timestamp.clone();
        let shown = summary(&fork);
        assert!(shown.fork);
        assert_eq!(shown.status, "cleanup-requested");
        assert_eq!(shown.environment_id, "web-pr-7-env");
        assert_eq!(shown.ready.reason, "PreviewQuotaReached");
        // The same binding, whichever pull request.
        let other = preview("acme/shop");
        assert_eq!(
            shown.source.source_binding_fingerprint,
            summary(&other).source.source_binding_fingerprint
        );
    }
}
