//! Storage volume backup policies as REST shows and changes them: a StorageVolumeBackupPolicy
//! as Appaloft's policy record (with Berth's schedule, rules and restore point), and the spec a
//! configure request makes of the policy that exists, if one does.

use berth_api::backup_policies::{POLICY_VERSION, PolicyBackupSummary};
use berth_api::backups::BackupStatus;
use berth_api::volume_backup_policies::{
    ConfigureStorageVolumeBackupPolicy, POLICY_SCHEMA, StorageVolumeBackupPolicySummary,
};
use berth_crds::backup_policy::{
    BackupPolicyStatus, StorageVolumeBackupPolicy, StorageVolumeBackupPolicySpec,
};
use kube::ResourceExt;

use super::backup_policies::{configured_rules, created_and_updated, readiness, verified_summary};

/// Where a configured policy reads and writes: its server and target, chosen by the route.
pub struct Placement {
    pub server_id: String,
    pub target_id: String,
}

/// The spec `body` asks for: `existing`'s with the fields given changed, or a new one.
pub fn configured_spec(
    body: &ConfigureStorageVolumeBackupPolicy,
    existing: Option<&StorageVolumeBackupPolicySpec>,
    placement: Placement,
) -> StorageVolumeBackupPolicySpec {
    let consistency = body.consistency().ok().flatten();
    StorageVolumeBackupPolicySpec {
        storage_volume_id: body.storage_volume_id.clone(),
        server_id: placement.server_id,
        target_id: placement.target_id,
        consistency: consistency
            .or(existing.map(|s| s.consistency))
            .unwrap_or_default(),
        rules: configured_rules(
            &body.timing(),
            body.scheduled_enabled,
            existing.map(|s| &s.rules),
        ),
    }
}

/// Appaloft's `lastStatus`: what became of the newest backup.
fn last_status(status: &BackupPolicyStatus) -> &'static str {
    match status.latest_backup.as_ref().map(|b| b.status) {
        None => "never",
        Some(BackupStatus::Ready) => "succeeded",
        Some(BackupStatus::Failed) => "failed",
        Some(BackupStatus::Pending) => "pending",
    }
}

/// The record of `policy`.
pub fn summary(policy: &StorageVolumeBackupPolicy) -> StorageVolumeBackupPolicySummary {
    let spec = &policy.spec;
    let rules = &spec.rules;
    let status = policy.status.clone().unwrap_or_default();
    let (ready, message) = readiness(&status);
    let (created, updated) = created_and_updated(&policy.metadata);
    StorageVolumeBackupPolicySummary {
        schema_version: POLICY_SCHEMA.into(),
        id: policy.name_any(),
        version: POLICY_VERSION.into(),
        storage_volume_id: spec.storage_volume_id.clone(),
        scheduled_enabled: rules.enabled,
        schedule_interval_hours: rules.interval_hours,
        retry_on_failure: true,
        last_run_at: status.last_run_at.clone(),
        next_run_at: status.next_run_at.clone(),
        last_status: last_status(&status).into(),
        last_backup_id: status.latest_backup.as_ref().map(|b| b.name.clone()),
        updated_at: updated,
        server_id: spec.server_id.clone(),
        target_id: spec.target_id.clone(),
        consistency: spec.consistency,
        schedule: rules.schedule.clone(),
        timezone: rules.timezone.clone(),
        retention_days: rules.retention.keep_days,
        keep_last: rules.retention.keep_last,
        keep_daily: rules.retention.keep_daily,
        keep_weekly: rules.retention.keep_weekly,
        backups_kept: status.backups_kept,
        latest_backup: status.latest_backup.map(|b| PolicyBackupSummary {
            backup_id: b.name,
            status: b.status,
        }),
        last_verified_backup: status.last_verified.map(verified_summary),
        ready,
        message,
        created_at: created,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::volume_backups::VolumeConsistency;

    fn placement() -> Placement {
        Placement {
            server_id: "web-1".into(),
            target_id: "offsite".into(),
        }
    }

    #[test]
    fn a_change_keeps_what_it_does_not_name() {
        let created = configured_spec(
            &ConfigureStorageVolumeBackupPolicy {
                storage_volume_id: "uploads".into(),
                schedule_interval_hours: Some(6),
                requested_consistency: Some("quiesced".into()),
                keep_last: Some(3),
                ..Default::default()
            },
            None,
            placement(),
        );
        assert_eq!(created.consistency, VolumeConsistency::Quiesced);
        assert!(created.rules.enabled, "enabled unless told otherwise");
        let changed = configured_spec(
            &ConfigureStorageVolumeBackupPolicy {
                storage_volume_id: "uploads".into(),
                scheduled_enabled: Some(false),
                ..Default::default()
            },
            Some(&created),
            placement(),
        );
        assert_eq!(changed.consistency, VolumeConsistency::Quiesced, "kept");
        assert_eq!(changed.rules.interval_hours, Some(6), "kept");
        assert_eq!(changed.rules.retention.keep_last, Some(3), "kept");
        assert!(!changed.rules.enabled);
    }
}
