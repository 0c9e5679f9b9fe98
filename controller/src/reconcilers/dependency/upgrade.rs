//! A managed PostgreSQL's major-version upgrade on its server (`upgrade_plan` decides what
//! each step runs). One reconcile runs it from start to end; one interrupted (a controller
//! restart) starts again from the beginning, its leftovers removed first. On success the
//! status points at the new volume and the dependency's container of the new image starts on
//! it at once; on failure the old server takes writes again and serves as before.

use std::time::Duration;

use berth_crds::dependency_resource::{DependencyResource, DependencyUpgrade, current_user};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use tokio::time::Instant;

use super::plan::{self, Names, reason};
use super::upgrade_plan as steps;
use super::{event, server, tls, tls_secrets, write};
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::container_exec::run_script_in;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;
use crate::reconcilers::postgres_shell::{count_command, parse_counts, ready_command};
use crate::status::StatusWriter;

/// How long writes in flight on the old server may take to finish before they are ended.
const WRITERS_GRACE: Duration = Duration::from_secs(20);
/// How long the new server may take to initialise and accept connections.
const NEW_SERVER_READY_WITHIN: Duration = Duration::from_secs(120);
/// How long the dump and restore may take.
const COPY_WITHIN: Duration = Duration::from_secs(30 * 60);
/// How soon a reconcile whose view of the object was overtaken looks again.
const STALE_VIEW_RETRY: Duration = Duration::from_secs(5);
/// How often a dependency whose old server is gone looks for it again.
const SOURCE_MISSING_RECHECK: Duration = Duration::from_secs(60);

/// Runs the upgrade from PostgreSQL `from` to `to` and records how it ended.
pub async fn run(
    dependency: &DependencyResource,
    context: &Context,
    api: &Api<DependencyResource>,
    names: &Names,
    password: &str,
    (from, to): (u32, u32),
) -> Result<Action> {
    let namespace = dependency.namespace().unwrap_or_default();
    // An unreachable server is an error: retried with backoff, nothing started.
    let (_, target) = connect(context, &namespace, &dependency.spec.server_id).await?;
    if !old_server_present(&target, dependency, names).await? {
        return source_missing(dependency, api, names, (from, to)).await;
    }
    let record = steps::started(dependency, (from, to), &names.volume, Timestamp::now());
    write_upgrade(api, dependency, reason::UPGRADING, &record, None).await?;
    event(
        dependency,
        context,
        EventType::Normal,
        event_reason::MAJOR_VERSION_UPGRADE_STARTED,
        record.message.clone(),
    )
    .await;
    let new_volume = steps::new_volume(names, to);
    match copy(&target, dependency, names, password, &new_volume).await {
        Ok(counted) => {
            let switched =
                switch(&target, dependency, context, api, names, record, counted).await?;
            serve_switched(&target, &switched, context, password).await;
            // The status written wakes the next reconcile with it: that one checks the new server.
            Ok(Action::await_change())
        }
        Err(why) => {
            give_up(&target, names, &new_volume).await;
            let record = steps::failed(record, why, Timestamp::now());
            let message = format!(
                "the upgrade to PostgreSQL {to} failed: {}; PostgreSQL {from} serves as before \
                 and takes writes again",
                record.message
            );
            write_upgrade(
                api,
                dependency,
                reason::UPGRADE_FAILED,
                &record,
                Some(message.clone()),
            )
            .await?;
            let warning = event_reason::MAJOR_VERSION_UPGRADE_FAILED;
            event(dependency, context, EventType::Warning, warning, message).await;
            Ok(Action::await_change())
        }
    }
}

/// No old server to copy from. Most likely a view of the object from before its switch (the
/// watch had not caught up: the old server is gone because the upgrade ended): then the
/// status write, conditioned on the version read, is refused and the newer view comes.
/// Otherwise the container was removed by hand and the status says so. Nothing on the server
/// is touched either way (the new volume may hold the only copy).
async fn source_missing(
    dependency: &DependencyResource,
    api: &Api<DependencyResource>,
    names: &Names,
    versions: (u32, u32),
) -> Result<Action> {
    let message = steps::source_missing_message(names, versions);
    let reason = reason::UPGRADE_SOURCE_MISSING;
    let status = plan::refused(dependency, reason, message, Timestamp::now());
    let writer = StatusWriter::new(api, dependency).if_unchanged();
    match writer.apply(dependency.status.as_ref(), &status).await {
        Err(error) if error.is_conflict() => Ok(Action::requeue(STALE_VIEW_RETRY)),
        Err(error) => Err(error),
        // A container started again by hand is not an event the controller watches.
        Ok(_) => Ok(Action::requeue(SOURCE_MISSING_RECHECK)),
    }
}

