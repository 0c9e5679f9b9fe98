//! The first half of packaging a git source: its commit fetched into the controller's copy of
//! the repository (the deploy key from the SshCredential, the git host's key checked against
//! the pin before the key is offered), reported in the output and recorded on the attempt.

use std::sync::Arc;

use berth_crds::deployment::{Deployment, DeploymentErrorCode as Code, SourceCommit};
use berth_crds::progress::OutputStream;
use berth_remote::ClientKey;
use berth_source::{FetchRequest, Fetched, RepoLocator, SourceCache, SourceError, SshAccess};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};
use crate::reconcilers::deployment::plan::{GitOrigin, Origin, Packaging, Plan};
use crate::reconcilers::deployment::progress::OutputSink;

/// What a git build needs besides its plan: the controller's copies, and the deploy key the
/// plan phase read from the source's SshCredential.
#[derive(Clone)]
pub struct SourceAccess {
    pub cache: SourceCache,
    pub deploy_key: Option<ClientKey>,
}

/// A fetched commit of a git source.
#[derive(Clone, Debug)]
pub struct FetchedSource {
    pub repository: RepoLocator,
    pub git_ref: Option<String>,
    pub fetched: Fetched,
}

impl FetchedSource {
    /// The commit as the attempt's status records it.
    pub fn record(&self) -> SourceCommit {
        let commit = &self.fetched.commit;
        SourceCommit {
            repository: self.repository.identity(),
            git_ref: self.git_ref.clone(),
            sha: commit.sha.clone(),
            subject: commit.subject.clone(),
            author_name: commit.author_name.clone(),
            author_email: commit.author_email.clone(),
            authored_at: Timestamp::from_second(commit.authored_at).ok().map(Time),
            host_key_fingerprint: self.fetched.host_key_fingerprint.clone(),
        }
    }
}

/// The git origin of `plan`, if its image is built from a repository.
pub fn git_origin(plan: &Plan) -> Option<&GitOrigin> {
    match &plan.packaging {
        Packaging::Build(build) => match &build.origin {
            Origin::Git(git) => Some(git),
            Origin::Folder(_) => None,
        },
        Packaging::Pull { .. } => None,
    }
}

/// The git origin of `plan`, to complete in the plan phase.
pub fn git_origin_mut(plan: &mut Plan) -> Option<&mut GitOrigin> {
    match &mut plan.packaging {
        Packaging::Build(build) => match &mut build.origin {
            Origin::Git(git) => Some(git),
            Origin::Folder(_) => None,
        },
        Packaging::Pull { .. } => None,
    }
}

/// The git host key the newest of `attempts` recorded for `repository`, if any.
pub fn recorded_host_key(attempts: &[Arc<Deployment>], repository: &RepoLocator) -> Option<String> {
    let identity = repository.identity();
    let mut recorded: Vec<&Arc<Deployment>> = attempts
        .iter()
        .filter(|d| {
            let commit = d.status.as_ref().and_then(|s| s.source_commit.as_ref());
            commit.is_some_and(|c| c.repository == identity && c.host_key_fingerprint.is_some())
        })
        .collect();
    recorded.sort_by_key(|d| d.attempt_order());
    let newest = recorded.last()?;
    newest
        .status
        .as_ref()?
        .source_commit
        .as_ref()?
        .host_key_fingerprint
        .clone()
}

/// Fetches the plan's commit when its source is a git repository; `None` for other sources.
pub async fn fetch(
    plan: &Plan,
    access: &SourceAccess,
    output: &OutputSink,
) -> Result<Option<FetchedSource>, PackageFailure> {
    let Some(git) = git_origin(plan) else {
        return Ok(None);
    };
    let shown_ref = git.git_ref.as_deref().unwrap_or("the default branch");
    let wanted = match &git.commit {
        Some(sha) => format!("commit {sha} on {shown_ref}"),
        None => shown_ref.to_string(),
    };
    output.line(
        OutputStream::Stdout,
        &format!("Fetching {wanted} of {}", git.repository.identity()),
    );
    let ssh = ssh_access(git, access)?;
    let request = FetchRequest {
        repository: git.repository.clone(),
        git_ref: git.git_ref.clone(),
        commit: git.commit.clone(),
        ssh,
    };
    let identity = git.repository.identity();
    let fetched = access
        .cache
        .fetch(&request)
        .await
        .map_err(|error| fetch_failure(&identity, error))?;
    let commit = &fetched.commit;
    output.line(
        OutputStream::Stdout,
        &format!(
            "At commit {} \"{}\" by {}",
            short(&commit.sha),
            commit.subject,
            commit.author_name
        ),
    );
    Ok(Some(FetchedSource {
        repository: git.repository.clone(),
        git_ref: git.git_ref.clone(),
        fetched,
    }))
}

fn ssh_access(git: &GitOrigin, access: &SourceAccess) -> Result<Option<SshAccess>, PackageFailure> {
    if !git.repository.transport.takes_deploy_key() {
        return Ok(None);
    }
    let key = access.deploy_key.clone().ok_or_else(|| {
        failure(
            Code::DeployKeyInvalid,
            "the repository is read over SSH, which needs a deploy key: name its SSH credential \
             in source.metadata.credentialId",
        )
    })?;
    Ok(Some(SshAccess {
        key,
        pinned_host_key: git.pinned_host_key.clone(),
    }))
}

/// A failed fetch, its message naming the repository.
fn fetch_failure(repository: &str, error: SourceError) -> PackageFailure {
    let code = match &error {
        SourceError::Refused(_) | SourceError::Local(_) => Code::SourceFetchFailed,
        SourceError::HostKeyMismatch { .. } => Code::SourceHostKeyMismatch,
        SourceError::Unreachable(_) => Code::SourceUnreachable,
    };
    let message = error.to_string();
    match message.contains(repository) {
        true => failure(code, message),
        false => failure(code, format!("{repository}: {message}")),
    }
}

/// A commit id as people read it.
pub fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}
