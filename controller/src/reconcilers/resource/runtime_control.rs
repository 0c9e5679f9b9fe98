//! Runtime control: carries out `spec.runtime` (stop, start, restart of the serving container)
//! and records each attempt with its phases in `status.runtimeControl`, plus an Event.
//!
//! The attempt is planned from spec and status alone ([`next`]), so a controller restart
//! resumes where the status says: an attempt that has not succeeded is carried out again from
//! its first phase (every step is idempotent; a resumed restart restarts once more). Before the
//! Docker calls, the attempt is written as `running`, so a slow `docker stop` is visible.

use std::time::Duration;

use berth_crds::deployment::Deployment;
use berth_crds::resource::{Resource, ResourceStatus};
use berth_crds::runtime_control::{
    BLOCKED_RESOURCE_ARCHIVED, BLOCKED_RUNTIME_STOPPED, DesiredRuntimeState, Next, PHASE_START,
    PHASE_STOP, PHASE_VALIDATE, PHASE_VERIFY, PhaseStatus, RuntimeControlAttempt,
    RuntimeControlState, RuntimeControlStatus, RuntimeOperation, RuntimeState, attempt_id, next,
    target_state,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use kube::{Api, Resource as _, ResourceExt};

use crate::cache::Caches;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::plan;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;

/// How long `docker stop` waits for the app to exit after SIGTERM before it kills it.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// When a failed attempt is tried again (the server was unreachable, say).
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// What runtime control leaves for the rest of the reconcile.
pub struct Carried {
    /// `status.runtimeControl` as it should be now.
    pub control: Option<RuntimeControlStatus>,
    /// The status as last written here (the final write compares against it).
    pub written: Option<ResourceStatus>,
    /// An attempt failed: try again soon rather than at the next resync.
    pub retry_soon: bool,
}

impl Carried {
    /// The state the runtime is kept in: drift repair leaves a `stopped` one stopped.
    pub fn applied(&self) -> DesiredRuntimeState {
        self.control
            .as_ref()
            .map_or(DesiredRuntimeState::Running, |c| c.applied_state)
    }
}

/// Carries out the resource's runtime wish if the status says it is not done yet.
pub async fn carry_out(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    serving: Option<&Deployment>,
) -> Result<Carried> {
    let current = resource
        .status
        .as_ref()
        .and_then(|s| s.runtime_control.clone());
    let wish = resource.spec.runtime_wish();
    let mut carried = Carried {
        control: current.clone(),
        written: resource.status.clone(),
        retry_soon: false,
    };
    let (operation, attempt) = match (next(&wish, current.as_ref()), current.as_ref()) {
        (Next::Nothing, _) => return Ok(carried),
        // Resumed from its first phase, under its id and start time.
        (Next::Resume(op), Some(current)) => {
            let latest = &current.latest;
            let id = latest.runtime_control_attempt_id.clone();
            let started = latest.started_at.clone();
            (op, RuntimeControlAttempt::accepted(id, op, &wish, started))
        }
        (Next::Begin(op) | Next::Resume(op), _) => {
            let generation = resource.metadata.generation.unwrap_or(0);
            let id = attempt_id(&resource.name_any(), generation);
            let now = Time(Timestamp::now());
            (op, RuntimeControlAttempt::accepted(id, op, &wish, now))
        }
    };
    let applied = carried.applied();
    let attempt = match blocked_reason(resource, context, namespace, operation) {
        Some(reason) => blocked(attempt, reason, applied),
        None => {
            let running = begin(attempt);
            carried.written = write(resource, context, namespace, &carried, &running).await?;
            let finished = run(resource, context, namespace, serving, running).await;
            carried.retry_soon = finished.status == RuntimeControlState::Failed;
            finished
        }
    };
    let applied = match attempt.status {
        RuntimeControlState::Succeeded => target_state(operation),
        _ => applied,
    };
    if current.as_ref().map(|c| &c.latest) != Some(&attempt) {
        announce(resource, context, &attempt).await;
    }
    carried.control = Some(RuntimeControlStatus {
        applied_state: applied,
        latest: attempt,
    });
    Ok(carried)
}

/// Why the attempt may not run now, if it may not.
fn blocked_reason(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    operation: RuntimeOperation,
) -> Option<&'static str> {
    if archived(resource, context, namespace) {
        return Some(BLOCKED_RESOURCE_ARCHIVED);
    }
    let stay_stopped = resource.spec.runtime_wish().desired_state == DesiredRuntimeState::Stopped;
    (operation == RuntimeOperation::Restart && stay_stopped).then_some(BLOCKED_RUNTIME_STOPPED)
}