/// Whether the dependency's container exists and runs another image than the spec's: the
/// old major version an upgrade copies from.
async fn old_server_present(
    target: &Target,
    dependency: &DependencyResource,
    names: &Names,
) -> Result<bool> {
    let container = target.inspect(&names.container).await?;
    let labels = container
        .as_ref()
        .and_then(|c| c.config.as_ref()?.labels.as_ref());
    let image = labels.and_then(|labels| labels.get(plan::IMAGE_LABEL));
    Ok(container.is_some() && image.map(String::as_str) != Some(dependency.spec.image()))
}

/// Points the status at the new volume and version, then takes the old container away; the
/// object as switched (a crash before the new server starts leaves it to the next reconcile,
/// as the old container then runs another image than the spec's).
async fn switch(
    target: &Target,
    dependency: &DependencyResource,
    context: &Context,
    api: &Api<DependencyResource>,
    names: &Names,
    record: DependencyUpgrade,
    counted: (i64, i64),
) -> Result<DependencyResource> {
    target
        .remove_container(&steps::upgrade_container(names))
        .await?;
    let record = steps::succeeded(record, counted, Timestamp::now());
    let mut status = plan::refused(
        dependency,
        reason::PROVISIONING,
        "starting the new major version's server on its volume".to_string(),
        Timestamp::now(),
    );
    status.data_volume = Some(steps::new_volume(
        names,
        record.to_version.parse().unwrap_or(0),
    ));
    status.data_version = Some(record.to_version.clone());
    let message = record.message.clone();
    status.upgrade = Some(record);
    write(api, dependency, &status).await?;
    target.remove_container(&names.container).await?;
    let done = event_reason::MAJOR_VERSION_UPGRADED;
    event(dependency, context, EventType::Normal, done, message).await;
    let mut switched = dependency.clone();
    switched.status = Some(status);
    Ok(switched)
}

/// Starts the dependency's container of the new image on the new volume at once, as
/// `switched` (its status after the switch) declares it. Left to the next reconcile, the
/// container was missing until then, and a reconcile woken by the old container's removal
/// with a view of the object from before the switch could make it on the old volume.
async fn serve_switched(
    target: &Target,
    switched: &DependencyResource,
    context: &Context,
    password: &str,
) {
    let names = Names::of(switched);
    let started = async {
        let tls = tls_secrets::of_server(switched, context, &names.container)
            .await
            .map_err(|e| e.to_string())?;
        let files = tls
            .as_ref()
            .map(tls::server_files)
            .transpose()
            .map_err(|e| e.to_string())?;
        // Published again (if exposed) by the next reconcile, once its firewall rules are in place.
        let body = plan::container_body(switched, &names, password, tls.as_ref(), None);
        server::converge(target, &names, body, files)
            .await
            .map_err(|e| e.to_string())
    };
    if let Err(error) = started.await {
        // The next reconcile creates it.
        tracing::warn!(%error, container = %names.container, "could not start the upgraded server yet");
    }
}

/// Writes `record` with `Ready=False reason` (the message the record's, unless given).
async fn write_upgrade(
    api: &Api<DependencyResource>,
    dependency: &DependencyResource,
    reason: &str,
    record: &DependencyUpgrade,
    message: Option<String>,
) -> Result<()> {
    let message = message.unwrap_or_else(|| record.message.clone());
    let mut status = plan::refused(dependency, reason, message, Timestamp::now());
    status.upgrade = Some(record.clone());
    write(api, dependency, &status).await
}

/// Makes the old server read-only, copies everything into a new server on `new_volume` and
/// counts both; the tables and rows counted, or why the copy cannot be trusted.
async fn copy(
    target: &Target,
    dependency: &DependencyResource,
    names: &Names,
    password: &str,
    new_volume: &str,
) -> std::result::Result<(i64, i64), String> {
    let old = names.container.as_str();
    let new = steps::upgrade_container(names);
    discard(target, &new, new_volume).await?;
    // Before the old server is made read-only: a pull may take long, or fail.
    server::ensure_image(target, dependency.spec.image())
        .await
        .map_err(|error| format!("getting image {}: {error}", dependency.spec.image()))?;
    match server::check_health(target, names, dependency.spec.kind).await {
        Ok(None) => {}
        Ok(Some(why)) => return Err(format!("the old server is not healthy: {why}")),
        Err(error) => return Err(format!("the old server could not be checked: {error}")),
    }
    let script = sql_script(steps::READ_ONLY_SQL);
    let read_only = run_script_in(target, old, "making it read-only", &script, &[]);
    if let Some(why) = read_only.await.map_err(|e| e.to_string())? {
        return Err(why);
    }
    quiesce(target, old)
        .await
        .map_err(|error| format!("ending the writes in flight: {error}"))?;
    start_new_server(target, dependency, names, password, &new, new_volume).await?;
    let copy = steps::copy_command(&target.docker_socket, old, &new);
    let copied = target.connection.exec_within(&copy, COPY_WITHIN).await;
    match copied.map_err(|e| e.to_string())?.exit_status {
        Some(0) => {}
        status => {
            return Err(format!(
                "the dump and restore exited with status {status:?}"
            ));
        }
    }
    let counted_old = counts(target, old).await?;
    let counted_new = counts(target, &new).await?;
    if let Some(why) = steps::mismatch(counted_old, counted_new, &target_version(dependency)) {
        return Err(why);
    }
    let login = current_user(dependency.status.as_ref());
    let command = steps::login_command(&target.docker_socket, &new, login);
    let output = target
        .connection
        .exec(&command)
        .await
        .map_err(|e| e.to_string())?;
    if output.stdout_text().trim() != "t" {
        return Err(format!("login {login} was not restored on the new server"));
    }
    Ok(counted_old)
}

