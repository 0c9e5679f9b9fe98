//! The health probe of a new container over the server's SSH connection — an HTTP request or a
//! connection to its port, a command run in it, or watching that it stays up — and, when the
//! probe gives up, the evidence of why: the container's state, the ports it listens on (its own
//! socket table) and its last output.

use std::time::Duration;

use berth_crds::masking::Masker;
use berth_remote::shell_quote;
use bytes::Bytes;
use http::Request;
use http::header::HOST;
use http_body_util::Empty;
use tokio::time::Instant;

use super::diagnosis::{Evidence, Listening, ProbeFailure, Unhealthy, listening_ports};
use super::plan::{HealthPlan, Plan, Probe};
use super::server_target::{Target, is_running, serving_address};
use berth_remote::RemoteError;

/// Container probes during this long after start are not counted as failures: the process may
/// not listen yet. A container without a check must stay up this long.
const STARTUP_GRACE: Duration = Duration::from_secs(3);
/// Wait between probes while inside the startup grace.
const STARTUP_POLL: Duration = Duration::from_millis(20);
/// The most of a body or a command's output kept for the diagnosis.
const EXCERPT_MAX: usize = 512;
/// Lines of output the diagnosis quotes from.
const EVIDENCE_LINES: usize = 20;

/// Why a health check did not pass.
#[derive(Debug)]
pub enum ProbeError {
    /// The app did not become healthy.
    Unhealthy(Unhealthy),
    /// The server's Docker or the SSH connection did not answer: nothing is known of the app.
    Unreachable(String),
}

/// One probe's outcome when it was not a pass.
enum Missed {
    Failed(ProbeFailure),
    Unreachable(String),
}

impl From<RemoteError> for Missed {
    fn from(error: RemoteError) -> Self {
        if error.is_transient() {
            Self::Unreachable(error.to_string())
        } else {
            Self::Failed(ProbeFailure::Other(error.to_string()))
        }
    }
}

impl Target {
    /// Probes the container until it passes its check, or says why it did not. The server
    /// becoming unreachable ends probing at once: that says nothing of the app.
    pub async fn probe_until_healthy(&self, plan: &Plan) -> Result<(), ProbeError> {
        let health = &plan.health;
        let started = Instant::now();
        let grace = health.start_period.max(STARTUP_GRACE);
        let (mut failures, mut tries) = (0u32, 0u32);
        loop {
            if health.probe == Probe::Running {
                // Nothing to ask: the container must still be up once the grace is over.
                tokio::time::sleep(grace.saturating_sub(started.elapsed())).await;
            }
            tries += 1;
            let failure = match self.probe_once(&plan.container_name, health).await {
                Ok(()) => return Ok(()),
                Err(Missed::Unreachable(words)) => return Err(ProbeError::Unreachable(words)),
                Err(_) if self.connection.is_closed() => {
                    return Err(ProbeError::Unreachable("the SSH connection closed".into()));
                }
                Err(Missed::Failed(failure)) => failure,
            };
            // An attempt's container is not restarted while it is checked: stopped, it stays so.
            let stopped = failure == ProbeFailure::NotRunning && plan.restart_held;
            if started.elapsed() < grace && !stopped {
                tokio::time::sleep(STARTUP_POLL).await;
                continue;
            }
            failures += 1;
            if failures > health.retries || health.probe == Probe::Running || stopped {
                return Err(ProbeError::Unhealthy(Unhealthy {
                    failure,
                    tries,
                    waited: started.elapsed(),
                }));
            }
            tokio::time::sleep(health.interval).await;
        }
    }

    async fn probe_once(&self, container: &str, health: &HealthPlan) -> Result<(), Missed> {
        let inspected = self.inspect(container).await?.filter(is_running);
        let Some(inspected) = inspected else {
            return Err(Missed::Failed(ProbeFailure::NotRunning));
        };
        let restarts = inspected.restart_count.unwrap_or(0);
        let address = serving_address(inspected);
        let outcome = match &health.probe {
            Probe::Running if restarts > 0 => Err(ProbeFailure::NotRunning),
            Probe::Running => Ok(()),
            Probe::Command { command } => self.run_check(container, command, health).await?,
            Probe::Http { .. } | Probe::Tcp { .. } => match address {
                Some(address) => self.probe_address(&address, health).await,
                None => Err(ProbeFailure::Other(
                    "the container has no address on the edge network".into(),
                )),
            },
        };
        outcome.map_err(Missed::Failed)
    }

