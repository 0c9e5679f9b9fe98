//! DependencyResource: runs a managed PostgreSQL or Redis as one container of its image on the
//! named server, with a named volume for its data and a private network of its own; keeps it
//! running (a container removed or stopped by hand is put back, the volume with it untouched)
//! and reports its health (`pg_isready` / `redis-cli PING` inside the container: Docker runs it
//! as the container's health check and the server's observer hears each change, so a ready
//! dependency costs no SSH channel; a change, or an observer not following events, makes the
//! reconciler look over the tunnel). The credentials are generated here, kept in a Secret the object owns, and never
//! written to a status, event, log line or error.
//!
//! Deletion (finalizer) removes the container and network and keeps the volume, unless the
//! annotation `berth.dev/delete-data` holds the object's name; a database a backup policy
//! covers is first backed up once more (`final_backup`).
//!
//! An imported dependency (an external database) is not run but checked from its server and
//! its URL published for bound apps (`imported`, `import_check`).
//!
//! `plan` decides without I/O, `server` acts on the server, `credentials` keeps the Secret,
//! `observed` reads what the server's observer knows.

mod credentials;
mod final_backup;
mod firewall;
mod import_check;
mod imported;
mod observed;
mod plan;
mod rotation;
mod server;
mod tls;
mod tls_secrets;
mod upgrade;
mod upgrade_plan;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::condition::reason::{DEPENDENCY_MISSING, INVALID_SPEC};
use berth_crds::dependency_resource::{
    DELETE_DATA_ANNOTATION, DependencyResource, DependencyResourceStatus, DependencySource,
};
use berth_crds::masking::Masker;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use self::firewall::Rules;
use self::plan::{Exposure, Names, Observed};
use self::server::Converged;
use super::fresh::with_finalizer;
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::observer::DependencyWake;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;
use crate::reconcilers::policy::{drain, error_policy};
use crate::status::StatusWriter;
use futures::channel::mpsc::UnboundedReceiver;

const KIND: &str = "DependencyResource";
/// Removes the container and network (and the volume when asked) before the object goes.
pub const FINALIZER: &str = "berth.dev/dependency-cleanup";
/// How often a ready dependency's container and health are checked again over SSH when the
/// server's observer cannot tell (no health events from it): drift (a container removed or
/// stopped by hand) and a failing health check are noticed within this.
const CHECK_EVERY: Duration = Duration::from_secs(20);
/// A safety net only: the observer's events wake a dependency whose container changed.
const CHECK_WHEN_OBSERVED: Duration = Duration::from_secs(300);
/// How soon a dependency not ready yet (starting, degraded, server failing) is looked at again.
const RECHECK_SOON: Duration = Duration::from_secs(3);

/// How long a deletion retries a server it cannot reach before it lets the object go.
const GIVE_UP_CLEANUP_AFTER: SignedDuration = SignedDuration::from_secs(120);

/// How soon a dependency whose server does not exist is looked at again.
const WAIT_FOR_SERVER: Duration = Duration::from_secs(30);

