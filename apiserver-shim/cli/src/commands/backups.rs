//! Backups (`/dependency-resources/{id}/backups[/upload]`,
//! `/dependency-resources/backups/{id}[/restore]`) and backup targets (`/backup-targets`).

use berth_api::backups::{
    BackupTargetKind, BackupTargetList, BackupTargetSummary, CreateBackupTarget,
    CreateDependencyResourceBackup, CreateS3Target, DependencyResourceBackupList,
    DependencyResourceBackupShow, DependencyResourceBackupSummary, RestoreDependencyResourceBackup,
    S3Bucket, UploadDependencyResourceBackup, counted_contents,
};

use berth_api::backup_policies::{BackupPolicyList, BackupPolicySummary, ConfigureBackupPolicy};

use super::dependencies::dependency_id;
use super::infra::server_id;
use berth_api::common::IdResponse;

use super::{Ctx, created, line_from_stdin};
use crate::cli::{AddTargetArgs, Backups, PolicyRulesArgs};
use crate::error::{CliError, CliResult};
use crate::output::{Row, optional, text, wire};

impl Row for DependencyResourceBackupSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID", "KIND", "STATUS", "STEP", "CONTENTS", "BYTES", "TARGET", "CREATED", "WHY",
    ];

    fn id(&self) -> &str {
        &self.id
    }

    fn cells(&self) -> Vec<String> {
        let verified = self.verification.as_ref();
        vec![
            text(&self.id),
            wire(&self.dependency_kind),
            wire(&self.status),
            optional(self.step.as_ref()),
            verified.map_or("-".into(), |v| contents(v.tables, v.rows, v.keys)),
            self.artifact
                .as_ref()
                .map_or("-".into(), |a| a.bytes.to_string()),
            text(&self.target_id),
            text(&self.created_at),
            optional(self.failure_message.as_ref()),
        ]
    }
}

impl Row for BackupTargetSummary {
    const HEADERS: &'static [&'static str] = &["ID", "NAME", "WHERE", "READY", "WHY"];

    fn id(&self) -> &str {
        &self.id
    }

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.id),
            text(&self.name),
            target_place(self),
            self.ready.to_string(),
            optional(self.ready_message.as_ref()),
        ]
    }
}

/// A policy's schedule as a person reads it: `cron (zone)` or `every N h`.
pub fn schedule_text(cron: Option<&String>, timezone: &str, hours: Option<i64>) -> String {
    match (cron, hours) {
        (Some(cron), _) => format!("{cron} ({timezone})"),
        (None, Some(hours)) => format!("every {hours} h"),
        (None, None) => "-".into(),
    }
}

/// Where a target keeps artifacts: `server:path` or `s3://bucket at endpoint`.
fn target_place(target: &BackupTargetSummary) -> String {
    match (&target.s3, &target.server_id, &target.path) {
        (Some(s3), _, _) => format!("s3://{} at {}", s3.bucket, s3.endpoint),
        (None, Some(server), Some(path)) => format!("{server}:{path}"),
        _ => "-".to_string(),
    }
}

impl Row for BackupPolicySummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "DATABASE",
        "SCHEDULE",
        "NEXT",
        "KEPT",
        "LAST VERIFIED",
        "CONTENTS",
        "READY",
        "WHY",
    ];

    fn id(&self) -> &str {
        &self.id
    }

    fn cells(&self) -> Vec<String> {
        let schedule = schedule_text(
            self.schedule.as_ref(),
            &self.timezone,
            self.schedule_interval_hours,
        );
        let verified = self.last_verified_backup.as_ref();
        vec![
            text(&self.id),
            text(&self.dependency_resource_id),
            schedule,
            optional(self.next_run_at.as_ref()),
            self.backups_kept.to_string(),
            verified.map_or("-".into(), |v| v.verified_at.clone()),
            verified.map_or("-".into(), |v| contents(v.tables, v.rows, v.keys)),
            self.ready.to_string(),
            optional(self.message.as_ref().filter(|_| !self.ready)),
        ]
    }
}

/// What a test restore counted, or `-`.
fn contents(tables: Option<i64>, rows: Option<i64>, keys: Option<i64>) -> String {
    counted_contents(tables, rows, keys).unwrap_or_else(|| "-".into())
}

pub fn backups(ctx: &Ctx, command: Backups) -> CliResult<()> {
    match command {
        Backups::List { database, status } => list(ctx, &database, status),
        Backups::Create {
            database,
            target,
            description,
        } => create(ctx, &database, target, description),
        Backups::Upload {
            database,
            file,
            target,
            description,
        } => upload(ctx, &database, &file, target, description),
        Backups::Show { backup } => show(ctx, &backup),
        Backups::Restore { backup, into, yes } => restore(ctx, &backup, into, yes),
        Backups::Policy { database, rules } => set_policy(ctx, &database, &rules),
        Backups::Policies { database } => policies(ctx, database),
        Backups::Targets => targets(ctx),
        Backups::AddTarget(target) => add_target(ctx, target),
    }
}

