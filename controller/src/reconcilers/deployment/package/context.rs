//! A build context from a folder: listed with its `.dockerignore` applied (a minimal reading:
//! `*`, `?`, `**`, `!` exceptions), capped in size, and streamed as a tar archive in chunks, so
//! a large context is never held in memory whole.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Code;
use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};

/// Largest context uploaded, counted in file bytes: beyond it a folder is most likely not
/// meant to be sent whole (a `.dockerignore` can leave out what the build does not need).
pub const MAX_CONTEXT_BYTES: u64 = 512 * 1024 * 1024;
/// Size of the chunks the archive is sent in.
const CHUNK: usize = 256 * 1024;
/// Chunks buffered ahead of the upload.
const CHUNKS_AHEAD: usize = 8;

/// One file, directory or symlink of the context.
#[derive(Debug)]
pub struct Entry {
    /// Path inside the archive.
    pub name: PathBuf,
    /// Where it is on disk.
    pub path: PathBuf,
}

/// What a context consists of.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<Entry>,
    /// Bytes of regular files.
    pub bytes: u64,
}

/// The patterns of a `.dockerignore`.
#[derive(Debug, Default)]
pub struct Ignore {
    /// `(excludes, pattern segments)`, in file order: the last matching pattern decides.
    rules: Vec<(bool, Vec<String>)>,
}

impl Ignore {
    /// The `.dockerignore` at the root of `folder`, or no patterns when there is none.
    pub fn read(folder: &Path) -> Result<Self, PackageFailure> {
        match std::fs::read_to_string(folder.join(".dockerignore")) {
            Ok(text) => Ok(Self::parse(&text)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(unreadable(&folder.join(".dockerignore"), &error)),
        }
    }

    /// Parses patterns as Docker does: `#` comments, `!` exceptions, cleaned relative paths.
    pub fn parse(text: &str) -> Self {
        let rules = text
            .trim_start_matches('\u{feff}')
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let line = line.trim();
                let (excludes, pattern) = match line.strip_prefix('!') {
                    Some(rest) => (false, rest.trim()),
                    None => (true, line),
                };
                let segments = clean(pattern);
                (!segments.is_empty()).then_some((excludes, segments))
            })
            .collect();
        Self { rules }
    }

    /// Whether `path` (relative, `/`-separated) is left out.
    pub fn excludes(&self, path: &str) -> bool {
        let segments: Vec<&str> = path.split('/').collect();
        let mut excluded = false;
        for (excludes, pattern) in &self.rules {
            // A pattern matching a parent directory covers everything below it.
            let hit = (1..=segments.len()).any(|n| matches(pattern, &segments[..n]));
            if hit {
                excluded = *excludes;
            }
        }
        excluded
    }

    /// Whether some exception could bring back a file inside an excluded directory.
    fn has_exceptions(&self) -> bool {
        self.rules.iter().any(|(excludes, _)| !excludes)
    }
}

/// A pattern's path segments with `.` dropped and `..` applied, as Go's `filepath.Clean`.
fn clean(pattern: &str) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    for part in pattern.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other.to_string()),
        }
    }
    segments
}

/// Whether pattern segments (with `**` for any number of segments) match path segments.
fn matches(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| matches(rest, &path[skip..]))
        }
        Some((first, rest)) => {
            !path.is_empty()
                && glob(
                    &first.chars().collect::<Vec<_>>(),
                    &path[0].chars().collect::<Vec<_>>(),
                )
                && matches(rest, &path[1..])
        }
    }
}

