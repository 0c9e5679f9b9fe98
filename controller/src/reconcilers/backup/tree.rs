//! A volume's file tree read from the tar archive `docker cp` writes, as it streams past: each
//! entry's path, type, mode, owner, size, content hash and link target, digested in path
//! order. Two archives of the same tree give the same digest whatever the order of their
//! entries or their times, so a backup's tree can be compared with what a restore wrote.
//!
//! The reader takes the archive in pieces of any size (`push`); it knows the ustar header,
//! PAX extended headers (`path`, `linkpath`, `size`, `uid`, `gid`) and GNU long names, which
//! is what Docker writes.

use std::collections::BTreeMap;

use berth_crds::backup::VolumeTree;
use sha2::{Digest, Sha256};

const BLOCK: usize = 512;

/// One entry, as digested.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: char,
    mode: u32,
    uid: u64,
    gid: u64,
    size: u64,
    /// Content hash for a file; link target for a link.
    detail: String,
}

/// What the next bytes of the archive are.
enum Expecting {
    Header,
    /// The body of an entry (boxed: a hasher is large).
    Body(Box<Body>),
    Padding(usize),
    /// Two zero blocks were seen, or the archive is broken: nothing more is read.
    Ended,
}

/// The body of the entry `header` describes: `left` bytes, then padding.
struct Body {
    header: Header,
    left: u64,
    hasher: Sha256,
    /// An extended header's records, kept to be read.
    kept: Vec<u8>,
}

/// A header's fields, after any extended header that came before it.
#[derive(Clone, Debug)]
struct Header {
    path: String,
    kind: u8,
    mode: u32,
    uid: u64,
    gid: u64,
    size: u64,
    link: String,
}

/// Reads a tar archive as it streams past.
pub struct TreeReader {
    expecting: Expecting,
    pending: Vec<u8>,
    /// PAX or GNU overrides for the next entry.
    next_path: Option<String>,
    next_link: Option<String>,
    next_numbers: BTreeMap<String, u64>,
    entries: BTreeMap<String, Entry>,
    broken: Option<String>,
}

impl Default for TreeReader {
    fn default() -> Self {
        Self {
            expecting: Expecting::Header,
            pending: Vec::new(),
            next_path: None,
            next_link: None,
            next_numbers: BTreeMap::new(),
            entries: BTreeMap::new(),
            broken: None,
        }
    }
}

