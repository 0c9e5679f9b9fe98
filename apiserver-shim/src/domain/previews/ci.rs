//! A preview started from CI by REST (`POST /deployments` with `preview`), without a forge
//! webhook: the PreviewEnvironment of the pull request moved to the commit CI built, under
//! the policy in force for the resource. Pure: the route reads the policy and the existing
//! preview, and writes.

use berth_api::build::SourceKind;
use berth_api::repository::RepoLocator;
use berth_crds::preview::{
    PreviewEnvironment, PreviewEnvironmentSpec, PreviewPolicySpec, PreviewProvider,
    PullRequestSource, preview_attempt_name, preview_name,
};
use berth_crds::resource::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::error::{ApiError, ApiResult};

/// What CI asked for: the pull request, its head commit and (if CI names it) its branch.
#[derive(Clone, Copy, Debug)]
pub struct CiHead<'a> {
    pub number: u64,
    pub sha: &'a str,
    pub head_ref: Option<&'a str>,
}

/// The preview to write and the attempt the controller will make of its head.
#[derive(Clone, Debug, PartialEq)]
pub struct CiPreview {
    pub name: String,
    pub spec: PreviewEnvironmentSpec,
    /// The attempt's id (`<preview>-<first 12 of the commit>`).
    pub attempt_id: String,
}

/// The preview of `head` for `resource` under `policy`, given the preview that exists. The
/// repository is the resource's own (never a fork's); the time to live counts from `now`
/// unless the preview already has this commit.
pub fn plan(
    resource: &Resource,
    policy: &PreviewPolicySpec,
    head: CiHead<'_>,
    existing: Option<&PreviewEnvironment>,
    now: Time,
) -> ApiResult<CiPreview> {
    let source = resource
        .spec
        .source
        .as_ref()
        .filter(|s| SourceKind::parse("source.kind", &s.kind).is_ok_and(SourceKind::is_git));
    let (source, repository) = source
        .and_then(|s| Some((s, RepoLocator::parse(&s.locator).ok()?)))
        .ok_or_else(|| {
            ApiError::validation(
                "preview",
                "preview: the resource's source is not a git repository",
            )
        })?;
    if !policy.same_repository_previews {
        return Err(ApiError::conflict(
            "the preview policy gives pull requests from the repository itself no preview \
             (sameRepositoryPreviews: false)",
        )
        .with_detail("reason", "preview-same-repository-disabled"));
    }
    let name = preview_name(&resource.name_any(), head.number);
    let pushed_at = match existing {
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
            return Err(ApiError::conflict(format!(
                "preview {name} is still being removed; deploy again once it is gone"
            ))
            .with_detail("reason", "preview-being-removed"));
        }
        Some(existing) if existing.spec.source.head_sha == head.sha => {
            existing.spec.pushed_at.clone()
        }
        _ => now,
    };
    let full_name = repository.full_name();
    let followed = source.git_ref.clone().unwrap_or_default();
    let spec = PreviewEnvironmentSpec {
        project_id: resource.spec.project_id.clone(),
        resource_id: resource.name_any(),
        source: PullRequestSource {
            provider: PreviewProvider::Api,
            repository_full_name: full_name.clone(),
            head_repository_full_name: full_name,
            head_repository_url: source.locator.clone(),
            pull_request_number: head.number,
            base_ref: followed.clone(),
            head_ref: head.head_ref.map_or(followed, str::to_string),
            head_sha: head.sha.to_string(),
        },
        with_secrets: policy.gives_secrets(false),
        pushed_at,
    };
    Ok(CiPreview {
        attempt_id: preview_attempt_name(&name, head.sha),
        name,
        spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(kind: &str) -> Resource {
        let spec = json!({
            "projectId": "shop", "environmentId": "production", "serverId": "local",
            "name": "web", "kind": "application",
            "source": {
                "kind": kind, "locator": "https://github.com/acme/shop.git", "gitRef": "main",
            },
        });
        Resource::new("web", serde_json::from_value(spec).unwrap())
    }

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    fn head(sha: char, head_ref: Option<&str>) -> (String, Option<&str>) {
        (sha.to_string().repeat(40), head_ref)
    }

    fn run(
        policy: &PreviewPolicySpec,
        (sha, head_ref): &(String, Option<&str>),
        existing: Option<&PreviewEnvironment>,
        now: Time,
    ) -> ApiResult<CiPreview> {
        let head = CiHead {
            number: 7,
            sha,
            head_ref: *head_ref,
        };
        plan(&resource("git-public"), policy, head, existing, now)
    }

    #[test]
    fn ci_previews_the_resources_own_repository_at_the_commit() {
        let policy = PreviewPolicySpec::default_for("shop", None);
        let planned = run(&policy, &head('a', Some("feature")), None, at(1)).unwrap();
        assert_eq!(planned.name, "web-pr-7");
        assert_eq!(planned.attempt_id, "web-pr-7-aaaaaaaaaaaa");
        let source = &planned.spec.source;
        assert_eq!(source.provider, PreviewProvider::Api);
        assert_eq!(source.repository_full_name, "acme/shop");
        assert!(!source.is_fork());
        assert_eq!(
            source.head_repository_url,
            "https://github.com/acme/shop.git"
        );
        assert_eq!(
            (source.base_ref.as_str(), source.head_ref.as_str()),
            ("main", "feature")
        );
        assert!(planned.spec.with_secrets);
        assert_eq!(planned.spec.pushed_at, at(1));
        // Without a ref, the head is the branch the resource follows.
        let unnamed = run(&policy, &head('a', None), None, at(1)).unwrap();
        assert_eq!(unnamed.spec.source.head_ref, "main");
    }

    #[test]
    fn the_same_commit_keeps_its_time_to_live_and_a_new_one_restarts_it() {
        let policy = PreviewPolicySpec::default_for("shop", None);
        let first = run(&policy, &head('a', None), None, at(1)).unwrap();
        let existing = PreviewEnvironment::new(&first.name, first.spec);
        let again = run(&policy, &head('a', None), Some(&existing), at(2)).unwrap();
        assert_eq!(again.spec.pushed_at, at(1));
        let moved = run(&policy, &head('b', None), Some(&existing), at(2)).unwrap();
        assert_eq!(moved.spec.pushed_at, at(2));
        let mut going = existing.clone();
        going.metadata.deletion_timestamp = Some(at(2));
        let refused = run(&policy, &head('b', None), Some(&going), at(3)).unwrap_err();
        assert_eq!(refused.status, 409);
    }

    #[test]
    fn the_policy_and_the_source_decide() {
        let mut policy = PreviewPolicySpec::default_for("shop", None);
        policy.secret_backed_previews = false;
        assert!(
            !run(&policy, &head('a', None), None, at(1))
                .unwrap()
                .spec
                .with_secrets
        );
        policy.same_repository_previews = false;
        assert_eq!(
            run(&policy, &head('a', None), None, at(1))
                .unwrap_err()
                .status,
            409
        );
        let image = CiHead {
            number: 7,
            sha: "abc",
            head_ref: None,
        };
        let refused = plan(
            &resource("docker-image"),
            &PreviewPolicySpec::default_for("shop", None),
            image,
            None,
            at(1),
        )
        .unwrap_err();
        assert_eq!(refused.status, 422);
        assert_eq!(refused.body.details["field"], "preview");
    }
}
