//! Scheduled tasks (`/scheduled-tasks`) and their runs (`/scheduled-task-runs`): create,
//! list, show, configure, run now, list runs, print a run's output, delete.

use berth_api::scheduled_tasks::{
    ConcurrencyPolicy, ConfigureScheduledTask, CreateScheduledTask, DeleteScheduledTask,
    RunScheduledTaskNow, RunScheduledTaskNowResponse, ScheduledTaskCommandResponse,
    ScheduledTaskList, ScheduledTaskRunList, ScheduledTaskRunLogEntry, ScheduledTaskRunLogs,
    ScheduledTaskRunSummary, ScheduledTaskShow, ScheduledTaskSummary, TaskLogStream, TaskRunStatus,
    TaskState, TriggerKind,
};
use serde_json::Value;

use super::workspace::scope_query;
use super::{Ctx, find_resource, get_as, read_as, wire_enum};
use crate::cli::Tasks;
use crate::error::CliResult;
use crate::output::{Row, Style, optional, text, wire};

impl Row for ScheduledTaskSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID", "RESOURCE", "SCHEDULE", "TIMEZONE", "STATUS", "NEXT RUN", "LAST RUN", "COMMAND",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.task_id),
            text(&self.resource_id),
            text(&self.schedule),
            text(&self.timezone),
            wire(&self.status),
            optional(self.next_run_at.as_ref()),
            self.latest_run
                .as_ref()
                .map_or_else(|| "-".to_string(), |r| wire(&r.status)),
            text(&self.command_intent),
        ]
    }

    fn id(&self) -> &str {
        &self.task_id
    }
}

/// A task as `berth tasks show` prints it: every setting.
struct TaskDetail(ScheduledTaskSummary);

impl Row for TaskDetail {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "RESOURCE",
        "SCHEDULE",
        "TIMEZONE",
        "COMMAND",
        "STATUS",
        "TIMEOUT",
        "RETRIES",
        "CONCURRENCY",
        "RUN MISSED",
        "NEXT RUN",
        "LAST RUN",
        "CREATED",
    ];

    fn cells(&self) -> Vec<String> {
        let task = &self.0;
        let latest = task.latest_run.as_ref().map_or_else(
            || "-".to_string(),
            |r| format!("{} ({})", r.run_id, wire(&r.status)),
        );
        vec![
            text(&task.task_id),
            text(&task.resource_id),
            text(&task.schedule),
            text(&task.timezone),
            text(&task.command_intent),
            wire(&task.status),
            format!("{}s", task.timeout_seconds),
            task.retry_limit.to_string(),
            wire(&task.concurrency_policy),
            task.run_missed.to_string(),
            optional(task.next_run_at.as_ref()),
            latest,
            text(&task.created_at),
        ]
    }

    fn id(&self) -> &str {
        &self.0.task_id
    }
}

impl Row for ScheduledTaskRunSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "TASK",
        "TRIGGER",
        "STATUS",
        "EXIT",
        "SCHEDULED FOR",
        "STARTED",
        "FINISHED",
        "WHY",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.run_id),
            text(&self.task_id),
            wire(&self.trigger_kind),
            wire(&self.status),
            wire(&self.exit_code),
            optional(self.scheduled_for.as_ref()),
            optional(self.started_at.as_ref()),
            optional(self.finished_at.as_ref()),
            optional(self.failure_summary.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.run_id
    }
}