impl TreeReader {
    /// Reads the next piece of the archive.
    pub fn push(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            data = match std::mem::replace(&mut self.expecting, Expecting::Ended) {
                Expecting::Ended => return,
                Expecting::Padding(left) => {
                    let taken = left.min(data.len());
                    self.expecting = match left - taken {
                        0 => Expecting::Header,
                        rest => Expecting::Padding(rest),
                    };
                    &data[taken..]
                }
                Expecting::Header => {
                    let wanted = BLOCK - self.pending.len();
                    let taken = wanted.min(data.len());
                    self.pending.extend_from_slice(&data[..taken]);
                    self.expecting = Expecting::Header;
                    if self.pending.len() == BLOCK {
                        let block = std::mem::take(&mut self.pending);
                        self.header(&block);
                    }
                    &data[taken..]
                }
                Expecting::Body(mut body) => {
                    let left = usize::try_from(body.left).unwrap_or(usize::MAX);
                    let taken = left.min(data.len());
                    let piece = &data[..taken];
                    body.hasher.update(piece);
                    if is_extended(body.header.kind) {
                        body.kept.extend_from_slice(piece);
                    }
                    body.left -= taken as u64;
                    if body.left == 0 {
                        self.body_read(*body);
                    } else {
                        self.expecting = Expecting::Body(body);
                    }
                    &data[taken..]
                }
            };
        }
    }

    /// The tree, or why the archive could not be read.
    pub fn finish(self) -> Result<VolumeTree, String> {
        if let Some(why) = self.broken {
            return Err(why);
        }
        if matches!(self.expecting, Expecting::Body(_)) || !self.pending.is_empty() {
            return Err("the archive ends in the middle of an entry".into());
        }
        Ok(digest(&self.entries))
    }

    fn header(&mut self, block: &[u8]) {
        if block.iter().all(|b| *b == 0) {
            // The end marker (a second zero block follows); the root may come first, so go on.
            self.expecting = Expecting::Header;
            return;
        }
        let header = match self.parse(block) {
            Ok(header) => header,
            Err(why) => {
                self.broken = Some(why);
                self.expecting = Expecting::Ended;
                return;
            }
        };
        let left = if has_body(header.kind) {
            header.size
        } else {
            0
        };
        let body = Body {
            header,
            left,
            hasher: Sha256::new(),
            kept: Vec::new(),
        };
        if left == 0 {
            self.body_read(body);
        } else {
            self.expecting = Expecting::Body(Box::new(body));
        }
    }

    fn parse(&mut self, block: &[u8]) -> Result<Header, String> {
        let checksum = octal(&block[148..156]).ok_or("a header's checksum is not a number")?;
        if checksum != u64::from(header_sum(block)) {
            return Err("a header's checksum does not match: the archive is corrupt".into());
        }
        let name = text(&block[0..100]);
        let prefix = text(&block[345..500]);
        // Only POSIX ustar has a prefix field; GNU keeps times there.
        let ustar_path = if prefix.is_empty() || &block[257..263] != b"ustar\0" {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let number = |key: &str, field: &[u8]| {
            self.next_numbers
                .get(key)
                .copied()
                .or_else(|| numeric(field))
                .unwrap_or(0)
        };
        let header = Header {
            path: self.next_path.take().unwrap_or(ustar_path),
            kind: block[156],
            mode: numeric(&block[100..108]).unwrap_or(0) as u32 & 0o7777,
            uid: number("uid", &block[108..116]),
            gid: number("gid", &block[116..124]),
            size: number("size", &block[124..136]),
            link: self
                .next_link
                .take()
                .unwrap_or_else(|| text(&block[157..257])),
        };
        self.next_numbers.clear();
        Ok(header)
    }

    fn body_read(&mut self, body: Body) {
        let Body {
            header,
            hasher,
            kept,
            ..
        } = body;
        let padding = (BLOCK - (header.size as usize % BLOCK)) % BLOCK;
        let padding = if has_body(header.kind) { padding } else { 0 };
        self.expecting = match padding {
            0 => Expecting::Header,
            n => Expecting::Padding(n),
        };
        match header.kind {
            b'x' => self.extended(&kept),
            b'L' => self.next_path = Some(text(&kept)),
            b'K' => self.next_link = Some(text(&kept)),
            b'g' => {}
            _ => self.record(header, hasher),
        }
    }

    /// A PAX extended header: `<length> <key>=<value>\n` records.
    fn extended(&mut self, records: &[u8]) {
        let records = String::from_utf8_lossy(records);
        for record in records.split_terminator('\n') {
            let Some((_, pair)) = record.split_once(' ') else {
                continue;
            };
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            match key {
                "path" => self.next_path = Some(value.to_string()),
                "linkpath" => self.next_link = Some(value.to_string()),
                "size" | "uid" | "gid" => {
                    if let Ok(n) = value.parse() {
                        self.next_numbers.insert(key.to_string(), n);
                    }
                }
                _ => {}
            }
        }
    }

    fn record(&mut self, header: Header, hasher: Sha256) {
        let path = normalized(&header.path);
        if path.is_empty() {
            // The root directory itself: a restore's target has its own.
            return;
        }
        let (kind, size, detail) = match header.kind {
            b'5' => ('d', 0, String::new()),
            b'2' => ('l', 0, header.link),
            b'1' => ('h', 0, normalized(&header.link)),
            b'0' | 0 | b'7' => ('f', header.size, hex::encode(hasher.finalize())),
            other => (char::from(other), 0, String::new()),
        };
        let entry = Entry {
            kind,
            mode: header.mode,
            uid: header.uid,
            gid: header.gid,
            size,
            detail,
        };
        self.entries.insert(path, entry);
    }
}

fn is_extended(kind: u8) -> bool {
    matches!(kind, b'x' | b'g' | b'L' | b'K')
}

/// Whether the header's size counts bytes that follow it.
fn has_body(kind: u8) -> bool {
    !matches!(kind, b'1' | b'2' | b'3' | b'4' | b'5' | b'6')
}

/// The sum of a header's bytes with its checksum field read as spaces.
fn header_sum(block: &[u8]) -> u32 {
    let all: u32 = block.iter().map(|b| u32::from(*b)).sum();
    let field: u32 = block[148..156].iter().map(|b| u32::from(*b)).sum();
    all - field + 8 * u32::from(b' ')
}

/// A path without its leading `./` or `/` and trailing `/`.
fn normalized(path: &str) -> String {
    let path = path.trim_start_matches("./").trim_start_matches('/');
    let path = path.trim_end_matches('/');
    if path == "." {
        String::new()
    } else {
        path.to_string()
    }
}

