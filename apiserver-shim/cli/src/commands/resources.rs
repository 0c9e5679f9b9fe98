//! Resources, their variables (with `env import FILE`) and their secrets.

use std::io::Read;

use berth_api::common::{Confirmation, IdResponse};
use berth_api::resource_detail;
use berth_api::resource_input::{FirstDeployment, NetworkProfileInput, SourceInput};
use berth_api::resources::{CreateResource, DeleteResource, ResourceList, ResourceRecord};
use berth_api::runtime_control::RuntimeControlRequest;
use berth_api::secrets::{
    CreateSecret, DeleteSecret, RotateSecret, SecretList, SecretRef, SecretShow,
};
use berth_api::variables::{
    DeleteVariable, EffectiveConfig, ImportResult, ImportVariables, SetVariable,
};
use serde_json::Value;

use super::infra::server_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, wire_enum};
use super::{environment_id, find_resource};
use crate::cli::{ExposureOption, ResourceOption, Resources, Secrets, Variables};
use crate::error::{CliError, CliResult};
use crate::output::col;
use crate::rows::{ResourceDetail, not_deployed_notice};
use berth_api::health::RuntimeControlBlock;

pub fn resources(ctx: &Ctx, command: Resources) -> CliResult<()> {
    match command {
        Resources::List {
            project,
            environment,
        } => list(ctx, project, environment),
        Resources::Show { resource } => show(ctx, &resource),
        Resources::Redeploy {
            resource,
            from,
            follow,
        } => super::deployments::redeploy(ctx, &resource, from, follow),
        Resources::Archive { resource, reason } => archive(ctx, &resource, reason),
        Resources::Restore { resource } => restore(ctx, &resource),
        Resources::Create {
            name,
            project,
            environment,
            kind,
            slug,
            server,
            image,
            folder,
            port,
            no_deploy,
        } => create(
            ctx,
            CreateOptions {
                name,
                project,
                environment,
                kind,
                slug,
                server,
                image,
                folder,
                port,
                no_deploy,
            },
        ),
        Resources::Stop { resource } => runtime_control(ctx, &resource, "stop"),
        Resources::Start { resource } => runtime_control(ctx, &resource, "start"),
        Resources::Restart { resource } => runtime_control(ctx, &resource, "restart"),
        Resources::Delete { resource } => delete(ctx, &resource),
    }
}

fn list(ctx: &Ctx, project: Option<String>, environment: Option<String>) -> CliResult<()> {
    let query = scope_query(ctx, project, environment)?;
    let answer = ctx.api()?.get::<ResourceList>("/resources", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn show(ctx: &Ctx, resource: &str) -> CliResult<()> {
    let mut record = find_resource(ctx, resource)?;
    let path = format!("/resources/{}", record.id);
    let whole = ctx
        .api()?
        .get::<resource_detail::ResourceDetail>(&path, &[])?;
    // The detail's deployed state is the one read just now.
    record.deployed_state = whole.value.deployed_state;
    ctx.out.row(&whole.raw, &ResourceDetail(&record));
    if ctx.out.human()
        && let Some(notice) = not_deployed_notice(&record)
    {
        println!("\n{notice}");
    }
    Ok(())
}

fn archive(ctx: &Ctx, resource: &str, reason: Option<String>) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let body = berth_api::resources::ArchiveResource {
        reason,
        idempotency_key: None,
    };
    let path = format!("/resources/{id}/archive");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Archived resource {id}"));
    Ok(())
}

fn restore(ctx: &Ctx, resource: &str) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let body = berth_api::resources::RestoreResource {};
    let path = format!("/resources/{id}/restore");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Restored resource {id}"));
    Ok(())
}

/// What `berth resources create` was given; the project, environment and server as names,
/// slugs or ids.
struct CreateOptions {
    name: String,
    project: String,
    environment: String,
    kind: String,
    slug: Option<String>,
    server: Option<String>,
    image: Option<String>,
    folder: Option<String>,
    port: Option<u16>,
    no_deploy: bool,
}

