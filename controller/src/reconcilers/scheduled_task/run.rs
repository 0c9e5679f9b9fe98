//! ScheduledTaskRun: runs one run of a task. Each try is a fresh container of the resource's
//! serving image and configuration on its server (`container`); the reconcile starts it, waits
//! for it in slices (`outcome::WAIT_SLICE`), stops it at its timeout, keeps its output in the
//! observation store (masked), removes it, and then ends the run or tries again. Every step is
//! written to the status before the next, so a controller that dies mid-run finds the container
//! again by name and neither starts it twice nor loses its exit code.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::deployment::Deployment;
use berth_crds::masking::Masker;
use berth_crds::notification::NotificationEvent;
use berth_crds::progress::{
    DeploymentPhase, DeploymentStep, Level, OutputStream, ProgressEvent, Source, StreamStatus,
};
use berth_crds::scheduled_task::{
    RUN_CONTAINER_FINALIZER, ScheduledTaskRun, ScheduledTaskRunStatus, TaskLogStream,
    TaskRunStatus, run_container_name, run_log_owner,
};
use berth_observations::TimelineKey;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use super::container::{self, Waited};
use super::outcome::{self, Ending, Step};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::plan::Plan;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::deployment::{config, connect, plan};
use crate::reconcilers::fresh::{release_finalizer, with_finalizer};
use crate::reconcilers::policy::{drain, error_policy};
use crate::reconcilers::resource::serving;
use crate::status::StatusWriter;

const KIND: &str = "ScheduledTaskRun";
/// Held while a run may have a container on its server (see [`RUN_CONTAINER_FINALIZER`]).
const FINALIZER: &str = RUN_CONTAINER_FINALIZER;
/// How long a run may wait for its server before it is recorded missed.
const START_WITHIN: Duration = Duration::from_secs(60);

/// Runs the run controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<ScheduledTaskRun>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(run: Arc<ScheduledTaskRun>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = run
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<ScheduledTaskRun>::namespaced(context.client.clone(), &namespace);
    if run.metadata.deletion_timestamp.is_some() {
        return Run::new(&run, &context, &api, &namespace).clean_up().await;
    }
    let now = Timestamp::now();
    let Some(step) = outcome::next_step(&run, now) else {
        return Ok(Action::await_change());
    };
    // The finalizer comes before the first container can (a run made without it: by hand).
    let run = match step {
        Step::Start { .. } => match with_finalizer(&api, run, FINALIZER).await? {
            Some(run) => run,
            None => return Ok(Action::await_change()),
        },
        _ => run,
    };
    let run = Run::new(&run, &context, &api, &namespace);
    match step {
        Step::RecordNotRun => run.record_not_run(now).await,
        Step::Start { attempt } => run.start(attempt, now).await,
        Step::Wait {
            container,
            for_at_most,
        } => run.wait(&container, for_at_most).await,
        Step::Stop { container } => run.stop_at_timeout(&container).await,
        Step::Finish {
            container,
            exit_code,
        } => run.finish(&container, exit_code).await,
    }
}

/// One reconcile of one run.
struct Run<'a> {
    object: &'a ScheduledTaskRun,
    context: &'a Context,
    api: &'a Api<ScheduledTaskRun>,
    namespace: &'a str,
}

/// The serving attempt's plan on its server, the base of a try's container.
struct Prepared {
    server: String,
    target: Target,
    plan: Plan,
}

impl<'a> Run<'a> {
    fn new(
        object: &'a ScheduledTaskRun,
        context: &'a Context,
        api: &'a Api<ScheduledTaskRun>,
        namespace: &'a str,
    ) -> Self {
        Self {
            object,
            context,
            api,
            namespace,
        }
    }

