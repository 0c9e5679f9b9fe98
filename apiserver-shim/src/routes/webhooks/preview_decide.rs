//! What a verified pull request's event means for the preview of one resource bound to the
//! repository: create or move it, remove it, or nothing and why. Pure: the handler reads the
//! policy in force and the existing preview, and writes. How many previews may run at once is
//! not decided here: the controller holds the extra ones waiting, saying why.

use berth_api::build::SourceKind;
use berth_crds::preview::{
    ForkPreviews, PreviewEnvironment, PreviewEnvironmentSpec, PreviewPolicySpec, PreviewProvider,
    PullRequestSource, preview_name,
};
use berth_crds::resource::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::payload::Provider;
use super::pull_request::{Action, PullRequest};

/// What one resource's preview does with a pull request's event.
#[derive(Clone, Debug, PartialEq)]
pub enum PreviewOutcome {
    /// Write the preview `name` with `spec` (`created`: there was none).
    Apply {
        name: String,
        spec: Box<PreviewEnvironmentSpec>,
        created: bool,
    },
    /// Remove the preview `name`.
    Remove { name: String },
    /// The preview stays as it is, and why.
    Unchanged {
        name: String,
        reason: &'static str,
        message: String,
    },
    /// No preview for this event, and why (`reason` is stable, `message` for people).
    Ignored {
        name: Option<String>,
        reason: &'static str,
        message: String,
    },
}

fn ignored(name: Option<&str>, reason: &'static str, message: impl Into<String>) -> PreviewOutcome {
    PreviewOutcome::Ignored {
        name: name.map(str::to_string),
        reason,
        message: message.into(),
    }
}

/// Decides what `event` does to `resource`'s preview of its pull request, under `policy` (the
/// one in force for the resource), given the preview that exists (`existing`), at `now`.
pub fn decide(
    resource: &Resource,
    policy: &PreviewPolicySpec,
    event: &PullRequest,
    existing: Option<&PreviewEnvironment>,
    provider: Provider,
    now: Time,
) -> PreviewOutcome {
    let name = preview_name(&resource.name_any(), event.number);
    let source = pull_request_source(event, provider);
    match &event.action {
        Action::Other(action) => ignored(
            Some(&name),
            "not-a-pull-request-action",
            format!("the action `{action}` neither opens, updates nor closes a pull request"),
        ),
        Action::Close => match existing {
            Some(_) => PreviewOutcome::Remove { name },
            None => PreviewOutcome::Unchanged {
                name,
                reason: "no-preview",
                message: "the pull request has no preview to remove".into(),
            },
        },
        Action::Open | Action::Update => {
            if let Some(why) = refusal(resource, policy, &source) {
                return ignored(Some(&name), why.0, why.1);
            }
            let spec = PreviewEnvironmentSpec {
                project_id: resource.spec.project_id.clone(),
                resource_id: resource.name_any(),
                with_secrets: policy.gives_secrets(source.is_fork()),
                source,
                pushed_at: now,
            };
            moved(name, spec, existing)
        }
    }
}

/// Why the policy or the binding allows no preview of `source`, if it does not.
fn refusal(
    resource: &Resource,
    policy: &PreviewPolicySpec,
    source: &PullRequestSource,
) -> Option<(&'static str, &'static str)> {
    let git =
        resource.spec.source.as_ref().is_some_and(|s| {
            SourceKind::parse("source.kind", &s.kind).is_ok_and(SourceKind::is_git)
        });
    if !git {
        return Some((
            "source-not-git",
            "the resource's source is not a git repository",
        ));
    }
    if source.is_fork() && policy.fork_previews == ForkPreviews::Disabled {
        return Some((
            "preview-fork-disabled",
            "the preview policy gives pull requests from forks no preview (forkPreviews: disabled)",
        ));
    }
    if !source.is_fork() && !policy.same_repository_previews {
        return Some((
            "preview-same-repository-disabled",
            "the preview policy gives pull requests from the repository itself no preview",
        ));
    }
    None
}

/// The write a new head makes: none when the preview already has it (a replayed delivery, or
/// GitLab's update of a title), none while the preview is being removed.
fn moved(
    name: String,
    spec: PreviewEnvironmentSpec,
    existing: Option<&PreviewEnvironment>,
) -> PreviewOutcome {
    let Some(existing) = existing else {
        return PreviewOutcome::Apply {
            name,
            spec: Box::new(spec),
            created: true,
        };
    };
    if existing.metadata.deletion_timestamp.is_some() {
        return ignored(
            Some(&name),
            "preview-being-removed",
            "the pull request's previous preview is still being removed; push again once it is gone",
        );
    }
    if existing.spec.source.head_sha == spec.source.head_sha {
        return PreviewOutcome::Unchanged {
            name,
            reason: "same-head",
            message: format!("the preview already has {}", spec.source.head_sha),
        };
    }
    PreviewOutcome::Apply {
        name,
        spec: Box::new(spec),
        created: false,
    }
}

