//! The terminal WebSocket protocol, and the pump between the socket and the SSH PTY channel.
//!
//! Client to server: binary frames are keystrokes, passed to the shell unchanged; text frames are
//! JSON control messages ([`ClientMessage`]): `{"type":"input","data":"ls\r"}` or
//! `{"type":"resize","rows":40,"cols":120}` (same limits as `initialRows`/`initialCols`).
//! Server to client: binary frames are terminal output; text frames are JSON ([`ServerMessage`]):
//! `ready` once the shell runs, `error` for a refused control message or an idle timeout, and
//! `exit` (with the exit status) before the socket closes with code 1000 when the shell ends.
//! A session without traffic either way for [`IDLE_TIMEOUT`] is closed; so is one closed with
//! `POST /terminal-sessions/{sessionId}/close` (an `error` saying so, then code 1000).

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use russh::client::Msg;
use russh::{Channel, ChannelMsg};
use tokio::time::Instant;

use super::{COLS, ROWS};
use crate::services::terminals::OpenSlot;

pub use berth_api::terminal::{ClientMessage, ServerMessage};

pub use berth_api::terminal::TerminalProtocol;

/// A session without input or output for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Close code of a normal end (the shell exited or the client left).
const NORMAL: u16 = 1000;
/// Close code when the server side fails (SSH channel lost).
const SERVER_ERROR: u16 = 1011;

/// Who and what a bridged session is, for its messages and log lines.
pub struct Session {
    pub id: String,
    pub server_id: String,
    pub user_id: String,
    pub rows: u32,
    pub cols: u32,
}

/// What ended a session.
enum End {
    ClientLeft,
    ShellExited,
    Idle,
    ChannelFailed,
    /// A close was asked for, on any replica.
    Closed,
}

/// What ended a session, and what the shell reported on its way out (for the `exit` message).
struct Ending {
    end: End,
    exit_status: Option<u32>,
    signal: Option<String>,
}

/// Pumps bytes both ways until the shell exits, the client leaves, the session idles out or
/// `close_asked` resolves; then calls `closing` and closes the channel and the socket.
pub async fn run(
    mut socket: WebSocket,
    mut channel: Channel<Msg>,
    session: Session,
    _slot: OpenSlot,
    closing: impl FnOnce(),
    close_asked: impl Future<Output = ()>,
) {
    let started = Instant::now();
    let ending = if send_json(&mut socket, &ready(&session)).await {
        pump(&mut socket, &mut channel, close_asked).await
    } else {
        Ending {
            end: End::ClientLeft,
            exit_status: None,
            signal: None,
        }
    };
    closing();
    let _ = channel.eof().await;
    let _ = channel.close().await;
    let exit_status = ending.exit_status;
    let (last_message, code, reason) = farewell(ending);
    if let Some(message) = last_message {
        send_json(&mut socket, &message).await;
    }
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
    tracing::info!(
        session = %session.id,
        server = %session.server_id,
        user = %session.user_id,
        seconds = started.elapsed().as_secs(),
        exit_status,
        reason,
        "terminal session ended"
    );
}

/// The first message: the shell runs, at this size.
fn ready(session: &Session) -> ServerMessage {
    ServerMessage::Ready {
        session_id: session.id.clone(),
        server_id: session.server_id.clone(),
        rows: session.rows,
        cols: session.cols,
    }
}

/// Passes client frames to the shell and its output to the client until something ends the
/// session. Traffic either way restarts the idle clock.
async fn pump(
    socket: &mut WebSocket,
    channel: &mut Channel<Msg>,
    close_asked: impl Future<Output = ()>,
) -> Ending {
    let (mut exit_status, mut signal) = (None, None);
    let mut idle_until = Instant::now() + IDLE_TIMEOUT;
    let mut end = None;
    let mut close_asked = std::pin::pin!(close_asked);
    while end.is_none() {
        tokio::select! {
            () = &mut close_asked => end = Some(End::Closed),
            incoming = socket.recv() => {
                idle_until = Instant::now() + IDLE_TIMEOUT;
                end = match incoming {
                    Some(Ok(message)) => from_client(socket, channel, message).await,
                    Some(Err(_)) | None => Some(End::ClientLeft),
                };
            }
            output = channel.wait() => {
                idle_until = Instant::now() + IDLE_TIMEOUT;
                match output {
                    Some(ChannelMsg::Data { data }) | Some(ChannelMsg::ExtendedData { data, .. }) => {
                        if socket.send(Message::Binary(data)).await.is_err() {
                            end = Some(End::ClientLeft);
                        }
                    }
                    Some(ChannelMsg::ExitStatus { exit_status: status }) => exit_status = Some(status),
                    Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                        signal = Some(format!("{signal_name:?}"));
                    }
                    Some(_) => {}
                    None => end = Some(End::ShellExited),
                }
            }
            _ = tokio::time::sleep_until(idle_until) => end = Some(End::Idle),
        }
    }
    Ending {
        end: end.unwrap_or(End::ClientLeft),
        exit_status,
        signal,
    }
}

