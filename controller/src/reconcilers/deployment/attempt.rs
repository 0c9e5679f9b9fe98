//! One attempt: `reconcile` decides what it does next (wait for a retry or for its server, end
//! because it was canceled before it ran, or run), and a run is a supervised task that goes
//! through the phases in order, writes the status as it goes, and ends, schedules a retry, or
//! stops unfinished when the controller does.

mod phases;
mod roll_out;
mod server;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::deployment::{
    Deployment, DeploymentError, DeploymentErrorCode as Code, DeploymentPhase, DeploymentRetry,
    DeploymentState, DeploymentStatus,
};
use berth_crds::notification::NotificationEvent;
use berth_crds::progress::Level;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource as _, ResourceExt};

use self::phases::{Guard, Halt, Siblings, Stop};
use self::server::LiveServer;
use super::compose::stack::Stack;
use super::plan::Plan;
use super::progress::Progress;
use super::{KIND, waiting};
use crate::attempt_supervisor::{AttemptKey, Interrupt, Signal};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};

/// How long a succeeded attempt waits for the Deployments watch to show its success (it is
/// seconds behind only on a loaded API server).
const CACHE_CATCH_UP: Duration = Duration::from_secs(30);

/// How soon an attempt runs again after one of the controller's own API calls failed.
const AFTER_FAULT: Duration = Duration::from_secs(5);

/// What the attempt of `deployment` (unfinished, not being deleted) does next. A running
/// attempt is only told what changed (a cancel, a newer attempt); the action says when to look
/// again, and the end of a run looks again by itself.
pub async fn reconcile(context: &Arc<Context>, deployment: Deployment) -> Result<Action> {
    let key = AttemptKey::of(&deployment);
    // A newer attempt stops the older ones of its resource at once.
    context.attempts.supersede_older(&key);
    seen_by_cache(context, &deployment).await;
    if follow(context, &deployment) {
        return Ok(Action::await_change());
    }
    let siblings = CacheSiblings::new(context, &deployment)?;
    let interruption = siblings.interruption();
    let namespace = siblings.namespace.clone();
    let api = Api::namespaced(context.client.clone(), &namespace);
    if let Some(wait) = deployment.status.as_ref().and_then(retry_not_due) {
        return Ok(Action::requeue(wait));
    }
    if let Some(interrupt) = interruption {
        let mut progress = Progress::start(api, &deployment, context.observations.clone());
        if let Halt::Stop(stopped) = Halt::from_interrupt(interrupt, DeploymentPhase::Detect) {
            end_early(context, &deployment, &mut progress, stopped).await?;
        }
        return Ok(Action::await_change());
    }
    if let Some(blocker) = waiting::server_blocker(&context.caches, &deployment) {
        let progress = Progress::start(api, &deployment, context.observations.clone());
        wait_for_server(context, &deployment, progress, &blocker).await?;
        // The server's readiness change wakes the attempt; this is only the safety net.
        return Ok(Action::requeue(crate::reconcilers::policy::RESYNC_AFTER));
    }
    let task_context = Arc::clone(context);
    context
        .attempts
        .start(key, move |signal| run(task_context, deployment, signal));
    Ok(Action::await_change())
}

/// Whether the attempt of `deployment` runs now; if so, it is told when it must stop.
pub fn follow(context: &Context, deployment: &Deployment) -> bool {
    let key = AttemptKey::of(deployment);
    if !context.attempts.is_running(&key) {
        return false;
    }
    let interruption = CacheSiblings::new(context, deployment)
        .ok()
        .and_then(|siblings| siblings.interruption());
    if let Some(interrupt) = interruption {
        context.attempts.signal(&key, interrupt);
    }
    true
}

/// The attempt's task: runs (or re-runs, after a restart or a passing fault) the attempt until
/// it ends, waits for a retry, or is stopped unfinished. Returns how long to wait before the
/// Deployment is reconciled again.
async fn run(context: Arc<Context>, deployment: Deployment, signal: Signal) -> Duration {
    match execute(&context, &deployment, signal).await {
        Ok(()) => Duration::ZERO,
        Err(error) => {
            context.metrics.reconcile_failed(KIND, &error);
            tracing::warn!(%error, deployment = %deployment.name_any(), "the attempt runs again");
            AFTER_FAULT
        }
    }
}

