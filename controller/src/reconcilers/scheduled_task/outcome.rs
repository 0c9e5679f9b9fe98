//! What a run does next and how it ends, decided without I/O from its status, its spec and
//! the clock: start a try, wait for it, stop it at its timeout, try again or end.

use std::time::Duration;

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::scheduled_task::{
    ScheduledTaskRun, ScheduledTaskRunStatus, SkippedReason, TaskRunStatus,
};
use k8s_openapi::jiff::Timestamp;

/// Annotation on a running run that a newer run replaced (`concurrencyPolicy: replace`): its
/// value names the newer run; the task's reconciler stops the container after writing it.
pub const REPLACED_BY_ANNOTATION: &str = "berth.dev/replaced-by";
/// Longest one wait for a container's exit lasts; the reconcile then looks again (a changed
/// run, a timeout reached) and waits anew.
pub const WAIT_SLICE: Duration = Duration::from_secs(30);
/// Longest failure summary, in characters.
const SUMMARY_MAX: usize = 300;

/// The next step of a run that has not ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Record the run as made ended (skipped or missed).
    RecordNotRun,
    /// Start try `attempt`.
    Start { attempt: i64 },
    /// Wait at most `for_at_most` for the current try's container to exit.
    Wait {
        container: String,
        for_at_most: Duration,
    },
    /// The current try ran past its timeout: stop it, then collect it.
    Stop { container: String },
    /// The current try exited with `exit_code` (its output is recorded): remove its container,
    /// then end or try again.
    Finish { container: String, exit_code: i64 },
}

/// What a run that has not ended does next at `now`; `None` when it has ended.
pub fn next_step(run: &ScheduledTaskRun, now: Timestamp) -> Option<Step> {
    if run.run_status().is_final() {
        return None;
    }
    let status = run.status.clone().unwrap_or_default();
    let (Some(container), Some(_)) = (status.container.clone(), status.attempt) else {
        if run.spec.not_run.is_some() {
            return Some(Step::RecordNotRun);
        }
        return Some(Step::Start { attempt: 1 });
    };
    if let Some(exit_code) = status.exit_code {
        return Some(Step::Finish {
            container,
            exit_code,
        });
    }
    let remaining = remaining(run, &status, now);
    if remaining.is_zero() {
        return Some(Step::Stop { container });
    }
    Some(Step::Wait {
        container,
        for_at_most: remaining.min(WAIT_SLICE),
    })
}

/// How long the current try may still run.
fn remaining(run: &ScheduledTaskRun, status: &ScheduledTaskRunStatus, now: Timestamp) -> Duration {
    let started = status
        .attempt_started_at
        .as_deref()
        .and_then(|at| at.parse::<Timestamp>().ok())
        .unwrap_or(now);
    let limit = u64::try_from(run.spec.timeout_seconds).unwrap_or(0);
    let ran = now.duration_since(started).as_secs().max(0) as u64;
    Duration::from_secs(limit.saturating_sub(ran))
}

/// How a try that exited ends the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Succeeded,
    /// Try `attempt` next.
    Retry {
        attempt: i64,
    },
    Failed {
        summary: String,
    },
}

/// Decides what try `attempt`, which exited with `exit_code`, means for the run. `last_line` is
/// the last line it wrote (masked), `timed_out` whether Berth stopped it at its timeout.
pub fn ending(
    run: &ScheduledTaskRun,
    attempt: i64,
    exit_code: i64,
    timed_out: bool,
    last_line: Option<&str>,
) -> Ending {
    if let Some(newer) = replaced_by(run) {
        return Ending::Failed {
            summary: format!("stopped: run {newer} replaced it (concurrencyPolicy replace)"),
        };
    }
    if timed_out {
        let limit = run.spec.timeout_seconds;
        return Ending::Failed {
            summary: format!("ran past its timeout of {limit} s and was stopped"),
        };
    }
    if exit_code == 0 {
        return Ending::Succeeded;
    }
    if attempt <= run.spec.retry_limit {
        return Ending::Retry {
            attempt: attempt + 1,
        };
    }
    let tries = if attempt > 1 {
        format!(" (try {attempt} of {attempt})")
    } else {
        String::new()
    };
    let said = last_line
        .map(|line| format!(": {}", line.trim()))
        .unwrap_or_default();
    Ending::Failed {
        summary: cut(format!("exited with code {exit_code}{tries}{said}")),
    }
}

