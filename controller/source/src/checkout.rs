//! A commit's tree written out as a plain folder (no `.git`), the build context of an attempt.
//! Files keep their executable bit, symlinks stay symlinks, submodules are left out.

use std::fs;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::objs::tree::EntryKind;

use crate::error::{SourceError, gix_error};

/// A commit's files in a folder of their own, removed when this is dropped.
#[derive(Debug)]
pub struct Exported {
    folder: tempfile::TempDir,
    pub files: usize,
    pub bytes: u64,
    /// Paths of submodules, which are not fetched.
    pub skipped_submodules: Vec<String>,
}

impl Exported {
    pub fn path(&self) -> &Path {
        self.folder.path()
    }
}

/// Writes `commit`'s tree (its directory `base` when given) into a new folder under `exports`.
pub fn export(
    copy: &Path,
    commit: &str,
    base: Option<&str>,
    exports: &Path,
) -> Result<Exported, SourceError> {
    let repo = gix::open(copy).map_err(|error| gix_error("opening the repository copy", error))?;
    let id = ObjectId::from_hex(commit.as_bytes())
        .map_err(|_| SourceError::Local(format!("`{commit}` is not a commit id")))?;
    let tree = repo
        .find_commit(id)
        .map_err(|error| gix_error("reading the commit", error))?
        .tree()
        .map_err(|error| gix_error("reading the commit's files", error))?;
    let tree = match base
        .map(|b| b.trim_matches('/'))
        .filter(|b| !b.is_empty() && *b != ".")
    {
        None => tree,
        Some(base) => subtree(&repo, tree, base, commit)?,
    };
    let local = |error: std::io::Error| SourceError::Local(format!("writing the files: {error}"));
    fs::create_dir_all(exports).map_err(local)?;
    let folder = tempfile::Builder::new()
        .prefix("export-")
        .tempdir_in(exports)
        .map_err(local)?;
    let mut exported = Exported {
        folder,
        files: 0,
        bytes: 0,
        skipped_submodules: Vec::new(),
    };
    let root = exported.path().to_path_buf();
    write_tree(&repo, &tree, &root, &mut exported, &PathBuf::new())?;
    Ok(exported)
}

fn subtree<'r>(
    repo: &'r gix::Repository,
    tree: gix::Tree<'r>,
    base: &str,
    commit: &str,
) -> Result<gix::Tree<'r>, SourceError> {
    let missing = || {
        SourceError::Refused(format!(
            "commit {commit} has no directory `{base}` (source.baseDirectory)"
        ))
    };
    let entry = tree
        .lookup_entry_by_path(base)
        .map_err(|error| gix_error("reading the base directory", error))?
        .ok_or_else(missing)?;
    if !entry.mode().is_tree() {
        return Err(missing());
    }
    repo.find_tree(entry.object_id())
        .map_err(|error| gix_error("reading the base directory", error))
}

fn write_tree(
    repo: &gix::Repository,
    tree: &gix::Tree<'_>,
    dir: &Path,
    exported: &mut Exported,
    relative: &Path,
) -> Result<(), SourceError> {
    let local = |error: std::io::Error| SourceError::Local(format!("writing the files: {error}"));
    for entry in tree.iter() {
        let entry = entry.map_err(|error| gix_error("reading a directory", error))?;
        let name = entry.filename().to_string();
        // A tree crafted to escape the folder is not written out.
        if name.is_empty() || name == "." || name == ".." || name == ".git" || name.contains('/') {
            continue;
        }
        let path = dir.join(&name);
        let id = entry.object_id();
        match entry.mode().kind() {
            EntryKind::Tree => {
                fs::create_dir(&path).map_err(local)?;
                let sub = repo
                    .find_tree(id)
                    .map_err(|error| gix_error("reading a directory", error))?;
                write_tree(repo, &sub, &path, exported, &relative.join(&name))?;
            }
            EntryKind::Blob | EntryKind::BlobExecutable => {
                let blob = repo
                    .find_blob(id)
                    .map_err(|error| gix_error("reading a file", error))?;
                fs::write(&path, &blob.data).map_err(local)?;
                if entry.mode().kind() == EntryKind::BlobExecutable {
                    set_executable(&path).map_err(local)?;
                }
                exported.files += 1;
                exported.bytes += blob.data.len() as u64;
            }
            EntryKind::Link => {
                let blob = repo
                    .find_blob(id)
                    .map_err(|error| gix_error("reading a link", error))?;
                let target = String::from_utf8_lossy(&blob.data).to_string();
                std::os::unix::fs::symlink(target, &path).map_err(local)?;
                exported.files += 1;
            }
            EntryKind::Commit => exported
                .skipped_submodules
                .push(relative.join(&name).display().to_string()),
        }
    }
    Ok(())
}

fn set_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
}