    /// A run being deleted: its container goes (when its server is still there), then the
    /// finalizer. An unreachable server is tried again; a deleted one has nothing left to remove.
    async fn clean_up(&self) -> Result<Action> {
        let status = self.status();
        if let (Some(container), Some(server)) = (&status.container, &status.server_id)
            && outcome::may_have_container(self.object)
            && Caches::get(&self.context.caches.servers, self.namespace, server).is_some()
        {
            let (_, target) = connect(self.context, self.namespace, server).await?;
            container::remove(&target, container).await?;
        }
        release_finalizer(self.api, self.object, FINALIZER).await?;
        Ok(Action::await_change())
    }

    fn status(&self) -> ScheduledTaskRunStatus {
        self.object.status.clone().unwrap_or_default()
    }

    /// The resource's serving plan with its configuration as it is now; `Ok(Err(why))` when
    /// there is none to run with (a person must act).
    async fn prepare(&self) -> Result<std::result::Result<Prepared, String>> {
        let resource_id = &self.object.spec.resource_id;
        let caches = &self.context.caches;
        let Some(resource) = Caches::get(&caches.resources, self.namespace, resource_id) else {
            return Ok(Err(format!("resource {resource_id} does not exist")));
        };
        let deployments: Vec<Deployment> = caches
            .deployments_of(self.namespace, resource_id)
            .into_iter()
            .map(|d| (*d).clone())
            .collect();
        let Some(current) = serving(&deployments) else {
            return Ok(Err(format!(
                "resource {resource_id} has no deployed version to run the task with: deploy it \
                 first"
            )));
        };
        let (server, target) =
            connect(self.context, self.namespace, &current.spec.server_id).await?;
        let volumes = caches.storage_volumes_of(&resource);
        let snapshot = current.spec.source_snapshot.as_ref();
        let mut plan = match plan::plan(&resource, &server, &current.name_any(), snapshot, &volumes)
        {
            Ok(plan) => plan,
            Err(problem) => return Ok(Err(problem.message)),
        };
        config::apply_serving(self.context, self.namespace, &resource, current, &mut plan);
        Ok(Ok(Prepared {
            server: current.spec.server_id.clone(),
            target,
            plan,
        }))
    }

    /// Starts try `attempt` in a new container.
    async fn start(&self, attempt: i64, now: Timestamp) -> Result<Action> {
        let prepared = match self.prepare().await {
            Ok(Ok(prepared)) => prepared,
            Ok(Err(why)) => return self.end(TaskRunStatus::Failed, None, why).await,
            Err(error) if self.waited_longer_than(START_WITHIN, now) => {
                let why = format!("could not be started within 60 s: {error}");
                return self.end(TaskRunStatus::Missed, None, why).await;
            }
            Err(error) => return Err(error),
        };
        let name = run_container_name(self.namespace, &self.object.name_any(), attempt);
        let plan = container::run_plan(prepared.plan, self.object, &name);
        container::start(&prepared.target, &plan).await?;
        let note = format!(
            "try {attempt} started in container {name} (image {})",
            plan.image
        );
        self.log_system(&note);
        let status = ScheduledTaskRunStatus {
            status: Some(TaskRunStatus::Running),
            attempt: Some(attempt),
            container: Some(name),
            server_id: Some(prepared.server),
            image: Some(plan.image.clone()),
            started_at: self.status().started_at.or_else(|| Some(now.to_string())),
            attempt_started_at: Some(now.to_string()),
            ..Default::default()
        };
        self.write(&status).await?;
        Ok(Action::requeue(Duration::ZERO))
    }

    /// Waits a slice for the try's container to exit.
    async fn wait(&self, container: &str, for_at_most: Duration) -> Result<Action> {
        let target = self.target().await?;
        let waited = container::wait(&target, container, for_at_most).await?;
        match waited {
            Waited::StillRunning => Ok(Action::requeue(Duration::ZERO)),
            Waited::Exited(code) => self.collect(&target, container, code, false).await,
            Waited::Gone => {
                let why = "its container was removed from the server while it ran".to_string();
                self.end(TaskRunStatus::Failed, None, why).await
            }
        }
    }