/// The run that replaced this one, if any.
pub fn replaced_by(run: &ScheduledTaskRun) -> Option<&str> {
    run.metadata
        .annotations
        .as_ref()?
        .get(REPLACED_BY_ANNOTATION)
        .map(String::as_str)
}

/// The status of a run made ended (skipped or missed).
pub fn not_run_status(run: &ScheduledTaskRun, now: Timestamp) -> ScheduledTaskRunStatus {
    let not_run = run.spec.not_run.clone();
    ScheduledTaskRunStatus {
        status: Some(
            not_run
                .as_ref()
                .map_or(TaskRunStatus::Skipped, |n| n.status),
        ),
        finished_at: Some(now.to_string()),
        failure_summary: not_run.as_ref().map(|n| n.summary.clone()),
        skipped_reason: not_run.and_then(|n| n.skipped_reason),
        ..Default::default()
    }
}

/// The summary of a run skipped because another still ran.
pub fn skipped_summary(reason: SkippedReason, running: &str) -> String {
    match reason {
        SkippedReason::ConcurrencyForbidden => {
            format!("run {running} still ran and the task's concurrencyPolicy is forbid")
        }
        SkippedReason::ResourceArchived => "the resource is archived".to_string(),
        SkippedReason::TaskDisabled => "the task is disabled".to_string(),
    }
}

fn cut(mut text: String) -> String {
    if let Some((index, _)) = text.char_indices().nth(SUMMARY_MAX) {
        text.truncate(index);
        text.push('…');
    }
    text
}

/// Whether a try's container of `run` may still be on its server: the run has not ended.
pub fn may_have_container(run: &ScheduledTaskRun) -> bool {
    matches!(
        run.run_status(),
        TaskRunStatus::Accepted | TaskRunStatus::Running
    )
}

