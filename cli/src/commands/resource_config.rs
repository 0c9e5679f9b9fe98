//! `berth config`: a resource's network, access and runtime profiles, its source, auto-deploy
//! and storage attachments. A change takes effect with the next deployment.

use berth_api::source::SetAutoDeploy;
use berth_api::storage::{AttachStorage, DetachStorage};
use serde_json::{Map, Value, json};

use super::Ctx;
use super::resources::find_resource;
use crate::cli::ResourceConfig;
use crate::error::CliResult;
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
            let profile = present(&[
                ("internalPort", json!(port)),
                ("upstreamProtocol", json!(protocol)),
                ("exposureMode", json!(exposure)),
                ("hostPort", json!(host_port)),
            ]);
            let body = json!({"networkProfile": profile});
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
            let profile = present(&[
                ("generatedAccessMode", json!(generated_access)),
                ("pathPrefix", json!(path_prefix)),
            ]);
            let body = json!({"accessProfile": profile});
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
            build_command,
            health_path,
            restart_policy,
        } => {
            let health = health_path.map(|path| json!({"path": path}));
            let profile = present(&[
                ("strategy", json!(strategy)),
                ("startCommand", json!(start_command)),
                ("buildCommand", json!(build_command)),
                ("healthCheck", json!(health)),
                ("restartPolicy", json!(restart_policy)),
            ]);
            let body = json!({"runtimeProfile": profile});
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
        } => {
            let source = match (image, folder) {
                (Some(image), _) => json!({"kind": "docker-image", "locator": image}),
                (None, folder) => json!({"kind": "local-folder", "locator": folder}),
            };
            let body = json!({"source": source});
            change(ctx, &resource.resource, "source", &body, "source")
        }
        ResourceConfig::AutoDeploy {
            resource,
            mode,
            refs,
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
                        event_kinds: None,
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
            let body = AttachStorage {
                storage_volume_id: volume,
                destination_path: path,
            };
            change(
                ctx,
                &resource.resource,
                "storage-attachments",
                &body,
                "storage",
            )
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

/// An object of the options given: the API reads a missing field as "unset" or "keep".
fn present(fields: &[(&str, Value)]) -> Value {
    let object: Map<String, Value> = fields
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| (key.to_string(), value.clone()))
        .collect();
    Value::Object(object)
}
