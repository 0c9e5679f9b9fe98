//! The backup's bytes in motion, never whole in memory or on the controller's disk: a dump
//! read from one server's exec channel is sealed and written to the target (a command's input
//! on its server, or a bucket's upload: [`Sink`]), and an artifact read back from the target
//! ([`Source`]) is checked, opened and written into a restore on the database's server. Each
//! command's exit status and the start of its standard error are kept.

use berth_remote::tally::Tally;
use bytes::Bytes;
use russh::client::Msg;
use russh::{Channel, ChannelMsg, ChannelReadHalf, ChannelWriteHalf};
use tokio::task::JoinHandle;

use super::plan::{Failure, code};
use super::s3::{self, PartUpload};
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

/// Where sealed bytes go.
pub enum Sink<'a> {
    /// A command's standard input on the target's server, and how the command ended.
    Command {
        write: ChannelWriteHalf<Msg>,
        end: JoinHandle<Ended>,
    },
    /// An upload into a bucket.
    Bucket(PartUpload<'a>),
}

const STORING: &str = "storing the artifact at the target";

impl Sink<'_> {
    pub fn command(channel: Channel<Msg>) -> Self {
        let (read, write) = channel.split();
        Self::Command {
            write,
            end: tokio::spawn(finish(read)),
        }
    }

    async fn send(&mut self, data: &[u8]) -> Result<(), Failure> {
        match self {
            Self::Command { write, end } => {
                let Err(error) = write.data(data).await else {
                    return Ok(());
                };
                // The target's command ended first: what it said is the cause.
                let stored = end.await.unwrap_or_default();
                let problem = stored
                    .problem(STORING)
                    .unwrap_or_else(|| format!("sending to the target: {error}"));
                Err(Failure::new(code::UPLOAD_FAILED, problem))
            }
            Self::Bucket(upload) => upload.write(data).await.map_err(upload_failed),
        }
    }

    async fn close(self) -> Result<(), Failure> {
        match self {
            Self::Command { write, end } => {
                write
                    .eof()
                    .await
                    .map_err(|e| upload_failed(format!("sending to the target: {e}")))?;
                let stored = end.await.unwrap_or_default();
                stored
                    .problem(STORING)
                    .map_or(Ok(()), |p| Err(upload_failed(p)))
            }
            Self::Bucket(upload) => upload.finish().await.map_err(upload_failed),
        }
    }

    /// Gives up: a bucket drops the parts it holds; a command's partial file is the
    /// store's to remove.
    async fn abandon(self) {
        if let Self::Bucket(upload) = self {
            upload.abort().await;
        }
    }
}

fn upload_failed(message: String) -> Failure {
    Failure::new(code::UPLOAD_FAILED, message)
}

/// Where an artifact is read from.
pub enum Source {
    /// A command's standard output on the target's server, and what it said meanwhile.
    Command {
        read: ChannelReadHalf,
        ended: Ended,
        done: bool,
    },
    /// A download from a bucket.
    Bucket(reqwest::Response),
}

impl Source {
    pub fn command(channel: Channel<Msg>) -> Self {
        let (read, _write) = channel.split();
        Self::Command {
            read,
            ended: Ended::default(),
            done: false,
        }
    }

    /// The next bytes; `None` at a good end, an error (once) when the read failed.
    async fn next(&mut self) -> Option<Result<Bytes, String>> {
        match self {
            Self::Command { read, ended, done } => {
                while !*done {
                    match read.wait().await {
                        Some(ChannelMsg::Data { data }) => {
                            return Some(Ok(Bytes::copy_from_slice(&data)));
                        }
                        Some(ChannelMsg::ExtendedData { data, .. }) => keep_stderr(ended, &data),
                        Some(ChannelMsg::ExitStatus { exit_status }) => {
                            ended.exit_status = Some(exit_status)
                        }
                        Some(_) => {}
                        None => {
                            *done = true;
                            let reading = "reading the artifact at the target";
                            return ended.problem(reading).map(Err);
                        }
                    }
                }
                None
            }
            Self::Bucket(response) => s3::next_chunk(response).await.transpose(),
        }
    }
}

/// Seals the dump `dump` writes (with the program `dumper`, as a failure names it) and sends
/// it to `sink`; `observe` sees the dump as it passes (a volume's tree is read from it). The
/// sink must not name the artifact whole before this returns `Ok`.
pub async fn dump_to(
    dump: Channel<Msg>,
    dumper: &str,
    mut sink: Sink<'_>,
    key: &[u8],
    observe: &mut (dyn FnMut(&[u8]) + Send),
) -> Result<Stored, Failure> {
    let mut sealer = match Sealer::new(key) {
        Ok(sealer) => sealer,
        Err(error) => {
            sink.abandon().await;
            return Err(Failure::new(code::DUMP_FAILED, error.to_string()));
        }
    };
    let (mut dump_read, _dump_write) = dump.split();
    let mut sent = Tally::default();
    let mut dumped = Ended::default();
    while let Some(message) = dump_read.wait().await {
        match message {
            ChannelMsg::Data { data } => {
                observe(&data);
                let sealed = sealer.push(&data);
                sent.add(&sealed);
                if let Err(failure) = sink.send(&sealed).await {
                    sink.abandon().await;
                    return Err(failure);
                }
            }
            ChannelMsg::ExtendedData { data, .. } => keep_stderr(&mut dumped, &data),
            ChannelMsg::ExitStatus { exit_status } => dumped.exit_status = Some(exit_status),
            _ => {}
        }
    }
    if let Some(problem) = dumped.problem(dumper) {
        sink.abandon().await;
        return Err(Failure::new(code::DUMP_FAILED, problem));
    }
    let last = sealer.finish();
    sent.add(&last);
    if let Err(failure) = sink.send(&last).await {
        sink.abandon().await;
        return Err(failure);
    }
    sink.close().await?;
    let (bytes, sha256) = sent.finish();
    Ok(Stored { bytes, sha256 })
}

/// Reads the artifact from `download`, checks it against `sha256`, opens it and sends the
/// dump to `restore`'s standard input (the program `restorer`, as a failure names it); the
/// dump's size.
pub async fn restore_from(
    mut download: Source,
    restore: Channel<Msg>,
    restorer: &str,
    key: &[u8],
    sha256: &str,
) -> Result<i64, Failure> {
    let failed = |message: String| Failure::new(code::VERIFICATION_FAILED, message);
    let mut opener = Opener::new(key).map_err(|e| failed(e.to_string()))?;
    let (restore_read, restore_write) = restore.split();
    let restore_end = tokio::spawn(finish(restore_read));
    let (mut received, mut dump_bytes) = (Tally::default(), 0i64);
    while let Some(chunk) = download.next().await {
        let data = chunk.map_err(failed)?;
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
    opener.finish().map_err(|e| failed(e.to_string()))?;
    let found = received.finish().1;
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