/// Creates the resource; with a server and a source it deploys at once unless told not to.
fn create(ctx: &Ctx, options: CreateOptions) -> CliResult<()> {
    let source = match (options.image, options.folder) {
        (Some(image), _) => Some(SourceInput::new("docker-image", &image)),
        (None, Some(folder)) => Some(SourceInput::new("local-folder", &folder)),
        (None, None) => None,
    };
    let kind = wire_enum("kind", &options.kind)?;
    let server = options.server.map(|s| server_id(ctx, &s)).transpose()?;
    let body = CreateResource {
        project_id: project_id(ctx, &options.project)?,
        environment_id: environment_id(ctx, &options.environment)?,
        name: options.name,
        kind,
        slug: options.slug,
        description: None,
        server_id: server,
        destination_id: None,
        services: None,
        source,
        network_profile: options.port.map(|p| NetworkProfileInput::port(p.into())),
        access_profile: None,
        runtime_profile: None,
        image_pull_secret_name: None,
        first_deployment: options.no_deploy.then_some(FirstDeployment::OnRequest),
    };
    body.validate()?;
    let answer = ctx.api()?.post::<ResourceRecord>("/resources", &body)?;
    created(ctx, &answer, "resource", "/id");
    Ok(())
}

/// Deletes the resource, confirmed with its slug as the API asks.
fn delete(ctx: &Ctx, resource: &str) -> CliResult<()> {
    let resource = find_resource(ctx, resource)?;
    let body = DeleteResource {
        confirmation: Some(Confirmation {
            resource_slug: Some(resource.slug.clone()),
            ..Confirmation::default()
        }),
        idempotency_key: None,
    };
    let path = format!("/resources/{}", resource.id);
    let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
    ctx.out
        .done(&answer.raw, &format!("Deleted resource {}", resource.id));
    Ok(())
}

/// Asks for a stop, start or restart; the controller carries it out (`berth health` shows it).
fn runtime_control(ctx: &Ctx, resource: &str, operation: &str) -> CliResult<()> {
    let resource = find_resource(ctx, resource)?;
    let path = format!("/resources/{}/runtime-control", resource.id);
    let body = RuntimeControlRequest {
        operation: operation.to_string(),
    };
    let answer = ctx.api()?.post::<RuntimeControlBlock>(&path, &body)?;
    ctx.out.record(
        &answer.raw,
        &[
            col("ATTEMPT", "/runtimeControlAttemptId"),
            col("OPERATION", "/operation"),
            col("STATUS", "/status"),
        ],
        "/runtimeControlAttemptId",
    );
    Ok(())
}

fn resource_id(ctx: &Ctx, option: &ResourceOption) -> CliResult<String> {
    Ok(find_resource(ctx, &option.resource)?.id)
}

pub fn variables(ctx: &Ctx, command: Variables) -> CliResult<()> {
    match command {
        Variables::List { resource } => {
            let id = resource_id(ctx, &resource)?;
            let path = format!("/resources/{id}/effective-config");
            let answer = ctx.api()?.get::<EffectiveConfig>(&path, &[])?;
            ctx.out.rows(&answer.raw, &answer.value.effective_entries);
            Ok(())
        }
        Variables::Set {
            resource,
            exposure,
            assignments,
        } => {
            let id = resource_id(ctx, &resource)?;
            for assignment in &assignments {
                let (key, value) = assignment
                    .split_once('=')
                    .ok_or_else(|| CliError::Usage(format!("{assignment}: expected KEY=VALUE")))?;
                let body = SetVariable {
                    key: key.to_string(),
                    value: value.to_string(),
                    exposure: Some(exposure.exposure.clone()),
                };
                // The answer is empty (`null`); the value is not echoed.
                ctx.api()?
                    .post::<()>(&format!("/resources/{id}/variables"), &body)?;
                // Never echo the value: a secret-looking key is stored as a secret.
                ctx.out
                    .done(&Value::Null, &format!("Set {key} ({})", exposure.exposure));
            }
            Ok(())
        }
        Variables::Delete {
            resource,
            exposure,
            key,
        } => {
            let id = resource_id(ctx, &resource)?;
            let body = DeleteVariable {
                exposure: Some(exposure.exposure),
            };
            let path = format!("/resources/{id}/variables/{key}");
            ctx.api()?.delete::<()>(&path, &body)?;
            ctx.out.done(&Value::Null, &format!("Deleted {key}"));
            Ok(())
        }
        Variables::Import {
            file,
            resource,
            exposure,
        } => import(ctx, &file, &resource, &exposure),
    }
}

