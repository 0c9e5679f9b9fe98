//! `berth config`: a resource's network, access and runtime profiles, its source, auto-deploy
//! and storage attachments. A change takes effect with the next deployment.

use berth_api::build::{CREDENTIAL_ID, HOST_KEY_FINGERPRINT};
use berth_api::common::IdResponse;
use berth_api::profiles::{SetAccessProfile, SetNetworkProfile, SetRuntimeProfile};
use berth_api::resource_input::{
    AccessProfileInput, HealthCheckInput, HealthCheckKind, NetworkProfileInput,
    RuntimeProfileInput, SourceInput,
};
use berth_api::source::{AutoDeployResult, SetAutoDeploy, SetSource};
use berth_api::storage::{AttachStorage, DetachStorage};

use super::find_resource;
use super::{Ctx, wire_enum};
use crate::cli::{ResourceConfig, ResourceOption};
use crate::error::CliResult;
use crate::output::col;

pub fn config(ctx: &Ctx, command: ResourceConfig) -> CliResult<()> {
    match command {
        ResourceConfig::Source {
            resource,
            image,
            folder,
            git,
            git_ref,
            commit,
            base_directory,
            deploy_key,
            host_key,
        } => {
            let source = SourceInput {
                git_ref,
                commit_sha: commit,
                base_directory,
                ..source_of(image, folder, git, deploy_key, host_key)
            };
            set_source(ctx, &resource, source)
        }
        ResourceConfig::AutoDeploy {
            resource,
            mode,
            refs,
            events,
            rotate_webhook_secret,
        } => {
            let policy =
                mode.map(|mode| auto_deploy_policy(mode, refs, events, rotate_webhook_secret));
            auto_deploy(ctx, &resource, policy)
        }
        ResourceConfig::AttachStorage {
            resource,
            volume,
            path,
        } => attach_storage(ctx, &resource, volume, path),
        ResourceConfig::DetachStorage {
            resource,
            attachment,
        } => detach_storage(ctx, &resource, &attachment),
        // The network, access and runtime profiles are `set_profile`'s.
        profile => set_profile(ctx, profile),
    }
}

/// The network, access and runtime profiles: each is checked here as the API checks it, then
/// set (the next deployment uses it).
fn set_profile(ctx: &Ctx, command: ResourceConfig) -> CliResult<()> {
    match command {
        ResourceConfig::Network {
            resource,
            port,
            protocol,
            exposure,
            host_port,
        } => {
            let network_profile = network_profile(port, protocol, exposure, host_port)?;
            let body = SetNetworkProfile { network_profile };
            change(ctx, &resource, "network-profile", &body, "network profile")
        }
        ResourceConfig::Access {
            resource,
            generated_access,
            path_prefix,
        } => {
            let access_profile = access_profile(generated_access, path_prefix)?;
            let body = SetAccessProfile { access_profile };
            change(ctx, &resource, "access-profile", &body, "access profile")
        }
        ResourceConfig::Runtime {
            resource,
            strategy,
            start_command,
            install_command,
            build_command,
            base_image,
            publish_directory,
            dockerfile,
            build_target,
            health_path,
            health_command,
            restart_policy,
        } => {
            let runtime_profile = RuntimeProfileInput {
                strategy: strategy.map(|s| wire_enum("strategy", &s)).transpose()?,
                start_command,
                install_command,
                build_command,
                base_image,
                publish_directory,
                dockerfile_path: dockerfile,
                build_target,
                health_check: health_check(health_path, health_command),
                restart_policy: restart_policy
                    .map(|r| wire_enum("restart-policy", &r))
                    .transpose()?,
                ..RuntimeProfileInput::default()
            };
            runtime_profile.validate()?;
            let body = SetRuntimeProfile { runtime_profile };
            change(ctx, &resource, "runtime-profile", &body, "runtime profile")
        }
        // The source, auto-deploy and storage are `config`'s.
        other => config(ctx, other),
    }
}

/// `--port`, `--protocol`, `--exposure` and `--host-port` as a network profile, checked.
fn network_profile(
    port: i64,
    protocol: Option<String>,
    exposure: Option<String>,
    host_port: Option<i64>,
) -> CliResult<NetworkProfileInput> {
    let profile = NetworkProfileInput {
        upstream_protocol: protocol.map(|p| wire_enum("protocol", &p)).transpose()?,
        exposure_mode: exposure.map(|e| wire_enum("exposure", &e)).transpose()?,
        host_port,
        ..NetworkProfileInput::port(port)
    };
    // The services are the server's to check: none are named here.
    profile.validate([])?;
    Ok(profile)
}

/// `--generated-access` and `--path-prefix` as an access profile, checked.
fn access_profile(
    generated_access: Option<String>,
    path_prefix: Option<String>,
) -> CliResult<AccessProfileInput> {
    let profile = AccessProfileInput {
        generated_access_mode: generated_access
            .map(|g| wire_enum("generated-access", &g))
            .transpose()?,
        path_prefix,
    };
    profile.validate()?;
    Ok(profile)
}

/// `--health-path` (an HTTP check) or `--health-command` (a command check).
fn health_check(path: Option<String>, command: Option<String>) -> Option<HealthCheckInput> {
    match (path, command) {
        (_, Some(command)) => Some(HealthCheckInput {
            kind: Some(HealthCheckKind::Command),
            command: Some(command),
            ..HealthCheckInput::default()
        }),
        (Some(path), None) => Some(HealthCheckInput {
            path: Some(path),
            ..HealthCheckInput::default()
        }),
        (None, None) => None,
    }
}

