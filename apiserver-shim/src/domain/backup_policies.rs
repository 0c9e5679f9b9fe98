//! Backup policies as REST shows and changes them: a DependencyResourceBackupPolicy as
//! Appaloft's policy read (with Berth's schedule, rules and restore point), and the spec a
//! configure request makes of the policy that exists, if one does.

use berth_api::backup_policies::{
    BackupPolicySummary, ConfigureBackupPolicy, POLICY_SCHEMA, POLICY_VERSION, PolicyBackupSummary,
    PolicyTiming, VerifiedBackupSummary,
};
use berth_api::backups::provider_key;
use berth_crds::backup_policy::{
    BackupPolicyStatus, DependencyResourceBackupPolicy, DependencyResourceBackupPolicySpec,
    PolicyRules, VerifiedBackup,
};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::scheduled_task::DEFAULT_TIMEZONE;
use kube::ResourceExt;
use kube::api::ObjectMeta;

/// The spec `body` asks for: `existing`'s with the fields given changed, or a new one going to
/// `target_id`. A schedule given replaces the other kind (cron or interval).
pub fn configured_spec(
    body: &ConfigureBackupPolicy,
    existing: Option<&DependencyResourceBackupPolicySpec>,
    target_id: String,
) -> DependencyResourceBackupPolicySpec {
    DependencyResourceBackupPolicySpec {
        dependency_resource_id: body.dependency_resource_id.clone(),
        target_id,
        rules: configured_rules(&body.timing(), body.enabled, existing.map(|s| &s.rules)),
    }
}

/// The rules a configure request asks for: `existing` with the fields given changed, or new
/// ones. A schedule given replaces the other kind (cron or interval).
pub fn configured_rules(
    timing: &PolicyTiming,
    enabled: Option<bool>,
    existing: Option<&PolicyRules>,
) -> PolicyRules {
    let mut rules = existing.cloned().unwrap_or_default();
    if let Some(hours) = timing.interval_hours {
        rules.interval_hours = Some(hours);
        rules.schedule = None;
        rules.timezone = DEFAULT_TIMEZONE.into();
    }
    if let Some(schedule) = timing.schedule {
        rules.schedule = Some(schedule.trim().to_string());
        rules.interval_hours = None;
        rules.timezone = timing.timezone.unwrap_or(DEFAULT_TIMEZONE).into();
    }
    let kept = &mut rules.retention;
    kept.keep_days = timing.retention_days.or(kept.keep_days);
    kept.keep_last = timing.keep_last.or(kept.keep_last);
    kept.keep_daily = timing.keep_daily.or(kept.keep_daily);
    kept.keep_weekly = timing.keep_weekly.or(kept.keep_weekly);
    rules.enabled = enabled.unwrap_or(rules.enabled);
    rules
}

/// When a policy was created, and last changed by a person (its status writes not counted).
pub fn created_and_updated(meta: &ObjectMeta) -> (String, String) {
    let created = meta
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    let updated = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.is_none())
        .filter_map(|entry| entry.time.as_ref().map(|t| t.0))
        .max()
        .map_or_else(|| created.clone(), |t| t.to_string());
    (created, updated)
}

/// Whether a policy's `Ready` condition is true, and its message.
pub fn readiness(status: &BackupPolicyStatus) -> (bool, Option<String>) {
    let ready = condition::find(&status.conditions, READY);
    (
        ready.is_some_and(|c| c.status == ConditionStatus::True),
        ready.map(|c| c.message.clone()),
    )
}

/// A policy's newest proven backup, as its record names it.
pub fn verified_summary(verified: VerifiedBackup) -> VerifiedBackupSummary {
    VerifiedBackupSummary {
        backup_id: verified.name,
        verified_at: verified.verified_at,
        tables: verified.tables,
        rows: verified.rows,
        keys: verified.keys,
        files: verified.files,
    }
}

/// The record of `policy`, which backs up `dependency`.
pub fn summary(
    policy: &DependencyResourceBackupPolicy,
    dependency: &DependencyResource,
) -> BackupPolicySummary {
    let spec = &policy.spec;
    let rules = &spec.rules;
    let status = policy.status.clone().unwrap_or_default();
    let (ready, message) = readiness(&status);
    let (created, updated) = created_and_updated(&policy.metadata);
    BackupPolicySummary {
        schema_version: POLICY_SCHEMA.into(),
        id: policy.name_any(),
        version: POLICY_VERSION.into(),
        dependency_resource_id: spec.dependency_resource_id.clone(),
        retention_days: rules.retention.keep_days,
        schedule_interval_hours: rules.interval_hours,
        provider_key: Some(provider_key(dependency.spec.kind).into()),
        retry_on_failure: true,
        enabled: rules.enabled,
        last_run_at: status.last_run_at,
        next_run_at: status.next_run_at,
        updated_at: updated,
        schedule: rules.schedule.clone(),
        timezone: rules.timezone.clone(),
        keep_last: rules.retention.keep_last,
        keep_daily: rules.retention.keep_daily,
        keep_weekly: rules.retention.keep_weekly,
        target_id: spec.target_id.clone(),
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
        assert_eq!(created.rules.interval_hours, Some(6));
        assert_eq!(created.rules.retention.keep_days, Some(14));
        assert!(created.rules.enabled);
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
            changed.rules.interval_hours, None,
            "a cron schedule replaces the interval"
        );
        assert_eq!(changed.rules.schedule.as_deref(), Some("0 3 * * *"));
        assert_eq!(changed.rules.timezone, "Europe/Berlin");
        assert_eq!(changed.rules.retention.keep_days, Some(14), "kept");
        assert_eq!(changed.rules.retention.keep_last, Some(3));
        assert!(!changed.rules.enabled);
    }
}