    /// Stops a try that ran past its timeout, then keeps what it wrote.
    async fn stop_at_timeout(&self, container: &str) -> Result<Action> {
        let target = self.target().await?;
        container::stop(&target, container).await?;
        let limit = self.object.spec.timeout_seconds;
        self.log_system(&format!("ran past its timeout of {limit} s: stopped"));
        let code = match container::wait(&target, container, Duration::from_secs(1)).await {
            Ok(Waited::Exited(code)) => code,
            _ => -1,
        };
        self.collect(&target, container, code, true).await
    }

    /// Keeps the try's output (masked) and its exit code; the container goes next.
    async fn collect(
        &self,
        target: &Target,
        container: &str,
        exit_code: i64,
        timed_out: bool,
    ) -> Result<Action> {
        let last_line = match self.masker().await {
            Some(masker) => {
                let lines = container::output(target, container, &masker).await?;
                for line in &lines {
                    self.log(&line.timestamp, line.stream, &line.text);
                }
                lines.last().map(|line| line.text.clone())
            }
            None => {
                self.log_system(
                    "output not kept: the resource's configuration, needed to mask its secrets, \
                     could not be read",
                );
                None
            }
        };
        let attempt = self.status().attempt.unwrap_or(1);
        self.log_system(&format!("try {attempt} exited with code {exit_code}"));
        self.context.observations.flush().await;
        let ending = outcome::ending(
            self.object,
            attempt,
            exit_code,
            timed_out,
            last_line.as_deref(),
        );
        let status = ScheduledTaskRunStatus {
            exit_code: Some(exit_code),
            timed_out,
            failure_summary: match ending {
                Ending::Failed { summary } => Some(summary),
                _ => None,
            },
            ..self.status()
        };
        self.write(&status).await?;
        Ok(Action::requeue(Duration::ZERO))
    }

    /// Removes the exited try's container, then ends the run or starts the next try.
    async fn finish(&self, container: &str, exit_code: i64) -> Result<Action> {
        let target = self.target().await?;
        container::remove(&target, container).await?;
        let status = self.status();
        let attempt = status.attempt.unwrap_or(1);
        match outcome::ending(self.object, attempt, exit_code, status.timed_out, None) {
            Ending::Succeeded => {
                self.end(TaskRunStatus::Succeeded, Some(exit_code), String::new())
                    .await
            }
            Ending::Failed { summary } => {
                let summary = status.failure_summary.unwrap_or(summary);
                self.end(TaskRunStatus::Failed, Some(exit_code), summary)
                    .await
            }
            Ending::Retry { attempt: next } => {
                let tries = self.object.spec.retry_limit + 1;
                self.log_system(&format!(
                    "try {attempt} failed with exit code {exit_code}; trying again ({next} of \
                     {tries})"
                ));
                self.start(next, Timestamp::now()).await
            }
        }
    }

    /// Writes the run's end; a failed or missed run says why in a Warning Event too.
    async fn end(
        &self,
        outcome: TaskRunStatus,
        exit_code: Option<i64>,
        why: String,
    ) -> Result<Action> {
        let now = Timestamp::now();
        let summary = (!why.is_empty()).then_some(why);
        match &summary {
            Some(why) => self.log_system(&format!("run {}: {why}", outcome.as_str())),
            None => self.log_system("run succeeded"),
        }
        self.context.observations.flush().await;
        let status = ScheduledTaskRunStatus {
            status: Some(outcome),
            exit_code: exit_code.or(self.status().exit_code),
            finished_at: Some(now.to_string()),
            failure_summary: summary.clone(),
            ..self.status()
        };
        self.write(&status).await?;
        // Ended: its container was removed (or never made).
        release_finalizer(self.api, self.object, FINALIZER).await?;
        if let Some(why) = summary {
            let (reason, event) = match outcome {
                TaskRunStatus::Missed => ("TaskRunMissed", NotificationEvent::ScheduledTaskMissed),
                _ => ("TaskRunFailed", NotificationEvent::ScheduledTaskFailed),
            };
            self.notify(event, &why);
            self.context
                .publish_event(
                    &self.object.object_ref(&()),
                    EventType::Warning,
                    reason,
                    why,
                )
                .await;
        }
        Ok(Action::await_change())
    }

