//! Scheduled tasks (`/scheduled-tasks`) and their runs (`/scheduled-task-runs`): create,
//! list, show, configure, run now, list runs, print a run's output, delete.

use berth_api::scheduled_tasks::{
    ConcurrencyPolicy, ConfigureScheduledTask, CreateScheduledTask, DeleteScheduledTask,
    DeleteScheduledTaskResponse, RunScheduledTaskNow, RunScheduledTaskNowResponse,
    ScheduledTaskCommandResponse, ScheduledTaskList, ScheduledTaskRunList,
    ScheduledTaskRunLogEntry, ScheduledTaskRunLogs, ScheduledTaskRunSummary, ScheduledTaskShow,
    ScheduledTaskSummary, TaskLogStream, TaskRunStatus, TaskState, TriggerKind,
};
use serde_json::Value;

use super::workspace::scope_query;
use super::{Answer, Ctx, find_resource, wire_enum};
use crate::cli::{ConfigureTaskArgs, CreateTaskArgs, Tasks};
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
        } => list(ctx, resource, project, environment, status),
        Tasks::Create(args) => create(ctx, args),
        Tasks::Show { task } => show(ctx, &task),
        Tasks::Configure(args) => configure(ctx, args),
        Tasks::Run { task } => run_now(ctx, &task),
        Tasks::Runs {
            task,
            resource,
            status,
            trigger,
        } => runs(ctx, task, resource, status, trigger),
        Tasks::Logs { run } => logs(ctx, &run),
        Tasks::Delete { task } => delete(ctx, &task),
    }
}

fn list(
    ctx: &Ctx,
    resource: Option<String>,
    project: Option<String>,
    environment: Option<String>,
    status: Option<String>,
) -> CliResult<()> {
    let mut query = scope_query(ctx, project, environment)?;
    if let Some(resource) = resource {
        query.push(("resourceId", find_resource(ctx, &resource)?.id));
    }
    if let Some(status) = status {
        query.push(("status", wire(&wire_enum::<TaskState>("status", &status)?)));
    }
    let answer = ctx
        .api()?
        .get::<ScheduledTaskList>("/scheduled-tasks", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn create(ctx: &Ctx, args: CreateTaskArgs) -> CliResult<()> {
    let mut body = CreateScheduledTask {
        resource_id: args.resource.clone(),
        schedule: args.schedule,
        timezone: Some(args.timezone),
        command_intent: args.command,
        timeout_seconds: args.timeout,
        retry_limit: args.retries,
        concurrency_policy: concurrency_policy(args.concurrency)?,
        status: args.disabled.then_some(TaskState::Disabled),
        run_missed: args.run_missed.then_some(true),
        idempotency_key: None,
    };
    // The schedule and limits are checked before the resource is looked up.
    body.validate()?;
    body.resource_id = find_resource(ctx, &args.resource)?.id;
    let answer = ctx
        .api()?
        .post::<ScheduledTaskCommandResponse>("/scheduled-tasks", &body)?;
    let task = &answer.value.task;
    let next = task
        .next_run_at
        .as_deref()
        .map_or(String::new(), |at| format!("; next run {at}"));
    let human = format!(
        "Created scheduled task {} for {} ({} in {}{next})",
        task.task_id, task.resource_id, task.schedule, task.timezone
    );
    done_with_id(ctx, &answer.raw, &human, &task.task_id);
    Ok(())
}

/// `--concurrency` as the API's policy.
fn concurrency_policy(concurrency: Option<String>) -> CliResult<Option<ConcurrencyPolicy>> {
    concurrency
        .map(|c| wire_enum::<ConcurrencyPolicy>("concurrency", &c))
        .transpose()
}

fn show(ctx: &Ctx, task: &str) -> CliResult<()> {
    let path = format!("/scheduled-tasks/{task}");
    let answer = ctx.api()?.get::<ScheduledTaskShow>(&path, &[])?;
    ctx.out.row(&answer.raw, &TaskDetail(answer.value.task));
    Ok(())
}

fn configure(ctx: &Ctx, args: ConfigureTaskArgs) -> CliResult<()> {
    let status = match (args.disable, args.enable) {
        (true, _) => Some(TaskState::Disabled),
        (_, true) => Some(TaskState::Enabled),
        _ => None,
    };
    let body = ConfigureScheduledTask {
        schedule: args.schedule,
        timezone: args.timezone,
        command_intent: args.command,
        timeout_seconds: args.timeout,
        retry_limit: args.retries,
        concurrency_policy: concurrency_policy(args.concurrency)?,
        status,
        run_missed: args.run_missed,
        ..Default::default()
    };
    body.validate()?;
    let path = format!("/scheduled-tasks/{}", args.task);
    let answer = ctx
        .api()?
        .post::<ScheduledTaskCommandResponse>(&path, &body)?;
    ctx.out.row(&answer.raw, &TaskDetail(answer.value.task));
    Ok(())
}

fn run_now(ctx: &Ctx, task: &str) -> CliResult<()> {
    let path = format!("/scheduled-tasks/{task}/runs");
    let answer = ctx
        .api()?
        .post::<RunScheduledTaskNowResponse>(&path, &RunScheduledTaskNow::default())?;
    let run = &answer.value.run.run_id;
    let human =
        format!("Started run {run} of {task} (berth tasks runs {task}; berth tasks logs {run})");
    done_with_id(ctx, &answer.raw, &human, run);
    Ok(())
}

fn runs(
    ctx: &Ctx,
    task: Option<String>,
    resource: Option<String>,
    status: Option<String>,
    trigger: Option<String>,
) -> CliResult<()> {
    let mut query = Vec::new();
    if let Some(task) = task {
        query.push(("taskId", task));
    }
    if let Some(resource) = resource {
        query.push(("resourceId", find_resource(ctx, &resource)?.id));
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
    let answer = ctx
        .api()?
        .get::<ScheduledTaskRunList>("/scheduled-task-runs", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn delete(ctx: &Ctx, task: &str) -> CliResult<()> {
    let path = format!("/scheduled-tasks/{task}");
    let answer = ctx
        .api()?
        .delete::<DeleteScheduledTaskResponse>(&path, &DeleteScheduledTask::default())?;
    ctx.out.done(
        &answer.raw,
        &format!("Deleted scheduled task {task} and its runs"),
    );
    Ok(())
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
        let Answer { raw, value: page } = ctx.api()?.get::<ScheduledTaskRunLogs>(&path, &query)?;
        last = raw;
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