fn pull_request_source(event: &PullRequest, provider: Provider) -> PullRequestSource {
    PullRequestSource {
        provider: match provider {
            Provider::Github => PreviewProvider::Github,
            Provider::Gitlab => PreviewProvider::Gitlab,
            Provider::Gitea => PreviewProvider::Gitea,
        },
        repository_full_name: event.repository_full_name.clone(),
        head_repository_full_name: event.head_repository_full_name.clone(),
        head_repository_url: event.head_repository_url.clone(),
        pull_request_number: event.number,
        base_ref: event.base_ref.clone(),
        head_ref: event.head_ref.clone(),
        head_sha: event.head_sha.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(kind: &str) -> Resource {
        let spec = json!({
            "projectId": "shop", "environmentId": "production", "serverId": "local",
            "name": "web", "kind": "application",
            "source": { "kind": kind, "locator": "https://github.com/acme/shop.git" },
        });
        Resource::new("web", serde_json::from_value(spec).unwrap())
    }

    fn event(action: Action, head: &str, sha: char) -> PullRequest {
        PullRequest {
            action,
            number: 7,
            repository_full_name: "acme/shop".into(),
            head_repository_full_name: head.into(),
            head_repository_url: format!("https://github.com/{head}.git"),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            head_sha: sha.to_string().repeat(40),
        }
    }

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap())
    }

    fn run(
        policy: &PreviewPolicySpec,
        event: &PullRequest,
        existing: Option<&PreviewEnvironment>,
    ) -> PreviewOutcome {
        decide(
            &resource("git-public"),
            policy,
            event,
            existing,
            Provider::Github,
            now(),
        )
    }

    fn reason(outcome: &PreviewOutcome) -> &'static str {
        match outcome {
            PreviewOutcome::Apply { created: true, .. } => "created",
            PreviewOutcome::Apply { created: false, .. } => "updated",
            PreviewOutcome::Remove { .. } => "removed",
            PreviewOutcome::Unchanged { reason, .. } | PreviewOutcome::Ignored { reason, .. } => {
                reason
            }
        }
    }

    fn written(outcome: PreviewOutcome) -> PreviewEnvironment {
        match outcome {
            PreviewOutcome::Apply { name, spec, .. } => PreviewEnvironment::new(&name, *spec),
            other => panic!("nothing written: {other:?}"),
        }
    }

    #[test]
    fn an_opened_pull_request_gets_a_preview_that_follows_its_head() {
        let policy = PreviewPolicySpec::default_for("shop", None);
        let opened = run(&policy, &event(Action::Open, "acme/shop", 'a'), None);
        assert_eq!(reason(&opened), "created");
        let preview = written(opened);
        assert_eq!(preview.metadata.name.as_deref(), Some("web-pr-7"));
        assert!(preview.spec.with_secrets);
        assert_eq!(preview.spec.source.provider, PreviewProvider::Github);
        assert_eq!(preview.spec.pushed_at, now());
        let replay = run(
            &policy,
            &event(Action::Update, "acme/shop", 'a'),
            Some(&preview),
        );
        assert_eq!(reason(&replay), "same-head");
        let pushed = run(
            &policy,
            &event(Action::Update, "acme/shop", 'b'),
            Some(&preview),
        );
        assert_eq!(reason(&pushed), "updated");
        // An update of a pull request opened before previews were on creates one.
        let late = run(&policy, &event(Action::Update, "acme/shop", 'b'), None);
        assert_eq!(reason(&late), "created");
        let mut going = preview.clone();
        going.metadata.deletion_timestamp = Some(now());
        let reopened = run(
            &policy,
            &event(Action::Open, "acme/shop", 'b'),
            Some(&going),
        );
        assert_eq!(reason(&reopened), "preview-being-removed");
    }

    #[test]
    fn closing_removes_the_preview_once() {
        let policy = PreviewPolicySpec::default_for("shop", None);
        let preview = written(run(&policy, &event(Action::Open, "acme/shop", 'a'), None));
        let closed = event(Action::Close, "acme/shop", 'a');
        assert_eq!(reason(&run(&policy, &closed, Some(&preview))), "removed");
        assert_eq!(reason(&run(&policy, &closed, None)), "no-preview");
        let labeled = event(Action::Other("labeled".into()), "acme/shop", 'a');
        assert_eq!(
            reason(&run(&policy, &labeled, None)),
            "not-a-pull-request-action"
        );
    }

    #[test]
    fn the_policy_decides_for_forks_and_the_repository_itself() {
        let mut policy = PreviewPolicySpec::default_for("shop", None);
        let fork = event(Action::Open, "mallory/shop", 'a');
        assert_eq!(reason(&run(&policy, &fork, None)), "preview-fork-disabled");
        policy.fork_previews = ForkPreviews::WithoutSecrets;
        let preview = written(run(&policy, &fork, None));
        assert!(
            !preview.spec.with_secrets,
            "a fork gets secrets only with with-secrets"
        );
        policy.fork_previews = ForkPreviews::WithSecrets;
        assert!(written(run(&policy, &fork, None)).spec.with_secrets);
        policy.same_repository_previews = false;
        let own = event(Action::Open, "acme/shop", 'a');
        assert_eq!(
            reason(&run(&policy, &own, None)),
            "preview-same-repository-disabled"
        );
        let image = decide(
            &resource("docker-image"),
            &PreviewPolicySpec::default_for("shop", None),
            &own,
            None,
            Provider::Github,
            now(),
        );
        assert_eq!(reason(&image), "source-not-git");
    }
}
