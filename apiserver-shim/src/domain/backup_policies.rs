//! Backup policies as REST shows and changes them: a DependencyResourceBackupPolicy as
//! Appaloft's policy read (with Berth's schedule, rules and restore point), and the spec a
//! configure request makes of the policy that exists, if one does.

use berth_api::backup_policies::{
    BackupPolicySummary, ConfigureBackupPolicy, POLICY_SCHEMA, POLICY_VERSION, PolicyBackupSummary,
    VerifiedBackupSummary,
};
use berth_api::backups::provider_key;
use berth_crds::backup_policy::{
    BackupRetention, DependencyResourceBackupPolicy, DependencyResourceBackupPolicySpec,
};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::scheduled_task::DEFAULT_TIMEZONE;
use kube::ResourceExt;

/// The spec `body` asks for: `existing`'s with the fields given changed, or a new one going to
/// `target_id`. A schedule given replaces the other kind (cron or interval).
pub fn configured_spec(
    body: &ConfigureBackupPolicy,
    existing: Option<&DependencyResourceBackupPolicySpec>,
    target_id: String,
) -> DependencyResourceBackupPolicySpec {
    let mut spec = existing
        .cloned()
        .unwrap_or_else(|| DependencyResourceBackupPolicySpec {
            dependency_resource_id: body.dependency_resource_id.clone(),
            target_id: target_id.clone(),
            schedule: None,
            timezone: DEFAULT_TIMEZONE.into(),
            interval_hours: None,
            retention: BackupRetention::default(),
            enabled: true,
        });
    spec.target_id = target_id;
    if let Some(hours) = body.schedule_interval_hours {
        spec.interval_hours = Some(hours);
        spec.schedule = None;
        spec.timezone = DEFAULT_TIMEZONE.into();
    }
    if let Some(schedule) = &body.schedule {
        spec.schedule = Some(schedule.trim().to_string());
        spec.interval_hours = None;
        spec.timezone = body
            .timezone
            .clone()
            .unwrap_or_else(|| DEFAULT_TIMEZONE.into());
    }
    let rules = &mut spec.retention;
    rules.keep_days = body.retention_days.or(rules.keep_days);
    rules.keep_last = body.keep_last.or(rules.keep_last);
    rules.keep_daily = body.keep_daily.or(rules.keep_daily);
    rules.keep_weekly = body.keep_weekly.or(rules.keep_weekly);
    spec.enabled = body.enabled.unwrap_or(spec.enabled);
    spec
}

/// The record of `policy`.
/// The record of `policy`, which backs up `dependency`.
pub fn summary(
    policy: &DependencyResourceBackupPolicy,
    dependency: &DependencyResource,
) -> BackupPolicySummary {
    let spec = &policy.spec;
    let status = policy.status.clone().unwrap_or_default();
    let ready = condition::find(&status.conditions, READY);
    let created = policy
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    let updated = policy
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.is_none())
        .filter_map(|entry| entry.time.as_ref().map(|t| t.0))
        .max()
        .map_or_else(|| created.clone(), |t| t.to_string());
    BackupPolicySummary {
        schema_version: POLICY_SCHEMA.into(),
        id: policy.name_any(),
        version: POLICY_VERSION.into(),
        dependency_resource_id: spec.dependency_resource_id.clone(),
        retention_days: spec.retention.keep_days,
        schedule_interval_hours: spec.interval_hours,
        provider_key: Some(provider_key(dependency.spec.kind).into()),
        retry_on_failure: true,
        enabled: spec.enabled,
        last_run_at: status.last_run_at,
        next_run_at: status.next_run_at,
        updated_at: updated,
        schedule: spec.schedule.clone(),
        timezone: spec.timezone.clone(),
        keep_last: spec.retention.keep_last,
        keep_daily: spec.retention.keep_daily,
        keep_weekly: spec.retention.keep_weekly,
        target_id: spec.target_id.clone(),
        backups_kept: status.backups_kept,
        latest_backup: status.latest_backup.map(|b| PolicyBackupSummary {
            backup_id: b.name,
            status: b.status,
        }),
        last_verified_backup: status.last_verified.map(|v| VerifiedBackupSummary {
            backup_id: v.name,
            verified_at: v.verified_at,
            tables: v.tables,
            rows: v.rows,
            keys: v.keys,
        }),
        ready: ready.is_some_and(|c| c.status == ConditionStatus::True),
        message: ready.map(|c| c.message.clone()),
        created_at: created,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> ConfigureBackupPolicy {
        ConfigureBackupPolicy {
            dependency_resource_id: "orders".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_policy_takes_the_fields_given_and_a_change_keeps_the_rest() {
        let created = configured_spec(
            &ConfigureBackupPolicy {
                schedule_interval_hours: Some(6),
                retention_days: Some(14),
                ..body()
            },
            None,
            "offsite".into(),
        );
        assert_eq!(created.interval_hours, Some(6));
        assert_eq!(created.retention.keep_days, Some(14));
        assert!(created.enabled);
        let changed = configured_spec(
            &ConfigureBackupPolicy {
                schedule: Some("0 3 * * *".into()),
                timezone: Some("Europe/Berlin".into()),
                keep_last: Some(3),
                enabled: Some(false),
                ..body()
            },
            Some(&created),
            "offsite".into(),
        );
        assert_eq!(
            changed.interval_hours, None,
            "a cron schedule replaces the interval"
        );
        assert_eq!(changed.schedule.as_deref(), Some("0 3 * * *"));
        assert_eq!(changed.timezone, "Europe/Berlin");
        assert_eq!(changed.retention.keep_days, Some(14), "kept");
        assert_eq!(changed.retention.keep_last, Some(3));
        assert!(!changed.enabled);
    }
}
