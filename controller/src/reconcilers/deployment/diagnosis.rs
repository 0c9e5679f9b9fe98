//! Why a new container failed its health check, in one line a person can act on: decided once,
//! without I/O, from what the last probe found and what was gathered afterwards (the
//! container's state, the ports it listens on, its last output). The code goes into
//! `lastError.code`, the line into `lastError.message`, the evidence into the timeline.

use std::time::Duration;

use berth_crds::deployment::DeploymentErrorCode as Code;

use super::plan::{HealthPlan, Probe};

/// Longest excerpt of output or of a body quoted in a message.
const QUOTE_MAX: usize = 160;

/// What the last probe of the container found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeFailure {
    /// The container is not running (it exited, or Docker is restarting it).
    NotRunning,
    /// No connection or no answer on the port; the transport's words.
    NoAnswer(String),
    /// An answer with another status, and the start of its body.
    Status { status: u16, body: String },
    /// A command check exited non-zero (`None`: it did not finish in time), with its output.
    Command {
        exit_code: Option<i64>,
        output: String,
    },
    /// Anything else Docker said.
    Other(String),
}

/// The probing that ended without a healthy container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unhealthy {
    pub failure: ProbeFailure,
    /// Probes made.
    pub tries: u32,
    /// From the start of probing to the verdict.
    pub waited: Duration,
}

/// The container as found after the failed check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    pub running: bool,
    /// Docker's last exit code (0 while it never stopped).
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
    /// Times Docker's restart policy started it again.
    pub restarts: i64,
    /// TCP ports it listens on, from its own socket table; `None` when that could not be read.
    pub listening: Option<Listening>,
    /// Its last lines of output, secrets masked, oldest first.
    pub last_lines: Vec<String>,
}

/// The cause, as a code and a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    pub code: Code,
    pub message: String,
}

/// The cause of a failed health check. `start_command` is the resource's, if it sets one.
pub fn diagnose(
    health: &HealthPlan,
    start_command: Option<&str>,
    unhealthy: &Unhealthy,
    evidence: &Evidence,
) -> Diagnosis {
    let stopped = !evidence.running || unhealthy.failure == ProbeFailure::NotRunning;
    if stopped || evidence.restarts > 0 {
        return exited(start_command, evidence);
    }
    let check = describe(&health.probe);
    match (&unhealthy.failure, health.port()) {
        (ProbeFailure::Status { status, body }, _) => {
            let expected = match &health.probe {
                Probe::Http {
                    expected_status, ..
                } => *expected_status,
                _ => 200,
            };
            let body = match body.trim() {
                "" => String::new(),
                text => format!(": {}", quoted(text)),
            };
            diagnosis(
                Code::HealthCheckUnexpectedStatus,
                format!("{check} answered {status}, expected {expected}{body}"),
            )
        }
        (ProbeFailure::Command { exit_code, output }, _) => {
            let ended = match exit_code {
                Some(code) => format!("exited with code {code}"),
                None => format!("did not finish within {}s", health.timeout.as_secs()),
            };
            let output = match output.trim() {
                "" => String::new(),
                text => format!(": {}", quoted(last_line(text))),
            };
            diagnosis(Code::HealthCheckFailed, format!("{check} {ended}{output}"))
        }
        (_, Some(port)) => match &evidence.listening {
            Some(ports) if ports.loopback.contains(&port) && !ports.reachable.contains(&port) => {
                diagnosis(
                    Code::PortNotListening,
                    format!(
                        "the app listens on {port} on 127.0.0.1 only, out of the proxy's reach; \
                         bind it to 0.0.0.0"
                    ),
                )
            }
            Some(ports) if !ports.reachable.contains(&port) => {
                not_listening(port, &ports.reachable)
            }
            _ => timed_out(&check, health, unhealthy),
        },
        // What Docker said when a command could not be run at all.
        (failure, None) => diagnosis(
            Code::HealthCheckFailed,
            format!("{check} failed: {}", failure.words()),
        ),
    }
}

impl ProbeFailure {
    /// The failure in the transport's or Docker's words.
    fn words(&self) -> String {
        match self {
            Self::NotRunning => "the container is not running".into(),
            Self::NoAnswer(words) | Self::Other(words) => words.clone(),
            Self::Status { status, .. } => format!("answered {status}"),
            Self::Command { exit_code, .. } => format!("exit code {exit_code:?}"),
        }
    }
}

