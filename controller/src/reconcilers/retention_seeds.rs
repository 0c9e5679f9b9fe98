//! The system RetentionPolicies, seeded from the controller's flags: the one mechanism that
//! prunes the observation store is the RetentionPolicy (`reconcilers/retention.rs`); the flags
//! only say what the system defaults start as. A person's change to a system policy (through
//! the REST API or kubectl) wins over the flags from then on.

use berth_crds::retention_policy::{
    RetentionCategory, RetentionPolicy, RetentionPolicySpec, RetentionScope,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};

use super::retention::histories;
use crate::error::Result;

/// Field manager of the seeded specs.
const SEED_MANAGER: &str = "berth-retention-seed";
/// Who created the system defaults before they were seeded: a `create` without a field manager
/// from kube-rs, which sends no User-Agent, so the API server names it `unknown`. Such a spec is
/// still Berth's own and takes the flags' seed.
const EARLIER_SEED_MANAGERS: &[&str] = &["unknown"];

/// What the flags say each pruned history keeps, in days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeds {
    /// `--timeline-retention-days`: deployment timelines (`process-attempts`).
    pub process_attempts_days: i64,
    /// `--health-history-retention-days`: health history and access-failure evidence
    /// (`domain-event-streams`).
    pub domain_event_streams_days: i64,
    /// `--monitoring-retention-hours`, rounded up to whole days (`runtime-monitoring-samples`).
    pub monitoring_sample_days: i64,
}

impl Seeds {
    /// The system default of `category`: a category whose histories Berth keeps deletes them
    /// after the flag's days (so what the policy says is what happens); the others only count.
    pub fn spec(&self, category: RetentionCategory) -> RetentionPolicySpec {
        let retention_days = match category {
            RetentionCategory::ProcessAttempts => self.process_attempts_days,
            RetentionCategory::DomainEventStreams => self.domain_event_streams_days,
            RetentionCategory::RuntimeMonitoringSamples => self.monitoring_sample_days,
            other => other.default_days(),
        };
        let prunes = !histories(category).is_empty();
        RetentionPolicySpec {
            scope: RetentionScope::System,
            organization_id: None,
            category,
            retention_days,
            dry_run_scheduling_enabled: !prunes,
            destructive_scheduling_enabled: prunes,
            enabled: true,
        }
    }
}

/// Whether the flags may (re)write a system default: it is missing, or nobody but Berth's
/// seeding ever wrote its spec.
pub fn reseedable(existing: Option<&RetentionPolicy>) -> bool {
    let Some(policy) = existing else {
        return true;
    };
    let entries = policy
        .metadata
        .managed_fields
        .as_deref()
        .unwrap_or_default();
    entries
        .iter()
        .filter(|entry| writes_spec(entry))
        .all(|entry| {
            let manager = entry.manager.as_deref().unwrap_or_default();
            manager == SEED_MANAGER || EARLIER_SEED_MANAGERS.contains(&manager)
        })
}

fn writes_spec(entry: &ManagedFieldsEntry) -> bool {
    entry
        .fields_v1
        .as_ref()
        .and_then(|fields| fields.0.get("f:spec"))
        .is_some()
}

/// Creates each missing system default from the flags, and brings each one nobody has changed
/// up to the flags (a changed flag takes effect at the next start).
pub async fn ensure_system_defaults(
    client: &Client,
    system_namespace: &str,
    seeds: &Seeds,
) -> Result<()> {
    let api = Api::<RetentionPolicy>::namespaced(client.clone(), system_namespace);
    let params = PatchParams::apply(SEED_MANAGER).force();
    for category in RetentionCategory::ALL {
        let name = category.as_str();
        let existing = api.get_opt(name).await?;
        if !reseedable(existing.as_ref()) {
            tracing::info!(
                category = name,
                "system retention default changed by a person; the flags leave it as it is"
            );
            continue;
        }
        // Only the spec is the seed's: the status belongs to the reconcilers.
        let patch = serde_json::json!({
            "apiVersion": RetentionPolicy::api_version(&()),
            "kind": RetentionPolicy::kind(&()),
            "metadata": { "name": name },
            "spec": seeds.spec(category),
        });
        api.patch(name, &params, &Patch::Apply(&patch)).await?;
        if existing.is_none() {
            tracing::info!(category = name, "system retention default created");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

    const SEEDS: Seeds = Seeds {
        process_attempts_days: 30,
        domain_event_streams_days: 7,
        monitoring_sample_days: 2,
    };

    fn written_by(managers: &[(&str, &str)]) -> RetentionPolicy {
        let mut policy = RetentionPolicy::new(
            "process-attempts",
            SEEDS.spec(RetentionCategory::ProcessAttempts),
        );
        let entry = |(manager, field): &(&str, &str)| ManagedFieldsEntry {
            manager: Some(manager.to_string()),
            fields_v1: Some(FieldsV1(serde_json::json!({ *field: {} }))),
            ..Default::default()
        };
        policy.metadata.managed_fields = Some(managers.iter().map(entry).collect());
        policy
    }

    #[test]
    fn what_berth_keeps_is_deleted_after_the_flags_days_and_the_rest_only_counted() {
        let timelines = SEEDS.spec(RetentionCategory::ProcessAttempts);
        assert_eq!(timelines.retention_days, 30);
        assert!(timelines.destructive_scheduling_enabled && timelines.enabled);
        assert_eq!(timelines.scope, RetentionScope::System);
        let samples = SEEDS.spec(RetentionCategory::RuntimeMonitoringSamples);
        assert_eq!(samples.retention_days, 2);
        assert!(samples.destructive_scheduling_enabled);
        let health = SEEDS.spec(RetentionCategory::DomainEventStreams);
        assert_eq!(health.retention_days, 7);
        let audit = SEEDS.spec(RetentionCategory::AuditRows);
        assert_eq!(
            audit.retention_days,
            RetentionCategory::AuditRows.default_days()
        );
        assert!(
            audit.destructive_scheduling_enabled,
            "audit records are kept a year"
        );
        let logs = SEEDS.spec(RetentionCategory::ProviderJobLogs);
        assert!(logs.dry_run_scheduling_enabled && !logs.destructive_scheduling_enabled);
    }

    #[test]
    fn a_default_only_berth_wrote_follows_the_flags_and_a_persons_change_wins() {
        assert!(reseedable(None), "missing");
        assert!(reseedable(Some(&written_by(&[(SEED_MANAGER, "f:spec")]))));
        assert!(
            reseedable(Some(&written_by(&[("unknown", "f:spec")]))),
            "created by an earlier Berth"
        );
        assert!(
            reseedable(Some(&written_by(&[
                (SEED_MANAGER, "f:spec"),
                ("berth-retention", "f:status"),
            ]))),
            "status writers do not count"
        );
        assert!(!reseedable(Some(&written_by(&[
            (SEED_MANAGER, "f:spec"),
            ("berth-shim", "f:spec"),
        ]))));
        assert!(!reseedable(Some(&written_by(&[(
            "kubectl-edit",
            "f:spec"
        )]))));
    }
}