    /// One check of the container's port at `address`, through a `direct-tcpip` channel.
    async fn probe_address(&self, address: &str, health: &HealthPlan) -> Result<(), ProbeFailure> {
        let timeout = health.timeout;
        let no_answer =
            || ProbeFailure::NoAnswer(format!("no answer within {}s", timeout.as_secs()));
        match &health.probe {
            Probe::Tcp { port } => {
                // sshd opens the channel only once the container's port accepts the connection.
                tokio::time::timeout(timeout, self.connection.probe_tcp(address, *port))
                    .await
                    .map_err(|_| no_answer())?
                    .map_err(|e| ProbeFailure::NoAnswer(e.to_string()))
            }
            Probe::Http {
                path,
                port,
                expected_status,
            } => {
                let request = Request::get(path)
                    .header(HOST, format!("{address}:{port}"))
                    .body(Empty::<Bytes>::new())
                    .map_err(|e| ProbeFailure::Other(e.to_string()))?;
                let sent = self.connection.send_http_tcp(address, *port, request);
                let (status, body) = tokio::time::timeout(timeout, sent)
                    .await
                    .map_err(|_| no_answer())?
                    .map_err(|e| ProbeFailure::NoAnswer(e.to_string()))?;
                if status.as_u16() == *expected_status {
                    return Ok(());
                }
                Err(ProbeFailure::Status {
                    status: status.as_u16(),
                    body: excerpt(&body),
                })
            }
            Probe::Command { .. } | Probe::Running => Ok(()),
        }
    }

    /// Runs a command check in the container (`docker exec` on the server, as the terminal
    /// does): exit 0 passes.
    async fn run_check(
        &self,
        container: &str,
        command: &str,
        health: &HealthPlan,
    ) -> Result<Result<(), ProbeFailure>, Missed> {
        let line = format!(
            "docker -H {} exec {} /bin/sh -c {} 2>&1",
            shell_quote(&format!("unix://{}", self.docker_socket)),
            shell_quote(container),
            shell_quote(command)
        );
        let ran = tokio::time::timeout(health.timeout, self.connection.exec(&line)).await;
        let Ok(ran) = ran else {
            return Ok(Err(ProbeFailure::Command {
                exit_code: None,
                output: String::new(),
            }));
        };
        let output = ran?;
        Ok(match output.exit_status {
            Some(0) => Ok(()),
            code => Err(ProbeFailure::Command {
                exit_code: code.map(i64::from),
                output: excerpt(&output.stdout),
            }),
        })
    }

    /// What the container shows after a failed check; what cannot be read is left out.
    pub async fn failure_evidence(&self, plan: &Plan) -> Evidence {
        let name = &plan.container_name;
        let inspected = match self.inspect(name).await {
            Ok(inspected) => inspected,
            Err(error) => {
                tracing::warn!(%error, container = %name, "could not inspect a failed container");
                None
            }
        };
        let restarts = inspected
            .as_ref()
            .and_then(|c| c.restart_count)
            .unwrap_or(0);
        let state = inspected.and_then(|c| c.state).unwrap_or_default();
        let running = state.running.unwrap_or(false);
        let listening = match (running, state.pid, plan.health.port()) {
            (true, Some(pid), Some(_)) if pid > 0 => self.listening(pid).await,
            _ => None,
        };
        let masker = Masker::new(plan.secret_values.iter().chain(plan.build_args.values()));
        let last_lines = self
            .log_tail(name, EVIDENCE_LINES)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|(_, line)| masker.mask(&line))
            .collect();
        Evidence {
            running,
            exit_code: state.exit_code,
            oom_killed: state.oom_killed.unwrap_or(false),
            restarts,
            listening,
            last_lines,
        }
    }

    /// The TCP ports process `pid` (the container's first) listens on, from its network
    /// namespace's socket table as the server's `/proc` shows it.
    async fn listening(&self, pid: i64) -> Option<Listening> {
        let command = format!("cat /proc/{pid}/net/tcp /proc/{pid}/net/tcp6 2>/dev/null");
        match self.connection.exec(&command).await {
            Ok(output) if !output.stdout.is_empty() => Some(listening_ports(&output.stdout_text())),
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(%error, "could not read the container's socket table");
                None
            }
        }
    }
}

/// The start of `bytes` as text, cut at [`EXCERPT_MAX`].
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(EXCERPT_MAX)]);
    text.into_owned()
}
