//! Fetching a ref's newest commit (or a given one on it) into the bare copy of a repository,
//! shallow: depth 1, deepened only when a requested commit is older than the tip.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use berth_vocabulary::repository::RepoLocator;
use gix::ObjectId;
use gix::remote::Direction;
use gix::remote::fetch::Shallow;

use crate::error::{SourceError, gix_error};
use crate::transport::Connect;

/// Where each fetch puts the ref it fetched; one fetch of a repository runs at a time.
const FETCHED: &str = "refs/berth/fetched";
/// How far a fetch looks back for a requested commit before it fetches the whole history.
const DEEPEN_BY: u32 = 64;

/// The ref and commit an attempt wants.
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    pub git_ref: Option<String>,
    pub commit: Option<String>,
}

impl Wanted {
    fn git_ref(&self) -> &str {
        self.git_ref.as_deref().unwrap_or("HEAD")
    }

    fn shown_ref(&self) -> String {
        self.git_ref
            .clone()
            .unwrap_or_else(|| "the default branch".into())
    }
}

/// The commit an attempt deploys, as the deployment records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    pub sha: String,
    pub author_name: String,
    pub author_email: String,
    /// Seconds since the Unix epoch.
    pub authored_at: i64,
    /// The first line of the message.
    pub subject: String,
}

/// Fetches `wanted` from `repository` into the bare copy at `copy` (created when missing).
pub fn fetch_into(
    copy: &Path,
    repository: &RepoLocator,
    connect: Connect,
    wanted: &Wanted,
) -> Result<CommitInfo, SourceError> {
    let repo = open_or_init(copy)?;
    fetch_once(
        &repo,
        repository,
        &connect,
        wanted,
        Shallow::DepthAtRemote(1.try_into().expect("1 > 0")),
    )?;
    let repo = reopen(copy)?;
    let tip = fetched_tip(&repo, wanted)?;
    let Some(commit) = &wanted.commit else {
        return commit_info(&repo, tip);
    };
    let commit = parse_id(commit)?;
    let deeper = [Shallow::Deepen(DEEPEN_BY), Shallow::undo()];
    let mut repo = repo;
    for depth in deeper {
        if is_ancestor(&repo, tip, commit)? {
            return commit_info(&repo, commit);
        }
        if !repo.is_shallow().unwrap_or(true) {
            break;
        }
        fetch_once(&repo, repository, &connect, wanted, depth)?;
        repo = reopen(copy)?;
    }
    if is_ancestor(&repo, tip, commit)? {
        return commit_info(&repo, commit);
    }
    Err(SourceError::Refused(format!(
        "commit {commit} is not on {} of {}",
        wanted.shown_ref(),
        repository.identity()
    )))
}

/// Reads `wanted` in a repository on the controller's disk, in place.
pub fn resolve_local(path: &Path, wanted: &Wanted) -> Result<CommitInfo, SourceError> {
    let repo = gix::open(path).map_err(|error| {
        SourceError::Refused(format!(
            "{} is not a git repository: {error}",
            path.display()
        ))
    })?;
    let tip = repo
        .rev_parse_single(wanted.git_ref())
        .map_err(|_| {
            SourceError::Refused(format!("{} has no {}", path.display(), wanted.shown_ref()))
        })?
        .object()
        .map_err(|error| gix_error("reading the ref", error))?
        .peel_to_commit()
        .map_err(|error| gix_error("reading the ref's commit", error))?
        .id;
    let Some(commit) = &wanted.commit else {
        return commit_info(&repo, tip);
    };
    let commit = parse_id(commit)?;
    if is_ancestor(&repo, tip, commit)? {
        return commit_info(&repo, commit);
    }
    Err(SourceError::Refused(format!(
        "commit {commit} is not on {} of {}",
        wanted.shown_ref(),
        path.display()
    )))
}

