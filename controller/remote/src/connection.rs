//! One authenticated SSH connection to a server. Channels (exec, `direct-streamlocal`) are
//! multiplexed over it; every operation has a deadline.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use russh::client::{self, Handle, Msg};
use russh::keys::PrivateKeyWithHashAlg;
use russh::{Channel, ChannelMsg, Disconnect};
use tokio::sync::Semaphore;

use super::client_key::ClientKey;
use super::error::{RemoteError, within};
use super::host_key::HostKeyCheck;

/// Session channels (exec) open at once per connection; OpenSSH allows 10 by default
/// (`MaxSessions`), forwarding channels are not counted.
const MAX_SESSION_CHANNELS: usize = 8;
/// Most output an exec keeps; facts and probes print a few kilobytes.
const MAX_OUTPUT: usize = 1 << 20;

/// Deadlines of remote operations.
#[derive(Clone, Debug)]
pub struct Timeouts {
    /// TCP connect plus SSH key exchange.
    pub connect: Duration,
    pub authenticate: Duration,
    pub channel_open: Duration,
    /// One command run over an exec channel, start to exit.
    pub command: Duration,
    /// One HTTP request over a tunnel (Docker API, proxy admin API), until the response headers.
    pub request: Duration,
    /// Without traffic for this long, a keepalive is sent; three unanswered ones close the link.
    pub keepalive: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            authenticate: Duration::from_secs(10),
            channel_open: Duration::from_secs(10),
            command: Duration::from_secs(20),
            request: Duration::from_secs(30),
            keepalive: Duration::from_secs(5),
        }
    }
}

/// Where and as whom to connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub username: String,
}