async fn execute(context: &Context, deployment: &Deployment, signal: Signal) -> Result<()> {
    let siblings = CacheSiblings::new(context, deployment)?;
    let api = Api::namespaced(context.client.clone(), &siblings.namespace);
    let mut progress = Progress::start(api, deployment, context.observations.clone());
    match &progress.status.retry {
        Some(retry) => progress.note(
            Level::Info,
            format!("retry {}: running the attempt again", retry.count),
        ),
        // Started before and never ended: the controller stopped (or lost a write) midway.
        None if progress.status.started_at.is_some() => progress.note(
            Level::Warn,
            "the attempt was interrupted (controller restart or a lost status write); it runs \
             again from the start",
        ),
        None => {}
    }
    progress.status.status = Some(DeploymentState::Running);
    progress.status.started_at = Some(Time(Timestamp::now()));
    progress.status.finished_at = None;
    progress.status.last_error = None;
    let guard = Guard {
        signal,
        siblings: &siblings,
    };
    // Boxed: the phases' state is large in a debug build, and a worker thread's stack small.
    match Box::pin(phases(context, &mut progress, &guard)).await {
        Ok(served) => {
            progress.status.retry = None;
            // The older containers go before the attempt says it succeeded, so a success means
            // only the new version answers; meanwhile the new container is the serving one, and
            // stays so until the cache shows the success.
            context.attempts.mark_replacing(&AttemptKey::of(deployment));
            served.retire_older(guard.siblings, deployment).await;
            let ended = progress.end(DeploymentState::Succeeded, None).await;
            if ended.is_ok() {
                succeeded_in_cache(context, deployment).await;
                let summary = "the new version passed its health check and serves".to_string();
                notify(
                    context,
                    deployment,
                    NotificationEvent::DeploymentSucceeded,
                    summary,
                );
            }
            ended
        }
        Err(Halt::Stop(stopped)) => {
            let transient = stopped.transient || waiting::is_transient(stopped.phase, stopped.code);
            if stopped.state == DeploymentState::Failed && transient {
                return schedule_retry(context, deployment, progress, stopped).await;
            }
            end_early(context, deployment, &mut progress, stopped).await
        }
        Err(Halt::Shutdown) => {
            // Left unfinished on purpose: the next leader finds it started and runs it again.
            progress.note(Level::Warn, "the controller stopped during the attempt");
            progress.settle().await
        }
        Err(Halt::Fault(error)) => {
            progress.settle().await?;
            Err(error)
        }
    }
}

/// The attempt, phase by phase (spec §6): detect → plan → package → deploy → verify.
async fn phases(
    context: &Context,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
) -> std::result::Result<Served, Halt> {
    let resource = phases::detect(context, progress, guard).await?;
    let (mut plan, server) = phases::plan(context, progress, guard, &resource).await?;
    let stack = phases::package(&server, progress, guard, &plan).await?;
    // A stack's routed container carries its Compose service's settings.
    if let Some(stack) = &stack {
        plan.compose = Some(Box::new(stack.routed().settings.clone()));
    }
    roll_out::roll_out(&server, progress, guard, &plan, stack.as_ref()).await?;
    Ok(Served {
        server,
        plan,
        stack,
    })
}

/// What a successful attempt still has to do once its success is written.
struct Served {
    server: LiveServer,
    plan: Plan,
    stack: Option<Stack>,
}

impl Served {
    async fn retire_older(self, siblings: &dyn Siblings, deployment: &Deployment) {
        let stack = self.stack.as_ref();
        phases::retire_older(&self.server, siblings, deployment, &self.plan, stack).await;
    }
}

/// Ends the attempt as `stopped` says, with an Event.
async fn end_early(
    context: &Context,
    deployment: &Deployment,
    progress: &mut Progress<'_>,
    stopped: Stop,
) -> Result<()> {
    let type_ = match stopped.state {
        DeploymentState::Canceled => EventType::Normal,
        _ => EventType::Warning,
    };
    context
        .publish_event(
            &deployment.object_ref(&()),
            type_,
            stopped.code.as_str(),
            stopped.message.clone(),
        )
        .await;
    let error = DeploymentError {
        timestamp: Time(Timestamp::now()),
        phase: stopped.phase,
        code: stopped.code,
        message: stopped.message,
    };
    progress.status.retry = None;
    if stopped.state == DeploymentState::Failed {
        let summary = format!("{}: {}", error.code.as_str(), error.message);
        notify(
            context,
            deployment,
            NotificationEvent::DeploymentFailed,
            summary,
        );
    }
    if stopped.code == Code::Canceled {
        // Watchers see the request acknowledged before the attempt ends.
        progress.status.status = Some(DeploymentState::CancelRequested);
        progress.write();
    }
    progress.end(stopped.state, Some(error)).await
}

/// Tells the notifier how the attempt ended.
fn notify(context: &Context, deployment: &Deployment, event: NotificationEvent, summary: String) {
    let name = deployment.name_any();
    context.notify_about_resource(
        &deployment.namespace().unwrap_or_default(),
        &deployment.spec.resource_id,
        event,
        crate::notices::subject("Deployment", &name, None),
        summary,
    );
}

/// Records that the attempt waits for its server, once per wait (status, Event, timeline).
async fn wait_for_server(
    context: &Context,
    deployment: &Deployment,
    mut progress: Progress<'_>,
    blocker: &str,
) -> Result<()> {
    let server = &deployment.spec.server_id;
    let message = format!("waiting for server {server}: {blocker}");
    progress
        .status
        .status
        .get_or_insert(DeploymentState::Created);
    if !progress.waiting_for(waiting::WAITING_FOR_SERVER, &message) {
        return progress.settle().await;
    }
    context
        .publish_event(
            &deployment.object_ref(&()),
            EventType::Normal,
            waiting::WAITING_FOR_SERVER,
            message.clone(),
        )
        .await;
    progress.note(Level::Info, message);
    progress.settle().await
}

