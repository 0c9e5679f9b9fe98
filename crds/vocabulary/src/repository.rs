//! Git repository locators: what a git source's `locator` may be, read once for the shim's
//! checks, the webhook's matching and the controller's fetch. HTTPS, HTTP, `ssh://`, scp-like
//! `user@host:path` and `git://` URLs, and (for `local-git`) an absolute path on the
//! controller. Credentials never live in a locator: a password in a URL is refused, a deploy
//! key is a credential the source names.

use std::fmt;

/// How a repository is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GitTransport {
    Https,
    Http,
    Ssh,
    /// The git daemon protocol (`git://`, port 9418): read-only and unauthenticated.
    Git,
    /// A repository on the controller's own filesystem.
    Local,
}

impl GitTransport {
    /// Whether fetching over this transport can authenticate with a deploy key.
    pub fn takes_deploy_key(self) -> bool {
        self == Self::Ssh
    }
}

/// A parsed repository locator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoLocator {
    pub transport: GitTransport,
    /// Lower-case host name; empty for a local path.
    pub host: String,
    pub port: Option<u16>,
    /// The SSH user (`git` when the locator names none).
    pub user: Option<String>,
    /// Path on the host as the locator spells it (`/owner/repo.git`, or `owner/repo.git` for
    /// scp-like locators, which are relative to the user's home).
    pub path: String,
}

/// Why a locator is not a repository Berth can fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatorError(pub String);

impl fmt::Display for LocatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The SSH user of a locator that names none, as GitHub, GitLab and Gitea expect.
pub const DEFAULT_SSH_USER: &str = "git";

impl RepoLocator {
    /// Reads `locator`.
    pub fn parse(locator: &str) -> Result<Self, LocatorError> {
        let locator = locator.trim();
        if locator.starts_with('/') {
            return Ok(Self::local(locator));
        }
        if let Some(path) = locator.strip_prefix("file://") {
            return Ok(Self::local(path));
        }
        if let Some((scheme, rest)) = locator.split_once("://") {
            return Self::from_url(scheme, rest);
        }
        Self::scp_like(locator)
    }

    fn local(path: &str) -> Self {
        Self {
            transport: GitTransport::Local,
            host: String::new(),
            port: None,
            user: None,
            path: path.to_string(),
        }
    }

    fn from_url(scheme: &str, rest: &str) -> Result<Self, LocatorError> {
        let transport = match scheme.to_ascii_lowercase().as_str() {
            "https" => GitTransport::Https,
            "http" => GitTransport::Http,
            "ssh" | "git+ssh" | "ssh+git" => GitTransport::Ssh,
            "git" => GitTransport::Git,
            other => {
                return Err(LocatorError(format!(
                    "`{other}://` is not a git transport Berth fetches; use https://, http://, \
                     ssh://, git:// or user@host:path"
                )));
            }
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        let (user, host_port) = match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user), host),
            None => (None, authority),
        };
        if let Some(user) = user {
            if user.contains(':') {
                return Err(LocatorError(
                    "the locator holds a password: keep credentials out of it (a deploy key is \
                     an SSH credential the source names in metadata.credentialId)"
                        .into(),
                ));
            }
            if transport != GitTransport::Ssh {
                return Err(LocatorError(format!(
                    "a user name in a {scheme}:// locator is a credential; remove `{user}@`"
                )));
            }
        }
        let (host, port) = split_port(host_port)?;
        Self::checked(Self {
            transport,
            host,
            port,
            user: user.map(str::to_string),
            path: path.to_string(),
        })
    }

    /// `user@host:path`, as git reads it: an SSH locator without a scheme.
    fn scp_like(locator: &str) -> Result<Self, LocatorError> {
        let Some((authority, path)) = locator.split_once(':') else {
            return Err(LocatorError(format!(
                "`{locator}` is not a repository URL: use https://host/owner/repo.git, \
                 ssh://git@host/owner/repo.git, git@host:owner/repo.git or git://host/repo"
            )));
        };
        let (user, host) = match authority.split_once('@') {
            Some((user, host)) => (Some(user.to_string()), host),
            None => (None, authority),
        };
        Self::checked(Self {
            transport: GitTransport::Ssh,
            host: host.to_ascii_lowercase(),
            port: None,
            user,
            path: path.to_string(),
        })
    }

    fn checked(mut self) -> Result<Self, LocatorError> {
        self.host = self.host.to_ascii_lowercase();
        let host_ok = !self.host.is_empty()
            && self
                .host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'));
        if !host_ok {
            return Err(LocatorError(format!("`{}` is not a host name", self.host)));
        }
        if self.path.trim_matches('/').is_empty() {
            return Err(LocatorError("the locator names no repository path".into()));
        }
        if self.path.split('/').any(|part| part == "..") {
            return Err(LocatorError(
                "the repository path may not contain `..`".into(),
            ));
        }
        Ok(self)
    }

    /// The SSH user to log in as.
    pub fn ssh_user(&self) -> &str {
        self.user.as_deref().unwrap_or(DEFAULT_SSH_USER)
    }

    /// The port to connect to: the locator's, else the transport's own.
    pub fn port_or_default(&self) -> u16 {
        self.port.or(self.default_port()).unwrap_or(0)
    }

    /// Which repository this is, whatever the transport and spelling: the host and the path
    /// without `.git`, slashes or case differences (`github.com/acme/shop`). Two locators of
    /// the same repository (its HTTPS and SSH URLs) have the same identity; a webhook's
    /// repository URLs are matched by it, and fetched copies are cached by it.
    pub fn identity(&self) -> String {
        let path = self.path.trim_matches('/');
        let path = path
            .strip_suffix(".git")
            .unwrap_or(path)
            .trim_end_matches('/');
        if self.transport == GitTransport::Local {
            return format!("local{}", normalize_local(&self.path));
        }
        // A port the locator names is part of where the repository is (two servers on one
        // host); the transport's own is not (an HTTPS and an SSH URL of one repository).
        let explicit_port = self
            .port
            .filter(|port| Some(*port) != self.default_port())
            .map(|port| format!(":{port}"))
            .unwrap_or_default();
        format!("{}{explicit_port}/{}", self.host, path.to_ascii_lowercase())
    }

    fn default_port(&self) -> Option<u16> {
        match self.transport {
            GitTransport::Https => Some(443),
            GitTransport::Http => Some(80),
            GitTransport::Ssh => Some(22),
            GitTransport::Git => Some(9418),
            GitTransport::Local => None,
        }
    }

    /// `owner/repo`: the last two path segments without `.git` (what deploy tokens scope
    /// `repositoryFullNames` by), or the single segment of a one-level path.
    pub fn full_name(&self) -> String {
        let path = self.path.trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let keep = segments.len().saturating_sub(2);
        segments[keep..].join("/")
    }

    /// The path the server resolves (scp-like paths are relative to the user's home).
    pub fn remote_path(&self) -> &str {
        &self.path
    }

    /// The URL as an HTTP client requests it (`https://host:port/path`).
    pub fn http_url(&self) -> String {
        let scheme = if self.transport == GitTransport::Http {
            "http"
        } else {
            "https"
        };
        match self.port {
            Some(port) => format!("{scheme}://{}:{port}{}", self.host, self.path),
            None => format!("{scheme}://{}{}", self.host, self.path),
        }
    }
}

