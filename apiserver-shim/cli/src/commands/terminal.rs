//! `berth terminal SERVER` (and `berth db connect`): an interactive shell on a server, in a
//! resource's container or a database's client, over the terminal WebSocket
//! (`POST /terminal-sessions`, then its `transport.path`). Raw mode while it runs, the window
//! size sent whenever it changes, and the terminal restored however it ends.

use std::io::{IsTerminal, Read, Write};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

use berth_api::terminal::{
    ClientMessage, CreateTerminalSession, ServerMessage, TerminalScope, TerminalSessionRecord,
};
use tungstenite::Message;

use super::Ctx;
use super::infra::server_id;
use crate::client::Socket;
use crate::error::{CliError, CliResult};

/// How long one wait for output lasts before input and the window size are looked at again.
const POLL: Duration = Duration::from_millis(30);

/// A shell on `server`, or with `resource` in that resource's serving container.
pub fn terminal(
    ctx: &Ctx,
    server: Option<&str>,
    resource: Option<&str>,
    directory: Option<String>,
) -> CliResult<()> {
    let scope = match (server, resource) {
        (_, Some(resource)) => TerminalScope {
            kind: "resource".into(),
            server_id: None,
            resource_id: Some(super::find_resource(ctx, resource)?.id),
            dependency_resource_id: None,
        },
        (Some(server), None) => TerminalScope {
            kind: "server".into(),
            server_id: Some(server_id(ctx, server)?),
            resource_id: None,
            dependency_resource_id: None,
        },
        (None, None) => {
            return Err(CliError::Usage(
                "name a server, or a resource with --resource".into(),
            ));
        }
    };
    open(ctx, scope, directory)
}

/// `berth db connect`: the database's client (`psql`, `redis-cli`) in its container.
pub fn database(ctx: &Ctx, dependency_id: String) -> CliResult<()> {
    let scope = TerminalScope {
        kind: "dependency".into(),
        server_id: None,
        resource_id: None,
        dependency_resource_id: Some(dependency_id),
    };
    open(ctx, scope, None)
}

/// Opens a terminal session on `scope` and bridges it to this terminal until it ends.
fn open(ctx: &Ctx, scope: TerminalScope, directory: Option<String>) -> CliResult<()> {
    let api = ctx.api()?;
    let (rows, cols) = window_size().unwrap_or((24, 80));
    let body = CreateTerminalSession {
        scope,
        relative_directory: directory,
        initial_rows: Some(rows.clamp(10, 120).into()),
        initial_cols: Some(cols.clamp(20, 320).into()),
    };
    let session = api
        .post::<TerminalSessionRecord>("/terminal-sessions", &body)?
        .value;
    let mut socket = api.websocket(&session.transport.path, POLL)?;
    let _raw = RawMode::enter();
    let outcome = bridge(&mut socket, stdin_reader(), (rows, cols));
    let _ = socket.close(None);
    drop(_raw);
    match outcome? {
        Some(0) | None => Ok(()),
        Some(status) => Err(CliError::failure(format!(
            "the shell exited with status {status}"
        ))),
    }
}

/// Copies keystrokes to the socket and output to stdout until the shell exits; returns its
/// exit status when the server reported one.
fn bridge(
    socket: &mut Socket,
    input: Receiver<Vec<u8>>,
    mut size: (u16, u16),
) -> CliResult<Option<u32>> {
    let mut stdout = std::io::stdout();
    let mut exit_status = None;
    let mut input_open = true;
    loop {
        while input_open {
            match input.try_recv() {
                Ok(bytes) => send(socket, Message::Binary(bytes.into()))?,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => input_open = false,
            }
        }
        if let Some(now) = window_size().filter(|now| *now != size) {
            size = now;
            let resize = ClientMessage::Resize {
                rows: now.0.clamp(10, 120).into(),
                cols: now.1.clamp(20, 320).into(),
            };
            let text = serde_json::to_string(&resize).expect("control messages serialize");
            send(socket, Message::Text(text.into()))?;
        }
        match socket.read() {
            Ok(Message::Binary(bytes)) => {
                stdout.write_all(&bytes)?;
                stdout.flush()?;
            }
            Ok(Message::Text(text)) => match serde_json::from_str::<ServerMessage>(&text) {
                Ok(ServerMessage::Exit {
                    exit_status: status,
                    ..
                }) => exit_status = status,
                Ok(ServerMessage::Error { message }) => eprint!("\r\nberth: {message}\r\n"),
                _ => {}
            },
            Ok(Message::Close(_)) => return Ok(exit_status),
            Ok(_) => {}
            Err(tungstenite::Error::Io(error)) if waited(&error) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                return Ok(exit_status);
            }
            Err(error) => return Err(CliError::failure(format!("terminal connection: {error}"))),
        }
    }
}

fn send(socket: &mut Socket, message: Message) -> CliResult<()> {
    socket
        .send(message)
        .map_err(|error| CliError::failure(format!("terminal connection: {error}")))
}

/// A read that only ran into its timeout.
fn waited(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Standard input, read on a thread of its own (a read blocks) and handed over in chunks.
fn stdin_reader() -> Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = stdin.read(&mut buffer) {
            if sender.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    receiver
}

/// The terminal's rows and columns, when stdout is one.
fn window_size() -> Option<(u16, u16)> {
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct passed.
    let done = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (done == 0 && size.ws_row > 0 && size.ws_col > 0).then_some((size.ws_row, size.ws_col))
}

/// Raw mode on standard input (keystrokes pass through unechoed and uninterpreted, Ctrl-C
/// included, for the remote shell to handle); the saved settings come back when dropped.
struct RawMode {
    saved: Option<libc::termios>,
}

impl RawMode {
    fn enter() -> Self {
        if !std::io::stdin().is_terminal() {
            return Self { saved: None };
        }
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr fills the struct; cfmakeraw and tcsetattr read a valid one.
        unsafe {
            if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
                return Self { saved: None };
            }
            let mut raw = saved;
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw);
        }
        Self { saved: Some(saved) }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // SAFETY: restores the settings tcgetattr returned.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
        }
    }
}