pub fn tasks(ctx: &Ctx, command: Tasks) -> CliResult<()> {
    match command {
        Tasks::List {
            resource,
            project,
            environment,
            status,
        } => {
            let mut query = scope_query(ctx, project, environment)?;
            if let Some(resource) = resource {
                query.push(("resourceId", find_resource(ctx, &resource)?.0.id));
            }
            if let Some(status) = status {
                query.push(("status", wire(&wire_enum::<TaskState>("status", &status)?)));
            }
            let (answer, list): (_, ScheduledTaskList) =
                get_as(ctx.api()?, "/scheduled-tasks", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Tasks::Create {
            resource,
            schedule,
            timezone,
            command,
            timeout,
            retries,
            concurrency,
            disabled,
            run_missed,
        } => {
            let mut body = CreateScheduledTask {
                resource_id: resource.clone(),
                schedule,
                timezone: Some(timezone),
                command_intent: command,
                timeout_seconds: timeout,
                retry_limit: retries,
                concurrency_policy: concurrency
                    .map(|c| wire_enum::<ConcurrencyPolicy>("concurrency", &c))
                    .transpose()?,
                status: disabled.then_some(TaskState::Disabled),
                run_missed: run_missed.then_some(true),
                idempotency_key: None,
            };
            // The schedule and limits are checked before the resource is looked up.
            body.validate()?;
            body.resource_id = find_resource(ctx, &resource)?.0.id;
            let answer = ctx.api()?.post("/scheduled-tasks", &body)?;
            let created: ScheduledTaskCommandResponse = read_as("scheduled task", &answer)?;
            let task = &created.task;
            let next = task
                .next_run_at
                .as_deref()
                .map_or(String::new(), |at| format!("; next run {at}"));
            let human = format!(
                "Created scheduled task {} for {} ({} in {}{next})",
                task.task_id, task.resource_id, task.schedule, task.timezone
            );
            done_with_id(ctx, &answer, &human, &task.task_id);
            Ok(())
        }
        Tasks::Show { task } => {
            let (answer, shown): (_, ScheduledTaskShow) =
                get_as(ctx.api()?, &format!("/scheduled-tasks/{task}"), &[])?;
            ctx.out.row(&answer, &TaskDetail(shown.task));
            Ok(())
        }
        Tasks::Configure {
            task,
            schedule,
            timezone,
            command,
            timeout,
            retries,
            concurrency,
            disable,
            enable,
            run_missed,
        } => {
            let status = match (disable, enable) {
                (true, _) => Some(TaskState::Disabled),
                (_, true) => Some(TaskState::Enabled),
                _ => None,
            };
            let body = ConfigureScheduledTask {
                schedule,
                timezone,
                command_intent: command,
                timeout_seconds: timeout,
                retry_limit: retries,
                concurrency_policy: concurrency
                    .map(|c| wire_enum::<ConcurrencyPolicy>("concurrency", &c))
                    .transpose()?,
                status,
                run_missed,
                ..Default::default()
            };
            body.validate()?;
            let answer = ctx
                .api()?
                .post(&format!("/scheduled-tasks/{task}"), &body)?;
            let changed: ScheduledTaskCommandResponse = read_as("scheduled task", &answer)?;
            ctx.out.row(&answer, &TaskDetail(changed.task));
            Ok(())
        }
        Tasks::Run { task } => {
            let path = format!("/scheduled-tasks/{task}/runs");
            let answer = ctx.api()?.post(&path, &RunScheduledTaskNow::default())?;
            let started: RunScheduledTaskNowResponse = read_as("scheduled task run", &answer)?;
            let run = &started.run.run_id;
            let human = format!(
                "Started run {run} of {task} (berth tasks runs {task}; berth tasks logs {run})"
            );
            done_with_id(ctx, &answer, &human, run);
            Ok(())
        }
        Tasks::Runs {
            task,
            resource,
            status,
            trigger,
        } => {
            let mut query = Vec::new();
            if let Some(task) = task {
                query.push(("taskId", task));
            }
            if let Some(resource) = resource {
                query.push(("resourceId", find_resource(ctx, &resource)?.0.id));
            }
            if let Some(status) = status {
                let status: TaskRunStatus = wire_enum("status", &status)?;
                query.push(("status", wire(&status)));
            }
            if let Some(trigger) = trigger {
                query.push((
                    "triggerKind",
                    wire(&wire_enum::<TriggerKind>("trigger", &trigger)?),
                ));
            }
            let (answer, list): (_, ScheduledTaskRunList) =
                get_as(ctx.api()?, "/scheduled-task-runs", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Tasks::Logs { run } => logs(ctx, &run),
        Tasks::Delete { task } => {
            let path = format!("/scheduled-tasks/{task}");
            let answer = ctx.api()?.delete(&path, &DeleteScheduledTask::default())?;
            ctx.out.done(
                &answer,
                &format!("Deleted scheduled task {task} and its runs"),
            );
            Ok(())
        }
    }
}

/// The outcome for people, the id with `-q`, the answer for scripts.
fn done_with_id(ctx: &Ctx, answer: &Value, human: &str, id: &str) {
    if ctx.out.human() {
        println!("{human}");
    } else if ctx.out.quiet {
        println!("{id}");
    } else {
        ctx.out.raw(answer);
    }
}

/// Every page of a run's lines; scripts get one answer holding them all.
fn logs(ctx: &Ctx, run: &str) -> CliResult<()> {
    let path = format!("/scheduled-task-runs/{run}/logs");
    let mut cursor: Option<String> = None;
    let mut entries: Vec<ScheduledTaskRunLogEntry> = Vec::new();
    let mut last: Value;
    loop {
        let query: Vec<(&str, String)> = cursor.iter().map(|c| ("cursor", c.clone())).collect();
        let (answer, page): (_, ScheduledTaskRunLogs) = get_as(ctx.api()?, &path, &query)?;
        last = answer;
        let empty = page.entries.is_empty();
        entries.extend(page.entries);
        match page.next_cursor {
            Some(next) if !empty => cursor = Some(next),
            _ => break,
        }
    }
    if !ctx.out.human() {
        last["entries"] = serde_json::to_value(&entries).unwrap_or_default();
        last.as_object_mut().map(|o| o.remove("nextCursor"));
        ctx.out.raw(&last);
        return Ok(());
    }
    for entry in &entries {
        println!("{}", log_line(ctx, entry));
    }
    Ok(())
}

/// One line for people: stdout as printed, stderr marked `!`, Berth's own lines `#`.
fn log_line(ctx: &Ctx, entry: &ScheduledTaskRunLogEntry) -> String {
    match entry.stream {
        TaskLogStream::Stdout => entry.message.clone(),
        TaskLogStream::Stderr => ctx.out.paint(Style::Red, &format!("! {}", entry.message)),
        TaskLogStream::System => ctx.out.paint(
            Style::Dim,
            &format!("# {} {}", entry.timestamp, entry.message),
        ),
    }
}
