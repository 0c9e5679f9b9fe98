//! A managed dependency on its server, over the server's SSH connection and Docker API: its
//! network, volume and container made to exist and run, the health check run inside it, and
//! the removal on deletion.

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::dependency_resource::DependencyKind;
use berth_crds::owner_labels;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, docker_over_ssh_within, is_conflict, is_not_found};
use bollard::models::{ContainerCreateBody, VolumeCreateRequest};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, RemoveVolumeOptions,
};
use futures::StreamExt;

use super::firewall::Rules;
use super::plan::{Names, SETTINGS_LABELS, health_command};
use crate::reconcilers::container_exec::{run_in_container, run_script_in};
use crate::reconcilers::deployment::server_target::Target;

/// How long a pull of the dependency's image may take.
const PULL_TIMEOUT: Duration = Duration::from_secs(600);

/// What making the container run took.
#[derive(Debug, PartialEq, Eq)]
pub enum Converged {
    /// It ran already as declared.
    Running,
    /// It was created (first time, removed by hand, or another image asked for).
    Created,
    /// It existed, stopped; it was started.
    Started,
}

/// Creates the network and volume unless they exist, pulls the image when absent, and makes
/// the container exist and run with `body` (recreated when its image or certificate differs
/// from the spec's); `files` (a tar archive) are put into a new container before it starts.
pub async fn converge(
    target: &Target,
    names: &Names,
    body: ContainerCreateBody,
    files: Option<Vec<u8>>,
) -> Result<Converged, RemoteError> {
    let image = body.image.clone().unwrap_or_default();
    let owner = owner_labels(&body.labels.clone().unwrap_or_default());
    // Independent round trips through the tunnel, at once: they sit before the first start.
    let (_, _, container, image_present) = tokio::try_join!(
        target.ensure_network(&names.network, &owner),
        ensure_volume(target, &names.volume, &owner),
        target.inspect(&names.container),
        target.image_present(&image),
    )?;
    if let Some(container) = &container {
        let labels = container.config.as_ref().and_then(|c| c.labels.as_ref());
        let wanted = body.labels.as_ref();
        let as_declared = SETTINGS_LABELS
            .iter()
            .all(|label| labels.and_then(|l| l.get(*label)) == wanted.and_then(|l| l.get(*label)));
        if as_declared {
            let running = container
                .state
                .as_ref()
                .and_then(|s| s.running)
                .unwrap_or(false);
            if running {
                return Ok(Converged::Running);
            }
            target.start(&names.container).await?;
            return Ok(Converged::Started);
        }
        // Another image or certificate: the container goes, the data volume stays.
        let changed: Vec<&str> = SETTINGS_LABELS
            .iter()
            .copied()
            .filter(|label| {
                labels.and_then(|l| l.get(*label)) != wanted.and_then(|l| l.get(*label))
            })
            .collect();
        tracing::info!(container = %names.container, ?changed, "replacing the dependency's container");
        target.remove_container(&names.container).await?;
    }
    tracing::info!(container = %names.container, volume = %names.volume, "creating the dependency's container");
    if !image_present {
        pull(target, &image).await?;
    }
    create_and_start(target, &names.container, body, files).await?;
    Ok(Converged::Created)
}

/// Creates container `name` from `body` (one another reconcile created meanwhile is taken as
/// it is), puts `files` into it and starts it.
pub async fn create_and_start(
    target: &Target,
    name: &str,
    body: ContainerCreateBody,
    files: Option<Vec<u8>>,
) -> Result<(), RemoteError> {
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    let created = docker_call(
        &target.connection,
        "creating the dependency's container",
        target.docker.create_container(Some(options), body),
    )
    .await;
    match created {
        Ok(_) => {}
        Err(error) if is_conflict(&error) => {}
        Err(error) => return Err(error),
    }
    if let Some(files) = files {
        target.put_files(name, files).await?;
    }
    target.start(name).await
}

/// Pulls `image` unless the server has it.
pub async fn ensure_image(target: &Target, image: &str) -> Result<(), RemoteError> {
    if target.image_present(image).await? {
        return Ok(());
    }
    pull(target, image).await
}

