//! What a resource is built from and how: the source kinds Berth deploys and the build
//! strategies of `runtimeProfile.strategy` (Appaloft's names, where they fit).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::repository::{GitTransport, RepoLocator};
use crate::validate::{FieldError, bounded};

/// A source kind Berth deploys. The stored field stays a string (so an object written by an
/// older Berth still reads); this is its checked meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A prebuilt image, pulled when the server lacks it.
    DockerImage,
    /// A folder on the controller's filesystem, built on the server.
    LocalFolder,
    /// A git repository on the controller's filesystem.
    LocalGit,
    /// A git repository over HTTPS, HTTP, SSH (with a deploy key) or git://.
    RemoteGit,
    /// A public git repository: no credential.
    GitPublic,
    /// A git repository over SSH, read with a deploy key (`metadata.credentialId`).
    GitDeployKey,
}

impl SourceKind {
    pub const ALL: [Self; 6] = [
        Self::DockerImage,
        Self::LocalFolder,
        Self::LocalGit,
        Self::RemoteGit,
        Self::GitPublic,
        Self::GitDeployKey,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::DockerImage => "docker-image",
            Self::LocalFolder => "local-folder",
            Self::LocalGit => "local-git",
            Self::RemoteGit => "remote-git",
            Self::GitPublic => "git-public",
            Self::GitDeployKey => "git-deploy-key",
        }
    }

    /// The kind `name` spells, or a field error listing the kinds Berth deploys.
    pub fn parse(field: &str, name: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| FieldError::not_one_of(field, &Self::names()))
    }

    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|kind| kind.as_str()).collect()
    }

    /// Whether the source is a git repository Berth fetches.
    pub fn is_git(self) -> bool {
        matches!(
            self,
            Self::LocalGit | Self::RemoteGit | Self::GitPublic | Self::GitDeployKey
        )
    }

    /// Whether the source is built into an image (everything but a prebuilt image).
    pub fn is_built(self) -> bool {
        self != Self::DockerImage
    }
}

/// How a resource is built and run (`runtimeProfile.strategy`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BuildStrategy {
    /// Chosen from the source: a prebuilt image is pulled; a compose stack runs its Compose
    /// file; a static site (or a publish directory) is served; a base image runs the
    /// workspace commands; otherwise the Dockerfile builds, or a folder holding only an
    /// `index.html` is served as a static site.
    #[default]
    Auto,
    /// The source's Dockerfile (`dockerfilePath`, default `Dockerfile`).
    Dockerfile,
    /// The services of a Compose file (`dockerComposeFilePath`), for `compose-stack` resources.
    DockerCompose,
    /// A prebuilt image (`docker-image` source).
    PrebuiltImage,
    /// Install, build and start commands on `baseImage`; Berth writes the Dockerfile.
    WorkspaceCommands,
    /// The files of `publishDirectory` served as they are, after the install and build
    /// commands when there are any.
    Static,
}

impl BuildStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Dockerfile => "dockerfile",
            Self::DockerCompose => "docker-compose",
            Self::PrebuiltImage => "prebuilt-image",
            Self::WorkspaceCommands => "workspace-commands",
            Self::Static => "static",
        }
    }
}

/// A source's fields, whether from a request or a stored spec, for [`check_source`].
#[derive(Clone, Copy, Debug)]
pub struct SourceFields<'a> {
    pub kind: &'a str,
    pub locator: &'a str,
    pub base_directory: Option<&'a str>,
    pub git_ref: Option<&'a str>,
    pub commit_sha: Option<&'a str>,
    pub metadata: &'a BTreeMap<String, String>,
}

/// `source.metadata` key naming the SshCredential whose key reads a repository over SSH.
pub const CREDENTIAL_ID: &str = "credentialId";
/// `source.metadata` key pinning the git host's SSH key (`SHA256:…`).
pub const HOST_KEY_FINGERPRINT: &str = "hostKeyFingerprint";

