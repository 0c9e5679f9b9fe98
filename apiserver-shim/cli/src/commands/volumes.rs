//! Storage volumes: list, show, create and delete (`/storage-volumes`).

use berth_api::common::{Confirmation, IdResponse};
use berth_api::storage::{
    CreateStorageVolume, DeleteStorageVolume, StorageVolumeKind, StorageVolumeList,
    StorageVolumeShow, StorageVolumeSummary,
};

use berth_api::volume_backup_policies::{
    ConfigureStorageVolumeBackupPolicy, StorageVolumeBackupPolicyList,
    StorageVolumeBackupPolicySummary,
};
use berth_api::volume_backups::{
    CreateStorageVolumeBackup, RestoreStorageVolumeBackup, RestoredStorageVolume,
    StorageVolumeBackupList, StorageVolumeBackupPlan, StorageVolumeBackupSummary,
    VolumeConsistency, VolumeRestoreMode,
};

use super::backups::schedule_text;
use super::environment_id;
use super::infra::server_id;
use super::workspace::{project_id, scope_query};
use super::{Ctx, created, id_of, wire_enum};
use crate::cli::{BackupVolumeArgs, CreateVolumeArgs, PolicyRulesArgs, Volumes};
use crate::error::{CliError, CliResult};
use crate::output::{Row, optional, text, wire};

/// The id of the volume `name` names: an id (`vol-…`), or a slug or unique name.
pub fn volume_id(ctx: &Ctx, name: &str) -> CliResult<String> {
    id_of::<StorageVolumeList>(ctx.api()?, "/storage-volumes", "vol-", name)
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
        } => list(ctx, project, environment),
        Volumes::Show { volume } => show(ctx, &volume),
        Volumes::Create(args) => create(ctx, args),
        Volumes::Backup(args) => backup(ctx, args),
        Volumes::Policy {
            volume,
            server,
            quiesced,
            rules,
        } => set_policy(ctx, &volume, server, quiesced, &rules),
        Volumes::Policies { volume } => policies(ctx, volume),
        Volumes::Backups { volume } => backups(ctx, &volume),
        Volumes::Restore {
            backup,
            name,
            in_place,
            yes,
        } => restore(ctx, &backup, name, in_place, yes),
        Volumes::Delete {
            volume,
            skip_final_backup,
        } => delete(ctx, &volume, skip_final_backup),
    }
}

fn list(ctx: &Ctx, project: Option<String>, environment: Option<String>) -> CliResult<()> {
    let query = scope_query(ctx, project, environment)?;
    let answer = ctx
        .api()?
        .get::<StorageVolumeList>("/storage-volumes", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn show(ctx: &Ctx, volume: &str) -> CliResult<()> {
    let path = format!("/storage-volumes/{}", volume_id(ctx, volume)?);
    let answer = ctx.api()?.get::<StorageVolumeShow>(&path, &[])?;
    ctx.out.row(&answer.raw, &answer.value.storage_volume);
    Ok(())
}

fn create(ctx: &Ctx, args: CreateVolumeArgs) -> CliResult<()> {
    let kind = match args.kind {
        Some(kind) => wire_enum("kind", &kind)?,
        None if args.source_path.is_some() => StorageVolumeKind::BindMount,
        None => StorageVolumeKind::NamedVolume,
    };
    let body = CreateStorageVolume {
        project_id: project_id(ctx, &args.project)?,
        environment_id: environment_id(ctx, &args.environment)?,
        name: args.name,
        kind,
        source_path: args.source_path,
        description: args.description,
    };
    body.validate()?;
    let answer = ctx.api()?.post::<IdResponse>("/storage-volumes", &body)?;
    created(ctx, &answer, "storage volume", "/id");
    Ok(())
}

/// Backs the volume up now, or (with `--plan`) shows only what a backup would do.
fn backup(ctx: &Ctx, args: BackupVolumeArgs) -> CliResult<()> {
    let id = volume_id(ctx, &args.volume)?;
    let consistency = match args.quiesced {
        true => VolumeConsistency::Quiesced,
        false => VolumeConsistency::CrashConsistent,
    };
    let body = CreateStorageVolumeBackup {
        server_id: args.server.map(|s| server_id(ctx, &s)).transpose()?,
        target_id: args.target,
        requested_consistency: Some(consistency.as_str().to_string()),
        description: args.description,
    };
    body.validate()?;
    if args.plan {
        let path = format!("/storage-volumes/{id}/backups/plan");
        let answer = ctx.api()?.post::<StorageVolumeBackupPlan>(&path, &body)?;
        ctx.out.row(&answer.raw, &answer.value);
        return Ok(());
    }
    let path = format!("/storage-volumes/{id}/backups");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    created(ctx, &answer, "volume backup", "/id");
    Ok(())
}

fn set_policy(
    ctx: &Ctx,
    volume: &str,
    server: Option<String>,
    quiesced: bool,
    rules: &PolicyRulesArgs,
) -> CliResult<()> {
    let body = ConfigureStorageVolumeBackupPolicy {
        storage_volume_id: volume_id(ctx, volume)?,
        server_id: server.map(|s| server_id(ctx, &s)).transpose()?,
        requested_consistency: quiesced.then(|| VolumeConsistency::Quiesced.as_str().to_string()),
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
    let answer = ctx
        .api()?
        .post::<IdResponse>("/storage-volumes/backup-policies", &body)?;
    if ctx.out.human() {
        let id = &answer.value.id;
        println!("Backup policy {id} saved (berth volumes policies shows its next run)");
    } else {
        ctx.out.record(&answer.raw, &[], "/id");
    }
    Ok(())
}

fn policies(ctx: &Ctx, volume: Option<String>) -> CliResult<()> {
    let query: Vec<(&str, String)> = match volume {
        Some(name) => vec![("storageVolumeId", volume_id(ctx, &name)?)],
        None => Vec::new(),
    };
    let answer = ctx
        .api()?
        .get::<StorageVolumeBackupPolicyList>("/storage-volumes/backup-policies", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn backups(ctx: &Ctx, volume: &str) -> CliResult<()> {
    let path = format!("/storage-volumes/{}/backups", volume_id(ctx, volume)?);
    let answer = ctx.api()?.get::<StorageVolumeBackupList>(&path, &[])?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn restore(
    ctx: &Ctx,
    backup: &str,
    name: Option<String>,
    in_place: bool,
    yes: bool,
) -> CliResult<()> {
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
    let path = format!("/storage-volume-backups/{backup}/restore");
    let answer = ctx.api()?.post::<RestoredStorageVolume>(&path, &body)?;
    created(ctx, &answer, "volume restore", "/id");
    Ok(())
}

fn delete(ctx: &Ctx, volume: &str, skip_final_backup: Option<String>) -> CliResult<()> {
    let id = volume_id(ctx, volume)?;
    let body = DeleteStorageVolume {
        confirmation: Some(Confirmation {
            storage_volume_id: Some(id.clone()),
            ..Confirmation::default()
        }),
        skip_final_backup_confirmation: skip_final_backup,
    };
    let path = format!("/storage-volumes/{id}");
    let answer = ctx.api()?.delete::<IdResponse>(&path, &body)?;
    ctx.out.done(
        &answer.raw,
        &format!(
            "Deleted storage volume {id} (after its final backup, if a backup policy \
             covers it); its data on servers is kept"
        ),
    );
    Ok(())
}