/// The container stopped (or was restarted by Docker) before it was healthy.
fn exited(start_command: Option<&str>, evidence: &Evidence) -> Diagnosis {
    let output = evidence
        .last_lines
        .iter()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map_or(String::from(" and wrote no output"), |line| {
            format!(": {}", quoted(line))
        });
    let restarted = match evidence.restarts {
        0 => String::new(),
        1 => "; Docker restarted it once".to_string(),
        n => format!("; Docker restarted it {n} times"),
    };
    if evidence.oom_killed {
        return diagnosis(
            Code::ContainerExited,
            format!(
                "the container was killed for lack of memory (OOM) before it was healthy{restarted}"
            ),
        );
    }
    match evidence.exit_code {
        Some(code @ (126 | 127)) => {
            let what = match start_command {
                Some(command) => format!("the start command {}", quoted(command)),
                None => "the image's command".to_string(),
            };
            let why = if code == 127 {
                "not found"
            } else {
                "not executable"
            };
            diagnosis(
                Code::StartCommandNotFound,
                format!("{what} is {why} (exit {code}){output}"),
            )
        }
        Some(code) if code > 128 => diagnosis(
            Code::ContainerExited,
            format!(
                "the container was killed by signal {} before it was healthy{output}{restarted}",
                code - 128
            ),
        ),
        Some(code) => diagnosis(
            Code::ContainerExited,
            format!(
                "the container exited with code {code} before it was healthy{output}{restarted}"
            ),
        ),
        None => diagnosis(
            Code::ContainerExited,
            format!("the container stopped before it was healthy{output}{restarted}"),
        ),
    }
}