/// Checks what a source says on its own: a kind Berth deploys, a locator of that kind, git
/// settings only on git sources, metadata keys the kind reads, a base directory that stays
/// inside the source. Returns the kind.
pub fn check_source(source: SourceFields<'_>) -> Result<SourceKind, FieldError> {
    let kind = SourceKind::parse("source.kind", source.kind)?;
    check_locator(kind, source.locator)?;
    let transport = match kind.is_git() {
        true => RepoLocator::parse(source.locator).ok().map(|r| r.transport),
        false => None,
    };
    if !kind.is_git() {
        for (field, value) in [
            ("source.gitRef", source.git_ref),
            ("source.commitSha", source.commit_sha),
        ] {
            if value.is_some() {
                return Err(FieldError::new(
                    field,
                    format!("{field} applies to git sources only, not {}", kind.as_str()),
                ));
            }
        }
    }
    if let Some(sha) = source.commit_sha {
        check_commit_sha("source.commitSha", sha)?;
    }
    if let Some(reference) = source.git_ref {
        check_git_ref("source.gitRef", reference)?;
    }
    if let Some(base) = source.base_directory {
        if !kind.is_built() {
            return Err(FieldError::new(
                "source.baseDirectory",
                "source.baseDirectory applies to sources Berth builds, not a prebuilt image",
            ));
        }
        relative_path("source.baseDirectory", base)?;
    }
    check_metadata(kind, transport, source.metadata)?;
    Ok(kind)
}

fn check_locator(kind: SourceKind, locator: &str) -> Result<(), FieldError> {
    let field = "source.locator";
    let refuse = |message: String| Err(FieldError::new(field, format!("{field}: {message}")));
    match kind {
        SourceKind::DockerImage if locator.contains(char::is_whitespace) => {
            refuse("an image reference has no spaces".into())
        }
        SourceKind::DockerImage => Ok(()),
        SourceKind::LocalFolder if !locator.starts_with('/') => refuse(format!(
            "a local-folder locator is an absolute directory path on the controller, not `{locator}`"
        )),
        SourceKind::LocalFolder => Ok(()),
        _ => {
            let repository = match RepoLocator::parse(locator) {
                Ok(repository) => repository,
                Err(error) => return refuse(error.0),
            };
            match (kind, repository.transport) {
                (SourceKind::LocalGit, GitTransport::Local) => Ok(()),
                (SourceKind::LocalGit, _) => refuse(
                    "a local-git locator is an absolute path on the controller; use remote-git \
                     for a URL"
                        .into(),
                ),
                (_, GitTransport::Local) => refuse(format!(
                    "a {} locator is a URL; use local-git for a path on the controller",
                    kind.as_str()
                )),
                (SourceKind::GitPublic, GitTransport::Ssh) => refuse(
                    "git-public reads without a credential: use an https://, http:// or git:// \
                     URL, or git-deploy-key for SSH"
                        .into(),
                ),
                (SourceKind::GitDeployKey, transport) if !transport.takes_deploy_key() => refuse(
                    "a deploy key authenticates over SSH: use ssh://git@host/owner/repo.git or \
                     git@host:owner/repo.git"
                        .into(),
                ),
                _ => Ok(()),
            }
        }
    }
}

fn check_metadata(
    kind: SourceKind,
    transport: Option<GitTransport>,
    metadata: &BTreeMap<String, String>,
) -> Result<(), FieldError> {
    let over_ssh = transport == Some(GitTransport::Ssh);
    let allowed: &[&str] = if over_ssh {
        &[CREDENTIAL_ID, HOST_KEY_FINGERPRINT]
    } else {
        &[]
    };
    for (key, value) in metadata {
        let field = format!("source.metadata.{key}");
        if !allowed.contains(&key.as_str()) {
            let settings = match allowed.is_empty() {
                true => "it has none".to_string(),
                false => format!("it reads {}", allowed.join(", ")),
            };
            return Err(FieldError::new(
                &field,
                format!(
                    "{field} is not a setting of this {} source; {settings}",
                    kind.as_str()
                ),
            ));
        }
        bounded(&field, value, crate::limits::TEXT_MAX)?;
    }
    if let Some(pin) = metadata.get(HOST_KEY_FINGERPRINT)
        && !pin.starts_with("SHA256:")
    {
        let field = format!("source.metadata.{HOST_KEY_FINGERPRINT}");
        return Err(FieldError::new(
            &field,
            format!("{field} is a key's SHA-256 fingerprint as ssh-keygen -l prints it (SHA256:…)"),
        ));
    }
    if over_ssh && !metadata.contains_key(CREDENTIAL_ID) {
        let field = format!("source.metadata.{CREDENTIAL_ID}");
        return Err(FieldError::new(
            &field,
            format!(
                "{field} is required: the id of the SSH credential whose key (a deploy key) \
                 reads this repository"
            ),
        ));
    }
    Ok(())
}

/// A full commit id (spec: 40 or 64 lower-case hex digits).
pub fn check_commit_sha(field: &str, sha: &str) -> Result<(), FieldError> {
    let hex = sha
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if hex && matches!(sha.len(), 40 | 64) {
        return Ok(());
    }
    Err(FieldError::new(
        field,
        format!("{field} must be a full commit id: 40 (or 64) lower-case hex digits"),
    ))
}

