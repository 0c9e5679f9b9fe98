//! Projects and environments.

use berth_api::common::{Confirmation, IdResponse};
use berth_api::environments::{ArchiveEnvironment, CreateEnvironment};
use berth_api::projects::{ArchiveProject, CreateProject, RenameProject};

use berth_api::environments::{EnvironmentList, EnvironmentRecord};
use berth_api::projects::{ProjectList, ProjectRecord};

use super::{Ctx, created, environment_id, id_of};
use crate::cli::{Environments, Projects};
use crate::error::CliResult;

/// The `projectId` and `environmentId` filters of a list, from names, slugs or ids.
pub fn scope_query(
    ctx: &Ctx,
    project: Option<String>,
    environment: Option<String>,
) -> CliResult<Vec<(&'static str, String)>> {
    let mut query = Vec::new();
    if let Some(project) = project {
        query.push(("projectId", project_id(ctx, &project)?));
    }
    if let Some(environment) = environment {
        query.push(("environmentId", environment_id(ctx, &environment)?));
    }
    Ok(query)
}

/// A project's id from its id, slug or name.
pub fn project_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<ProjectList>(ctx.api()?, "/projects", "prj-", name)
}

pub fn projects(ctx: &Ctx, command: Projects) -> CliResult<()> {
    match command {
        Projects::List => {
            let answer = ctx.api()?.get::<ProjectList>("/projects", &[])?;
            ctx.out.rows(&answer.raw, &answer.value.items);
            Ok(())
        }
        Projects::Count => super::count(ctx, "/projects/count"),
        Projects::Show { project } => {
            let id = project_id(ctx, &project)?;
            let path = format!("/projects/{id}");
            let answer = ctx.api()?.get::<ProjectRecord>(&path, &[])?;
            ctx.out.row(&answer.raw, &answer.value);
            Ok(())
        }
        Projects::Create { name, description } => {
            let body = CreateProject {
                name,
                slug: None,
                description,
                display_order: None,
            };
            let answer = ctx.api()?.post::<IdResponse>("/projects", &body)?;
            created(ctx, &answer, "project", "/id");
            Ok(())
        }
        Projects::Rename {
            project,
            name,
            slug,
        } => {
            let id = project_id(ctx, &project)?;
            let body = RenameProject { name, slug };
            let path = format!("/projects/{id}/rename");
            let answer = ctx.api()?.post::<ProjectRecord>(&path, &body)?;
            ctx.out.row(&answer.raw, &answer.value);
            Ok(())
        }
        Projects::Delete { project } => {
            let id = project_id(ctx, &project)?;
            let body = ArchiveProject {
                confirmation: Some(Confirmation {
                    project_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
                reason: None,
            };
            let path = format!("/projects/{id}");
            let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
            ctx.out.done(&answer.raw, &format!("Archived project {id}"));
            Ok(())
        }
        Projects::Restore { project } => {
            let id = project_id(ctx, &project)?;
            let body = berth_api::resources::RestoreResource {};
            let path = format!("/projects/{id}/restore");
            let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
            ctx.out.done(&answer.raw, &format!("Restored project {id}"));
            Ok(())
        }
    }
}

pub fn environments(ctx: &Ctx, command: Environments) -> CliResult<()> {
    match command {
        Environments::List { project } => {
            let query = match project {
                Some(project) => vec![("projectId", project_id(ctx, &project)?)],
                None => Vec::new(),
            };
            let answer = ctx.api()?.get::<EnvironmentList>("/environments", &query)?;
            ctx.out.rows(&answer.raw, &answer.value.items);
            Ok(())
        }
        Environments::Count => super::count(ctx, "/environments/count"),
        Environments::Show { environment } => {
            let id = environment_id(ctx, &environment)?;
            let path = format!("/environments/{id}");
            let answer = ctx.api()?.get::<EnvironmentRecord>(&path, &[])?;
            ctx.out.row(&answer.raw, &answer.value);
            Ok(())
        }
        Environments::Create {
            project,
            name,
            kind,
        } => {
            let body = CreateEnvironment {
                project_id: project_id(ctx, &project)?,
                name,
                kind,
                parent_environment_id: None,
            };
            let answer = ctx.api()?.post::<IdResponse>("/environments", &body)?;
            created(ctx, &answer, "environment", "/id");
            Ok(())
        }
        Environments::Delete {
            environment,
            reason,
        } => {
            let id = environment_id(ctx, &environment)?;
            let body = ArchiveEnvironment { reason };
            let path = format!("/environments/{id}/archive");
            let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
            ctx.out
                .done(&answer.raw, &format!("Archived environment {id}"));
            Ok(())
        }
        other => super::environment_changes::run(ctx, other),
    }
}
