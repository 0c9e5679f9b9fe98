//! Projects and environments.

use berth_api::common::Confirmation;
use berth_api::environments::{ArchiveEnvironment, CreateEnvironment};
use berth_api::projects::{ArchiveProject, CreateProject, RenameProject};

use super::{Ctx, created, id_of, list, show};
use crate::cli::{Environments, Projects};
use crate::error::CliResult;
use crate::output::{Column, col};

const PROJECT_COLUMNS: &[Column] = &[
    col("ID", "/id"),
    col("SLUG", "/slug"),
    col("NAME", "/name"),
    col("STATUS", "/lifecycleStatus"),
    col("CREATED", "/createdAt"),
];

const ENVIRONMENT_COLUMNS: &[Column] = &[
    col("ID", "/id"),
    col("PROJECT", "/projectId"),
    col("NAME", "/name"),
    col("KIND", "/kind"),
    col("STATUS", "/lifecycleStatus"),
    col("CREATED", "/createdAt"),
];

/// A project's id from its id, slug or name.
pub fn project_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of(ctx.api()?, "/projects", "prj-", name)
}

pub fn projects(ctx: &Ctx, command: Projects) -> CliResult<()> {
    match command {
        Projects::List => list(ctx, "/projects", &[], PROJECT_COLUMNS, "/id"),
        Projects::Count => super::count(ctx, "/projects/count"),
        Projects::Show { project } => {
            let id = project_id(ctx, &project)?;
            show(ctx, &format!("/projects/{id}"), PROJECT_COLUMNS, "/id")
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
            let answer = ctx.api()?.post(&format!("/projects/{id}/rename"), &body)?;
            ctx.out.record(&answer, PROJECT_COLUMNS, "/id");
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
    }
}

/// An environment's id from its id or name (names are unique within a project only).
pub fn environment_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of(ctx.api()?, "/environments", "env-", name)
}

pub fn environments(ctx: &Ctx, command: Environments) -> CliResult<()> {
    match command {
        Environments::List { project } => {
            let query = match project {
                Some(project) => vec![("projectId", project_id(ctx, &project)?)],
                None => Vec::new(),
            };
            list(ctx, "/environments", &query, ENVIRONMENT_COLUMNS, "/id")
        }
        Environments::Count => super::count(ctx, "/environments/count"),
        Environments::Show { environment } => {
            let id = environment_id(ctx, &environment)?;
            show(
                ctx,
                &format!("/environments/{id}"),
                ENVIRONMENT_COLUMNS,
                "/id",
            )
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
    }
}