/// Whether the resource's project or environment is archived: its runtime is left as it is.
pub fn archived(resource: &Resource, context: &Context, namespace: &str) -> bool {
    let caches = &context.caches;
    let environment = Caches::get(
        &caches.environments,
        namespace,
        &resource.spec.environment_id,
    );
    let project = Caches::get(&caches.projects, namespace, &resource.spec.project_id);
    environment.is_some_and(|e| e.spec.archived) || project.is_some_and(|p| p.spec.archived)
}

/// The attempt refused for `reason`; it proceeds once the reason is gone.
fn blocked(
    mut attempt: RuntimeControlAttempt,
    reason: &str,
    applied: DesiredRuntimeState,
) -> RuntimeControlAttempt {
    attempt.status = RuntimeControlState::Blocked;
    attempt.blocked_reason = Some(reason.to_string());
    attempt.set_phase(PHASE_VALIDATE, PhaseStatus::Failed, Some(reason));
    attempt.settle_pending(PhaseStatus::Skipped);
    attempt.runtime_state = settled_state(applied);
    attempt.message = Some(match reason {
        BLOCKED_RESOURCE_ARCHIVED => {
            "the resource's project or environment is archived: its runtime is left as it is"
                .to_string()
        }
        _ => "a restart was asked for while spec.runtime.desiredState is stopped".to_string(),
    });
    attempt
}

fn settled_state(applied: DesiredRuntimeState) -> RuntimeState {
    match applied {
        DesiredRuntimeState::Running => RuntimeState::Running,
        DesiredRuntimeState::Stopped => RuntimeState::Stopped,
    }
}

/// The attempt as written before the Docker calls.
fn begin(mut attempt: RuntimeControlAttempt) -> RuntimeControlAttempt {
    attempt.status = RuntimeControlState::Running;
    attempt.set_phase(PHASE_VALIDATE, PhaseStatus::Succeeded, None);
    attempt
}

/// Writes `attempt` as the status's latest through the one status write path.
async fn write(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    carried: &Carried,
    attempt: &RuntimeControlAttempt,
) -> Result<Option<ResourceStatus>> {
    let mut status = carried.written.clone().unwrap_or_default();
    status.runtime_control = Some(RuntimeControlStatus {
        applied_state: carried.applied(),
        latest: attempt.clone(),
    });
    let api = Api::<Resource>::namespaced(context.client.clone(), namespace);
    StatusWriter::new(&api, resource)
        .apply(carried.written.as_ref(), &status)
        .await?;
    Ok(Some(status))
}

/// Runs the attempt's Docker phases on the serving container and settles the attempt.
async fn run(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    serving: Option<&Deployment>,
    mut attempt: RuntimeControlAttempt,
) -> RuntimeControlAttempt {
    let operation = attempt.operation;
    let Some(serving) = serving else {
        attempt.settle_pending(PhaseStatus::Skipped);
        attempt.runtime_state = RuntimeState::NotDeployed;
        attempt.message = Some("no deployment has succeeded yet: nothing to act on".into());
        return succeeded(attempt, operation);
    };
    let container = plan::container_name(namespace, &resource.name_any(), &serving.name_any());
    let target = match connect(context, namespace, &serving.spec.server_id).await {
        Ok((_, target)) => target,
        Err(error) => {
            tracing::warn!(%error, resource = %resource.name_any(), "runtime control: server not reachable");
            let first = operation.phases()[1];
            return failed(
                attempt,
                first,
                "server_unreachable",
                "the server is not reachable",
            );
        }
    };
    for phase in &operation.phases()[1..] {
        match run_phase(&target, &container, phase, operation).await {
            Ok(status) => attempt.set_phase(phase, status, None),
            Err((code, message)) => return failed(attempt, phase, code, &message),
        }
    }
    attempt.message = Some(format!(
        "container {container}: {} done",
        operation.as_str()
    ));
    succeeded(attempt, operation)
}

