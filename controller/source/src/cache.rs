//! The controller's copies of the repositories it deploys: one bare, shallow repository per
//! repository identity under the cache root, fetched into by one attempt at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use berth_remote::{ClientKey, Endpoint, ServerConnection, Timeouts};
use berth_vocabulary::repository::{GitTransport, RepoLocator};
use sha2::{Digest, Sha256};
use tokio::runtime::Handle;

use crate::checkout::{self, Exported};
use crate::error::SourceError;
use crate::fetch::{self, CommitInfo, Wanted};
use crate::transport::Connect;

/// What to fetch.
pub struct FetchRequest {
    pub repository: RepoLocator,
    /// Branch, tag or ref; the remote's default branch when `None`.
    pub git_ref: Option<String>,
    /// A commit that must be on `git_ref`; its tip when `None`.
    pub commit: Option<String>,
    /// How to log in over SSH; `None` for the other transports.
    pub ssh: Option<SshAccess>,
}

/// An SSH login to a git host.
pub struct SshAccess {
    pub key: ClientKey,
    /// The host key the host must show (`SHA256:…`); any, recorded, when `None`.
    pub pinned_host_key: Option<String>,
}

/// What a fetch found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub commit: CommitInfo,
    /// The SSH host key the git host showed, to pin for the next fetch.
    pub host_key_fingerprint: Option<String>,
}

/// Copies of repositories under one directory; cheap to clone.
#[derive(Clone)]
pub struct SourceCache {
    root: PathBuf,
    /// One lock per repository: a fetch and an export of the same copy never overlap.
    locks: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl SourceCache {
    /// A cache under `root`; exports left by a process that stopped mid-way are removed.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let _ = std::fs::remove_dir_all(root.join("exports"));
        Self {
            root,
            locks: Arc::default(),
        }
    }

    /// Where the copy of `repository` lives.
    fn copy_of(&self, repository: &RepoLocator) -> PathBuf {
        let digest = Sha256::digest(repository.identity().as_bytes());
        self.root
            .join("repositories")
            .join(hex::encode(&digest[..12]))
    }

    fn lock_of(&self, repository: &RepoLocator) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(repository.identity()).or_default().clone()
    }

    /// Brings `request`'s commit into the copy of its repository and says which it is.
    pub async fn fetch(&self, request: &FetchRequest) -> Result<Fetched, SourceError> {
        let held = self.lock_of(&request.repository).lock_owned().await;
        let wanted = Wanted {
            git_ref: request.git_ref.clone(),
            commit: request.commit.clone(),
        };
        if request.repository.transport == GitTransport::Local {
            let path = PathBuf::from(request.repository.remote_path());
            let commit = blocking(held, move || fetch::resolve_local(&path, &wanted)).await?;
            return Ok(Fetched {
                commit,
                host_key_fingerprint: None,
            });
        }
        let (connect, host_key_fingerprint) = self.connect(request).await?;
        let copy = self.copy_of(&request.repository);
        let repository = request.repository.clone();
        let commit = blocking(held, move || {
            fetch::fetch_into(&copy, &repository, connect, &wanted)
        })
        .await?;
        Ok(Fetched {
            commit,
            host_key_fingerprint,
        })
    }

    /// How the blocking fetch reaches the repository; SSH logs in here, so the host key is
    /// checked before anything is sent.
    async fn connect(
        &self,
        request: &FetchRequest,
    ) -> Result<(Connect, Option<String>), SourceError> {
        let repository = &request.repository;
        let runtime = Handle::current();
        if repository.transport != GitTransport::Ssh {
            return Ok((Connect::new(repository, runtime, None), None));
        }
        let access = request.ssh.as_ref().ok_or_else(|| {
            SourceError::Refused(format!(
                "{} is reached over SSH, which needs a deploy key (source.metadata.credentialId)",
                repository.host
            ))
        })?;
        let endpoint = Endpoint {
            host: repository.host.clone(),
            port: repository.port_or_default(),
            username: repository.ssh_user().to_string(),
        };
        let connection = ServerConnection::open(
            &endpoint,
            &access.key,
            access.pinned_host_key.as_deref(),
            &Timeouts::default(),
        )
        .await
        .map_err(|error| SourceError::from_ssh(&repository.host, error))?;
        let seen = connection.host_key_fingerprint().to_string();
        let connection = Arc::new(connection);
        Ok((
            Connect::new(repository, runtime, Some(connection)),
            Some(seen),
        ))
    }

    /// Writes the tree of `commit` (the directory `base_directory` of it, when given) into a
    /// new folder, removed when the returned [`Exported`] is dropped.
    pub async fn export(
        &self,
        repository: &RepoLocator,
        commit: &str,
        base_directory: Option<&str>,
    ) -> Result<Exported, SourceError> {
        let held = self.lock_of(repository).lock_owned().await;
        let copy = match repository.transport {
            GitTransport::Local => PathBuf::from(repository.remote_path()),
            _ => self.copy_of(repository),
        };
        let exports = self.root.join("exports");
        let (commit, base) = (commit.to_string(), base_directory.map(str::to_string));
        blocking(held, move || {
            checkout::export(&copy, &commit, base.as_deref(), &exports)
        })
        .await
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Runs git work off the async threads, holding the repository's lock until the work ends:
/// a caller that stops waiting (its attempt cancelled) must not let the next fetch start while
/// gix still holds the copy's lock files.
async fn blocking<T: Send + 'static>(
    held: tokio::sync::OwnedMutexGuard<()>,
    work: impl FnOnce() -> Result<T, SourceError> + Send + 'static,
) -> Result<T, SourceError> {
    tokio::task::spawn_blocking(move || {
        let _held = held;
        work()
    })
    .await
    .unwrap_or_else(|error| Err(SourceError::Local(error.to_string())))
}