/// One segment against a glob with `*` and `?`.
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some(('?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

fn unreadable(path: &Path, error: &io::Error) -> PackageFailure {
    failure(
        Code::BuildContextUnreadable,
        format!("could not read {}: {error}", path.display()),
    )
}

fn too_large(bytes: u64) -> PackageFailure {
    failure(
        Code::BuildContextTooLarge,
        format!(
            "the build context exceeds {} MiB (at least {} MiB); leave out what the build does not need with a .dockerignore",
            MAX_CONTEXT_BYTES >> 20,
            bytes >> 20
        ),
    )
}

/// Lists `root`: everything `ignore` does not exclude, without the root-level names in
/// `skipped`, plus the root-relative files in `always` even when excluded (Docker needs the
/// Dockerfile and `.dockerignore`). Sockets and devices are left out.
pub fn list(
    root: &Path,
    ignore: &Ignore,
    skipped: &[&str],
    always: &[&str],
) -> Result<Listing, PackageFailure> {
    let mut listing = Listing::default();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| unreadable(&dir, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| unreadable(&dir, &e))?;
            let file_name = entry.file_name();
            let name = file_name.to_string_lossy();
            if prefix.is_empty() && skipped.contains(&name.as_ref()) {
                continue;
            }
            let relative = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            // Not followed: a symlink goes into the archive as a symlink.
            let meta = entry.metadata().map_err(|e| unreadable(&path, &e))?;
            let excluded = ignore.excludes(&relative) && !always.contains(&relative.as_str());
            let archived = Path::new(&relative).to_path_buf();
            if meta.is_dir() {
                if !excluded {
                    listing.files.push(Entry {
                        name: archived,
                        path: path.clone(),
                    });
                }
                if !excluded || ignore.has_exceptions() {
                    pending.push((path, relative));
                }
            } else if excluded {
                continue;
            } else if meta.is_file() || meta.is_symlink() {
                add(&mut listing, archived, path, &meta)?;
            }
        }
    }
    let listed: HashSet<PathBuf> = listing.files.iter().map(|e| e.name.clone()).collect();
    for name in always {
        let path = root.join(name);
        if listed.contains(Path::new(name)) {
            continue;
        }
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.is_file()
        {
            add(&mut listing, PathBuf::from(name), path, &meta)?;
        }
    }
    Ok(listing)
}

fn add(
    listing: &mut Listing,
    name: PathBuf,
    path: PathBuf,
    meta: &std::fs::Metadata,
) -> Result<(), PackageFailure> {
    if meta.is_file() {
        listing.bytes += meta.len();
        if listing.bytes > MAX_CONTEXT_BYTES {
            return Err(too_large(listing.bytes));
        }
    }
    listing.files.push(Entry { name, path });
    Ok(())
}

/// Streams the archive of `listing` plus `generated` `(name, content)` files. The handle ends
/// with the error that stopped reading the context, if any; an upload that ended early (the
/// request failed) is not one.
pub fn stream(
    listing: Listing,
    generated: Vec<(String, Vec<u8>)>,
) -> (
    impl Stream<Item = io::Result<Bytes>> + Send + 'static,
    JoinHandle<io::Result<()>>,
) {
    let (sender, receiver) = mpsc::channel(CHUNKS_AHEAD);
    let writer = tokio::task::spawn_blocking(move || {
        let out = ChunkWriter {
            sender: sender.clone(),
            buffer: Vec::with_capacity(CHUNK),
        };
        let written = write(&listing, &generated, out);
        match written {
            Err(_) if sender.is_closed() => Ok(()),
            Err(error) => {
                // Ends the upload, so Docker does not build a truncated context.
                let copy = io::Error::new(error.kind(), error.to_string());
                let _ = sender.blocking_send(Err(copy));
                Err(error)
            }
            Ok(()) => Ok(()),
        }
    });
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    });
    (body, writer)
}

/// Writes the tar archive to `out`.
fn write(listing: &Listing, generated: &[(String, Vec<u8>)], out: impl Write) -> io::Result<()> {
    let mut builder = tar::Builder::new(out);
    builder.follow_symlinks(false);
    builder.sparse(false);
    for entry in &listing.files {
        builder
            .append_path_with_name(&entry.path, &entry.name)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", entry.path.display())))?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for (name, content) in generated {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(now);
        builder.append_data(&mut header, name, content.as_slice())?;
    }
    builder.into_inner()?.flush()
}

