//! What a verified push means for one resource bound to the pushed repository: an attempt for
//! the pushed commit, or why not. Pure: the handler reads and writes.

use berth_crds::resource::Resource;

use super::payload::{EventKind, Push};
use crate::domain::webhooks::GIT_PUSH;

/// What one resource does with a push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Deploy `commit` of `git_ref`.
    Deploy { git_ref: String, commit: String },
    /// Nothing to do, and why (`reason` is stable, `message` for people).
    Ignored {
        reason: &'static str,
        message: String,
    },
}

fn ignored(reason: &'static str, message: impl Into<String>) -> Outcome {
    Outcome::Ignored {
        reason,
        message: message.into(),
    }
}

/// Decides what `resource` does with `push` (an event of `kind`).
pub fn decide(resource: &Resource, kind: EventKind, push: &Push) -> Outcome {
    let policy = &resource.spec.auto_deploy;
    if kind == EventKind::Other {
        return ignored("not-a-push", "only push and tag events deploy");
    }
    if push.deletes() {
        return ignored("ref-deleted", format!("{} was deleted", push.git_ref));
    }
    if !policy.enabled || policy.trigger_kind != GIT_PUSH {
        return ignored("auto-deploy-disabled", "auto-deploy on git-push is off");
    }
    if policy.blocked(resource.spec.source.as_ref()) {
        return ignored(
            "source-binding-changed",
            "the source binding changed since auto-deploy was enabled; enable it again to confirm",
        );
    }
    let kinds: Vec<&str> = match policy.event_kinds.is_empty() {
        true => vec!["push"],
        false => policy.event_kinds.iter().map(String::as_str).collect(),
    };
    if !kinds.contains(&kind.as_str()) {
        return ignored(
            "event-kind-not-enabled",
            format!("autoDeploy.eventKinds does not include {}", kind.as_str()),
        );
    }
    let followed = followed_refs(resource, push);
    if !followed
        .iter()
        .any(|pattern| ref_matches(pattern, &push.git_ref))
    {
        let list = if followed.is_empty() {
            "none".to_string()
        } else {
            followed.join(", ")
        };
        return ignored(
            "ref-not-followed",
            format!(
                "{} is not among the refs auto-deploy follows ({list})",
                push.git_ref
            ),
        );
    }
    if resource.spec.server_id.is_none() {
        return ignored("no-server", "the resource names no server to deploy to");
    }
    Outcome::Deploy {
        git_ref: push.git_ref.clone(),
        commit: push.after.clone(),
    }
}

/// The refs a push must move: `autoDeploy.refs`, else the source's own ref, else the
/// repository's default branch.
fn followed_refs(resource: &Resource, push: &Push) -> Vec<String> {
    let policy = &resource.spec.auto_deploy;
    if !policy.refs.is_empty() {
        return policy.refs.clone();
    }
    let own = resource
        .spec
        .source
        .as_ref()
        .and_then(|s| s.git_ref.clone());
    match own.or_else(|| push.default_branch.clone()) {
        Some(name) if name.starts_with("refs/") => vec![name],
        Some(name) => vec![format!("refs/heads/{name}"), format!("refs/tags/{name}")],
        None => Vec::new(),
    }
}

/// Whether `git_ref` matches `pattern`, where `*` stands for any run of characters.
pub fn ref_matches(pattern: &str, git_ref: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == git_ref;
    };
    let Some(tail) = git_ref.strip_prefix(head) else {
        return false;
    };
    (0..=tail.len())
        .filter(|&at| tail.is_char_boundary(at))
        .any(|at| ref_matches(rest, &tail[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn resource(auto_deploy: Value, git_ref: Option<&str>) -> Resource {
        let mut spec = json!({
            "projectId": "p", "environmentId": "e", "serverId": "local",
            "name": "shop", "kind": "application",
            "source": { "kind": "git-public", "locator": "https://github.com/acme/shop.git" },
            "autoDeploy": auto_deploy,
        });
        if let Some(git_ref) = git_ref {
            spec["source"]["gitRef"] = json!(git_ref);
        }
        Resource::new("shop", serde_json::from_value(spec).unwrap())
    }

    fn push(git_ref: &str) -> Push {
        Push {
            git_ref: git_ref.into(),
            after: "1".repeat(40),
            default_branch: Some("main".into()),
            ..Push::default()
        }
    }

    fn reason(outcome: Outcome) -> &'static str {
        match outcome {
            Outcome::Ignored { reason, .. } => reason,
            Outcome::Deploy { .. } => "deploy",
        }
    }

    #[test]
    fn a_push_to_a_followed_ref_deploys_its_commit() {
        let on = json!({ "enabled": true, "refs": ["refs/heads/main"] });
        assert_eq!(
            decide(
                &resource(on.clone(), None),
                EventKind::Push,
                &push("refs/heads/main")
            ),
            Outcome::Deploy {
                git_ref: "refs/heads/main".into(),
                commit: "1".repeat(40)
            }
        );
        let other = decide(
            &resource(on, None),
            EventKind::Push,
            &push("refs/heads/dev"),
        );
        assert_eq!(reason(other), "ref-not-followed");
        // No refs: the source's own branch, else the repository's default branch.
        let plain = json!({ "enabled": true });
        let staging = resource(plain.clone(), Some("staging"));
        assert_eq!(
            reason(decide(
                &staging,
                EventKind::Push,
                &push("refs/heads/staging")
            )),
            "deploy"
        );
        assert_eq!(
            reason(decide(&staging, EventKind::Push, &push("refs/heads/main"))),
            "ref-not-followed"
        );
        let default = resource(plain, None);
        assert_eq!(
            reason(decide(&default, EventKind::Push, &push("refs/heads/main"))),
            "deploy"
        );
    }

    #[test]
    fn pushes_are_ignored_with_a_reason() {
        let off = resource(json!({ "enabled": false }), None);
        assert_eq!(
            reason(decide(&off, EventKind::Push, &push("refs/heads/main"))),
            "auto-deploy-disabled"
        );
        let on = resource(json!({ "enabled": true }), None);
        assert_eq!(
            reason(decide(&on, EventKind::Other, &push("refs/heads/main"))),
            "not-a-push"
        );
        assert_eq!(
            reason(decide(&on, EventKind::Tag, &push("refs/tags/main"))),
            "event-kind-not-enabled"
        );
        let mut deleted = push("refs/heads/main");
        deleted.after = "0".repeat(40);
        assert_eq!(
            reason(decide(&on, EventKind::Push, &deleted)),
            "ref-deleted"
        );
        let moved = resource(
            json!({ "enabled": true, "sourceBindingFingerprint": "sha256:other" }),
            None,
        );
        assert_eq!(
            reason(decide(&moved, EventKind::Push, &push("refs/heads/main"))),
            "source-binding-changed"
        );
    }

    #[test]
    fn ref_patterns_take_stars() {
        assert!(ref_matches("refs/heads/main", "refs/heads/main"));
        assert!(ref_matches(
            "refs/heads/release-*",
            "refs/heads/release-1.2"
        ));
        assert!(ref_matches("refs/tags/*", "refs/tags/v1"));
        assert!(!ref_matches("refs/heads/release-*", "refs/heads/main"));
        assert!(!ref_matches("refs/heads/main", "refs/heads/main2"));
    }
}
