//! Backups as REST shows them: a DependencyResourceBackup object as Appaloft's backup record
//! (with Berth's target, artifact and test restore), a BackupTarget as its summary, and the
//! rules that decide whether a dependency can be backed up and where.

use std::sync::Arc;

use berth_api::backups::{
    BackupArtifactSummary, BackupStatus, BackupVerificationSummary,
    DependencyResourceBackupSummary, RestoreAttemptSummary, RestoreReportSummary, RestoreStatus,
    UploadedDumpSummary, provider_key,
};
use berth_crds::backup::{
    BackupTarget, DependencyResourceBackup, DependencyResourceRestore, PolicySlot,
};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::{DependencyResource, DependencySource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::error::{ApiError, ApiResult};

/// Why a request cannot be backed up or restored, as Appaloft names it.
const BLOCKED: &str = "dependency_resource_backup_blocked";
const RESTORE_BLOCKED: &str = "dependency_resource_restore_blocked";

/// The record of `backup`, a backup of `dependency`, with its newest restore among
/// `restores`.
pub fn summary(
    backup: &DependencyResourceBackup,
    dependency: &DependencyResource,
    restores: &[Arc<DependencyResourceRestore>],
) -> DependencyResourceBackupSummary {
    let status = backup.status.clone().unwrap_or_default();
    let created = backup
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    let ready = status.status == BackupStatus::Ready;
    DependencyResourceBackupSummary {
        id: backup.name_any(),
        dependency_resource_id: backup.spec.dependency_resource_id.clone(),
        project_id: dependency.spec.project_id.clone(),
        environment_id: dependency.spec.environment_id.clone(),
        dependency_kind: dependency.spec.kind,
        provider_key: provider_key(dependency.spec.kind).into(),
        status: status.status,
        attempt_id: backup.name_any(),
        requested_at: created.clone(),
        retention_status: retention_status(&backup.spec.slot).into(),
        provider_artifact_handle: status
            .artifact
            .as_ref()
            .filter(|_| ready)
            .map(|a| a.location.clone()),
        completed_at: status.completed_at.map(|t| t.0.to_string()),
        failed_at: status.failed_at.map(|t| t.0.to_string()),
        failure_code: status.failure_code,
        failure_message: status.failure_message,
        created_at: created,
        target_id: backup.spec.target_id.clone(),
        description: backup.spec.description.clone(),
        policy_id: backup.spec.slot.policy_id.clone(),
        scheduled_for: backup.spec.slot.scheduled_for.clone(),
        late: backup.spec.slot.late,
        step: status.step,
        uploaded: backup.spec.uploaded.clone().map(|u| UploadedDumpSummary {
            file_name: u.file_name,
            bytes: u.bytes,
            sha256: u.sha256,
        }),
        artifact: status.artifact.map(|a| BackupArtifactSummary {
            location: a.location,
            bytes: a.bytes,
            sha256: a.sha256,
            encryption: a.encryption,
        }),
        verification: status.verification.map(|v| BackupVerificationSummary {
            tables: v.tables,
            rows: v.rows,
            keys: v.keys,
            dump_bytes: v.dump_bytes,
            seconds: v.seconds,
            verified_at: v.verified_at.0.to_string(),
        }),
        latest_restore_attempt: restores
            .iter()
            .filter(|r| r.spec.backup_id == backup.name_any())
            .max_by_key(|r| {
                (
                    r.metadata.creation_timestamp.clone().map(|t| t.0),
                    r.name_any(),
                )
            })
            .map(|r| restore_summary(r)),
    }
}

fn time(at: &Option<Time>) -> Option<String> {
    at.as_ref().map(|t| t.0.to_string())
}

/// Appaloft's `retentionStatus` of a backup taken for `slot`: a policy's backup is kept by its
/// rules (`retained`); one asked for by hand until it is deleted (`none`).
pub fn retention_status(slot: &PolicySlot) -> &'static str {
    if slot.policy_id.is_some() {
        "retained"
    } else {
        "none"
    }
}

/// A restore as Appaloft's restore attempt.
pub fn restore_summary(restore: &DependencyResourceRestore) -> RestoreAttemptSummary {
    let status = restore.status.clone().unwrap_or_default();
    RestoreAttemptSummary {
        attempt_id: restore.name_any(),
        status: status.status,
        requested_at: time(&restore.metadata.creation_timestamp).unwrap_or_default(),
        target_dependency_resource_id: Some(restore.spec.target_dependency_resource_id.clone()),
        completed_at: time(&status.completed_at),
        failed_at: time(&status.failed_at),
        failure_code: status.failure_code,
        failure_message: status.failure_message,
        report: status.report.map(|r| RestoreReportSummary {
            tables: r.tables,
            rows: r.rows,
            keys: r.keys,
            dump_bytes: r.dump_bytes,
            seconds: r.seconds,
        }),
    }
}

