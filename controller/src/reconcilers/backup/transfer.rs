//! The backup's bytes in motion, never whole in memory or on the controller's disk: a dump
//! read from one server's exec channel is sealed and written to the target's, and an artifact
//! read back from the target is checked, opened and written into a restore on the database's
//! server. Each command's exit status and the start of its standard error are kept.

use russh::client::Msg;
use russh::{Channel, ChannelMsg, ChannelReadHalf};
use sha2::{Digest, Sha256};

use super::plan::{Failure, code};
use super::seal::{Opener, Sealer};

/// Standard error kept per command, for a failure's message.
const STDERR_KEPT: usize = 2048;

/// How a command on a channel ended.
#[derive(Debug, Default)]
pub struct Ended {
    pub exit_status: Option<u32>,
    pub stderr: Vec<u8>,
}

impl Ended {
    /// `None` when it exited 0; else what went wrong, naming `what`.
    pub fn problem(&self, what: &str) -> Option<String> {
        if self.exit_status == Some(0) {
            return None;
        }
        let exit = self
            .exit_status
            .map_or("no exit status".to_string(), |s| format!("exit status {s}"));
        let said = first_line(&self.stderr);
        Some(if said.is_empty() {
            format!("{what} failed ({exit})")
        } else {
            format!("{what} failed ({exit}): {said}")
        })
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}

pub fn keep_stderr(ended: &mut Ended, data: &[u8]) {
    let room = STDERR_KEPT.saturating_sub(ended.stderr.len());
    ended
        .stderr
        .extend_from_slice(&data[..room.min(data.len())]);
}

/// Reads a channel whose output does not matter to its end.
async fn finish(mut read: ChannelReadHalf) -> Ended {
    let mut ended = Ended::default();
    while let Some(message) = read.wait().await {
        match message {
            ChannelMsg::ExtendedData { data, .. } => keep_stderr(&mut ended, &data),
            ChannelMsg::ExitStatus { exit_status } => ended.exit_status = Some(exit_status),
            _ => {}
        }
    }
    ended
}

/// What a sealed upload produced.
#[derive(Debug)]
pub struct Stored {
    pub bytes: i64,
    pub sha256: String,
}

/// Counts and hashes what is sent.
#[derive(Default)]
struct Tally {
    hasher: Sha256,
    bytes: i64,
}

impl Tally {
    fn add(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.bytes += data.len() as i64;
    }