fn text(field: &[u8]) -> String {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn octal(field: &[u8]) -> Option<u64> {
    let digits = text(field);
    let digits = digits.trim_matches(|c: char| c == ' ' || c == '\0');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

/// A numeric field: octal, or GNU's base-256 when its first byte has the high bit.
fn numeric(field: &[u8]) -> Option<u64> {
    match field.first() {
        Some(first) if first & 0x80 != 0 => {
            let mut value = u64::from(first & 0x7f);
            for byte in &field[1..] {
                value = value.checked_mul(256)? + u64::from(*byte);
            }
            Some(value)
        }
        _ => octal(field),
    }
}

fn digest(entries: &BTreeMap<String, Entry>) -> VolumeTree {
    let mut hasher = Sha256::new();
    let mut tree = VolumeTree {
        files: 0,
        directories: 0,
        links: 0,
        file_bytes: 0,
        sha256: String::new(),
    };
    for (path, entry) in entries {
        let line = format!(
            "{} {:o} {}:{} {} {}\t{path}\n",
            entry.kind, entry.mode, entry.uid, entry.gid, entry.size, entry.detail
        );
        hasher.update(line.as_bytes());
        match entry.kind {
            'f' | 'h' => tree.files += 1,
            'd' => tree.directories += 1,
            'l' => tree.links += 1,
            _ => {}
        }
        tree.file_bytes += entry.size as i64;
    }
    tree.sha256 = hex::encode(hasher.finalize());
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive of `entries` built by the `tar` crate (GNU long names, PAX as needed).
    fn archive(entries: &[(&str, &[u8], u32)], links: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut dir = tar::Header::new_gnu();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_mode(0o755);
        dir.set_size(0);
        builder
            .append_data(&mut dir, "./", std::io::empty())
            .unwrap();
        for (path, content, mode) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_mode(*mode);
            header.set_uid(1000);
            header.set_gid(1000);
            header.set_size(content.len() as u64);
            builder.append_data(&mut header, path, *content).unwrap();
        }
        for (path, target) in links {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            builder.append_link(&mut header, path, target).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn read_in_pieces(bytes: &[u8], piece: usize) -> VolumeTree {
        let mut reader = TreeReader::default();
        for chunk in bytes.chunks(piece) {
            reader.push(chunk);
        }
        reader.finish().unwrap()
    }

    #[test]
    fn a_tree_is_counted_and_digested_whatever_the_pieces_it_arrives_in() {
        let long = format!("deep/{}/file.txt", "d".repeat(150));
        let bytes = archive(
            &[("a.txt", b"hello", 0o644), (&long, &[7u8; 1500], 0o600)],
            &[("link", "a.txt")],
        );
        let whole = read_in_pieces(&bytes, bytes.len());
        assert_eq!((whole.files, whole.links, whole.file_bytes), (2, 1, 1505));
        for piece in [1, 7, 511, 512, 513, 4096] {
            assert_eq!(read_in_pieces(&bytes, piece), whole, "pieces of {piece}");
        }
    }

    #[test]
    fn the_digest_changes_with_content_mode_or_link_but_not_with_order() {
        let base = read_in_pieces(
            &archive(&[("a", b"1", 0o644), ("b", b"2", 0o644)], &[]),
            100,
        );
        let reordered = read_in_pieces(
            &archive(&[("b", b"2", 0o644), ("a", b"1", 0o644)], &[]),
            100,
        );
        assert_eq!(base, reordered);
        let changed = read_in_pieces(
            &archive(&[("a", b"9", 0o644), ("b", b"2", 0o644)], &[]),
            100,
        );
        assert_ne!(base.sha256, changed.sha256);
        let moded = read_in_pieces(
            &archive(&[("a", b"1", 0o600), ("b", b"2", 0o644)], &[]),
            100,
        );
        assert_ne!(base.sha256, moded.sha256);
    }

    #[test]
    fn a_corrupt_or_cut_archive_is_refused() {
        let mut bytes = archive(&[("a", b"hello", 0o644)], &[]);
        let cut = &bytes[..600];
        let mut reader = TreeReader::default();
        reader.push(cut);
        assert!(reader.finish().is_err());
        bytes[10] ^= 0xff;
        let mut reader = TreeReader::default();
        reader.push(&bytes);
        let error = reader.finish().unwrap_err();
        assert!(error.contains("checksum"), "{error}");
    }
}
