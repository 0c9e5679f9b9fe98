//! Storage volumes: list, show, create and delete (`/storage-volumes`).

use berth_api::common::Confirmation;
use berth_api::storage::{
    CreateStorageVolume, DeleteStorageVolume, StorageVolumeKind, StorageVolumeList,
    StorageVolumeShow, StorageVolumeSummary,
};

use super::environment_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, get_as, id_of, wire_enum};
use crate::cli::Volumes;
use crate::error::CliResult;
use crate::output::{Row, optional, text};

/// The id of the volume `name` names: an id (`vol-…`), or a slug or unique name.
pub fn volume_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of(ctx.api()?, "/storage-volumes", "vol-", name)
}

impl Row for StorageVolumeSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "KIND",
        "SOURCE",
        "ENVIRONMENT",
        "ATTACHED TO",
        "CREATED",
    ];

    fn cells(&self) -> Vec<String> {
        let attached: Vec<String> = self
            .attachments
            .iter()
            .map(|a| format!("{}:{}", a.resource_id, a.destination_path))
            .collect();
        vec![
            text(&self.id),
            text(&self.name),
            self.kind.as_str().to_string(),
            optional(self.source_path.as_ref()),
            text(&self.environment_id),
            text(&attached.join(", ")),
            text(&self.created_at),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

pub fn volumes(ctx: &Ctx, command: Volumes) -> CliResult<()> {
    match command {
        Volumes::List {
            project,
            environment,
        } => {
            let query = scope_query(ctx, project, environment)?;
            let (answer, list): (_, StorageVolumeList) =
                get_as(ctx.api()?, "/storage-volumes", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Volumes::Show { volume } => {
            let path = format!("/storage-volumes/{}", volume_id(ctx, &volume)?);
            let (answer, shown): (_, StorageVolumeShow) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &shown.storage_volume);
            Ok(())
        }
        Volumes::Create {
            name,
            project,
            environment,
            kind,
            source_path,
            description,
        } => {
            let kind = match kind {
                Some(kind) => wire_enum("kind", &kind)?,
                None if source_path.is_some() => StorageVolumeKind::BindMount,
                None => StorageVolumeKind::NamedVolume,
            };
            let body = CreateStorageVolume {
                project_id: project_id(ctx, &project)?,
                environment_id: environment_id(ctx, &environment)?,
                name,
                kind,
                source_path,
                description,
            };
            body.validate()?;
            let answer = ctx.api()?.post("/storage-volumes", &body)?;
            created(ctx, &answer, "storage volume", "/id");
            Ok(())
        }
        Volumes::Delete { volume } => {
            let id = volume_id(ctx, &volume)?;
            let body = DeleteStorageVolume {
                confirmation: Some(Confirmation {
                    storage_volume_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
            };
            let answer = ctx
                .api()?
                .delete(&format!("/storage-volumes/{id}"), &body)?;
            ctx.out.done(
                &answer,
                &format!("Deleted storage volume {id}; its data on servers is kept"),
            );
            Ok(())
        }
    }
}
