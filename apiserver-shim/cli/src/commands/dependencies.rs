//! Dependency resources (`/dependency-resources`) and a resource's bindings to them
//! (`/resources/{id}/dependency-bindings`). Connections are shown masked, as the API answers.

use berth_api::common::IdResponse;
use berth_api::dependencies::{
    BindDependency, CloseDependencyExposure, CredentialRotationStarted, DeleteDependencyResource,
    DependencyBindingList, DependencyBindingSummary, DependencyCaCertificate, DependencyKind,
    DependencyResourceList, DependencyResourceShow, DependencyResourceSummary,
    ExposeDependencyResource, ImportDependencyResource, MajorVersionUpgradeStarted,
    ProvisionDependencyResource, RotateDependencyCredentials, UpgradeDependencyMajorVersion,
};

use super::infra::server_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, environment_id, find_resource, id_of, wire_enum};
use crate::cli::{Db, ImportArgs, ProvisionArgs};
use crate::error::{CliError, CliResult};
use crate::output::{Row, text, wire};

/// The id of the dependency `name` names: an id (`dep-…`), or a slug or unique name.
pub fn dependency_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<DependencyResourceList>(ctx.api()?, "/dependency-resources", "dep-", name)
}

impl Row for DependencyResourceSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "KIND",
        "SERVER",
        "ENVIRONMENT",
        "STATUS",
        "CONNECTION",
        "BOUND BY",
    ];

    fn cells(&self) -> Vec<String> {
        let bound: Vec<String> = self
            .delete_safety
            .blockers
            .iter()
            .filter_map(|b| b.related_entity_id.clone())
            .collect();
        vec![
            text(&self.id),
            text(&self.name),
            self.kind.as_str().to_string(),
            text(&self.server_id),
            text(&self.environment_id),
            self.lifecycle_status.as_str().to_string(),
            text(
                self.connection
                    .as_ref()
                    .map_or("", |c| c.masked_connection.as_str()),
            ),
            text(&bound.join(", ")),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for DependencyBindingSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "DEPENDENCY",
        "KIND",
        "STATUS",
        "SNAPSHOT",
        "CONNECTION",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.id),
            text(&self.dependency_resource_id),
            self.kind
                .map_or_else(String::new, |k| k.as_str().to_string()),
            self.lifecycle_status.as_str().to_string(),
            wire(&self.snapshot_readiness.status),
            text(
                self.connection
                    .as_ref()
                    .map_or("", |c| c.masked_connection.as_str()),
            ),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

pub fn db(ctx: &Ctx, command: Db) -> CliResult<()> {
    match command {
        Db::List {
            project,
            environment,
            kind,
        } => list(ctx, project, environment, kind),
        Db::Show { dependency } => show(ctx, &dependency),
        Db::Create(args) => provision(ctx, args),
        Db::Import(args) => import(ctx, args),
        Db::CaCertificate { dependency } => ca_certificate(ctx, &dependency),
        Db::Delete {
            dependency,
            delete_data,
            skip_final_backup,
        } => delete(ctx, &dependency, delete_data, skip_final_backup),
        Db::Connect { dependency } => {
            super::terminal::database(ctx, dependency_id(ctx, &dependency)?)
        }
        Db::Bind {
            dependency,
            resource,
            target_name,
        } => bind(ctx, &dependency, &resource, target_name),
        Db::Unbind { resource, binding } => unbind(ctx, &resource, &binding),
        Db::Rotate { dependency } => rotate(ctx, &dependency),
        Db::Expose {
            dependency,
            port,
            allow_from,
        } => expose(ctx, &dependency, port, allow_from),
        Db::Upgrade { dependency, image } => upgrade(ctx, &dependency, image),
        Db::Unexpose { dependency } => unexpose(ctx, &dependency),
        Db::Bindings { resource } => bindings(ctx, &resource),
    }
}

fn show(ctx: &Ctx, dependency: &str) -> CliResult<()> {
    let path = format!("/dependency-resources/{}", dependency_id(ctx, dependency)?);
    let answer = ctx.api()?.get::<DependencyResourceShow>(&path, &[])?;
    ctx.out.row(&answer.raw, &answer.value.dependency_resource);
    Ok(())
}

fn provision(ctx: &Ctx, args: ProvisionArgs) -> CliResult<()> {
    let body = ProvisionDependencyResource {
        kind: wire_enum("kind", &args.kind)?,
        project_id: project_id(ctx, &args.project)?,
        environment_id: environment_id(ctx, &args.environment)?,
        server_id: server_id(ctx, &args.server)?,
        name: args.name,
        description: args.description,
        image: args.image,
        exposure: None,
    };
    body.validate()?;
    let answer = ctx
        .api()?
        .post::<IdResponse>("/dependency-resources/provision", &body)?;
    created(ctx, &answer, "dependency resource", "/id");
    Ok(())
}

fn import(ctx: &Ctx, args: ImportArgs) -> CliResult<()> {
    let connection_url = match args.connection_url {
        Some(url) if !args.connection_url_stdin => url,
        _ => url_from_stdin()?,
    };
    let body = ImportDependencyResource {
        kind: wire_enum("kind", &args.kind)?,
        project_id: project_id(ctx, &args.project)?,
        environment_id: environment_id(ctx, &args.environment)?,
        server_id: server_id(ctx, &args.server)?,
        name: args.name,
        connection_url,
        description: args.description,
        image: args.image,
    };
    body.validate()?;
    let answer = ctx
        .api()?
        .post::<IdResponse>("/dependency-resources/import", &body)?;
    created(ctx, &answer, "dependency resource", "/id");
    Ok(())
}

fn ca_certificate(ctx: &Ctx, dependency: &str) -> CliResult<()> {
    let path = format!(
        "/dependency-resources/{}/ca-certificate",
        dependency_id(ctx, dependency)?
    );
    let answer = ctx.api()?.get::<DependencyCaCertificate>(&path, &[])?;
    ctx.out
        .done(&answer.raw, answer.value.certificate_pem.trim_end());
    Ok(())
}

fn unbind(ctx: &Ctx, resource: &str, binding: &str) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let path = format!("/resources/{id}/dependency-bindings/{binding}");
    let answer = ctx
        .api()?
        .delete::<IdResponse>(&path, &serde_json::json!({}))?;
    let human = format!("Unbound {binding} from resource {id} (at its next deployment)");
    ctx.out.done(&answer.raw, &human);
    Ok(())
}