    fn hex(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

/// Seals the dump `dump` writes (with the program `dumper`, as a failure names it) and sends
/// it to `upload`'s standard input; `observe` sees the dump as it passes (a volume's tree is
/// read from it). The upload's command must not name its file whole before this returns `Ok`.
pub async fn dump_to(
    dump: Channel<Msg>,
    dumper: &str,
    upload: Channel<Msg>,
    key: &[u8],
    observe: &mut (dyn FnMut(&[u8]) + Send),
) -> Result<Stored, Failure> {
    let upload_failed =
        |e: russh::Error| Failure::new(code::UPLOAD_FAILED, format!("sending to the target: {e}"));
    let mut sealer =
        Sealer::new(key).map_err(|e| Failure::new(code::DUMP_FAILED, e.to_string()))?;
    let (mut dump_read, _dump_write) = dump.split();
    let (upload_read, upload_write) = upload.split();
    let upload_end = tokio::spawn(finish(upload_read));
    let mut sent = Tally::default();
    let mut dumped = Ended::default();
    while let Some(message) = dump_read.wait().await {
        match message {
            ChannelMsg::Data { data } => {
                observe(&data);
                let sealed = sealer.push(&data);
                sent.add(&sealed);
                if let Err(error) = upload_write.data(&sealed[..]).await {
                    // The target's command ended first: what it said is the cause.
                    let stored = upload_end.await.unwrap_or_default();
                    let what = "storing the artifact at the target";
                    return Err(stored.problem(what).map_or_else(
                        || upload_failed(error),
                        |p| Failure::new(code::UPLOAD_FAILED, p),
                    ));
                }
            }
            ChannelMsg::ExtendedData { data, .. } => keep_stderr(&mut dumped, &data),
            ChannelMsg::ExitStatus { exit_status } => dumped.exit_status = Some(exit_status),
            _ => {}
        }
    }
    if let Some(problem) = dumped.problem(dumper) {
        return Err(Failure::new(code::DUMP_FAILED, problem));
    }
    let last = sealer.finish();
    sent.add(&last);
    upload_write.data(&last[..]).await.map_err(upload_failed)?;
    upload_write.eof().await.map_err(upload_failed)?;
    let stored = upload_end.await.unwrap_or_default();
    if let Some(problem) = stored.problem("storing the artifact at the target") {
        return Err(Failure::new(code::UPLOAD_FAILED, problem));
    }
    Ok(Stored {
        bytes: sent.bytes,
        sha256: sent.hex(),
    })
}

/// Reads the artifact `download` writes, checks it against `sha256`, opens it and sends the
/// dump to `restore`'s standard input (the program `restorer`, as a failure names it); the
/// dump's size.
pub async fn restore_from(
    download: Channel<Msg>,
    restore: Channel<Msg>,
    restorer: &str,
    key: &[u8],
    sha256: &str,
) -> Result<i64, Failure> {
    let failed = |message: String| Failure::new(code::VERIFICATION_FAILED, message);
    let mut opener = Opener::new(key).map_err(|e| failed(e.to_string()))?;
    let (mut download_read, _download_write) = download.split();
    let (restore_read, restore_write) = restore.split();
    let restore_end = tokio::spawn(finish(restore_read));
    let (mut received, mut dump_bytes) = (Tally::default(), 0i64);
    let mut downloaded = Ended::default();
    while let Some(message) = download_read.wait().await {
        match message {
            ChannelMsg::Data { data } => {
                received.add(&data);
                let plain = opener.push(&data).map_err(|e| failed(e.to_string()))?;
                dump_bytes += plain.len() as i64;
                if let Err(error) = restore_write.data(&plain[..]).await {
                    // The restore ended first: what it said is the cause.
                    let restored = restore_end.await.unwrap_or_default();
                    return Err(failed(restored.problem(restorer).unwrap_or_else(|| {
                        format!("sending the dump to {restorer}: {error}")
                    })));
                }
            }
            ChannelMsg::ExtendedData { data, .. } => keep_stderr(&mut downloaded, &data),
            ChannelMsg::ExitStatus { exit_status } => downloaded.exit_status = Some(exit_status),
            _ => {}
        }
    }
    if let Some(problem) = downloaded.problem("reading the artifact at the target") {
        return Err(failed(problem));
    }
    opener.finish().map_err(|e| failed(e.to_string()))?;
    let found = received.hex();
    if found != sha256 {
        return Err(failed(format!(
            "the artifact's checksum is {found}, not the {sha256} recorded when it was stored"
        )));
    }
    restore_write
        .eof()
        .await
        .map_err(|e| failed(format!("ending {restorer}'s input: {e}")))?;
    let restored = restore_end.await.unwrap_or_default();
    if let Some(problem) = restored.problem(restorer) {
        return Err(failed(problem));
    }
    Ok(dump_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_failed_is_named_with_the_first_thing_it_said() {
        let ended = Ended {
            exit_status: Some(1),
            stderr: b"\npg_dump: error: connection to server failed\nmore\n".to_vec(),
        };
        assert_eq!(
            ended.problem("pg_dump").unwrap(),
            "pg_dump failed (exit status 1): pg_dump: error: connection to server failed"
        );
        let quiet = Ended::default();
        assert_eq!(quiet.problem("cat").unwrap(), "cat failed (no exit status)");
        let fine = Ended {
            exit_status: Some(0),
            stderr: b"warning".to_vec(),
        };
        assert_eq!(fine.problem("x"), None);
    }
}