/// POSTs `body` to the resource's `endpoint` (source or a profile, each answering the id it
/// changed) and says what changed.
fn change(
    ctx: &Ctx,
    resource: &ResourceOption,
    endpoint: &str,
    body: &impl serde::Serialize,
    what: &str,
) -> CliResult<()> {
    let id = find_resource(ctx, &resource.resource)?.id;
    let path = format!("/resources/{id}/{endpoint}");
    let answer = ctx.api()?.post::<IdResponse>(&path, body)?;
    ctx.out.done(
        &answer.raw,
        &format!("Changed the {what} of {id} (deployed by the next `berth deploy`)"),
    );
    Ok(())
}

/// What `--image`, `--folder` or `--git` names, with the deploy key and host key pin an SSH
/// repository is read with.
fn source_of(
    image: Option<String>,
    folder: Option<String>,
    git: Option<String>,
    deploy_key: Option<String>,
    host_key: Option<String>,
) -> SourceInput {
    let mut source = match (image, folder, git) {
        (Some(image), _, _) => SourceInput::new("docker-image", &image),
        (_, Some(folder), _) => SourceInput::new("local-folder", &folder),
        (_, _, git) => {
            let locator = git.unwrap_or_default();
            SourceInput::new(git_kind(&locator, deploy_key.is_some()), &locator)
        }
    };
    if let Some(credential) = deploy_key {
        source.metadata.insert(CREDENTIAL_ID.into(), credential);
    }
    if let Some(pin) = host_key {
        source.metadata.insert(HOST_KEY_FINGERPRINT.into(), pin);
    }
    source
}

/// The source kind of a `--git` locator: a path is a repository on the controller, a deploy
/// key means SSH, anything else is read without a credential.
fn git_kind(locator: &str, deploy_key: bool) -> &'static str {
    if locator.starts_with('/') || locator.starts_with("file://") {
        "local-git"
    } else if deploy_key {
        "git-deploy-key"
    } else {
        "git-public"
    }
}

/// Checks the source, then binds the resource to it.
fn set_source(ctx: &Ctx, resource: &ResourceOption, source: SourceInput) -> CliResult<()> {
    source.validate()?;
    let body = SetSource {
        source,
        idempotency_key: None,
    };
    change(ctx, resource, "source", &body, "source")
}

/// `enable` or `disable` with its triggers; an option left out is the API's default.
fn auto_deploy_policy(
    mode: String,
    refs: Vec<String>,
    events: Vec<String>,
    rotate_webhook_secret: bool,
) -> SetAutoDeploy {
    SetAutoDeploy {
        mode,
        trigger_kind: None,
        refs: (!refs.is_empty()).then_some(refs),
        event_kinds: (!events.is_empty()).then_some(events),
        rotate_webhook_secret: rotate_webhook_secret.then_some(true),
    }
}

/// Shows the resource's auto-deploy policy, after setting it to `policy` when given.
fn auto_deploy(
    ctx: &Ctx,
    resource: &ResourceOption,
    policy: Option<SetAutoDeploy>,
) -> CliResult<()> {
    let id = find_resource(ctx, &resource.resource)?.id;
    let path = format!("/resources/{id}/auto-deploy");
    let answer = match policy {
        None => ctx.api()?.get::<AutoDeployResult>(&path, &[])?,
        Some(body) => ctx.api()?.post::<AutoDeployResult>(&path, &body)?,
    };
    ctx.out.record(
        &answer.raw,
        &[
            col("STATUS", "/status"),
            col("TRIGGER", "/triggerKind"),
            col("REFS", "/refs"),
            col("BLOCKED", "/blockedReason"),
            col("WEBHOOK SECRET (shown once)", "/webhookSecret"),
        ],
        "/resourceId",
    );
    Ok(())
}

/// Attaches the storage volume `volume` (id, slug or name) at `path` in the container.
fn attach_storage(
    ctx: &Ctx,
    resource: &ResourceOption,
    volume: String,
    path: String,
) -> CliResult<()> {
    let mut body = AttachStorage {
        storage_volume_id: volume,
        destination_path: path,
    };
    body.validate()?;
    body.storage_volume_id = super::volumes::volume_id(ctx, &body.storage_volume_id)?;
    let id = find_resource(ctx, &resource.resource)?.id;
    let path = format!("/resources/{id}/storage-attachments");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    let attached = &answer.value;
    // The attachment's id is what `detach-storage` takes.
    ctx.out.done(
        &answer.raw,
        &format!(
            "Attached {} at {} to {id} as {} (mounted by the next `berth deploy`)",
            body.storage_volume_id, body.destination_path, attached.id
        ),
    );
    Ok(())
}

/// Detaches a storage attachment (the volume is kept).
fn detach_storage(ctx: &Ctx, resource: &ResourceOption, attachment: &str) -> CliResult<()> {
    let id = find_resource(ctx, &resource.resource)?.id;
    let path = format!("/resources/{id}/storage-attachments/{attachment}");
    let answer = ctx.api()?.delete::<IdResponse>(&path, &DetachStorage {})?;
    ctx.out
        .done(&answer.raw, &format!("Detached {attachment} from {id}"));
    Ok(())
}
