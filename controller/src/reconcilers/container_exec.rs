//! Commands run inside a container on a server through its Docker (an exec, never a command
//! line holding a secret: what a script needs comes in its environment), each given at most
//! [`EXEC_TIMEOUT`]: a database's health check, credential changes, a Redis's restore steps.

use std::time::Duration;

use berth_remote::RemoteError;
use berth_remote::docker::docker_call;
use bollard::exec::{CreateExecOptions, StartExecOptions};

use crate::reconcilers::deployment::server_target::Target;

/// How long a command in a container may run.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `script` with `sh` inside `container` with `env`: `Ok(None)` when it exited 0,
/// otherwise what failed, naming it `what` (no output: it could echo a secret).
pub async fn run_script_in(
    target: &Target,
    container: &str,
    what: &str,
    script: &str,
    env: &[(&str, &str)],
) -> Result<Option<String>, RemoteError> {
    let command = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
    let outcome = run_in_container(target, container, command, env).await?;
    Ok(outcome.problem(what, container))
}

/// How a command run in the container ended.
pub enum Outcome {
    Exited(Option<i64>),
    TimedOut,
}

impl Outcome {
    pub fn problem(&self, what: &str, container: &str) -> Option<String> {
        match self {
            Outcome::Exited(Some(0)) => None,
            Outcome::Exited(code) => Some(format!(
                "{what} in container {container} failed (exit code {})",
                code.map_or("unknown".to_string(), |c| c.to_string())
            )),
            Outcome::TimedOut => Some(format!(
                "{what} in container {container} did not finish within {}s",
                EXEC_TIMEOUT.as_secs()
            )),
        }
    }
}

pub async fn run_in_container(
    target: &Target,
    container: &str,
    command: Vec<String>,
    env: &[(&str, &str)],
) -> Result<Outcome, RemoteError> {
    let env = (!env.is_empty()).then(|| env.iter().map(|(k, v)| format!("{k}={v}")).collect());
    let exec = docker_call(
        &target.connection,
        "creating a command in a container",
        target.docker.create_exec(
            container,
            CreateExecOptions {
                cmd: Some(command),
                env,
                attach_stdout: Some(false),
                attach_stderr: Some(false),
                ..Default::default()
            },
        ),
    )
    .await?;
    docker_call(
        &target.connection,
        "starting a command in a container",
        target.docker.start_exec(
            &exec.id,
            Some(StartExecOptions {
                detach: true,
                ..Default::default()
            }),
        ),
    )
    .await?;
    let deadline = tokio::time::Instant::now() + EXEC_TIMEOUT;
    loop {
        let inspected = docker_call(
            &target.connection,
            "reading a command in a container",
            target.docker.inspect_exec(&exec.id),
        )
        .await?;
        if inspected.running != Some(true) {
            return Ok(Outcome::Exited(inspected.exit_code));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(Outcome::TimedOut);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
