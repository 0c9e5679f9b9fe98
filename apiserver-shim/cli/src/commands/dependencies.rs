//! Dependency resources (`/dependency-resources`) and a resource's bindings to them
//! (`/resources/{id}/dependency-bindings`). Connections are shown masked, as the API answers.

use berth_api::dependencies::{
    BindDependency, CloseDependencyExposure, DeleteDependencyResource, DependencyBindingList,
    DependencyBindingSummary, DependencyCaCertificate, DependencyKind, DependencyResourceList,
    DependencyResourceShow, DependencyResourceSummary, ExposeDependencyResource,
    ImportDependencyResource, MajorVersionUpgradeStarted, ProvisionDependencyResource,
    RotateDependencyCredentials, UpgradeDependencyMajorVersion,
};

use super::infra::server_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, environment_id, find_resource, get_as, id_of, read_as, wire_enum};
use crate::cli::Db;
use crate::error::{CliError, CliResult};
use crate::output::{Row, text, wire};

/// The id of the dependency `name` names: an id (`dep-…`), or a slug or unique name.
pub fn dependency_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of(ctx.api()?, "/dependency-resources", "dep-", name)
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
        Db::Show { dependency } => {
            let path = format!("/dependency-resources/{}", dependency_id(ctx, &dependency)?);
            let (answer, shown): (_, DependencyResourceShow) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &shown.dependency_resource);
            Ok(())
        }
        Db::Create {
            name,
            kind,
            project,
            environment,
            server,
            image,
            description,
        } => {
            let body = ProvisionDependencyResource {
                kind: wire_enum("kind", &kind)?,
                project_id: project_id(ctx, &project)?,
                environment_id: environment_id(ctx, &environment)?,
                server_id: server_id(ctx, &server)?,
                name,
                description,
                image,
                exposure: None,
            };
            body.validate()?;
            let answer = ctx.api()?.post("/dependency-resources/provision", &body)?;
            created(ctx, &answer, "dependency resource", "/id");
            Ok(())
        }
        Db::Import {
            name,
            kind,
            project,
            environment,
            server,
            connection_url_stdin,
            connection_url,
            image,
            description,
        } => {
            let connection_url = match connection_url {
                Some(url) if !connection_url_stdin => url,
                _ => url_from_stdin()?,
            };
            let body = ImportDependencyResource {
                kind: wire_enum("kind", &kind)?,
                project_id: project_id(ctx, &project)?,
                environment_id: environment_id(ctx, &environment)?,
                server_id: server_id(ctx, &server)?,
                name,
                connection_url,
                description,
                image,
            };
            body.validate()?;
            let answer = ctx.api()?.post("/dependency-resources/import", &body)?;
            created(ctx, &answer, "dependency resource", "/id");
            Ok(())
        }
        Db::CaCertificate { dependency } => {
            let path = format!(
                "/dependency-resources/{}/ca-certificate",
                dependency_id(ctx, &dependency)?
            );
            let (answer, served): (_, DependencyCaCertificate) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.done(&answer, served.certificate_pem.trim_end());
            Ok(())
        }
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
        Db::Unbind { resource, binding } => {
            let id = find_resource(ctx, &resource)?.0.id;
            let path = format!("/resources/{id}/dependency-bindings/{binding}");
            let answer = ctx.api()?.delete(&path, &serde_json::json!({}))?;
            let human = format!("Unbound {binding} from resource {id} (at its next deployment)");
            ctx.out.done(&answer, &human);
            Ok(())
        }
        Db::Rotate { dependency } => {
            let id = dependency_id(ctx, &dependency)?;
            let path = format!("/dependency-resources/{id}/credential-rotations");
            let answer = ctx.api()?.post(&path, &RotateDependencyCredentials {})?;
            let human = format!(
                "Rotating the credentials of {id}: bound apps redeploy on the new login, then \
                 the old one is revoked (berth db show {id} follows it)"
            );
            ctx.out.done(&answer, &human);
            Ok(())
        }
        Db::Expose {
            dependency,
            port,
            allow_from,
        } => {
            let id = dependency_id(ctx, &dependency)?;
            let body = ExposeDependencyResource {
                host_port: port,
                allow_from,
            };
            body.validate()?;
            let path = format!("/dependency-resources/{id}/exposure");
            let answer = ctx.api()?.post(&path, &body)?;
            let human = format!(
                "Publishing host port {port} of {id} for {} only (berth db show {id} says once \
                 the firewall rules are in place)",
                body.allow_from.join(", ")
            );
            ctx.out.done(&answer, &human);
            Ok(())
        }
        Db::Upgrade { dependency, image } => {
            let id = dependency_id(ctx, &dependency)?;
            let body = UpgradeDependencyMajorVersion { image };
            body.validate()?;
            let path = format!("/dependency-resources/{id}/major-version-upgrades");
            let answer = ctx.api()?.post(&path, &body)?;
            let started: MajorVersionUpgradeStarted = read_as(&path, &answer)?;
            let human = format!(
                "Upgrading {id} from PostgreSQL {} to {}: writes wait until the new server \
                 serves; berth db show {id} follows it",
                started.from_version, started.to_version
            );
            ctx.out.done(&answer, &human);
            Ok(())
        }
        Db::Unexpose { dependency } => {
            let id = dependency_id(ctx, &dependency)?;
            let path = format!("/dependency-resources/{id}/exposure");
            let answer = ctx.api()?.delete(&path, &CloseDependencyExposure {})?;
            ctx.out
                .done(&answer, &format!("Closing the host port of {id}"));
            Ok(())
        }
        Db::Bindings { resource } => {
            let id = find_resource(ctx, &resource)?.0.id;
            let path = format!("/resources/{id}/dependency-bindings");
            let (answer, list): (_, DependencyBindingList) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
    }
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
    let (answer, list): (_, DependencyResourceList) =
        get_as(ctx.api()?, "/dependency-resources", &query)?;
    ctx.out.rows(&answer, &list.items);
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
        .delete(&format!("/dependency-resources/{id}"), &body)?;
    let human = if removes_data {
        format!("Deleted dependency resource {id} and its data volume")
    } else {
        format!("Deleted dependency resource {id}; its data volume is kept on the server")
    };
    ctx.out.done(&answer, &human);
    Ok(())
}

fn bind(ctx: &Ctx, dependency: &str, resource: &str, target_name: Option<String>) -> CliResult<()> {
    let dependency_id = dependency_id(ctx, dependency)?;
    let resource_id = find_resource(ctx, resource)?.0.id;
    let target_name = match target_name {
        Some(name) => name,
        None => {
            let path = format!("/dependency-resources/{dependency_id}");
            let (_, shown): (_, DependencyResourceShow) = get_as(ctx.api()?, &path, &[])?;
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
    let answer = ctx.api()?.post(&path, &body)?;
    let human = format!(
        "Bound {dependency_id} to resource {resource_id} as {} (at its next deployment)",
        body.target_name
    );
    ctx.out.done(&answer, &human);
    Ok(())
}