fn not_listening(port: u16, ports: &[u16]) -> Diagnosis {
    let message = match ports {
        [] => format!("nothing listens on {port}; the app listens on no TCP port"),
        [only] => format!(
            "nothing listens on {port}; the app listens on {only} — set networkProfile.internalPort to {only}"
        ),
        many => format!(
            "nothing listens on {port}; the app listens on {} — set networkProfile.internalPort to one of them",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    diagnosis(Code::PortNotListening, message)
}

fn timed_out(check: &str, health: &HealthPlan, unhealthy: &Unhealthy) -> Diagnosis {
    let period = match health.start_period.as_secs() {
        0 => String::new(),
        s => format!(", start period {s}s"),
    };
    diagnosis(
        Code::HealthCheckTimedOut,
        format!(
            "{check} got no answer within {}s ({} tries over {}s{period}); the process is still running",
            health.timeout.as_secs(),
            unhealthy.tries,
            unhealthy.waited.as_secs()
        ),
    )
}

/// The check in words: `health check GET /healthz on port 8080`.
fn describe(probe: &Probe) -> String {
    match probe {
        Probe::Http { path, port, .. } => format!("health check GET {path} on port {port}"),
        Probe::Tcp { port } => format!("health check (a connection to port {port})"),
        Probe::Command { command } => format!("health check command {}", quoted(command)),
        Probe::Running => "the container".to_string(),
    }
}

fn diagnosis(code: Code, message: String) -> Diagnosis {
    Diagnosis { code, message }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
}

/// `text` in double quotes, cut to [`QUOTE_MAX`] characters.
fn quoted(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(QUOTE_MAX) {
        Some((cut, _)) => format!("\"{}…\"", &text[..cut]),
        None => format!("\"{text}\""),
    }
}

/// Ports listened on, from a socket table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listening {
    /// On every address or the container's own: reachable from the edge network.
    pub reachable: Vec<u16>,
    /// On loopback only (Docker's embedded DNS among them): unreachable from outside.
    pub loopback: Vec<u16>,
}

/// The listening TCP ports in the text of `/proc/<pid>/net/tcp` and `tcp6`, ascending.
pub fn listening_ports(socket_table: &str) -> Listening {
    const LISTEN: &str = "0A";
    let mut listening = Listening::default();
    for line in socket_table.lines() {
        let mut fields = line.split_whitespace();
        let (Some(local), Some(state)) = (fields.nth(1), fields.nth(1)) else {
            continue;
        };
        let Some((address, port)) = local.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = u16::from_str_radix(port, 16) else {
            continue;
        };
        if state != LISTEN {
            continue;
        }
        match is_loopback(address) {
            true => listening.loopback.push(port),
            false => listening.reachable.push(port),
        }
    }
    for ports in [&mut listening.reachable, &mut listening.loopback] {
        ports.sort_unstable();
        ports.dedup();
    }
    listening
}

/// A socket table's address (hex, in the kernel's byte order) is 127.0.0.0/8 or ::1.
fn is_loopback(address: &str) -> bool {
    const V6_LOOPBACK: &str = "00000000000000000000000001000000";
    const V4_MAPPED: &str = "0000000000000000FFFF0000";
    let v4 = address.strip_prefix(V4_MAPPED).unwrap_or(address);
    (v4.len() == 8 && v4.ends_with("7F")) || address == V6_LOOPBACK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(port: u16) -> HealthPlan {
        HealthPlan {
            probe: Probe::Http {
                path: "/healthz".into(),
                port,
                expected_status: 200,
            },
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(5),
            retries: 3,
            start_period: Duration::ZERO,
        }
    }

    fn unhealthy(failure: ProbeFailure) -> Unhealthy {
        Unhealthy {
            failure,
            tries: 4,
            waited: Duration::from_secs(11),
        }
    }

    fn running(listening: &[u16]) -> Evidence {
        Evidence {
            running: true,
            exit_code: Some(0),
            listening: Some(Listening {
                reachable: listening.to_vec(),
                loopback: vec![40125],
            }),
            ..Evidence::default()
        }
    }

    #[test]
    fn an_exit_is_named_with_its_code_and_last_line() {
        let evidence = Evidence {
            exit_code: Some(3),
            last_lines: vec!["starting".into(), "fatal: cannot bind".into()],
            ..Evidence::default()
        };
        let failure = unhealthy(ProbeFailure::NotRunning);
        let found = diagnose(&http(8080), None, &failure, &evidence);
        assert_eq!(found.code, Code::ContainerExited);
        assert_eq!(
            found.message,
            "the container exited with code 3 before it was healthy: \"fatal: cannot bind\""
        );
    }

    #[test]
    fn exit_127_is_a_start_command_not_found() {
        let evidence = Evidence {
            exit_code: Some(127),
            last_lines: vec!["/bin/sh: nope: not found".into()],
            ..Evidence::default()
        };
        let failure = unhealthy(ProbeFailure::NotRunning);
        let found = diagnose(&http(8080), Some("nope --serve"), &failure, &evidence);
        assert_eq!(found.code, Code::StartCommandNotFound);
        assert_eq!(
            found.message,
            "the start command \"nope --serve\" is not found (exit 127): \"/bin/sh: nope: not found\""
        );
    }

    #[test]
    fn an_oom_kill_and_a_restart_loop_say_so() {
        let oom = Evidence {
            exit_code: Some(137),
            oom_killed: true,
            ..Evidence::default()
        };
        let failure = unhealthy(ProbeFailure::NotRunning);
        let found = diagnose(&http(8080), None, &failure, &oom);
        assert!(found.message.contains("lack of memory (OOM)"), "{found:?}");
        let looping = Evidence {
            running: true,
            exit_code: Some(1),
            restarts: 2,
            ..Evidence::default()
        };
        let found = diagnose(
            &http(8080),
            None,
            &unhealthy(ProbeFailure::NoAnswer("refused".into())),
            &looping,
        );
        assert_eq!(found.code, Code::ContainerExited);
        assert!(
            found.message.ends_with("; Docker restarted it 2 times"),
            "{found:?}"
        );
    }

    #[test]
    fn another_port_is_named_with_the_fix() {
        let failure = unhealthy(ProbeFailure::NoAnswer("connection refused".into()));
        let found = diagnose(&http(8080), None, &failure, &running(&[9090]));
        assert_eq!(found.code, Code::PortNotListening);
        assert_eq!(
            found.message,
            "nothing listens on 8080; the app listens on 9090 — set networkProfile.internalPort to 9090"
        );
        let none = diagnose(&http(8080), None, &failure, &running(&[]));
        assert_eq!(
            none.message,
            "nothing listens on 8080; the app listens on no TCP port"
        );
    }

    #[test]
    fn a_wrong_status_quotes_the_body() {
        let failure = unhealthy(ProbeFailure::Status {
            status: 500,
            body: "database is down\n".into(),
        });
        let found = diagnose(&http(8080), None, &failure, &running(&[8080]));
        assert_eq!(found.code, Code::HealthCheckUnexpectedStatus);
        assert_eq!(
            found.message,
            "health check GET /healthz on port 8080 answered 500, expected 200: \"database is down\""
        );
    }

    #[test]
    fn silence_on_a_listening_port_is_a_timeout() {
        let failure = unhealthy(ProbeFailure::NoAnswer("no answer within 5s".into()));
        let found = diagnose(&http(8080), None, &failure, &running(&[8080]));
        assert_eq!(found.code, Code::HealthCheckTimedOut);
        assert_eq!(
            found.message,
            "health check GET /healthz on port 8080 got no answer within 5s (4 tries over 11s); \
             the process is still running"
        );
    }

    #[test]
    fn a_failing_command_check_quotes_its_last_line() {
        let health = HealthPlan {
            probe: Probe::Command {
                command: "test -f /tmp/ready".into(),
            },
            ..http(8080)
        };
        let failure = unhealthy(ProbeFailure::Command {
            exit_code: Some(1),
            output: "checking\nnot ready\n".into(),
        });
        let found = diagnose(&health, None, &failure, &running(&[]));
        assert_eq!(found.code, Code::HealthCheckFailed);
        assert_eq!(
            found.message,
            "health check command \"test -f /tmp/ready\" exited with code 1: \"not ready\""
        );
    }

    #[test]
    fn a_port_bound_to_loopback_only_is_named_so() {
        let failure = unhealthy(ProbeFailure::NoAnswer("connection refused".into()));
        let evidence = Evidence {
            listening: Some(Listening {
                reachable: vec![],
                loopback: vec![8080],
            }),
            ..running(&[])
        };
        let found = diagnose(&http(8080), None, &failure, &evidence);
        assert_eq!(found.code, Code::PortNotListening);
        assert!(found.message.contains("127.0.0.1 only"), "{found:?}");
    }

    #[test]
    fn the_socket_table_yields_listening_ports_by_reach() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            0: 00000000:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
            1: 0100007F:1F90 0100007F:A2C4 01 00000000:00000000 00:00000000 00000000     0        0 2\n\
            2: 0B00007F:9CBD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3\n\
            0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0 0 0 0 0\n";
        let listening = listening_ports(table);
        assert_eq!(listening.reachable, vec![8080, 9090]);
        assert_eq!(listening.loopback, vec![40125]);
    }
}