fn list(ctx: &Ctx, database: &str, status: Option<String>) -> CliResult<()> {
    let path = format!(
        "/dependency-resources/{}/backups",
        dependency_id(ctx, database)?
    );
    let query: Vec<(&str, String)> = status.map(|s| ("status", s)).into_iter().collect();
    let answer = ctx
        .api()?
        .get::<DependencyResourceBackupList>(&path, &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn create(
    ctx: &Ctx,
    database: &str,
    target: Option<String>,
    description: Option<String>,
) -> CliResult<()> {
    let body = CreateDependencyResourceBackup {
        description,
        provider_key: None,
        target_id: target,
    };
    body.validate()?;
    let path = format!(
        "/dependency-resources/{}/backups",
        dependency_id(ctx, database)?
    );
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    created(ctx, &answer, "backup", "/id");
    Ok(())
}

fn show(ctx: &Ctx, backup: &str) -> CliResult<()> {
    let path = format!("/dependency-resources/backups/{backup}");
    let answer = ctx.api()?.get::<DependencyResourceBackupShow>(&path, &[])?;
    ctx.out.row(&answer.raw, &answer.value.backup);
    Ok(())
}

fn set_policy(ctx: &Ctx, database: &str, rules: &PolicyRulesArgs) -> CliResult<()> {
    let body = ConfigureBackupPolicy {
        dependency_resource_id: dependency_id(ctx, database)?,
        schedule_interval_hours: rules.every_hours,
        schedule: rules.schedule.clone(),
        timezone: rules.timezone.clone(),
        keep_last: rules.keep_last,
        retention_days: rules.keep_days,
        keep_daily: rules.keep_daily,
        keep_weekly: rules.keep_weekly,
        target_id: rules.target.clone(),
        enabled: rules.enabled(),
        ..Default::default()
    };
    body.validate()?;
    let answer = ctx
        .api()?
        .post::<IdResponse>("/dependency-resources/backup-policies", &body)?;
    if ctx.out.human() {
        let id = &answer.value.id;
        println!("Backup policy {id} saved (berth backups policies shows its next run)");
    } else {
        ctx.out.record(&answer.raw, &[], "/id");
    }
    Ok(())
}

fn policies(ctx: &Ctx, database: Option<String>) -> CliResult<()> {
    let query: Vec<(&str, String)> = match database {
        Some(name) => vec![("dependencyResourceId", dependency_id(ctx, &name)?)],
        None => Vec::new(),
    };
    let answer = ctx
        .api()?
        .get::<BackupPolicyList>("/dependency-resources/backup-policies", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn targets(ctx: &Ctx) -> CliResult<()> {
    let answer = ctx.api()?.get::<BackupTargetList>("/backup-targets", &[])?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn add_target(ctx: &Ctx, target: AddTargetArgs) -> CliResult<()> {
    let body = match (target.server, target.s3_endpoint) {
        (Some(server), _) => CreateBackupTarget {
            name: target.name,
            kind: BackupTargetKind::ServerDirectory,
            server_id: Some(server_id(ctx, &server)?),
            path: target.path,
            s3: None,
        },
        (None, endpoint) => CreateBackupTarget {
            name: target.name,
            kind: BackupTargetKind::S3,
            s3: Some(CreateS3Target {
                bucket: S3Bucket {
                    endpoint: endpoint.unwrap_or_default(),
                    bucket: target.s3_bucket.unwrap_or_default(),
                    region: target.s3_region,
                    path_style: target.s3_path_style,
                    prefix: target.s3_prefix,
                },
                access_key_id: target.s3_access_key_id.unwrap_or_default(),
                secret_access_key: line_from_stdin(
                    "--s3-secret-access-key-stdin",
                    "secret access key",
                )?,
            }),
            ..Default::default()
        },
    };
    body.validate()?;
    let answer = ctx.api()?.post::<IdResponse>("/backup-targets", &body)?;
    created(ctx, &answer, "backup target", "/id");
    Ok(())
}

fn upload(
    ctx: &Ctx,
    database: &str,
    file: &std::path::Path,
    target: Option<String>,
    description: Option<String>,
) -> CliResult<()> {
    let asked = UploadDependencyResourceBackup {
        target_id: target,
        description,
        file_name: file.file_name().map(|n| n.to_string_lossy().into_owned()),
    };
    asked.validate()?;
    let opened = std::fs::File::open(file)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?;
    let bytes = opened.metadata()?.len();
    let query: Vec<(&str, String)> = [
        ("targetId", asked.target_id),
        ("description", asked.description),
        ("fileName", asked.file_name),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value?)))
    .collect();
    let path = format!(
        "/dependency-resources/{}/backups/upload",
        dependency_id(ctx, database)?
    );
    let answer = ctx
        .api()?
        .upload::<IdResponse>(&path, &query, opened, bytes)?;
    created(ctx, &answer, "backup", "/id");
    Ok(())
}

fn restore(ctx: &Ctx, backup: &str, into: Option<String>, yes: bool) -> CliResult<()> {
    if !yes {
        return Err(CliError::Usage(
            "a restore replaces the target's data and does not restart its apps: pass --yes".into(),
        ));
    }
    let target = into.map(|name| dependency_id(ctx, &name)).transpose()?;
    let body = RestoreDependencyResourceBackup {
        acknowledge_data_overwrite: true,
        acknowledge_runtime_not_restarted: true,
        target_dependency_resource_id: target,
        restore_label: None,
    };
    body.validate()?;
    let path = format!("/dependency-resources/backups/{backup}/restore");
    let answer = ctx.api()?.post::<IdResponse>(&path, &body)?;
    let human = format!(
        "Restoring backup {backup} (berth backups show {backup} follows its latestRestoreAttempt)"
    );
    ctx.out.done(&answer.raw, &human);
    Ok(())
}