type PhaseError = (&'static str, String);

/// One Docker phase: `Ok` with its status, or the error code and message.
async fn run_phase(
    target: &Target,
    container: &str,
    phase: &str,
    operation: RuntimeOperation,
) -> std::result::Result<PhaseStatus, PhaseError> {
    let done = |acted: bool| {
        if acted {
            PhaseStatus::Succeeded
        } else {
            PhaseStatus::Skipped
        }
    };
    match phase {
        PHASE_STOP => target
            .stop(container, STOP_GRACE)
            .await
            .map(done)
            .map_err(|e| ("docker_stop_failed", e.to_string())),
        PHASE_START => match target.running(container).await {
            // Gone: drift repair recreates the serving container once it is to run.
            Ok(None) | Ok(Some(true)) => Ok(PhaseStatus::Skipped),
            Ok(Some(false)) => target
                .start(container)
                .await
                .map(|()| PhaseStatus::Succeeded)
                .map_err(|e| ("docker_start_failed", e.to_string())),
            Err(e) => Err(("docker_inspect_failed", e.to_string())),
        },
        PHASE_VERIFY => verify(target, container, operation).await,
        _ => Ok(PhaseStatus::Skipped),
    }
}

/// Docker confirms the state the operation leads to.
async fn verify(
    target: &Target,
    container: &str,
    operation: RuntimeOperation,
) -> std::result::Result<PhaseStatus, PhaseError> {
    let running = target
        .running(container)
        .await
        .map_err(|e| ("docker_inspect_failed", e.to_string()))?;
    let wanted = target_state(operation) == DesiredRuntimeState::Running;
    match running {
        Some(state) if state == wanted => Ok(PhaseStatus::Succeeded),
        None => Ok(PhaseStatus::Skipped),
        Some(_) if wanted => Err((
            "container_not_running",
            "the container did not stay up".into(),
        )),
        Some(_) => Err(("container_still_running", "the container still runs".into())),
    }
}

fn succeeded(
    mut attempt: RuntimeControlAttempt,
    operation: RuntimeOperation,
) -> RuntimeControlAttempt {
    attempt.status = RuntimeControlState::Succeeded;
    attempt.completed_at = Some(Time(Timestamp::now()));
    if attempt.runtime_state != RuntimeState::NotDeployed {
        attempt.runtime_state = settled_state(target_state(operation));
    }
    attempt
}

fn failed(
    mut attempt: RuntimeControlAttempt,
    phase: &str,
    code: &str,
    message: &str,
) -> RuntimeControlAttempt {
    attempt.status = RuntimeControlState::Failed;
    attempt.set_phase(phase, PhaseStatus::Failed, Some(code));
    attempt.error_code = Some(code.to_string());
    attempt.message = Some(message.to_string());
    attempt.runtime_state = RuntimeState::Unknown;
    attempt
}

/// An Event for the attempt's outcome.
async fn announce(resource: &Resource, context: &Context, attempt: &RuntimeControlAttempt) {
    let id = &attempt.runtime_control_attempt_id;
    let operation = attempt.operation.as_str();
    let (type_, reason, note) = match attempt.status {
        RuntimeControlState::Succeeded => (
            EventType::Normal,
            match attempt.operation {
                RuntimeOperation::Stop => event_reason::RUNTIME_STOPPED,
                RuntimeOperation::Start => event_reason::RUNTIME_STARTED,
                RuntimeOperation::Restart => event_reason::RUNTIME_RESTARTED,
            },
            format!("{operation} ({id}) succeeded"),
        ),
        RuntimeControlState::Blocked => (
            EventType::Warning,
            event_reason::RUNTIME_CONTROL_BLOCKED,
            format!(
                "{operation} ({id}) blocked: {}",
                attempt.blocked_reason.as_deref().unwrap_or_default()
            ),
        ),
        _ => (
            EventType::Warning,
            event_reason::RUNTIME_CONTROL_FAILED,
            format!(
                "{operation} ({id}) failed: {}",
                attempt.error_code.as_deref().unwrap_or_default()
            ),
        ),
    };
    context
        .publish_event(&resource.object_ref(&()), type_, reason, note)
        .await;
}