impl Endpoint {
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Default)]
pub struct CommandOutput {
    pub exit_status: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl CommandOutput {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// An authenticated SSH connection.
pub struct ServerConnection {
    handle: Handle<HostKeyCheck>,
    endpoint: Endpoint,
    host_key_fingerprint: String,
    client_key_fingerprint: String,
    sessions: Semaphore,
    timeouts: Timeouts,
}

/// TCP connect and SSH key exchange within `timeouts.connect`, the host key checked against
/// `pinned`. Returns the handle and the fingerprint of the host key the server showed.
async fn handshake(
    endpoint: &Endpoint,
    pinned: Option<&str>,
    timeouts: &Timeouts,
) -> Result<(Handle<HostKeyCheck>, String), RemoteError> {
    let config = Arc::new(client::Config {
        keepalive_interval: Some(timeouts.keepalive),
        keepalive_max: 3,
        nodelay: true,
        ..Default::default()
    });
    let (handler, seen) = HostKeyCheck::new(pinned.map(str::to_string));
    let exchange = key_exchange(endpoint, config, handler);
    let handshake = within(timeouts.connect, "SSH connect", exchange).await;
    let seen = seen.lock().ok().and_then(|slot| slot.clone());
    let handle = match handshake {
        Ok(handle) => handle,
        Err(error) => {
            return Err(match (pinned, seen) {
                (Some(expected), Some(got)) if expected != got => RemoteError::HostKeyMismatch {
                    expected: expected.to_string(),
                    got,
                },
                _ => error,
            });
        }
    };
    // russh asks the handler before it completes the key exchange, so the slot is filled.
    let host_key_fingerprint = seen.ok_or(RemoteError::Ssh {
        operation: "key exchange",
        source: russh::Error::UnknownKey,
    })?;
    Ok((handle, host_key_fingerprint))
}

/// Opens the TCP stream and runs the SSH key exchange over it.
async fn key_exchange(
    endpoint: &Endpoint,
    config: Arc<client::Config>,
    handler: HostKeyCheck,
) -> Result<Handle<HostKeyCheck>, RemoteError> {
    let address = endpoint.address();
    let stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|source| RemoteError::Connect {
            address: address.clone(),
            source,
        })?;
    stream.set_nodelay(true).ok();
    client::connect_stream(config, stream, handler)
        .await
        .map_err(|source| RemoteError::Ssh {
            operation: "key exchange",
            source,
        })
}

/// Logs in as the endpoint's user with `key`, by its best supported RSA hash.
async fn authenticate(
    handle: &mut Handle<HostKeyCheck>,
    endpoint: &Endpoint,
    key: &ClientKey,
) -> Result<(), RemoteError> {
    let hash = handle
        .best_supported_rsa_hash()
        .await
        .map_err(|source| RemoteError::Ssh {
            operation: "authentication",
            source,
        })?
        .flatten();
    let result = handle
        .authenticate_publickey(
            endpoint.username.clone(),
            PrivateKeyWithHashAlg::new(key.private_key(), hash),
        )
        .await
        .map_err(|source| RemoteError::Ssh {
            operation: "authentication",
            source,
        })?;
    if result.success() {
        Ok(())
    } else {
        Err(RemoteError::AuthenticationRejected {
            user: endpoint.username.clone(),
            key_fingerprint: key.fingerprint().to_string(),
        })
    }
}

impl ServerConnection {
    /// Connects, verifies the host key against `pinned` (before authenticating) and logs in.
    pub async fn open(
        endpoint: &Endpoint,
        key: &ClientKey,
        pinned: Option<&str>,
        timeouts: &Timeouts,
    ) -> Result<Self, RemoteError> {
        let (mut handle, host_key_fingerprint) = handshake(endpoint, pinned, timeouts).await?;
        within(
            timeouts.authenticate,
            "SSH authentication",
            authenticate(&mut handle, endpoint, key),
        )
        .await?;
        Ok(Self {
            handle,
            endpoint: endpoint.clone(),
            host_key_fingerprint,
            client_key_fingerprint: key.fingerprint().to_string(),
            sessions: Semaphore::new(MAX_SESSION_CHANNELS),
            timeouts: timeouts.clone(),
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Fingerprint of the host key the server showed (`SHA256:…`).
    pub fn host_key_fingerprint(&self) -> &str {
        &self.host_key_fingerprint
    }

    /// Fingerprint of the client key this connection logged in with.
    pub fn client_key_fingerprint(&self) -> &str {
        &self.client_key_fingerprint
    }

    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }

    /// Whether the SSH session has ended (server gone, keepalives unanswered, closed by us).
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Runs `command` on an exec channel and collects its output, within the command deadline.
    pub async fn exec(&self, command: &str) -> Result<CommandOutput, RemoteError> {
        self.exec_within(command, self.timeouts.command).await
    }

    /// Runs `command` and collects its output within `deadline`, for work known to take
    /// longer than a command usually may (a database dump and restore).
    pub async fn exec_within(
        &self,
        command: &str,
        deadline: Duration,
    ) -> Result<CommandOutput, RemoteError> {
        super::count_channel("exec");
        let _permit = self
            .sessions
            .acquire()
            .await
            .map_err(|_| RemoteError::Ssh {
                operation: "exec",
                source: russh::Error::Disconnect,
            })?;
        let mut channel = within(
            self.timeouts.channel_open,
            "opening an exec channel",
            async {
                self.handle
                    .channel_open_session()
                    .await
                    .map_err(|source| RemoteError::Ssh {
                        operation: "opening an exec channel",
                        source,
                    })
            },
        )
        .await?;
        within(deadline, "running a command", async {
            channel
                .exec(true, command)
                .await
                .map_err(|source| RemoteError::Ssh {
                    operation: "exec",
                    source,
                })?;
            Ok(collect_output(&mut channel).await)
        })
        .await
    }

    /// Starts `command` on an exec channel and hands the channel over, for a command whose
    /// input and output are a long conversation (git's `git-upload-pack`). No deadline past
    /// the start: the caller bounds the conversation.
    pub async fn exec_channel(&self, command: &str) -> Result<Channel<Msg>, RemoteError> {
        super::count_channel("exec");
        let ssh = |operation: &'static str| move |source| RemoteError::Ssh { operation, source };
        let channel = within(
            self.timeouts.channel_open,
            "opening an exec channel",
            async {
                self.handle
                    .channel_open_session()
                    .await
                    .map_err(ssh("opening an exec channel"))
            },
        )
        .await?;
        channel.exec(true, command).await.map_err(ssh("exec"))?;
        Ok(channel)
    }

    /// Runs `command` and returns its standard output; a non-zero exit is an error.
    pub async fn run(&self, command: &str) -> Result<String, RemoteError> {
        let output = self.exec(command).await?;
        match output.exit_status {
            Some(0) => Ok(output.stdout_text()),
            status => Err(RemoteError::CommandFailed {
                command: command.to_string(),
                status: status.unwrap_or(u32::MAX),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            }),
        }
    }

    /// Opens a `direct-streamlocal` channel to a unix socket on the server.
    pub async fn open_socket(&self, socket_path: &str) -> Result<Channel<Msg>, RemoteError> {
        super::count_channel("socket");
        within(
            self.timeouts.channel_open,
            "opening a socket channel",
            async {
                self.handle
                    .channel_open_direct_streamlocal(socket_path)
                    .await
                    .map_err(|source| RemoteError::Ssh {
                        operation: "opening a socket channel",
                        source,
                    })
            },
        )
        .await
    }

    /// Opens a `direct-tcpip` channel to `host:port` as seen from the server (its published
    /// ports on `127.0.0.1`, say): a raw byte stream, e.g. for a TLS handshake through the tunnel.
    pub async fn open_tcp(&self, host: &str, port: u16) -> Result<Channel<Msg>, RemoteError> {
        super::count_channel("tcp");
        within(self.timeouts.channel_open, "opening a TCP channel", async {
            self.handle
                .channel_open_direct_tcpip(host, u32::from(port), "127.0.0.1", 0)
                .await
                .map_err(|source| RemoteError::Ssh {
                    operation: "opening a TCP channel",
                    source,
                })
        })
        .await
    }

    /// Opens an interactive session: a PTY of `cols`×`rows` (TERM `xterm-256color`) running the
    /// login shell, or `command` when given (the shell runs it; it may `exec` a shell itself).
    /// Waits for the server to grant both requests. Terminals are long-lived, so they do not
    /// take one of the exec permits; callers bound how many they open.
    pub async fn open_terminal(
        &self,
        cols: u32,
        rows: u32,
        command: Option<&str>,
    ) -> Result<Channel<Msg>, RemoteError> {
        super::count_channel("terminal");
        const OPERATION: &str = "opening a terminal";
        let ssh = |source| RemoteError::Ssh {
            operation: OPERATION,
            source,
        };
        within(self.timeouts.channel_open, OPERATION, async {
            let mut channel = self.handle.channel_open_session().await.map_err(ssh)?;
            channel
                .request_pty(true, "xterm-256color", cols, rows, 0, 0, &[])
                .await
                .map_err(ssh)?;
            granted(&mut channel).await.map_err(ssh)?;
            match command {
                Some(command) => channel.exec(true, command).await,
                None => channel.request_shell(true).await,
            }
            .map_err(ssh)?;
            granted(&mut channel).await.map_err(ssh)?;
            Ok(channel)
        })
        .await
    }

    /// Sends one HTTP/1 request to a unix socket on the server over its own channel and returns
    /// the response once its headers arrived. The request must be in origin form with a `Host`.
    pub async fn send_http<B>(
        &self,
        socket_path: &str,
        request: Request<B>,
    ) -> Result<Response<Incoming>, RemoteError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.send_http_within(socket_path, request, self.timeouts.request)
            .await
    }

    /// [`Self::send_http`] with its own deadline for the response headers. Docker answers an
    /// image build only after it has read the whole uploaded context, which can take minutes.
    pub async fn send_http_within<B>(
        &self,
        socket_path: &str,
        request: Request<B>,
        deadline: Duration,
    ) -> Result<Response<Incoming>, RemoteError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let channel = self.open_socket(socket_path).await?;
        within(deadline, "HTTP request over SSH", async {
            let io = TokioIo::new(channel.into_stream());
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|source| RemoteError::Http { source })?;
            // The connection task ends when the response body is read or dropped.
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "HTTP connection over SSH ended");
                }
            });
            sender
                .send_request(request)
                .await
                .map_err(|source| RemoteError::Http { source })
        })
        .await
    }

    /// Whether `host:port`, as seen from the server, accepts a TCP connection: sshd confirms a
    /// `direct-tcpip` channel only after its own connect succeeded. TCP health checks use it.
    pub async fn probe_tcp(&self, host: &str, port: u16) -> Result<(), RemoteError> {
        super::count_channel("tcp");
        within(self.timeouts.channel_open, "opening a TCP channel", async {
            self.handle
                .channel_open_direct_tcpip(host, u32::from(port), "127.0.0.1", 0)
                .await
                .map(drop)
                .map_err(|source| RemoteError::Ssh {
                    operation: "opening a TCP channel",
                    source,
                })
        })
        .await
    }

    /// Sends one HTTP/1 request to `host:port` as seen from the server (a container's address)
    /// over a `direct-tcpip` channel and reads the whole response, within the request deadline.
    /// Health probes use it, so containers need no published port (DESIGN §4).
    pub async fn send_http_tcp<B>(
        &self,
        host: &str,
        port: u16,
        request: Request<B>,
    ) -> Result<(http::StatusCode, bytes::Bytes), RemoteError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        super::count_channel("tcp");
        let channel = within(self.timeouts.channel_open, "opening a TCP channel", async {
            self.handle
                .channel_open_direct_tcpip(host, u32::from(port), "127.0.0.1", 0)
                .await
                .map_err(|source| RemoteError::Ssh {
                    operation: "opening a TCP channel",
                    source,
                })
        })
        .await?;
        within(self.timeouts.request, "HTTP request over SSH", async {
            let io = TokioIo::new(channel.into_stream());
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|source| RemoteError::Http { source })?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "HTTP connection over SSH ended");
                }
            });
            let response = sender
                .send_request(request)
                .await
                .map_err(|source| RemoteError::Http { source })?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|source| RemoteError::Http { source })?
                .to_bytes();
            Ok((status, body))
        })
        .await
    }

    /// Sends a request and reads the whole response body, both within the request deadline.
    pub async fn send_http_collect<B>(
        &self,
        socket_path: &str,
        request: Request<B>,
    ) -> Result<(http::StatusCode, bytes::Bytes), RemoteError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let response = self.send_http(socket_path, request).await?;
        let status = response.status();
        let body = within(self.timeouts.request, "reading an HTTP response", async {
            response
                .into_body()
                .collect()
                .await
                .map(|collected| collected.to_bytes())
                .map_err(|source| RemoteError::Http { source })
        })
        .await?;
        Ok((status, body))
    }

    /// Ends the session politely; errors are irrelevant since the connection is dropped anyway.
    pub async fn close(&self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            self.handle
                .disconnect(Disconnect::ByApplication, "closing", "en"),
        )
        .await;
    }
}

/// Waits for the reply to a channel request sent with `want_reply`.
async fn granted(channel: &mut Channel<Msg>) -> Result<(), russh::Error> {
    loop {
        match channel.wait().await {
            Some(ChannelMsg::Success) => return Ok(()),
            Some(ChannelMsg::Failure) => return Err(russh::Error::RequestDenied),
            Some(_) => {}
            None => return Err(russh::Error::Disconnect),
        }
    }
}

async fn collect_output(channel: &mut Channel<Msg>) -> CommandOutput {
    let mut output = CommandOutput::default();
    while let Some(message) = channel.wait().await {
        match message {
            ChannelMsg::Data { data } if output.stdout.len() < MAX_OUTPUT => {
                output.stdout.extend_from_slice(&data)
            }
            ChannelMsg::ExtendedData { data, ext: 1 } if output.stderr.len() < MAX_OUTPUT => {
                output.stderr.extend_from_slice(&data)
            }
            ChannelMsg::ExitStatus { exit_status } => output.exit_status = Some(exit_status),
            _ => {}
        }
    }
    output
}