    /// Records a run made ended (skipped or missed), and says so in an Event.
    async fn record_not_run(&self, now: Timestamp) -> Result<Action> {
        let status = outcome::not_run_status(self.object, now);
        let (kind, reason) = match status.status {
            Some(TaskRunStatus::Missed) => (EventType::Warning, "TaskRunMissed"),
            _ => (EventType::Normal, "TaskRunSkipped"),
        };
        let why = status.failure_summary.clone().unwrap_or_default();
        self.log_system(&why);
        self.context.observations.flush().await;
        self.write(&status).await?;
        release_finalizer(self.api, self.object, FINALIZER).await?;
        if status.status == Some(TaskRunStatus::Missed) {
            self.notify(NotificationEvent::ScheduledTaskMissed, &why);
        }
        self.context
            .publish_event(&self.object.object_ref(&()), kind, reason, why)
            .await;
        Ok(Action::await_change())
    }

    /// Tells the notifier about this run (named with its task, for a person).
    fn notify(&self, event: NotificationEvent, why: &str) {
        let task = &self.object.spec.task_id;
        let name = self.object.name_any();
        self.context.notify_about_resource(
            self.namespace,
            &self.object.spec.resource_id,
            event,
            crate::notices::subject(
                "ScheduledTaskRun",
                &name,
                Some(&format!("{name} of task {task}")),
            ),
            why.to_string(),
        );
    }

    /// The connection to the server the run's container is on.
    async fn target(&self) -> Result<Target> {
        let server = self.status().server_id.unwrap_or_default();
        let (_, target) = connect(self.context, self.namespace, &server).await?;
        Ok(target)
    }

    /// The secret values the run's container holds, to mask its output; `None` when the
    /// configuration cannot be read now.
    async fn masker(&self) -> Option<Masker> {
        let prepared = self.prepare().await.ok()?.ok()?;
        let plan = prepared.plan;
        Some(Masker::new(
            plan.secret_values.iter().chain(plan.build_args.values()),
        ))
    }

    fn waited_longer_than(&self, limit: Duration, now: Timestamp) -> bool {
        let created = self.object.metadata.creation_timestamp.as_ref();
        created.is_some_and(|created| {
            now.duration_since(created.0).as_secs() >= limit.as_secs() as i64
        })
    }

    async fn write(&self, status: &ScheduledTaskRunStatus) -> Result<()> {
        let generation = self.object.metadata.generation;
        let status = outcome::with_ready_condition(status.clone(), generation, Timestamp::now());
        StatusWriter::new(self.api, self.object)
            .apply(self.object.status.as_ref(), &status)
            .await?;
        Ok(())
    }

    fn log_system(&self, text: &str) {
        self.log(&Timestamp::now().to_string(), TaskLogStream::System, text);
    }

    /// Queues one line of the run's log (text already masked).
    fn log(&self, timestamp: &str, stream: TaskLogStream, text: &str) {
        let run = self.object.name_any();
        let key = TimelineKey::new(
            self.namespace,
            run_log_owner(&self.object.spec.task_id),
            &run,
        );
        let (source, stream, level) = match stream {
            TaskLogStream::Stdout => (Source::Application, Some(OutputStream::Stdout), Level::Info),
            TaskLogStream::Stderr => (Source::Application, Some(OutputStream::Stderr), Level::Warn),
            TaskLogStream::System => (Source::Platform, None, Level::Info),
        };
        let event = ProgressEvent {
            timestamp: timestamp.to_string(),
            source,
            phase: DeploymentPhase::Deploy,
            level,
            message: text.to_string(),
            deployment_id: run,
            status: StreamStatus::Running,
            step: DeploymentStep {
                current: 1,
                total: 1,
                label: "Running the task".to_string(),
            },
            stream,
        };
        self.context.observations.record(&key, event);
    }
}
