//! git's SSH transport over a russh exec channel: `git-upload-pack '<path>'` runs on the git
//! host, and gix speaks the protocol over the channel's standard input and output. The channel
//! is driven by a task on the runtime; the blocking fetch reads and writes through queues.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, mpsc};

use berth_remote::ServerConnection;
use bytes::Bytes;
use gix::protocol::transport::Protocol;
use gix::protocol::transport::client::git::{self, ConnectMode};
use russh::ChannelMsg;
use tokio::runtime::Handle;
use tokio::sync::mpsc as async_mpsc;

use crate::error::SourceError;

/// The gix connection of one `git-upload-pack` run.
pub type SshTransport = git::blocking_io::Connection<ChannelReader, ChannelWriter>;

/// Most of the command's standard error kept, for a failure's message.
const STDERR_KEPT: usize = 4096;

/// Starts `git-upload-pack` for `path` on the connection's host.
pub fn open(
    runtime: &Handle,
    connection: Arc<ServerConnection>,
    path: &str,
) -> Result<SshTransport, SourceError> {
    let command = format!("git-upload-pack {}", shell_quote(path));
    let channel = runtime
        .block_on(connection.exec_channel(&command))
        .map_err(|error| SourceError::from_ssh(&connection.endpoint().host, error))?;
    let (stdout_tx, stdout_rx) = mpsc::channel::<Bytes>();
    let (stdin_tx, stdin_rx) = async_mpsc::unbounded_channel::<Vec<u8>>();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    runtime.spawn(drive(
        channel,
        stdout_tx,
        stdin_rx,
        stderr.clone(),
        connection,
    ));
    let reader = ChannelReader {
        chunks: stdout_rx,
        current: VecDeque::new(),
        stderr,
    };
    let writer = ChannelWriter { input: stdin_tx };
    Ok(git::blocking_io::Connection::new(
        reader,
        writer,
        Protocol::V1,
        path,
        None::<(String, Option<u16>)>,
        ConnectMode::Process,
        false,
    ))
}

/// Moves bytes between the channel and the queues until the command ends. Holds the
/// connection, which closes when the last user is gone.
async fn drive(
    mut channel: russh::Channel<russh::client::Msg>,
    stdout: mpsc::Sender<Bytes>,
    mut stdin: async_mpsc::UnboundedReceiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    _connection: Arc<ServerConnection>,
) {
    let mut input_open = true;
    loop {
        tokio::select! {
            message = channel.wait() => match message {
                Some(ChannelMsg::Data { data }) => {
                    if stdout.send(Bytes::copy_from_slice(&data)).is_err() {
                        break;
                    }
                }
                Some(ChannelMsg::ExtendedData { data, .. }) => {
                    let mut kept = stderr.lock().unwrap_or_else(|e| e.into_inner());
                    let room = STDERR_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&data[..data.len().min(room)]);
                }
                Some(ChannelMsg::Eof | ChannelMsg::Close) | None => break,
                Some(_) => {}
            },
            bytes = stdin.recv(), if input_open => match bytes {
                Some(bytes) => {
                    if channel.data_bytes(bytes).await.is_err() {
                        break;
                    }
                }
                None => {
                    input_open = false;
                    let _ = channel.eof().await;
                }
            },
        }
    }
    let _ = channel.close().await;
}

/// The command's standard output, read by the blocking fetch.
pub struct ChannelReader {
    chunks: mpsc::Receiver<Bytes>,
    current: VecDeque<u8>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.recv() {
                Ok(chunk) => self.current.extend(chunk.iter()),
                // The command ended: git reads this as the end of the conversation, and what
                // the command said on standard error explains a premature end.
                Err(_) => return self.ended(),
            }
        }
        let n = buf.len().min(self.current.len());
        for (slot, byte) in buf.iter_mut().zip(self.current.drain(..n)) {
            *slot = byte;
        }
        Ok(n)
    }
}

impl ChannelReader {
    fn ended(&self) -> io::Result<usize> {
        let stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let said = String::from_utf8_lossy(&stderr).trim().to_string();
        if said.is_empty() {
            Ok(0)
        } else {
            Err(io::Error::other(said))
        }
    }
}

/// The command's standard input, written by the blocking fetch.
pub struct ChannelWriter {
    input: async_mpsc::UnboundedSender<Vec<u8>>,
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.input
            .send(buf.to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the SSH channel closed"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `path` in single quotes for the remote shell, as git quotes it.
fn shell_quote(path: &str) -> String {
    format!("'{}'", path.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_remote_shell() {
        assert_eq!(shell_quote("/srv/git/app.git"), "'/srv/git/app.git'");
        assert_eq!(shell_quote("it's.git"), r"'it'\''s.git'");
    }
}
