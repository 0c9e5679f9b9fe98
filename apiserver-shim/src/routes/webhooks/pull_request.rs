//! What a pull request's (GitHub, Gitea) or merge request's (GitLab) webhook says, in one
//! shape: what happened to it, its number, and which commit of which branch of which
//! repository it would merge where. Read without trust, like a push.

use serde_json::Value;

use super::payload::{Provider, text_at};

/// What happened to the pull request, as far as previews care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Opened or reopened.
    Open,
    /// Its head moved (or, on GitLab, anything about it changed).
    Update,
    /// Closed or merged.
    Close,
    /// Anything else (labelled, assigned, approved…), by its name.
    Other(String),
}

/// A pull request as every provider describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    pub action: Action,
    pub number: u64,
    /// `owner/name` of the repository it merges into.
    pub repository_full_name: String,
    /// `owner/name` of the repository its head lives in.
    pub head_repository_full_name: String,
    /// Clone URL of that repository.
    pub head_repository_url: String,
    pub base_ref: String,
    pub head_ref: String,
    pub head_sha: String,
}

/// Whether the event header names a pull request's (merge request's) event.
pub fn is_event(provider: Provider, header: &str) -> bool {
    match provider {
        Provider::Github | Provider::Gitea => header == "pull_request",
        Provider::Gitlab => header == "Merge Request Hook",
    }
}

/// The action a payload names.
pub fn read_action(provider: Provider, payload: &Value) -> Action {
    let pointer = match provider {
        Provider::Gitlab => "/object_attributes/action",
        Provider::Github | Provider::Gitea => "/action",
    };
    let name = payload
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (provider, name) {
        (Provider::Gitlab, "open" | "reopen") => Action::Open,
        (Provider::Gitlab, "update") => Action::Update,
        (Provider::Gitlab, "close" | "merge") => Action::Close,
        (Provider::Github | Provider::Gitea, "opened" | "reopened") => Action::Open,
        // Gitea says `synchronized`.
        (Provider::Github | Provider::Gitea, "synchronize" | "synchronized") => Action::Update,
        (Provider::Github | Provider::Gitea, "closed") => Action::Close,
        (_, other) => Action::Other(other.to_string()),
    }
}

/// Reads the pull request of `provider` from `payload`; `None` when a part a preview needs is
/// missing or malformed (no number, no commit).
pub fn read(provider: Provider, payload: &Value) -> Option<PullRequest> {
    let text = |pointer: &str| text_at(payload, pointer);
    let pointers = match provider {
        Provider::Gitlab => [
            "/object_attributes/iid",
            "/object_attributes/target/path_with_namespace",
            "/object_attributes/source/path_with_namespace",
            "/object_attributes/source/git_http_url",
            "/object_attributes/target_branch",
            "/object_attributes/source_branch",
            "/object_attributes/last_commit/id",
        ],
        Provider::Github | Provider::Gitea => [
            "/number",
            "/pull_request/base/repo/full_name",
            "/pull_request/head/repo/full_name",
            "/pull_request/head/repo/clone_url",
            "/pull_request/base/ref",
            "/pull_request/head/ref",
            "/pull_request/head/sha",
        ],
    };
    let [
        number,
        base_repo,
        head_repo,
        head_url,
        base_ref,
        head_ref,
        sha,
    ] = pointers;
    let number = payload
        .pointer(number)
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)?;
    let repository_full_name = text(base_repo)
        .or_else(|| text("/project/path_with_namespace"))
        .or_else(|| text("/repository/full_name"))?;
    let head_sha = text(sha).filter(|sha| is_commit(sha))?;
    Some(PullRequest {
        action: read_action(provider, payload),
        number,
        head_repository_full_name: text(head_repo).unwrap_or_else(|| repository_full_name.clone()),
        head_repository_url: text(head_url)
            .or_else(|| text("/project/git_http_url"))
            .or_else(|| text("/repository/clone_url"))?,
        repository_full_name,
        base_ref: text(base_ref).unwrap_or_default(),
        head_ref: text(head_ref).unwrap_or_default(),
        head_sha,
    })
}

/// 7 to 64 hex digits, as a preview's `headSha` must be.
fn is_commit(sha: &str) -> bool {
    (7..=64).contains(&sha.len()) && sha.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A GitHub `pull_request` payload of pull request 7 of acme/shop, from `head`.
    pub(crate) fn github(action: &str, head: &str, sha: &str) -> Value {
        json!({
            "action": action, "number": 7,
            "pull_request": {
                "number": 7,
                "head": { "sha": sha, "ref": "feature",
                          "repo": { "full_name": head,
                                    "clone_url": format!("https://github.com/{head}.git") } },
                "base": { "ref": "main", "repo": { "full_name": "acme/shop" } },
            },
            "repository": { "full_name": "acme/shop", "clone_url": "https://github.com/acme/shop.git" },
        })
    }

    #[test]
    fn github_and_gitea_pull_requests_read_alike() {
        let sha = "b".repeat(40);
        let opened = read(Provider::Github, &github("opened", "mallory/shop", &sha)).unwrap();
        assert_eq!(opened.action, Action::Open);
        assert_eq!(opened.number, 7);
        assert_eq!(opened.repository_full_name, "acme/shop");
        assert_eq!(opened.head_repository_full_name, "mallory/shop");
        assert_eq!(
            opened.head_repository_url,
            "https://github.com/mallory/shop.git"
        );
        assert_eq!(
            (opened.base_ref.as_str(), opened.head_ref.as_str()),
            ("main", "feature")
        );
        let synced = read(Provider::Gitea, &github("synchronized", "acme/shop", &sha)).unwrap();
        assert_eq!(synced.action, Action::Update);
        assert_eq!(
            read_action(Provider::Github, &github("closed", "a/b", &sha)),
            Action::Close
        );
        assert_eq!(
            read_action(Provider::Github, &github("labeled", "a/b", &sha)),
            Action::Other("labeled".into())
        );
        assert!(read(Provider::Github, &github("opened", "a/b", "not-a-sha")).is_none());
        assert!(is_event(Provider::Gitea, "pull_request"));
        assert!(!is_event(Provider::Github, "push"));
    }

    #[test]
    fn gitlab_merge_requests_read_the_same() {
        let payload = json!({
            "object_kind": "merge_request",
            "project": { "git_http_url": "https://gitlab.com/acme/shop.git" },
            "object_attributes": {
                "iid": 12, "action": "update", "source_branch": "fix", "target_branch": "main",
                "last_commit": { "id": "c".repeat(40) },
                "source": { "path_with_namespace": "acme/shop",
                            "git_http_url": "https://gitlab.com/acme/shop.git" },
                "target": { "path_with_namespace": "acme/shop" },
            },
        });
        let merge_request = read(Provider::Gitlab, &payload).unwrap();
        assert_eq!(merge_request.action, Action::Update);
        assert_eq!(merge_request.number, 12);
        assert_eq!(merge_request.head_ref, "fix");
        assert!(is_event(Provider::Gitlab, "Merge Request Hook"));
        let merged = json!({ "object_attributes": { "action": "merge" } });
        assert_eq!(read_action(Provider::Gitlab, &merged), Action::Close);
        let approved = json!({ "object_attributes": { "action": "approved" } });
        assert_eq!(
            read_action(Provider::Gitlab, &approved),
            Action::Other("approved".into())
        );
    }
}
