//! Projects and environments.

use berth_api::common::Confirmation;
use berth_api::environments::{ArchiveEnvironment, CreateEnvironment};
use berth_api::projects::{ArchiveProject, CreateProject, RenameProject};

use berth_api::environments::{EnvironmentList, EnvironmentRecord};
use berth_api::projects::{ProjectList, ProjectRecord};

use super::{Ctx, created, environment_id, get_as, id_of, read_as};
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
    id_of(ctx.api()?, "/projects", "prj-", name)
}

pub fn projects(ctx: &Ctx, command: Projects) -> CliResult<()> {
    match command {
        Projects::List => {
            let (answer, list): (_, ProjectList) = get_as(ctx.api()?, "/projects", &[])?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Projects::Count => super::count(ctx, "/projects/count"),
        Projects::Show { project } => {
            let id = project_id(ctx, &project)?;
            let path = format!("/projects/{id}");
            let (answer, project): (_, ProjectRecord) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &project);
            Ok(())
        }
        Projects::Create { name, description } => {
            let body = CreateProject {
                name,
                slug: None,
                description,
                display_order: None,
            };
            let answer = ctx.api()?.post("/projects", &body)?;
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
            let answer = ctx.api()?.post(&path, &body)?;
            let project: ProjectRecord = read_as(&path, &answer)?;
            ctx.out.row(&answer, &project);
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
            let answer = ctx.api()?.delete(&format!("/projects/{id}"), &body)?;
            ctx.out.done(&answer, &format!("Archived project {id}"));
            Ok(())
        }
        Projects::Restore { project } => {
            let id = project_id(ctx, &project)?;
            let body = berth_api::resources::RestoreResource {};
            let answer = ctx.api()?.post(&format!("/projects/{id}/restore"), &body)?;
            ctx.out.done(&answer, &format!("Restored project {id}"));
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
            let (answer, list): (_, EnvironmentList) = get_as(ctx.api()?, "/environments", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Environments::Count => super::count(ctx, "/environments/count"),
        Environments::Show { environment } => {
            let id = environment_id(ctx, &environment)?;
            let path = format!("/environments/{id}");
            let (answer, environment): (_, EnvironmentRecord) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &environment);
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
            let answer = ctx.api()?.post("/environments", &body)?;
            created(ctx, &answer, "environment", "/id");
            Ok(())
        }
        Environments::Delete {
            environment,
            reason,
        } => {
            let id = environment_id(ctx, &environment)?;
            let body = ArchiveEnvironment { reason };
            let answer = ctx
                .api()?
                .post(&format!("/environments/{id}/archive"), &body)?;
            ctx.out.done(&answer, &format!("Archived environment {id}"));
            Ok(())
        }
        other => super::environment_changes::run(ctx, other),
    }
}
