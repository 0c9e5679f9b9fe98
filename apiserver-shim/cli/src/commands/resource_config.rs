//! `berth config`: a resource's network, access and runtime profiles, its source, auto-deploy
//! and storage attachments. A change takes effect with the next deployment.

use berth_api::build::{CREDENTIAL_ID, HOST_KEY_FINGERPRINT};
use berth_api::common::IdResponse;
use berth_api::profiles::{SetAccessProfile, SetNetworkProfile, SetRuntimeProfile};
use berth_api::resource_input::{
    AccessProfileInput, HealthCheckInput, HealthCheckKind, NetworkProfileInput,
    RuntimeProfileInput, SourceInput,
};
use berth_api::source::{SetAutoDeploy, SetSource};
use berth_api::storage::{AttachStorage, DetachStorage};

use super::resources::find_resource;
use super::{Ctx, wire_enum};
use crate::cli::ResourceConfig;
use crate::error::{CliError, CliResult};
use crate::output::col;

pub fn config(ctx: &Ctx, command: ResourceConfig) -> CliResult<()> {
    match command {
        ResourceConfig::Network {
            resource,
            port,
            protocol,
            exposure,
            host_port,
        } => {
            let profile = NetworkProfileInput {
                upstream_protocol: protocol.map(|p| wire_enum("protocol", &p)).transpose()?,
                exposure_mode: exposure.map(|e| wire_enum("exposure", &e)).transpose()?,
                host_port,
                ..NetworkProfileInput::port(port)
            };
            // The services are the server's to check: none are named here.
            profile.validate([])?;
            let body = SetNetworkProfile {
                network_profile: profile,
            };
            change(
                ctx,
                &resource.resource,
                "network-profile",
                &body,
                "network profile",
            )
        }
        ResourceConfig::Access {
            resource,
            generated_access,
            path_prefix,
        } => {
            let profile = AccessProfileInput {
                generated_access_mode: generated_access
                    .map(|g| wire_enum("generated-access", &g))
                    .transpose()?,
                path_prefix,
            };
            profile.validate()?;
            let body = SetAccessProfile {
                access_profile: profile,
            };
            change(
                ctx,
                &resource.resource,
                "access-profile",
                &body,
                "access profile",
            )
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
            let profile = RuntimeProfileInput {
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
            profile.validate()?;
            let body = SetRuntimeProfile {
                runtime_profile: profile,
            };
            change(
                ctx,
                &resource.resource,
                "runtime-profile",
                &body,
                "runtime profile",
            )
        }
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
            let mut source = match (image, folder, git) {
                (Some(image), _, _) => SourceInput::new("docker-image", &image),
                (_, Some(folder), _) => SourceInput::new("local-folder", &folder),
                (_, _, git) => {
                    let locator = git.unwrap_or_default();
                    SourceInput::new(git_kind(&locator, deploy_key.is_some()), &locator)
                }
            };
            source.git_ref = git_ref;
            source.commit_sha = commit;
            source.base_directory = base_directory;
            if let Some(credential) = deploy_key {
                source.metadata.insert(CREDENTIAL_ID.into(), credential);
            }
            if let Some(pin) = host_key {
                source.metadata.insert(HOST_KEY_FINGERPRINT.into(), pin);
            }
            source.validate()?;
            let body = SetSource {
                source,
                idempotency_key: None,
            };
            change(ctx, &resource.resource, "source", &body, "source")
        }
        ResourceConfig::AutoDeploy {
            resource,
            mode,
            refs,
            events,
            rotate_webhook_secret,
        } => {
            let id = find_resource(ctx, &resource.resource)?.0.id;
            let path = format!("/resources/{id}/auto-deploy");
            let answer = match mode {
                None => ctx.api()?.get(&path, &[])?,
                Some(mode) => {
                    let body = SetAutoDeploy {
                        mode,
                        trigger_kind: None,
                        refs: (!refs.is_empty()).then_some(refs),
                        event_kinds: (!events.is_empty()).then_some(events),
                        rotate_webhook_secret: rotate_webhook_secret.then_some(true),
                    };
                    ctx.api()?.post(&path, &body)?
                }
            };
            ctx.out.record(
                &answer,
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
        ResourceConfig::AttachStorage {
            resource,
            volume,
            path,
        } => {
            let mut body = AttachStorage {
                storage_volume_id: volume,
                destination_path: path,
            };
            body.validate()?;
            body.storage_volume_id = super::volumes::volume_id(ctx, &body.storage_volume_id)?;
            let id = find_resource(ctx, &resource.resource)?.0.id;
            let path = format!("/resources/{id}/storage-attachments");
            let answer = ctx.api()?.post(&path, &body)?;
            let attached: IdResponse = serde_json::from_value(answer.clone()).map_err(|error| {
                CliError::failure(format!("{path}: unexpected answer: {error}"))
            })?;
            // The attachment's id is what `detach-storage` takes.
            ctx.out.done(
                &answer,
                &format!(
                    "Attached {} at {} to {id} as {} (mounted by the next `berth deploy`)",
                    body.storage_volume_id, body.destination_path, attached.id
                ),
            );
            Ok(())
        }
        ResourceConfig::DetachStorage {
            resource,
            attachment,
        } => {
            let id = find_resource(ctx, &resource.resource)?.0.id;
            let path = format!("/resources/{id}/storage-attachments/{attachment}");
            let answer = ctx.api()?.delete(&path, &DetachStorage {})?;
            ctx.out
                .done(&answer, &format!("Detached {attachment} from {id}"));
            Ok(())
        }
    }
}

/// POSTs `body` to the resource's `endpoint` and says what changed.
fn change(
    ctx: &Ctx,
    resource: &str,
    endpoint: &str,
    body: &impl serde::Serialize,
    what: &str,
) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.0.id;
    let answer = ctx
        .api()?
        .post(&format!("/resources/{id}/{endpoint}"), body)?;
    ctx.out.done(
        &answer,
        &format!("Changed the {what} of {id} (deployed by the next `berth deploy`)"),
    );
    Ok(())
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