/// Hands the archive to the upload in chunks, waiting while the upload is behind.
struct ChunkWriter {
    sender: mpsc::Sender<io::Result<Bytes>>,
    buffer: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        self.sender
            .blocking_send(Ok(chunk.into()))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the build request has ended"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    /// A scratch folder removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(files: &[(&str, &str)]) -> Self {
            let unique = format!(
                "berth-context-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            );
            let root = std::env::temp_dir().join(unique.replace(['(', ')'], ""));
            let _ = std::fs::remove_dir_all(&root);
            for (name, content) in files {
                let path = root.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content).unwrap();
            }
            Self(root)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(listing: &Listing) -> Vec<String> {
        let mut names: Vec<String> = listing
            .files
            .iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn dockerignore_patterns_exclude_with_exceptions() {
        let ignore = Ignore::parse(
            "# comment\n/node_modules/\n*.log\n**/*.tmp\n!keep.log\n./build/../dist\n",
        );
        assert!(ignore.excludes("node_modules"));
        assert!(ignore.excludes("node_modules/a/b.js"));
        assert!(ignore.excludes("debug.log"));
        assert!(!ignore.excludes("keep.log"));
        assert!(
            !ignore.excludes("src/debug.log"),
            "`*.log` is root-level only"
        );
        assert!(ignore.excludes("a/b/c.tmp"));
        assert!(ignore.excludes("dist/index.html"));
        assert!(!ignore.excludes("src/main.rs"));
    }

    #[test]
    fn listing_applies_the_ignore_file_and_always_keeps_the_dockerfile() {
        let scratch = Scratch::new(&[
            (".dockerignore", "Dockerfile\n.git\nsecret.txt\n"),
            ("Dockerfile", "FROM scratch\n"),
            (".git/HEAD", "ref"),
            ("secret.txt", "x"),
            ("www/index.html", "hi"),
        ]);
        let ignore = Ignore::read(&scratch.0).unwrap();
        let listing = list(&scratch.0, &ignore, &[], &["Dockerfile", ".dockerignore"]).unwrap();
        assert_eq!(
            names(&listing),
            vec![".dockerignore", "Dockerfile", "www", "www/index.html"]
        );
        let skipped = list(&scratch.0, &ignore, &["www"], &[]).unwrap();
        assert_eq!(names(&skipped), vec![".dockerignore"]);
    }

    #[test]
    fn a_context_over_the_cap_is_refused_before_anything_is_read() {
        let scratch = Scratch::new(&[("small.txt", "x")]);
        // Sparse: the size counts, no disk space is used.
        let big = std::fs::File::create(scratch.0.join("big.bin")).unwrap();
        big.set_len(MAX_CONTEXT_BYTES).unwrap();
        let error = list(&scratch.0, &Ignore::default(), &[], &[]).unwrap_err();
        assert_eq!(error.code, "build_context_too_large");
        let ignore = Ignore::parse("*.bin\n");
        assert!(list(&scratch.0, &ignore, &[], &[]).is_ok());
    }

    #[tokio::test]
    async fn the_streamed_archive_holds_the_files_and_generated_ones() {
        let scratch = Scratch::new(&[("index.html", "<h1>hi</h1>"), ("css/site.css", "a{}")]);
        let listing = list(&scratch.0, &Ignore::default(), &[], &[]).unwrap();
        assert_eq!(listing.bytes, 14);
        let generated = vec![(".berth.Dockerfile".to_string(), b"FROM x\n".to_vec())];
        let (body, writer) = stream(listing, generated);
        let chunks: Vec<Bytes> = body.map(|c| c.unwrap()).collect().await;
        writer.await.unwrap().unwrap();
        let archive = chunks.concat();
        let mut read = tar::Archive::new(archive.as_slice());
        let mut found = Vec::new();
        for entry in read.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut content = String::new();
            std::io::Read::read_to_string(&mut entry, &mut content).unwrap();
            found.push((entry.path().unwrap().display().to_string(), content));
        }
        found.sort();
        assert_eq!(
            found,
            vec![
                (".berth.Dockerfile".into(), "FROM x\n".into()),
                ("css".into(), String::new()),
                ("css/site.css".into(), "a{}".into()),
                ("index.html".into(), "<h1>hi</h1>".into()),
            ]
        );
    }

    #[tokio::test]
    async fn an_upload_that_ends_early_is_no_context_error() {
        let scratch = Scratch::new(&[("big.bin", &"x".repeat(4 * CHUNK))]);
        let listing = list(&scratch.0, &Ignore::default(), &[], &[]).unwrap();
        let (body, writer) = stream(listing, Vec::new());
        drop(body);
        writer.await.unwrap().unwrap();
    }
}