fn target_version(dependency: &DependencyResource) -> String {
    berth_crds::dependency_resource::major_version(dependency.spec.image())
        .map_or_else(|| "the new version".to_string(), |v| v.to_string())
}

fn sql_script(sql: &str) -> String {
    format!(
        "psql -v ON_ERROR_STOP=1 -qAt -U {} -d {} <<'SQL'\n{sql}SQL\n",
        berth_crds::dependency_resource::POSTGRES_USER,
        berth_crds::dependency_resource::POSTGRES_DATABASE
    )
}

/// Gives writes in flight on `old` a moment to commit, then ends those still open.
async fn quiesce(target: &Target, old: &str) -> Result<()> {
    let deadline = Instant::now() + WRITERS_GRACE;
    let writers = steps::writers_command(&target.docker_socket, old);
    while Instant::now() < deadline {
        let output = target.connection.exec(&writers).await?;
        if output.stdout_text().trim() == "0" {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let end = steps::end_writers_command(&target.docker_socket, old);
    target.connection.exec(&end).await?;
    Ok(())
}

/// Creates the new server's container of the spec's image on `volume` and waits until it
/// accepts connections.
async fn start_new_server(
    target: &Target,
    dependency: &DependencyResource,
    names: &Names,
    password: &str,
    container: &str,
    volume: &str,
) -> std::result::Result<(), String> {
    let on_new_volume = Names {
        volume: volume.to_string(),
        ..names.clone()
    };
    let body = plan::container_body(dependency, &on_new_volume, password, None, None);
    let body = steps::upgrade_body(body);
    let owner = berth_crds::owner_labels(&body.labels.clone().unwrap_or_default());
    let started = async {
        server::ensure_volume(target, volume, &owner).await?;
        server::create_and_start(target, container, body, None).await
    };
    started
        .await
        .map_err(|error| format!("starting the new server: {error}"))?;
    let deadline = Instant::now() + NEW_SERVER_READY_WITHIN;
    let ready = ready_command(&target.docker_socket, container);
    while Instant::now() < deadline {
        let answered = target.connection.exec(&ready).await;
        if answered.is_ok_and(|output| output.exit_status == Some(0)) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!(
        "the new server did not accept connections within {}s",
        NEW_SERVER_READY_WITHIN.as_secs()
    ))
}

/// The tables and rows of the `app` database on the server in `container`.
async fn counts(target: &Target, container: &str) -> std::result::Result<(i64, i64), String> {
    let command = count_command(&target.docker_socket, container);
    let output = target
        .connection
        .exec(&command)
        .await
        .map_err(|e| e.to_string())?;
    parse_counts(&output.stdout_text())
        .ok_or_else(|| format!("counting the tables and rows in {container} gave no answer"))
}

/// Removes what an earlier attempt left: the new server's container and volume.
async fn discard(
    target: &Target,
    container: &str,
    volume: &str,
) -> std::result::Result<(), String> {
    let removed = async {
        target.remove_container(container).await?;
        server::remove_volume(target, volume).await
    };
    removed
        .await
        .map(drop)
        .map_err(|error| format!("removing an earlier attempt's leftovers: {error}"))
}

/// After a failure: the old server takes writes again, the new one and its volume go. Best
/// effort: what fails here is logged, and the next attempt removes the leftovers first.
async fn give_up(target: &Target, names: &Names, new_volume: &str) {
    let script = sql_script(steps::WRITABLE_SQL);
    let writable = run_script_in(target, &names.container, "", &script, &[]).await;
    if !matches!(writable, Ok(None)) {
        tracing::warn!(container = %names.container, "could not make the old server writable again");
    }
    let new = steps::upgrade_container(names);
    if let Err(why) = discard(target, &new, new_volume).await {
        tracing::warn!(container = %new, %why, "could not remove the failed upgrade's server");
    }
}