/// A branch, tag or full ref name as git allows it (no spaces, `..`, `~^:?*[\`, no leading
/// `-`).
pub fn check_git_ref(field: &str, reference: &str) -> Result<(), FieldError> {
    bounded(field, reference, crate::limits::TEXT_MAX)?;
    let forbidden = |c: char| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c);
    let valid = !reference.contains("..")
        && !reference.starts_with('-')
        && !reference.starts_with('/')
        && !reference.ends_with('/')
        && !reference.ends_with(".lock")
        && !reference.contains(forbidden);
    if valid {
        return Ok(());
    }
    Err(FieldError::new(
        field,
        format!(
            "{field} must be a branch, tag or ref name such as main, v1.2.0 or refs/heads/main"
        ),
    ))
}

/// A path relative to the source that stays inside it: no leading `/`, no `..`.
pub fn relative_path(field: &str, path: &str) -> Result<(), FieldError> {
    bounded(field, path, crate::limits::TEXT_MAX)?;
    if path.starts_with('/') || path.split(['/', '\\']).any(|part| part == "..") {
        return Err(FieldError::new(
            field,
            format!(
                "{field} `{path}` must be a relative path inside the source (no `..`, not absolute)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: &str, locator: &str, metadata: &[(&str, &str)]) -> Result<SourceKind, String> {
        let metadata = metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        check_source(SourceFields {
            kind,
            locator,
            base_directory: None,
            git_ref: None,
            commit_sha: None,
            metadata: &metadata,
        })
        .map_err(|e| format!("{}: {}", e.field, e.message))
    }

    #[test]
    fn each_kind_takes_its_own_locators() {
        let key = [(CREDENTIAL_ID, "deploy-key")];
        let accepted = [
            ("docker-image", "berth/sample-app:1", &[][..]),
            ("local-folder", "/srv/app", &[]),
            ("local-git", "/srv/repos/app.git", &[]),
            ("remote-git", "https://github.com/acme/shop.git", &[]),
            ("remote-git", "git@github.com:acme/shop.git", &key),
            ("git-public", "git://127.0.0.1/app.git", &[]),
            (
                "git-deploy-key",
                "ssh://root@127.0.0.1:2222/srv/app.git",
                &key,
            ),
        ];
        for (kind, locator, metadata) in accepted {
            assert!(check(kind, locator, metadata).is_ok(), "{kind} {locator}");
        }
        let refused = [
            ("git", "https://x/y.git", &[][..], "source.kind"),
            ("local-folder", "app", &[], "absolute directory"),
            ("local-git", "https://x/y.git", &[], "use remote-git"),
            ("remote-git", "/srv/app.git", &[], "use local-git"),
            (
                "git-public",
                "git@github.com:a/b.git",
                &[],
                "git-deploy-key",
            ),
            (
                "git-deploy-key",
                "https://github.com/a/b.git",
                &key,
                "over SSH",
            ),
            (
                "git-deploy-key",
                "git@github.com:a/b.git",
                &[],
                "credentialId is required",
            ),
            (
                "remote-git",
                "https://github.com/a/b.git",
                &key,
                "not a setting",
            ),
            ("docker-image", "my image", &[], "no spaces"),
        ];
        for (kind, locator, metadata, reason) in refused {
            let error = check(kind, locator, metadata).unwrap_err();
            assert!(error.contains(reason), "{kind} {locator}: {error}");
        }
    }

    #[test]
    fn git_settings_are_checked_and_only_on_git_sources() {
        let metadata = BTreeMap::new();
        let fields = |kind, git_ref, commit_sha, base_directory| SourceFields {
            kind,
            locator: if kind == "docker-image" {
                "app:1"
            } else {
                "https://h/a/b"
            },
            base_directory,
            git_ref,
            commit_sha,
            metadata: &metadata,
        };
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert!(check_source(fields("remote-git", Some("main"), Some(sha), Some("web"))).is_ok());
        let cases = [
            (
                fields("docker-image", Some("main"), None, None),
                "source.gitRef",
            ),
            (
                fields("docker-image", None, None, Some("web")),
                "source.baseDirectory",
            ),
            (
                fields("remote-git", None, Some("abc123"), None),
                "source.commitSha",
            ),
            (
                fields("remote-git", Some("feature..x"), None, None),
                "source.gitRef",
            ),
            (
                fields("remote-git", Some("a b"), None, None),
                "source.gitRef",
            ),
            (
                fields("remote-git", None, None, Some("../up")),
                "source.baseDirectory",
            ),
        ];
        for (fields, field) in cases {
            assert_eq!(check_source(fields).unwrap_err().field, field);
        }
    }
}