/// How the session is closed: the message the client is told last (the shell's exit, or why
/// the session idled out), and the close frame's code and reason.
fn farewell(ending: Ending) -> (Option<ServerMessage>, u16, &'static str) {
    match ending.end {
        End::ShellExited => {
            let exit = ServerMessage::Exit {
                exit_status: ending.exit_status,
                signal: ending.signal,
            };
            (Some(exit), NORMAL, "the shell exited")
        }
        End::Idle => {
            let message = format!(
                "closed after {} minutes without traffic",
                IDLE_TIMEOUT.as_secs() / 60
            );
            (Some(ServerMessage::Error { message }), NORMAL, "idle")
        }
        End::Closed => {
            let message = "the terminal session was closed".to_string();
            (Some(ServerMessage::Error { message }), NORMAL, "closed")
        }
        End::ChannelFailed => (None, SERVER_ERROR, "the SSH channel failed"),
        End::ClientLeft => (None, NORMAL, "client left"),
    }
}

/// Handles one frame from the client; `Some` ends the session.
async fn from_client(
    socket: &mut WebSocket,
    channel: &Channel<Msg>,
    message: Message,
) -> Option<End> {
    let written = match message {
        Message::Binary(bytes) => channel.data_bytes(bytes).await,
        Message::Text(text) => match control(&text) {
            Ok(ClientMessage::Input { data }) => channel.data_bytes(data.into_bytes()).await,
            Ok(ClientMessage::Resize { rows, cols }) => {
                channel.window_change(cols as u32, rows as u32, 0, 0).await
            }
            Err(message) => {
                let refused = ServerMessage::Error { message };
                return (!send_json(socket, &refused).await).then_some(End::ClientLeft);
            }
        },
        Message::Close(_) => return Some(End::ClientLeft),
        Message::Ping(_) | Message::Pong(_) => return None,
    };
    written.err().map(|_| End::ChannelFailed)
}

/// Parses and checks a control message; the error is what the client is told.
pub fn control(text: &str) -> Result<ClientMessage, String> {
    let message: ClientMessage = serde_json::from_str(text).map_err(|_| {
        "text frames must be JSON: {\"type\":\"input\",\"data\":…} or \
         {\"type\":\"resize\",\"rows\":…,\"cols\":…}; send keystrokes as binary frames"
            .to_string()
    })?;
    if let ClientMessage::Resize { rows, cols } = message {
        let fits = (ROWS.0..=ROWS.1).contains(&rows) && (COLS.0..=COLS.1).contains(&cols);
        if !fits {
            return Err(format!(
                "resize needs rows {}-{} and cols {}-{}",
                ROWS.0, ROWS.1, COLS.0, COLS.1
            ));
        }
    }
    Ok(message)
}

/// Sends a JSON text frame; false when the client is gone.
async fn send_json(socket: &mut WebSocket, message: &ServerMessage) -> bool {
    let text = serde_json::to_string(message).unwrap_or_default();
    socket.send(Message::Text(text.into())).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_are_checked() {
        assert_eq!(
            control(r#"{"type":"resize","rows":40,"cols":100}"#).unwrap(),
            ClientMessage::Resize {
                rows: 40,
                cols: 100
            }
        );
        assert!(control(r#"{"type":"resize","rows":4,"cols":100}"#).is_err());
        assert_eq!(
            control(r#"{"type":"input","data":"ls\r"}"#).unwrap(),
            ClientMessage::Input {
                data: "ls\r".into()
            }
        );
        assert!(control("ls").is_err());
        assert!(control(r#"{"type":"input","data":"x","extra":1}"#).is_err());
    }

    #[test]
    fn exit_message_shape() {
        let text = serde_json::to_string(&ServerMessage::Exit {
            exit_status: Some(0),
            signal: None,
        })
        .unwrap();
        assert_eq!(text, r#"{"type":"exit","exitStatus":0}"#);
    }

    #[test]
    fn the_client_is_told_why_the_session_closes() {
        let ending = |end| Ending {
            end,
            exit_status: Some(2),
            signal: None,
        };
        let told = |ending| {
            let (message, code, reason) = farewell(ending);
            let text = message.map(|m| serde_json::to_string(&m).unwrap());
            (text, code, reason)
        };
        let exited = r#"{"type":"exit","exitStatus":2}"#.to_string();
        assert_eq!(
            told(ending(End::ShellExited)),
            (Some(exited), NORMAL, "the shell exited")
        );
        let idle = r#"{"type":"error","message":"closed after 30 minutes without traffic"}"#;
        assert_eq!(
            told(ending(End::Idle)),
            (Some(idle.to_string()), NORMAL, "idle")
        );
        assert_eq!(
            told(ending(End::ChannelFailed)),
            (None, SERVER_ERROR, "the SSH channel failed")
        );
        assert_eq!(told(ending(End::ClientLeft)), (None, NORMAL, "client left"));
        let closed = r#"{"type":"error","message":"the terminal session was closed"}"#;
        assert_eq!(
            told(ending(End::Closed)),
            (Some(closed.to_string()), NORMAL, "closed")
        );
    }
}