/// Runs the controller on its own watch until `shutdown`; the servers' observers wake the
/// dependencies whose containers changed.
pub async fn run(
    context: Arc<Context>,
    woken: UnboundedReceiver<DependencyWake>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<DependencyResource>::all(context.client.clone());
    let controller = Controller::new(api, watcher::Config::default());
    let woken = observed::woken(woken, controller.store());
    let stream = controller
        .reconcile_on(woken)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(dependency: Arc<DependencyResource>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = dependency
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<DependencyResource>::namespaced(context.client.clone(), &namespace);
    let Some(dependency) = with_finalizer(&api, dependency, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    // Before kube's `finalizer`, which releases ours as soon as a cleanup returns at all.
    if is_being_removed(&dependency)
        && let Some(later) = final_backup::before_removal(&dependency, &context, &namespace).await?
    {
        return Ok(later);
    }
    finalizer(&api, FINALIZER, dependency, |event| async {
        match event {
            FinalizerEvent::Apply(dependency) => apply(&dependency, &context, &api).await,
            FinalizerEvent::Cleanup(dependency) => cleanup(&dependency, &context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// One reconcile of a live dependency: credentials, then the server's container, then health.
async fn apply(
    dependency: &DependencyResource,
    context: &Context,
    api: &Api<DependencyResource>,
) -> Result<Action> {
    let now = Timestamp::now();
    if let Some(problem) = dependency.spec.problem() {
        let status = plan::not_run(dependency, INVALID_SPEC, problem, now);
        write(api, dependency, &status).await?;
        return Ok(Action::await_change());
    }
    if dependency.spec.source == DependencySource::Imported {
        return imported::apply(dependency, context, api).await;
    }
    // No Secret, container or password before the server exists (a Server applied later is
    // noticed at the next look).
    let namespace = dependency.namespace().unwrap_or_default();
    let server = &dependency.spec.server_id;
    if Caches::get(&context.caches.servers, &namespace, server).is_none() {
        let message = format!("spec.serverId: server {server} does not exist");
        let status = plan::not_run(dependency, DEPENDENCY_MISSING, message, now);
        write(api, dependency, &status).await?;
        return Ok(Action::requeue(WAIT_FOR_SERVER));
    }
    let change = plan::version_change(dependency);
    if let plan::VersionChange::Refused { reason, message } = change {
        return refuse_version(dependency, context, api, reason, message).await;
    }
    let names = Names::of(dependency);
    let password = credentials::ensure(dependency, context, &names).await?;
    if let plan::VersionChange::Upgrade { from, to } = change {
        return upgrade::run(dependency, context, api, &names, &password, (from, to)).await;
    }
    let settled = !rotation::pending(dependency)
        && credentials::published_url_is_current(dependency, context, &names);
    if settled
        && observed::healthy_by_events(context, dependency, &names)
        && exposure_still_guarded(dependency, context, &names).await
    {
        // Still ready: the status is as decided before, and nothing is written.
        credentials::publish_url(dependency, context, &names, &password).await?;
        let status = plan::decide(dependency, &names, &Observed::Healthy, now);
        write(api, dependency, &status).await?;
        return Ok(Action::requeue(CHECK_WHEN_OBSERVED));
    }
    // Whatever Docker or the connection says is masked before it is shown anywhere.
    let masker = Masker::new([password.as_str()]);
    let (observed, exposure) = observe(dependency, context, &names, &password, &masker).await;
    let mut status = plan::decide(dependency, &names, &observed, now);
    plan::record_exposure(dependency, &mut status, &exposure, now);
    let mut rotating = false;
    if observed == Observed::Healthy {
        credentials::publish_url(dependency, context, &names, &password).await?;
        let credentials = rotation::advance(dependency, context, &names).await?;
        rotating = credentials.revoking.is_some();
        plan::record_credentials(dependency, &names, &mut status, credentials);
    }
    announce(dependency, context, &observed).await;
    write(api, dependency, &status).await?;
    Ok(Action::requeue(match observed {
        Observed::Healthy if !rotating => CHECK_EVERY,
        _ => RECHECK_SOON,
    }))
}

/// Leaves the server alone while `spec.image` asks for another major version of the data it
/// cannot move to; says why on the object and, once per spec change, in an Event.
async fn refuse_version(
    dependency: &DependencyResource,
    context: &Context,
    api: &Api<DependencyResource>,
    reason: &'static str,
    message: String,
) -> Result<Action> {
    let refused_already = dependency.status.as_ref().is_some_and(|status| {
        status.observed_generation == dependency.metadata.generation
            && berth_crds::condition::find(&status.conditions, berth_crds::condition::READY)
                .is_some_and(|ready| ready.reason == reason)
    });
    if !refused_already {
        event(
            dependency,
            context,
            EventType::Warning,
            reason,
            message.clone(),
        )
        .await;
    }
    let status = plan::refused(dependency, reason, message, Timestamp::now());
    write(api, dependency, &status).await?;
    Ok(Action::await_change())
}

/// Whether a dependency that looks settled may skip the look at its container: a private one
/// may; an exposed one once its firewall rules are put in place again (a server that
/// restarted lost them while Docker published the port again).
async fn exposure_still_guarded(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
) -> bool {
    if !plan::exposure_settled(dependency) {
        return false;
    }
    let Some(exposure) = &dependency.spec.exposure else {
        return true;
    };
    let namespace = dependency.namespace().unwrap_or_default();
    let Ok((_, target)) = connect(context, &namespace, &dependency.spec.server_id).await else {
        return false;
    };
    server::guard(&target, &Rules::of(&names.container, exposure))
        .await
        .is_ok()
}

/// Makes the container run as declared (its host port, if asked for, published only once
/// the firewall rules guarding it are in place) and checks its health; a container put back
/// after drift is announced.
async fn observe(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
    password: &str,
    masker: &Masker,
) -> (Observed, Exposure) {
    let namespace = dependency.namespace().unwrap_or_default();
    let failed = |code: &str, error: &dyn std::fmt::Display| {
        let observed = Observed::Failed {
            code: code.to_string(),
            message: masker.mask(&error.to_string()),
        };
        (observed, Exposure::Unchanged)
    };
    let target = match connect(context, &namespace, &dependency.spec.server_id).await {
        Ok((_, target)) => target,
        Err(error) => return failed("server_unreachable", &error),
    };
    let tls = match tls_secrets::of_server(dependency, context, &names.container).await {
        Ok(tls) => tls,
        Err(error) => return failed("tls_failed", &error),
    };
    let files = match tls.as_ref().map(tls::server_files).transpose() {
        Ok(files) => files,
        Err(error) => return failed("tls_failed", &error),
    };
    let guarded = guard_exposure(dependency, &target, names).await;
    let published = guarded.as_ref().and_then(|rules| rules.as_ref().ok());
    let body = plan::container_body(dependency, names, password, tls.as_ref(), published);
    let converged = match server::converge(&target, names, body, files).await {
        Ok(converged) => converged,
        Err(error) => return failed("provider_error", &error),
    };
    let exposure = settle_exposure(dependency, &target, names, guarded).await;
    let was_realized = dependency
        .status
        .as_ref()
        .and_then(|s| s.provider_realization.as_ref())
        .is_some_and(|r| r.realized_at.is_some());
    if was_realized && converged != Converged::Running {
        let note = match converged {
            Converged::Started => format!("container {} was stopped; started it", names.container),
            _ => format!(
                "container {} was gone or ran another image; created it again on data volume {}",
                names.container, names.volume
            ),
        };
        event(
            dependency,
            context,
            EventType::Normal,
            event_reason::DRIFT_REPAIRED,
            note,
        )
        .await;
    }
    let observed = match server::check_health(&target, names, dependency.spec.kind).await {
        Ok(None) => Observed::Healthy,
        Ok(Some(why)) => Observed::Unhealthy(masker.mask(&why)),
        Err(error) => return failed("health_check_failed", &error),
    };
    (observed, exposure)
}

/// The firewall rules of `spec.exposure`, put in place before the container publishes its
/// port: `None` when no port is asked for, the rules, or why they could not be.
async fn guard_exposure(
    dependency: &DependencyResource,
    target: &Target,
    names: &Names,
) -> Option<std::result::Result<Rules, String>> {
    let rules = Rules::of(&names.container, dependency.spec.exposure.as_ref()?);
    Some(server::guard(target, &rules).await.map(|()| rules))
}

/// Where the exposure is once the container runs as declared: a port no longer asked for has
/// its rules removed now that it is closed.
async fn settle_exposure(
    dependency: &DependencyResource,
    target: &Target,
    names: &Names,
    guarded: Option<std::result::Result<Rules, String>>,
) -> Exposure {
    match guarded {
        Some(Ok(rules)) => Exposure::Published(rules),
        Some(Err(why)) => Exposure::Withheld(why),
        None if !plan::was_exposed(dependency) => Exposure::Private,
        None => match server::unguard(target, &firewall::chain_name(&names.container)).await {
            Ok(()) => Exposure::Private,
            Err(why) => Exposure::Lingering(why),
        },
    }
}

/// Events for the transitions a person wants to hear about: first ready, degraded, recovered.
async fn announce(dependency: &DependencyResource, context: &Context, observed: &Observed) {
    let was = dependency
        .status
        .as_ref()
        .and_then(|s| s.lifecycle_status)
        .map(|l| l.as_str());
    let (kind, reason, note) = match (was, observed) {
        (Some("ready"), Observed::Healthy) => return,
        (Some("degraded"), Observed::Healthy) => (
            EventType::Normal,
            event_reason::DEPENDENCY_RECOVERED,
            "the health check passes again".to_string(),
        ),
        (_, Observed::Healthy) => (
            EventType::Normal,
            event_reason::DEPENDENCY_READY,
            format!("{} is ready", dependency.spec.kind.as_str()),
        ),
        (Some("ready"), Observed::Unhealthy(why) | Observed::Failed { message: why, .. }) => (
            EventType::Warning,
            event_reason::DEPENDENCY_DEGRADED,
            why.clone(),
        ),
        _ => return,
    };
    event(dependency, context, kind, reason, note).await;
}

/// Removes the container and network; the volume only when the annotation names the object.
async fn cleanup(dependency: &DependencyResource, context: &Context) -> Result<Action> {
    let namespace = dependency.namespace().unwrap_or_default();
    let names = Names::of(dependency);
    if dependency.spec.source == DependencySource::Imported {
        return Ok(Action::await_change());
    }
    let server = &dependency.spec.server_id;
    let left = |why: String| {
        format!(
            "{why}: container {}, network {} and volume {} may be left on it",
            names.container, names.network, names.volume
        )
    };
    if Caches::get(&context.caches.servers, &namespace, server).is_none() {
        let note = left(format!("server {server} no longer exists"));
        event(
            dependency,
            context,
            EventType::Warning,
            event_reason::CLEANUP_INCOMPLETE,
            note,
        )
        .await;
        return Ok(Action::await_change());
    }
    // An unreachable server is retried for a while, but does not keep the object (and its
    // server, which waits for it) forever: then the event says what may be left.
    let target = match connect(context, &namespace, server).await {
        Ok((_, target)) => target,
        Err(error) if deleted_within(dependency, GIVE_UP_CLEANUP_AFTER) => return Err(error),
        Err(error) => {
            let note = left(format!("server {server} could not be reached ({error})"));
            event(
                dependency,
                context,
                EventType::Warning,
                event_reason::CLEANUP_INCOMPLETE,
                note,
            )
            .await;
            return Ok(Action::await_change());
        }
    };
    let delete_data = dependency
        .annotations()
        .get(DELETE_DATA_ANNOTATION)
        .is_some_and(|typed| *typed == dependency.name_any());
    // The volume a major-version upgrade left the old data in goes with the data asked to go.
    let previous_volume = dependency
        .status
        .as_ref()
        .and_then(|s| s.upgrade.as_ref())
        .map(|u| &u.previous_volume)
        .filter(|volume| **volume != names.volume);
    let done = server::remove(&target, &names, delete_data, previous_volume).await?;
    tracing::info!(dependency = %dependency.name_any(), %namespace, done = %done.join("; "), "dependency removed");
    event(
        dependency,
        context,
        EventType::Normal,
        event_reason::DEPENDENCY_REMOVED,
        done.join("; "),
    )
    .await;
    Ok(Action::await_change())
}

/// Whether `dependency` is being deleted and its cleanup is still ours to do.
fn is_being_removed(dependency: &DependencyResource) -> bool {
    dependency.metadata.deletion_timestamp.is_some()
        && dependency.finalizers().iter().any(|f| f == FINALIZER)
        && dependency.spec.source == DependencySource::Managed
}

/// Whether `dependency`'s deletion was asked for less than `within` ago.
fn deleted_within(dependency: &DependencyResource, within: SignedDuration) -> bool {
    let deleted = dependency.metadata.deletion_timestamp.as_ref();
    deleted.is_none_or(|at| Timestamp::now().duration_since(at.0) < within)
}

async fn write(
    api: &Api<DependencyResource>,
    dependency: &DependencyResource,
    status: &DependencyResourceStatus,
) -> Result<()> {
    StatusWriter::new(api, dependency)
        .apply(dependency.status.as_ref(), status)
        .await?;
    Ok(())
}

async fn event(
    dependency: &DependencyResource,
    context: &Context,
    kind: EventType,
    reason: &str,
    note: String,
) {
    context
        .publish_event(&dependency.object_ref(&()), kind, reason, note)
        .await;
}
