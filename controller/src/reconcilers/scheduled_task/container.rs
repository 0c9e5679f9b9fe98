//! A run's container on the resource's server: made from the serving attempt's plan (image,
//! variables and secrets, bound databases' networks, volumes) with the task's command in place
//! of the app's, no route, no published port and no restart; started once, waited for, read
//! and removed.

use std::time::Duration;

use berth_crds::masking::Masker;
use berth_crds::resource::RestartPolicy;
use berth_crds::scheduled_task::{ScheduledTaskRun, TASK_LABEL, TASK_RUN_LABEL, TaskLogStream};
use berth_crds::{MANAGED_LABEL, NAMESPACE_LABEL, RESOURCE_LABEL};
use berth_remote::RemoteError;
use berth_remote::docker::{docker_over_ssh_within, is_not_found};
use bollard::container::LogOutput;
use bollard::query_parameters::{LogsOptionsBuilder, WaitContainerOptionsBuilder};
use futures::StreamExt;
use kube::ResourceExt;

use crate::reconcilers::deployment::plan::Plan;
use crate::reconcilers::deployment::server_target::Target;

/// Output lines of a try kept, the last ones.
pub const LOG_LINES_KEPT: usize = 2000;
/// Longest line kept, in bytes; the rest is cut.
const LINE_MAX: usize = 4096;
/// How long a stopped try gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// The serving plan turned into try `attempt`'s container of `run`.
pub fn run_plan(mut plan: Plan, run: &ScheduledTaskRun, container: &str) -> Plan {
    let namespace = run.namespace().unwrap_or_default();
    plan.container_name = container.to_string();
    plan.start_command = Some(run.spec.command.clone());
    plan.labels = [
        (MANAGED_LABEL, "true".to_string()),
        (NAMESPACE_LABEL, namespace),
        // With the resource's label (and no deployment's), the resource's removal takes it
        // along, while drift repair and the observer leave it alone.
        (RESOURCE_LABEL, run.spec.resource_id.clone()),
        (TASK_LABEL, run.spec.task_id.clone()),
        (TASK_RUN_LABEL, run.name_any()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    plan.restart_policy = RestartPolicy::Never;
    plan.restart_held = false;
    plan.internal_port = None;
    plan.host_port = None;
    plan.route = None;
    // A stack's routed service settings are not carried over: the run gets Berth's runtime
    // configuration, not the Compose service's own entries.
    plan.compose = None;
    plan
}

/// Creates the try's container and starts it, unless a controller before this one did: a
/// container of that name that runs or has exited is left as it is (never started twice).
pub async fn start(target: &Target, plan: &Plan) -> Result<(), RemoteError> {
    if !target.create_container(plan, false).await? {
        // It existed: start it only if it never ran.
        let state = target
            .inspect(&plan.container_name)
            .await?
            .and_then(|c| c.state)
            .and_then(|s| s.status);
        let never_ran = state.is_none_or(|s| s.to_string() == "created");
        if !never_ran {
            return Ok(());
        }
    }
    target.start(&plan.container_name).await
}

/// What a wait for a try's container saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    Exited(i64),
    StillRunning,
    /// The container is gone from the server.
    Gone,
}

/// Waits at most `for_at_most` for `container` to exit; its exit code is read from Docker.
pub async fn wait(
    target: &Target,
    container: &str,
    for_at_most: Duration,
) -> Result<Waited, RemoteError> {
    let docker = docker_over_ssh_within(
        target.connection.clone(),
        &target.docker_socket,
        for_at_most + Duration::from_secs(5),
    );
    let options = WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let mut waiting = docker.wait_container(container, Some(options));
    // The answer (an exit code, or an error for a non-zero one) only says it ended: the exit
    // code is read from the container's state below.
    let _ = tokio::time::timeout(for_at_most, waiting.next()).await;
    let Some(inspected) = target.inspect(container).await? else {
        return Ok(Waited::Gone);
    };
    let state = inspected.state.unwrap_or_default();
    if state.running.unwrap_or(false) || state.restarting.unwrap_or(false) {
        return Ok(Waited::StillRunning);
    }
    if state.status.is_some_and(|s| s.to_string() == "created") {
        return Ok(Waited::StillRunning);
    }
    Ok(Waited::Exited(state.exit_code.unwrap_or(-1)))
}

/// One line a try wrote: when (RFC 3339, Docker's), which stream, the text (masked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputLine {
    pub timestamp: String,
    pub stream: TaskLogStream,
    pub text: String,
}

/// The last [`LOG_LINES_KEPT`] lines the container wrote, oldest first, masked.
pub async fn output(
    target: &Target,
    container: &str,
    masker: &Masker,
) -> Result<Vec<OutputLine>, RemoteError> {
    let options = LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .timestamps(true)
        .tail(&LOG_LINES_KEPT.to_string())
        .build();
    let mut logs = target.docker.logs(container, Some(options));
    let mut lines = Vec::new();
    while let Some(chunk) = logs.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => {
                let error = RemoteError::Docker {
                    operation: "reading the run's output",
                    source: error,
                };
                if is_not_found(&error) {
                    break;
                }
                return Err(error);
            }
        };
        let (stream, bytes) = match chunk {
            LogOutput::StdErr { message } => (TaskLogStream::Stderr, message),
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                (TaskLogStream::Stdout, message)
            }
            LogOutput::StdIn { .. } => continue,
        };
        let text = String::from_utf8_lossy(&bytes);
        lines.extend(text.lines().map(|line| parse_line(stream, line, masker)));
    }
    Ok(lines)
}

/// Splits Docker's timestamp from a line and masks the rest.
fn parse_line(stream: TaskLogStream, line: &str, masker: &Masker) -> OutputLine {
    let (timestamp, text) = line.split_once(' ').unwrap_or((line, ""));
    let mut text = masker.mask(text);
    if text.len() > LINE_MAX {
        let end = (0..=LINE_MAX)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(end);
    }
    OutputLine {
        timestamp: timestamp.to_string(),
        stream,
        text,
    }
}

/// Stops a try past its timeout (SIGTERM, then SIGKILL after [`STOP_GRACE`]).
pub async fn stop(target: &Target, container: &str) -> Result<(), RemoteError> {
    target.stop(container, STOP_GRACE).await.map(drop)
}

/// Removes a try's container once its output is kept.
pub async fn remove(target: &Target, container: &str) -> Result<(), RemoteError> {
    target.remove_container(container).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_timestamps_are_split_off_and_secrets_masked() {
        let masker = Masker::new(["hunter2"]);
        let line = parse_line(
            TaskLogStream::Stderr,
            "2026-12-03T01:00:00.123456789Z password is hunter2",
            &masker,
        );
        assert_eq!(line.timestamp, "2026-12-03T01:00:00.123456789Z");
        assert_eq!(line.text, "password is ****");
        assert_eq!(line.stream, TaskLogStream::Stderr);
    }
}
