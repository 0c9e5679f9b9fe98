//! Storage volumes: list, show, create and delete (`/storage-volumes`).

use berth_api::common::Confirmation;
use berth_api::storage::{
    CreateStorageVolume, DeleteStorageVolume, StorageVolumeKind, StorageVolumeList,
    StorageVolumeShow, StorageVolumeSummary,
};

use berth_api::volume_backup_policies::{
    ConfigureStorageVolumeBackupPolicy, StorageVolumeBackupPolicyList,
    StorageVolumeBackupPolicySummary,
};
use berth_api::volume_backups::{
    CreateStorageVolumeBackup, RestoreStorageVolumeBackup, StorageVolumeBackupList,
    StorageVolumeBackupPlan, StorageVolumeBackupSummary, VolumeConsistency, VolumeRestoreMode,
};

use super::backups::schedule_text;
use super::environment_id;
use super::infra::server_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, get_as, id_of, read_as, wire_enum};
use crate::cli::Volumes;
use crate::error::{CliError, CliResult};
use crate::output::{Row, optional, text, wire};

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

impl Row for StorageVolumeBackupSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID", "STATUS", "SERVER", "CONTENTS", "BYTES", "RESTORE", "CREATED", "WHY",
    ];

    fn cells(&self) -> Vec<String> {
        let contents = self.tree.as_ref().map_or("-".into(), |t| {
            format!(
                "{} files ({} bytes), {} dirs, {} links",
                t.files, t.file_bytes, t.directories, t.links
            )
        });
        let restore = self
            .latest_restore_attempt
            .as_ref()
            .map_or("-".into(), |r| wire(&r.status));
        vec![
            text(&self.id),
            wire(&self.status),
            text(&self.server_id),
            contents,
            self.size_bytes.map_or("-".into(), |b| b.to_string()),
            restore,
            text(&self.created_at),
            optional(self.failure_message.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for StorageVolumeBackupPolicySummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "VOLUME",
        "SERVER",
        "SCHEDULE",
        "NEXT",
        "KEPT",
        "LAST VERIFIED",
        "FILES",
        "READY",
        "WHY",
    ];

    fn id(&self) -> &str {
        &self.id
    }

    fn cells(&self) -> Vec<String> {
        let verified = self.last_verified_backup.as_ref();
        vec![
            text(&self.id),
            text(&self.storage_volume_id),
            text(&self.server_id),
            schedule_text(
                self.schedule.as_ref(),
                &self.timezone,
                self.schedule_interval_hours,
            ),
            optional(self.next_run_at.as_ref()),
            self.backups_kept.to_string(),
            verified.map_or("-".into(), |v| v.verified_at.clone()),
            verified
                .and_then(|v| v.files)
                .map_or("-".into(), |f| f.to_string()),
            self.ready.to_string(),
            optional(self.message.as_ref().filter(|_| !self.ready)),
        ]
    }
}

impl Row for StorageVolumeBackupPlan {
    const HEADERS: &'static [&'static str] = &[
        "SERVER",
        "TARGET",
        "PROVIDER",
        "CONSISTENCY",
        "LOCAL ONLY",
        "STOPS",
        "BLOCKERS",
    ];

    fn id(&self) -> &str {
        &self.storage_volume_id
    }

    fn cells(&self) -> Vec<String> {
        let blockers: Vec<String> = self
            .blockers
            .iter()
            .map(|b| format!("{}: {}", b.code, b.message))
            .collect();
        vec![
            optional(self.server_id.as_ref()),
            optional(self.target_id.as_ref()),
            optional(self.target_provider_key.as_ref()),
            self.consistency.as_str().to_string(),
            self.local_only.to_string(),
            text(&self.stopped_resources.join(", ")),
            text(&blockers.join("; ")),
        ]
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
        Volumes::Backup {
            volume,
            server,
            target,
            description,
            quiesced,
            plan,
        } => {
            let id = volume_id(ctx, &volume)?;
            let consistency = match quiesced {
                true => VolumeConsistency::Quiesced,
                false => VolumeConsistency::CrashConsistent,
            };
            let body = CreateStorageVolumeBackup {
                server_id: server.map(|s| server_id(ctx, &s)).transpose()?,
                target_id: target,
                requested_consistency: Some(consistency.as_str().to_string()),
                description,
            };
            body.validate()?;
            if plan {
                let path = format!("/storage-volumes/{id}/backups/plan");
                let answer = ctx.api()?.post(&path, &body)?;
                let planned: StorageVolumeBackupPlan = read_as(&path, &answer)?;
                ctx.out.row(&answer, &planned);
                return Ok(());
            }
            let answer = ctx
                .api()?
                .post(&format!("/storage-volumes/{id}/backups"), &body)?;
            created(ctx, &answer, "volume backup", "/id");
            Ok(())
        }
        Volumes::Policy {
            volume,
            server,
            quiesced,
            rules,
        } => {
            let body = ConfigureStorageVolumeBackupPolicy {
                storage_volume_id: volume_id(ctx, &volume)?,
                server_id: server.map(|s| server_id(ctx, &s)).transpose()?,
                requested_consistency: quiesced
                    .then(|| VolumeConsistency::Quiesced.as_str().to_string()),
                schedule_interval_hours: rules.every_hours,
                schedule: rules.schedule.clone(),
                timezone: rules.timezone.clone(),
                keep_last: rules.keep_last,
                retention_days: rules.keep_days,
                keep_daily: rules.keep_daily,
                keep_weekly: rules.keep_weekly,
                target_id: rules.target.clone(),
                scheduled_enabled: rules.enabled(),
                ..Default::default()
            };
            body.validate()?;
            let answer = ctx.api()?.post("/storage-volumes/backup-policies", &body)?;
            if ctx.out.human() {
                let id = crate::output::cell(&answer, "/id");
                println!("Backup policy {id} saved (berth volumes policies shows its next run)");
            } else {
                ctx.out.record(&answer, &[], "/id");
            }
            Ok(())
        }
        Volumes::Policies { volume } => {
            let query: Vec<(&str, String)> = match volume {
                Some(name) => vec![("storageVolumeId", volume_id(ctx, &name)?)],
                None => Vec::new(),
            };
            let (answer, list): (_, StorageVolumeBackupPolicyList) =
                get_as(ctx.api()?, "/storage-volumes/backup-policies", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Volumes::Backups { volume } => {
            let path = format!("/storage-volumes/{}/backups", volume_id(ctx, &volume)?);
            let (answer, list): (_, StorageVolumeBackupList) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Volumes::Restore {
            backup,
            name,
            in_place,
            yes,
        } => {
            if in_place && !yes {
                return Err(CliError::Usage(
                    "an in-place restore replaces the volume's files and stops the containers \
                     using it meanwhile: pass --yes"
                        .into(),
                ));
            }
            let body = RestoreStorageVolumeBackup {
                target_mode: if in_place {
                    VolumeRestoreMode::InPlace
                } else {
                    VolumeRestoreMode::NewVolume
                },
                restored_volume_name: name,
                target_storage_volume_id: None,
                acknowledge_destructive_restore: in_place.then_some(yes),
            };
            body.validate()?;
            let answer = ctx
                .api()?
                .post(&format!("/storage-volume-backups/{backup}/restore"), &body)?;
            created(ctx, &answer, "volume restore", "/id");
            Ok(())
        }
        Volumes::Delete {
            volume,
            skip_final_backup,
        } => {
            let id = volume_id(ctx, &volume)?;
            let body = DeleteStorageVolume {
                confirmation: Some(Confirmation {
                    storage_volume_id: Some(id.clone()),
                    ..Confirmation::default()
                }),
                skip_final_backup_confirmation: skip_final_backup,
            };
            let answer = ctx
                .api()?
                .delete(&format!("/storage-volumes/{id}"), &body)?;
            ctx.out.done(
                &answer,
                &format!(
                    "Deleted storage volume {id} (after its final backup, if a backup policy \
                     covers it); its data on servers is kept"
                ),
            );
            Ok(())
        }
    }
}