/// Removes `volume` and the data in it; `false` when there was none.
pub async fn remove_volume(target: &Target, volume: &str) -> Result<bool, RemoteError> {
    let removed = docker_call(
        &target.connection,
        "removing a data volume",
        target
            .docker
            .remove_volume(volume, None::<RemoveVolumeOptions>),
    )
    .await;
    match removed {
        Ok(()) => Ok(true),
        Err(error) if is_not_found(&error) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Creates `volume` with `labels` (its owner's, see [`owner_labels`]) unless it exists.
pub async fn ensure_volume(
    target: &Target,
    volume: &str,
    labels: &HashMap<String, String>,
) -> Result<(), RemoteError> {
    let request = VolumeCreateRequest {
        name: Some(volume.to_string()),
        labels: Some(labels.clone()),
        ..Default::default()
    };
    // Creating a volume that exists returns it unchanged.
    docker_call(
        &target.connection,
        "creating the data volume",
        target.docker.create_volume(request),
    )
    .await
    .map(drop)
}

/// Puts an exposed dependency's firewall rules in place on the server; what failed, in the
/// server's own words.
pub async fn guard(target: &Target, rules: &Rules) -> Result<(), String> {
    run_firewall(target, &rules.apply_script()).await
}

/// Removes the firewall rules of the dependency whose chain is `chain` (none left is fine).
pub async fn unguard(target: &Target, chain: &str) -> Result<(), String> {
    run_firewall(target, &Rules::removal_script(chain)).await
}

async fn run_firewall(target: &Target, script: &str) -> Result<(), String> {
    match target.connection.run(script).await {
        Ok(_) => Ok(()),
        // The script is long and says nothing the person needs: its exit and stderr do.
        Err(RemoteError::CommandFailed { status, stderr, .. }) => Err(format!(
            "the firewall change exited with status {status}: {stderr}"
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// Pulls `image` anonymously (a registry needing credentials is not supported yet).
async fn pull(target: &Target, image: &str) -> Result<(), RemoteError> {
    let docker = docker_over_ssh_within(
        target.connection.clone(),
        &target.docker_socket,
        PULL_TIMEOUT,
    );
    let options = CreateImageOptionsBuilder::new().from_image(image).build();
    let mut progress = docker.create_image(Some(options), None, None);
    while let Some(item) = progress.next().await {
        item.map_err(|source| RemoteError::Docker {
            operation: "pulling the dependency's image",
            source,
        })?;
    }
    Ok(())
}

/// Runs the kind's health check inside the container: `Ok(None)` when it passed, otherwise
/// what failed.
pub async fn check_health(
    target: &Target,
    names: &Names,
    kind: DependencyKind,
) -> Result<Option<String>, RemoteError> {
    let outcome = run_in_container(target, &names.container, health_command(kind), &[]).await?;
    Ok(outcome.problem(
        &format!("the {} health check", what(kind)),
        &names.container,
    ))
}

/// Runs `script` with `sh` inside the container, with `env` (how a secret reaches it: never
/// a command line); `Ok(None)` when it exited 0, otherwise what failed (no output: it could
/// echo a secret).
pub async fn run_script(
    target: &Target,
    names: &Names,
    script: &str,
    env: &[(&str, &str)],
) -> Result<Option<String>, RemoteError> {
    run_script_in(
        target,
        &names.container,
        "the credential change",
        script,
        env,
    )
    .await
}

fn what(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Postgres => "pg_isready",
        DependencyKind::Redis => "redis-cli PING",
    }
}

/// What a deletion removed: the container and network always, the volume only when asked.
pub async fn remove(
    target: &Target,
    names: &Names,
    delete_data: bool,
    previous_volume: Option<&String>,
) -> Result<Vec<String>, RemoteError> {
    let mut done = Vec::new();
    if target.remove_container(&names.container).await? {
        done.push(format!("removed container {}", names.container));
    }
    // A major-version upgrade cut short leaves its new server.
    target
        .remove_container(&super::upgrade_plan::upgrade_container(names))
        .await?;
    // After the container: its port is closed before the rules guarding it go.
    let chain = super::firewall::chain_name(&names.container);
    unguard(target, &chain)
        .await
        .map_err(|stderr| RemoteError::CommandFailed {
            command: format!("removing firewall chain {chain}"),
            status: 1,
            stderr,
        })?;
    if target.remove_network(&names.network).await? {
        done.push(format!("removed network {}", names.network));
    }
    if delete_data {
        for volume in std::iter::once(&names.volume).chain(previous_volume) {
            if remove_volume(target, volume).await? {
                done.push(format!("removed data volume {volume}"));
            }
        }
    } else {
        done.push(format!(
            "kept data volume {} (annotate berth.dev/delete-data with the object's name to remove it)",
            names.volume
        ));
    }
    Ok(done)
}
