//! What a push webhook of GitHub, GitLab or Gitea says, in one shape: which repository (every
//! URL it gives for it), which ref moved to which commit, and by whom. Read without trust; the
//! signature is checked against the bindings it names before anything is done.

use serde_json::Value;

/// A git host whose push webhooks Berth reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Github,
    Gitlab,
    Gitea,
}

impl Provider {
    pub const NAMES: [&'static str; 3] = ["github", "gitlab", "gitea"];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "github" => Some(Self::Github),
            "gitlab" => Some(Self::Gitlab),
            "gitea" => Some(Self::Gitea),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The header naming the event.
    pub fn event_header(self) -> &'static str {
        match self {
            Self::Github => "x-github-event",
            Self::Gitlab => "x-gitlab-event",
            Self::Gitea => "x-gitea-event",
        }
    }

    /// The header carrying the signature (or, for GitLab, the token).
    pub fn proof_header(self) -> &'static str {
        match self {
            Self::Github => "x-hub-signature-256",
            Self::Gitlab => "x-gitlab-token",
            Self::Gitea => "x-gitea-signature",
        }
    }

    /// The header identifying one delivery (redeliveries repeat it).
    pub fn delivery_header(self) -> &'static str {
        match self {
            Self::Github => "x-github-delivery",
            Self::Gitlab => "x-gitlab-event-uuid",
            Self::Gitea => "x-gitea-delivery",
        }
    }
}

/// What kind of delivery it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A branch moved (or was created).
    Push,
    /// A tag was pushed.
    Tag,
    /// Anything else (GitHub's `ping` when the hook is created, a pull request…).
    Other,
}

impl EventKind {
    /// The spelling of `autoDeploy.eventKinds`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Push => "push",
            Self::Tag => "tag",
            Self::Other => "other",
        }
    }

    /// The kind the provider's event header names.
    pub fn of(provider: Provider, header: &str, git_ref: &str) -> Self {
        let push = match provider {
            Provider::Github | Provider::Gitea => header == "push",
            Provider::Gitlab => header == "Push Hook" || header == "Tag Push Hook",
        };
        match (push, git_ref.starts_with("refs/tags/")) {
            (false, _) => Self::Other,
            (true, true) => Self::Tag,
            (true, false) => Self::Push,
        }
    }
}

/// A push, as every provider describes it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Push {
    /// The full ref that moved: `refs/heads/main`, `refs/tags/v1`.
    pub git_ref: String,
    /// The commit it moved to; 40 zeros when the ref was deleted.
    pub after: String,
    /// The repository's default branch, when the payload names it.
    pub default_branch: Option<String>,
    /// The first line of the pushed commit's message and its author, when given.
    pub subject: Option<String>,
    pub author: Option<String>,
}

impl Push {
    /// Whether the push deleted its ref.
    pub fn deletes(&self) -> bool {
        !self.after.is_empty() && self.after.chars().all(|c| c == '0')
    }
}

/// Every URL `payload` gives for its repository (pings and pushes alike).
pub fn read_repository_urls(provider: Provider, payload: &Value) -> Vec<String> {
    let pointers: &[&str] = match provider {
        Provider::Gitlab => &[
            "/project/git_http_url",
            "/project/git_ssh_url",
            "/project/web_url",
            "/repository/git_http_url",
            "/repository/git_ssh_url",
        ],
        Provider::Github | Provider::Gitea => &[
            "/repository/clone_url",
            "/repository/ssh_url",
            "/repository/git_url",
            "/repository/html_url",
        ],
    };
    pointers
        .iter()
        .filter_map(|pointer| payload.pointer(pointer).and_then(Value::as_str))
        .filter(|url| !url.is_empty())
        .map(str::to_string)
        .collect()
}

/// The non-empty string at JSON `pointer` of `payload`.
pub fn text_at(payload: &Value, pointer: &str) -> Option<String> {
    payload
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Reads the push of `provider` from `payload`; `None` when it is not a push payload.
pub fn read(provider: Provider, payload: &Value) -> Option<Push> {
    let text = |pointer: &str| text_at(payload, pointer);
    let after = match provider {
        Provider::Gitlab => text("/checkout_sha").or_else(|| text("/after")),
        _ => text("/after"),
    };
    let (subject, author) = match provider {
        Provider::Gitlab => (text("/commits/0/message"), text("/user_name")),
        _ => (
            text("/head_commit/message"),
            text("/head_commit/author/name"),
        ),
    };
    Some(Push {
        git_ref: text("/ref")?,
        after: after.unwrap_or_else(|| "0".repeat(40)),
        default_branch: text("/repository/default_branch")
            .or_else(|| text("/project/default_branch")),
        subject: subject.map(|m| m.lines().next().unwrap_or_default().to_string()),
        author,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_provider_says_which_repository_moved_where() {
        let sha = "1111111111111111111111111111111111111111";
        let github = json!({
            "ref": "refs/heads/main", "after": sha,
            "repository": {
                "clone_url": "https://github.com/acme/shop.git",
                "ssh_url": "git@github.com:acme/shop.git",
                "default_branch": "main",
            },
            "head_commit": { "message": "Fix checkout\n\nDetails", "author": { "name": "Ada" } },
        });
        let push = read(Provider::Github, &github).unwrap();
        assert_eq!(push.git_ref, "refs/heads/main");
        assert_eq!(push.after, sha);
        assert_eq!(read_repository_urls(Provider::Github, &github).len(), 2);
        assert_eq!(push.subject.as_deref(), Some("Fix checkout"));
        assert_eq!(push.default_branch.as_deref(), Some("main"));
        let gitlab = json!({
            "ref": "refs/tags/v1", "checkout_sha": sha, "user_name": "Bo",
            "project": {
                "git_http_url": "https://gitlab.com/acme/shop.git",
                "git_ssh_url": "git@gitlab.com:acme/shop.git",
            },
            "commits": [{ "message": "Release" }],
        });
        let push = read(Provider::Gitlab, &gitlab).unwrap();
        assert_eq!(push.author.as_deref(), Some("Bo"));
        assert_eq!(
            EventKind::of(Provider::Gitlab, "Tag Push Hook", &push.git_ref),
            EventKind::Tag
        );
        let deleted = json!({ "ref": "refs/heads/old", "after": "0".repeat(40) });
        assert!(read(Provider::Gitea, &deleted).unwrap().deletes());
        assert!(read(Provider::Github, &json!({ "zen": "ping" })).is_none());
        assert_eq!(
            EventKind::of(Provider::Github, "ping", "refs/heads/main"),
            EventKind::Other
        );
    }
}