/// `status` with its `Ready` condition saying where the run stands: True once it succeeded,
/// False once it failed, was skipped or missed (with why), Unknown until it ends.
pub fn with_ready_condition(
    mut status: ScheduledTaskRunStatus,
    generation: Option<i64>,
    now: Timestamp,
) -> ScheduledTaskRunStatus {
    let run_status = status.status.unwrap_or(TaskRunStatus::Accepted);
    let (ready, reason) = match run_status {
        TaskRunStatus::Succeeded => (ConditionStatus::True, "Succeeded"),
        TaskRunStatus::Failed => (ConditionStatus::False, "Failed"),
        TaskRunStatus::Skipped => (ConditionStatus::False, "Skipped"),
        TaskRunStatus::Missed => (ConditionStatus::False, "Missed"),
        TaskRunStatus::Accepted => (ConditionStatus::Unknown, "Accepted"),
        TaskRunStatus::Running => (ConditionStatus::Unknown, "Running"),
    };
    let message = status
        .failure_summary
        .clone()
        .unwrap_or_else(|| format!("the run is {}", run_status.as_str()));
    condition::merge(
        &mut status.conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::scheduled_task::{NotRun, ScheduledTaskRunSpec, TriggerKind};

    fn run(retry_limit: i64, status: Option<ScheduledTaskRunStatus>) -> ScheduledTaskRun {
        let mut run = ScheduledTaskRun::new(
            "nightly-1",
            ScheduledTaskRunSpec {
                task_id: "nightly".into(),
                resource_id: "web".into(),
                trigger_kind: TriggerKind::Scheduled,
                scheduled_for: None,
                command: "echo hi".into(),
                timeout_seconds: 60,
                retry_limit,
                not_run: None,
            },
        );
        run.status = status;
        run
    }

    fn running(started: &str, exit_code: Option<i64>) -> ScheduledTaskRunStatus {
        ScheduledTaskRunStatus {
            status: Some(TaskRunStatus::Running),
            attempt: Some(1),
            container: Some("c".into()),
            attempt_started_at: Some(started.into()),
            exit_code,
            ..Default::default()
        }
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn a_new_run_starts_its_first_try_and_a_not_run_one_is_recorded() {
        assert_eq!(
            next_step(&run(0, None), at("2026-12-03T01:00:00Z")),
            Some(Step::Start { attempt: 1 })
        );
        let mut skipped = run(0, None);
        skipped.spec.not_run = Some(NotRun {
            status: TaskRunStatus::Skipped,
            skipped_reason: Some(SkippedReason::ConcurrencyForbidden),
            summary: "busy".into(),
        });
        assert_eq!(
            next_step(&skipped, at("2026-12-03T01:00:00Z")),
            Some(Step::RecordNotRun)
        );
        let status = not_run_status(&skipped, at("2026-12-03T01:00:00Z"));
        assert_eq!(status.status, Some(TaskRunStatus::Skipped));
        assert_eq!(
            status.skipped_reason,
            Some(SkippedReason::ConcurrencyForbidden)
        );
    }

    #[test]
    fn a_running_try_is_waited_for_until_its_timeout_then_stopped() {
        let started = run(0, Some(running("2026-12-03T01:00:00Z", None)));
        assert_eq!(
            next_step(&started, at("2026-12-03T01:00:50Z")),
            Some(Step::Wait {
                container: "c".into(),
                for_at_most: Duration::from_secs(10)
            })
        );
        assert_eq!(
            next_step(&started, at("2026-12-03T01:00:01Z")),
            Some(Step::Wait {
                container: "c".into(),
                for_at_most: WAIT_SLICE
            })
        );
        assert_eq!(
            next_step(&started, at("2026-12-03T01:01:00Z")),
            Some(Step::Stop {
                container: "c".into()
            })
        );
        let exited = run(0, Some(running("2026-12-03T01:00:00Z", Some(3))));
        assert_eq!(
            next_step(&exited, at("2026-12-03T01:00:05Z")),
            Some(Step::Finish {
                container: "c".into(),
                exit_code: 3
            })
        );
    }

    #[test]
    fn a_failed_try_is_retried_within_the_limit_then_fails_with_its_last_line() {
        let task = run(1, None);
        assert_eq!(ending(&task, 1, 0, false, None), Ending::Succeeded);
        assert_eq!(
            ending(&task, 1, 2, false, None),
            Ending::Retry { attempt: 2 }
        );
        assert_eq!(
            ending(&task, 2, 2, false, Some("  no such table: users ")),
            Ending::Failed {
                summary: "exited with code 2 (try 2 of 2): no such table: users".into()
            }
        );
        assert_eq!(
            ending(&task, 1, 137, true, None),
            Ending::Failed {
                summary: "ran past its timeout of 60 s and was stopped".into()
            }
        );
    }

    #[test]
    fn a_replaced_run_says_which_run_replaced_it() {
        let mut replaced = run(3, None);
        replaced.metadata.annotations =
            Some([(REPLACED_BY_ANNOTATION.to_string(), "nightly-2".to_string())].into());
        let Ending::Failed { summary } = ending(&replaced, 1, 143, false, None) else {
            panic!("a replaced run fails");
        };
        assert!(summary.contains("nightly-2"), "{summary}");
    }

    #[test]
    fn a_run_is_ready_once_it_succeeded_and_says_why_once_it_failed() {
        let now = at("2026-12-03T01:00:00Z");
        let ready = |status: &ScheduledTaskRunStatus| {
            let ready = status.conditions.iter().find(|c| c.type_ == READY).unwrap();
            (ready.status, ready.reason.clone(), ready.message.clone())
        };
        let running = with_ready_condition(running("2026-12-03T00:59:00Z", None), None, now);
        assert_eq!(ready(&running).0, ConditionStatus::Unknown);
        let failed = ScheduledTaskRunStatus {
            status: Some(TaskRunStatus::Failed),
            failure_summary: Some("exited with 3".into()),
            ..running.clone()
        };
        let failed = with_ready_condition(failed, None, now);
        assert_eq!(
            ready(&failed),
            (
                ConditionStatus::False,
                "Failed".into(),
                "exited with 3".into()
            )
        );
        assert_eq!(failed.conditions.len(), 1);
        let succeeded = ScheduledTaskRunStatus {
            status: Some(TaskRunStatus::Succeeded),
            failure_summary: None,
            ..running
        };
        assert_eq!(
            ready(&with_ready_condition(succeeded, None, now)).0,
            ConditionStatus::True
        );
    }
}