fn open_or_init(copy: &Path) -> Result<gix::Repository, SourceError> {
    if copy.join("HEAD").is_file() {
        return reopen(copy);
    }
    std::fs::create_dir_all(copy)
        .map_err(|error| SourceError::Local(format!("creating {}: {error}", copy.display())))?;
    gix::init_bare(copy).map_err(|error| gix_error("creating the repository copy", error))
}

fn reopen(copy: &Path) -> Result<gix::Repository, SourceError> {
    gix::open(copy).map_err(|error| gix_error("opening the repository copy", error))
}

fn fetch_once(
    repo: &gix::Repository,
    repository: &RepoLocator,
    connect: &Connect,
    wanted: &Wanted,
    shallow: Shallow,
) -> Result<(), SourceError> {
    let refspec = format!("+{}:{FETCHED}", wanted.git_ref());
    let remote = repo
        .remote_at(repository.identity().as_str())
        .map_err(|error| gix_error("configuring the remote", error))?
        .with_fetch_tags(gix::remote::fetch::Tags::None)
        .with_refspecs([refspec.as_str()], Direction::Fetch)
        .map_err(|error| gix_error("configuring the refspec", error))?;
    let transport = connect.open()?;
    let interrupt = AtomicBool::new(false);
    let fetching = format!(
        "fetching {} of {}",
        wanted.shown_ref(),
        repository.identity()
    );
    remote
        .to_connection_with_transport(transport)
        // No credential helper, no prompt: a repository that asks for a password is private
        // and needs a deploy key.
        .with_credentials(|_| {
            Err(gix::error::Error::from_error(std::io::Error::other(
                "the repository asks for credentials: read a private repository over SSH with a \
                 deploy key (kind git-deploy-key)",
            )))
        })
        .prepare_fetch(gix::progress::Discard, Default::default())
        .map_err(|error| gix_error(&fetching, error))?
        .with_shallow(shallow)
        .receive(gix::progress::Discard, &interrupt)
        .map_err(|error| gix_error(&fetching, error))?;
    Ok(())
}

/// The commit the fetched ref points at (a tag is peeled).
fn fetched_tip(repo: &gix::Repository, wanted: &Wanted) -> Result<ObjectId, SourceError> {
    let mut reference = repo.find_reference(FETCHED).map_err(|_| {
        SourceError::Refused(format!("the repository has no {}", wanted.shown_ref()))
    })?;
    let commit = reference
        .peel_to_commit()
        .map_err(|error| gix_error("reading the fetched commit", error))?;
    Ok(commit.id)
}

fn parse_id(sha: &str) -> Result<ObjectId, SourceError> {
    ObjectId::from_hex(sha.as_bytes())
        .map_err(|_| SourceError::Refused(format!("`{sha}` is not a commit id")))
}

/// Whether `commit` is `tip` or one of its ancestors the copy holds.
fn is_ancestor(
    repo: &gix::Repository,
    tip: ObjectId,
    commit: ObjectId,
) -> Result<bool, SourceError> {
    if tip == commit {
        return Ok(true);
    }
    if !repo.has_object(commit) {
        return Ok(false);
    }
    let walk = repo
        .rev_walk([tip])
        .all()
        .map_err(|error| gix_error("walking the history", error))?;
    for info in walk {
        match info {
            Ok(info) if info.id == commit => return Ok(true),
            Ok(_) => {}
            // The walk ends at the shallow boundary.
            Err(_) => break,
        }
    }
    Ok(false)
}

fn commit_info(repo: &gix::Repository, id: ObjectId) -> Result<CommitInfo, SourceError> {
    let commit = repo
        .find_commit(id)
        .map_err(|error| gix_error("reading the commit", error))?;
    let author = commit
        .author()
        .map_err(|error| gix_error("reading the commit's author", error))?;
    let subject = commit
        .message()
        .map(|message| message.summary().to_string())
        .unwrap_or_default();
    Ok(CommitInfo {
        sha: id.to_string(),
        author_name: author.name.to_string(),
        author_email: author.email.to_string(),
        authored_at: author.time().map(|t| t.seconds).unwrap_or_default(),
        subject,
    })
}