/// `env import FILE`: the file's text as the API's env-file import (all entries or none).
fn import(
    ctx: &Ctx,
    file: &std::path::Path,
    resource: &ResourceOption,
    exposure: &ExposureOption,
) -> CliResult<()> {
    let content = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|error| {
            CliError::failure(format!("cannot read {}: {error}", file.display()))
        })?
    };
    let id = resource_id(ctx, resource)?;
    let body = ImportVariables {
        content,
        exposure: Some(exposure.exposure.clone()),
    };
    let path = format!("/resources/{id}/variables/import");
    let answer = ctx.api()?.post::<ImportResult>(&path, &body)?;
    ctx.out.rows(&answer.raw, &answer.value.imported_entries);
    Ok(())
}

pub fn secrets(ctx: &Ctx, command: Secrets) -> CliResult<()> {
    match command {
        Secrets::List { resource, exposure } => {
            let id = resource_id(ctx, &resource)?;
            let path = format!("/resources/{id}/secrets");
            let query = [("exposure", exposure.exposure)];
            let answer = ctx.api()?.get::<SecretList>(&path, &query)?;
            ctx.out.rows(&answer.raw, &answer.value.items);
            Ok(())
        }
        Secrets::Show {
            resource,
            exposure,
            key,
        } => {
            let id = resource_id(ctx, &resource)?;
            let path = format!("/resources/{id}/secrets/{key}");
            let query = [("exposure", exposure.exposure)];
            let answer = ctx.api()?.get::<SecretShow>(&path, &query)?;
            ctx.out.row(&answer.raw, &answer.value.secret);
            Ok(())
        }
        Secrets::Set {
            resource,
            exposure,
            key,
        } => {
            let id = resource_id(ctx, &resource)?;
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value)?;
            let value = value.trim_end_matches(['\r', '\n']);
            if value.is_empty() {
                return Err(CliError::Usage(
                    "pipe the secret's value into standard input".into(),
                ));
            }
            let api = ctx.api()?;
            let exposure = exposure.exposure;
            let body = CreateSecret {
                key: key.clone(),
                value: value.to_string(),
                exposure: Some(exposure.clone()),
            };
            // Create; an existing secret is rotated instead.
            let created = api.post::<SecretRef>(&format!("/resources/{id}/secrets"), &body);
            let answer = match created {
                Err(CliError::Api { status: 409, .. }) => api.post::<SecretRef>(
                    &format!("/resources/{id}/secrets/{key}"),
                    &RotateSecret {
                        value: value.to_string(),
                        exposure: Some(exposure),
                    },
                )?,
                other => other?,
            };
            ctx.out.done(&answer.raw, &format!("Set secret {key}"));
            Ok(())
        }
        Secrets::Delete {
            resource,
            exposure,
            key,
        } => {
            let id = resource_id(ctx, &resource)?;
            let body = DeleteSecret {
                exposure: Some(exposure.exposure),
            };
            let path = format!("/resources/{id}/secrets/{key}");
            let answer = ctx.api()?.delete::<SecretRef>(&path, &body)?;
            ctx.out.done(&answer.raw, &format!("Deleted secret {key}"));
            Ok(())
        }
    }
}