/// 409 unless `backup` can be restored into `into`: the backup ready, `into` a ready managed
/// database of the backup's kind, project and environment, no other restore into it pending.
pub fn require_restorable(
    backup: &DependencyResourceBackup,
    source: &DependencyResource,
    into: &DependencyResource,
    restores: &[Arc<DependencyResourceRestore>],
) -> ApiResult<()> {
    let refuse = |why: String| Err(ApiError::conflict_code(RESTORE_BLOCKED, why));
    let ready = backup.status.as_ref().map(|s| s.status) == Some(BackupStatus::Ready);
    if !ready {
        return refuse(format!(
            "backup {} is not ready to restore",
            backup.name_any()
        ));
    }
    let into_id = into.name_any();
    let same_place = into.spec.project_id == source.spec.project_id
        && into.spec.environment_id == source.spec.environment_id;
    if !same_place {
        return refuse(format!(
            "dependency resource {into_id} is not in the backup's project and environment"
        ));
    }
    admissible(into, RESTORE_BLOCKED)?;
    if source.spec.kind != into.spec.kind {
        return refuse(format!(
            "backup {} holds a {}; dependency resource {into_id} is a {}",
            backup.name_any(),
            source.spec.kind.as_str(),
            into.spec.kind.as_str()
        ));
    }
    let pending = restores.iter().any(|r| {
        r.spec.target_dependency_resource_id == into_id
            && r.status.as_ref().map(|s| s.status).unwrap_or_default() == RestoreStatus::Pending
    });
    if pending {
        return refuse(format!("a restore into {into_id} is already pending"));
    }
    Ok(())
}

/// 409 unless Berth can back up `dependency` now: a managed PostgreSQL or Redis that is
/// ready; 422 when `provider_key` names the provider of another kind.
pub fn require_backed_up(
    dependency: &DependencyResource,
    provider_key: Option<&str>,
) -> ApiResult<()> {
    require_provider(dependency, provider_key)?;
    admissible(dependency, BLOCKED)
}

/// 409 unless `dependency` is of a kind Berth backs up, a managed PostgreSQL or Redis (ready
/// or not): what a backup policy needs; 422 when `provider_key` names another kind's.
pub fn require_backup_kind(
    dependency: &DependencyResource,
    provider_key: Option<&str>,
) -> ApiResult<()> {
    require_provider(dependency, provider_key)?;
    match why_not_backed_up(dependency) {
        Some(why) => Err(blocked(dependency, BLOCKED, why)),
        None => Ok(()),
    }
}

/// 422 on `providerKey` when it is given and is not the provider of `dependency`'s kind.
fn require_provider(dependency: &DependencyResource, given: Option<&str>) -> ApiResult<()> {
    let kind = dependency.spec.kind;
    let own = provider_key(kind);
    match given {
        Some(given) if given != own => Err(ApiError::validation(
            "providerKey",
            format!(
                "providerKey {given} does not back up a {}: dependency resource {} is backed \
                 up by {own}",
                kind.as_str(),
                dependency.name_any()
            ),
        )),
        _ => Ok(()),
    }
}

/// 409 coded `code` unless `dependency` is a managed PostgreSQL or Redis that is ready.
fn admissible(dependency: &DependencyResource, code: &'static str) -> ApiResult<()> {
    if let Some(why) = why_not_backed_up(dependency) {
        return Err(blocked(dependency, code, why));
    }
    let ready = dependency
        .status
        .as_ref()
        .and_then(|s| condition::find(&s.conditions, READY))
        .is_some_and(|c| c.status == ConditionStatus::True);
    if !ready {
        let why = format!("dependency resource {} is not ready", dependency.name_any());
        return Err(blocked(dependency, code, why));
    }
    Ok(())
}

fn blocked(dependency: &DependencyResource, code: &'static str, why: String) -> ApiError {
    ApiError::conflict_code(code, why).with_detail("dependencyResourceId", dependency.name_any())
}

/// Why Berth does not back up `dependency`'s kind, if it does not.
fn why_not_backed_up(dependency: &DependencyResource) -> Option<String> {
    let id = dependency.name_any();
    if dependency.spec.source != DependencySource::Managed {
        return Some(format!(
            "dependency resource {id} is imported; Berth backs up only the databases it runs"
        ));
    }
    None
}

/// The target a backup goes to: the one named, else the organization's only one.
pub fn choose_target(
    targets: &[Arc<BackupTarget>],
    named: Option<&str>,
) -> ApiResult<Arc<BackupTarget>> {
    if let Some(named) = named {
        return targets
            .iter()
            .find(|t| t.name_any() == named)
            .cloned()
            .ok_or_else(|| {
                ApiError::validation("targetId", format!("backup target {named} does not exist"))
            });
    }
    match targets {
        [only] => Ok(only.clone()),
        [] => Err(ApiError::conflict_code(
            BLOCKED,
            "the organization has no backup target; create one first (POST /backup-targets)",
        )),
        several => {
            let names: Vec<String> = several.iter().map(|t| t.name_any()).collect();
            Err(ApiError::validation(
                "targetId",
                format!(
                    "targetId is required when there are several backup targets: {}",
                    names.join(", ")
                ),
            ))
        }
    }
}