/// Keeps the attempt open after a passing fault and records when it runs again; `reconcile`
/// wakes it then.
async fn schedule_retry(
    context: &Context,
    deployment: &Deployment,
    mut progress: Progress<'_>,
    stopped: Stop,
) -> Result<()> {
    let count = progress.status.retry.as_ref().map_or(0, |r| r.count) + 1;
    let delay = waiting::retry_delay(u32::try_from(count).unwrap_or(u32::MAX));
    let message = format!(
        "{} ({}); retry {count} in {}s",
        stopped.message,
        stopped.code,
        delay.as_secs()
    );
    let next = Timestamp::now() + delay;
    progress.status.retry = Some(DeploymentRetry {
        count,
        next_retry_at: Time(next),
        last_error: DeploymentError {
            timestamp: Time(Timestamp::now()),
            phase: stopped.phase,
            code: stopped.code,
            message: stopped.message.clone(),
        },
    });
    progress.waiting_for(waiting::RETRY_SCHEDULED, &message);
    progress.note(Level::Warn, message.clone());
    context
        .publish_event(
            &deployment.object_ref(&()),
            EventType::Warning,
            waiting::RETRY_SCHEDULED,
            message,
        )
        .await;
    progress.settle().await
}

/// How long until a scheduled retry is due; `None` when none is scheduled or it is due.
fn retry_not_due(status: &DeploymentStatus) -> Option<Duration> {
    let next = status.retry.as_ref()?.next_retry_at.0;
    let left = next.duration_since(Timestamp::now());
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// Waits (briefly) until the cache holds the attempt: from then on, its absence there means
/// the Deployment was deleted.
async fn seen_by_cache(context: &Context, deployment: &Deployment) {
    let reference = ObjectRef::from_obj(deployment);
    for _ in 0..50 {
        if context.caches.deployments.get(&reference).is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the cache shows the attempt succeeded: from then on the Resource's reconciles
/// take its container as the serving one without asking the supervisor. Until then the attempt
/// stays marked as replacing, so a reconcile in between (the retired container's exit reported
/// while the watch lags, as under load) does not read the old container as the serving one.
async fn succeeded_in_cache(context: &Context, deployment: &Deployment) {
    let reference = ObjectRef::from_obj(deployment);
    let deadline = tokio::time::Instant::now() + CACHE_CATCH_UP;
    while tokio::time::Instant::now() < deadline {
        let cached = context.caches.deployments.get(&reference);
        let state = cached.and_then(|d| d.status.as_ref().and_then(|s| s.status));
        if state == Some(DeploymentState::Succeeded) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tracing::warn!(
        deployment = %reference.name,
        "the cache did not show the attempt's success in time"
    );
}

/// The attempt's view of itself and the other attempts of its resource, from the cache: it
/// follows the Deployments through their watch, so looking costs no API request.
struct CacheSiblings<'a> {
    context: &'a Context,
    deployment: &'a Deployment,
    namespace: String,
}

impl<'a> CacheSiblings<'a> {
    fn new(context: &'a Context, deployment: &'a Deployment) -> Result<Self> {
        let namespace = deployment
            .namespace()
            .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
        Ok(Self {
            context,
            deployment,
            namespace,
        })
    }

    fn attempts(&self) -> Vec<Arc<Deployment>> {
        let resource = &self.deployment.spec.resource_id;
        self.context
            .caches
            .deployments_of(&self.namespace, resource)
    }
}

impl Siblings for CacheSiblings<'_> {
    fn interruption(&self) -> Option<Interrupt> {
        let deployments = &self.context.caches.deployments;
        let name = self.deployment.name_any();
        let Some(fresh) = Caches::get(deployments, &self.namespace, &name) else {
            return Some(Interrupt::Deleted);
        };
        if fresh.spec.cancel_requested {
            return Some(Interrupt::Canceled);
        }
        let attempts = self.attempts();
        let newer = attempts.iter().rev().find(|d| is_newer(d, self.deployment));
        newer.map(|newer| Interrupt::Superseded(newer.name_any()))
    }

    fn any_succeeded(&self) -> bool {
        self.attempts()
            .iter()
            .any(|d| d.status.as_ref().and_then(|s| s.status) == Some(DeploymentState::Succeeded))
    }

    fn is_newer(&self, name: &str) -> bool {
        self.attempts()
            .iter()
            .find(|d| d.name_any() == name)
            .is_some_and(|d| is_newer(d, self.deployment))
    }
}

/// Whether `a` was requested after `b` (exactly one attempt is newest).
pub fn is_newer(a: &Deployment, b: &Deployment) -> bool {
    a.attempt_order() > b.attempt_order()
}