fn normalize_local(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    trimmed.strip_suffix("/.git").unwrap_or(trimmed).to_string()
}

fn split_port(host_port: &str) -> Result<(String, Option<u16>), LocatorError> {
    // An IPv6 literal keeps its colons inside brackets.
    let split_at = if host_port.starts_with('[') {
        host_port.find("]:").map(|i| i + 1)
    } else {
        host_port.rfind(':')
    };
    let Some(colon) = split_at else {
        return Ok((host_port.to_string(), None));
    };
    let port = &host_port[colon + 1..];
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| LocatorError(format!("`{port}` is not a port number")))?;
    Ok((host_port[..colon].to_string(), Some(port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_repository_has_one_identity() {
        let spellings = [
            "https://GitHub.com/acme/Shop.git",
            "https://github.com/acme/shop",
            "ssh://git@github.com/acme/shop.git",
            "git@github.com:acme/shop.git",
            "git://github.com/acme/shop.git/",
            "ssh://git@github.com:22/acme/shop.git",
        ];
        for locator in spellings {
            let parsed = RepoLocator::parse(locator).unwrap();
            assert_eq!(parsed.identity(), "github.com/acme/shop", "{locator}");
            assert_eq!(parsed.full_name().to_lowercase(), "acme/shop", "{locator}");
        }
    }

    #[test]
    fn transports_ports_and_users_are_read() {
        let ssh = RepoLocator::parse("ssh://deploy@127.0.0.1:2222/srv/git/app.git").unwrap();
        assert_eq!(ssh.transport, GitTransport::Ssh);
        assert_eq!((ssh.port_or_default(), ssh.ssh_user()), (2222, "deploy"));
        assert_eq!(ssh.remote_path(), "/srv/git/app.git");
        let scp = RepoLocator::parse("example.org:team/app.git").unwrap();
        assert_eq!((scp.ssh_user(), scp.port_or_default()), ("git", 22));
        let http = RepoLocator::parse("http://127.0.0.1:8418/git/app.git").unwrap();
        assert_eq!(http.http_url(), "http://127.0.0.1:8418/git/app.git");
        assert_eq!(http.identity(), "127.0.0.1:8418/git/app");
        assert_eq!(
            RepoLocator::parse("git://127.0.0.1/app")
                .unwrap()
                .port_or_default(),
            9418
        );
        let local = RepoLocator::parse("/srv/repos/app/.git").unwrap();
        assert_eq!(local.transport, GitTransport::Local);
        assert_eq!(local.identity(), "local/srv/repos/app");
    }

    #[test]
    fn credentials_and_other_schemes_are_refused_with_a_reason() {
        let cases = [
            ("https://user:token@github.com/a/b.git", "password"),
            ("https://user@github.com/a/b.git", "credential"),
            ("ftp://example.com/a.git", "not a git transport"),
            ("https://github.com/", "no repository path"),
            ("https://github.com:99999/a/b", "port"),
            ("just-a-name", "not a repository URL"),
            ("https://ex ample.com/a/b", "host name"),
            ("ssh://git@host/a/../../etc", ".."),
        ];
        for (locator, reason) in cases {
            let error = RepoLocator::parse(locator).unwrap_err();
            assert!(error.0.contains(reason), "{locator}: {error}");
        }
    }
}