fn rotate(ctx: &Ctx, dependency: &str) -> CliResult<()> {
    let id = dependency_id(ctx, dependency)?;
    let path = format!("/dependency-resources/{id}/credential-rotations");
    let answer = ctx
        .api()?
        .post::<CredentialRotationStarted>(&path, &RotateDependencyCredentials {})?;
    let human = format!(
        "Rotating the credentials of {id}: bound apps redeploy on the new login, then \
         the old one is revoked (berth db show {id} follows it)"
    );
    ctx.out.done(&answer.raw, &human);
    Ok(())
}

fn expose(ctx: &Ctx, dependency: &str, port: i64, allow_from: Vec<String>) -> CliResult<()> {
    let id = dependency_id(ctx, dependency)?;
    let body = ExposeDependencyResource {
        host_port: port,
        allow_from,
    };
    body.validate()?;
    let path = format!("/dependency-resources/{id}/exposure");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    let human = format!(
        "Publishing host port {port} of {id} for {} only (berth db show {id} says once \
         the firewall rules are in place)",
        body.allow_from.join(", ")
    );
    ctx.out.done(&answer.raw, &human);
    Ok(())
}

fn upgrade(ctx: &Ctx, dependency: &str, image: String) -> CliResult<()> {
    let id = dependency_id(ctx, dependency)?;
    let body = UpgradeDependencyMajorVersion { image };
    body.validate()?;
    let path = format!("/dependency-resources/{id}/major-version-upgrades");
    let answer = ctx
        .api()?
        .post::<MajorVersionUpgradeStarted>(&path, &body)?;
    let started = &answer.value;
    let human = format!(
        "Upgrading {id} from PostgreSQL {} to {}: writes wait until the new server \
         serves; berth db show {id} follows it",
        started.from_version, started.to_version
    );
    ctx.out.done(&answer.raw, &human);
    Ok(())
}

fn unexpose(ctx: &Ctx, dependency: &str) -> CliResult<()> {
    let id = dependency_id(ctx, dependency)?;
    let path = format!("/dependency-resources/{id}/exposure");
    let answer = ctx
        .api()?
        .delete::<IdResponse>(&path, &CloseDependencyExposure {})?;
    ctx.out
        .done(&answer.raw, &format!("Closing the host port of {id}"));
    Ok(())
}

fn bindings(ctx: &Ctx, resource: &str) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let path = format!("/resources/{id}/dependency-bindings");
    let answer = ctx.api()?.get::<DependencyBindingList>(&path, &[])?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

/// The first line of standard input: a connection URL piped in (never an argument or a prompt
/// echo).
fn url_from_stdin() -> CliResult<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|error| CliError::failure(format!("reading the connection URL: {error}")))?;
    let url = line.trim().to_string();
    if url.is_empty() {
        return Err(CliError::Usage(
            "--connection-url-stdin: standard input is empty; pipe the URL in".to_string(),
        ));
    }
    Ok(url)
}

fn list(
    ctx: &Ctx,
    project: Option<String>,
    environment: Option<String>,
    kind: Option<String>,
) -> CliResult<()> {
    let mut query = scope_query(ctx, project, environment)?;
    if let Some(kind) = kind {
        let kind: DependencyKind = wire_enum("kind", &kind)?;
        query.push(("kind", kind.as_str().to_string()));
    }
    let answer = ctx
        .api()?
        .get::<DependencyResourceList>("/dependency-resources", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn delete(
    ctx: &Ctx,
    dependency: &str,
    delete_data: Option<String>,
    skip_final_backup: Option<String>,
) -> CliResult<()> {
    let id = dependency_id(ctx, dependency)?;
    let removes_data = delete_data.is_some();
    let body = DeleteDependencyResource {
        delete_data_confirmation: delete_data,
        skip_final_backup_confirmation: skip_final_backup,
    };
    let answer = ctx
        .api()?
        .delete::<IdResponse>(&format!("/dependency-resources/{id}"), &body)?;
    let human = if removes_data {
        format!("Deleted dependency resource {id} and its data volume")
    } else {
        format!("Deleted dependency resource {id}; its data volume is kept on the server")
    };
    ctx.out.done(&answer.raw, &human);
    Ok(())
}

fn bind(ctx: &Ctx, dependency: &str, resource: &str, target_name: Option<String>) -> CliResult<()> {
    let dependency_id = dependency_id(ctx, dependency)?;
    let resource_id = find_resource(ctx, resource)?.id;
    let target_name = match target_name {
        Some(name) => name,
        None => {
            let path = format!("/dependency-resources/{dependency_id}");
            let shown = ctx.api()?.get::<DependencyResourceShow>(&path, &[])?.value;
            match shown.dependency_resource.kind {
                DependencyKind::Postgres => "DATABASE_URL".to_string(),
                DependencyKind::Redis => "REDIS_URL".to_string(),
            }
        }
    };
    let body = BindDependency {
        dependency_resource_id: dependency_id.clone(),
        target_name,
        scope: None,
        injection_mode: None,
    };
    body.validate()?;
    let path = format!("/resources/{resource_id}/dependency-bindings");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    let human = format!(
        "Bound {dependency_id} to resource {resource_id} as {} (at its next deployment)",
        body.target_name
    );
    ctx.out.done(&answer.raw, &human);
    Ok(())
}
