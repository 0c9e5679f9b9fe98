//! RetentionPolicy: how long the observation store keeps one category of history (spec §2.2
//! "Retention default policy"). Configuration only: it never deletes by itself unless the
//! destructive scheduling flag is set.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::PolicyChange;

/// What one scheduled run found or deleted: defined once in `berth-vocabulary`, with its
/// instants as Kubernetes `Time` here and as strings on the REST wire.
pub type RetentionRun = berth_vocabulary::retention::RetentionRun<Time>;
pub use berth_vocabulary::retention::RetentionRunMode;

/// Whether a policy applies to one organization or is the system default.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetentionScope {
    #[default]
    Organization,
    System,
}

/// Category of retained history.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetentionCategory {
    AuditRows,
    DomainEventStreams,
    ProcessAttempts,
    ProviderJobLogs,
    ResourceRuntimeLogArchives,
    RuntimeMonitoringSamples,
}

/// Retention of one category of history.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "RetentionPolicy",
    namespaced,
    shortname = "bret",
    category = "berth",
    doc = "How many days the observation store keeps one category of history.",
    status = "RetentionPolicyStatus",
    printcolumn = r#"{"name":"Scope","type":"string","jsonPath":".spec.scope"}"#,
    printcolumn = r#"{"name":"Category","type":"string","jsonPath":".spec.category"}"#,
    printcolumn = r#"{"name":"Days","type":"integer","jsonPath":".spec.retentionDays"}"#,
    printcolumn = r#"{"name":"Enabled","type":"boolean","jsonPath":".spec.enabled"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicySpec {
    /// `organization` (default) or `system`.
    #[serde(default)]
    pub scope: RetentionScope,
    /// Id of the Organization, for organization-scoped policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub organization_id: Option<String>,
    /// Category of history the policy governs.
    pub category: RetentionCategory,
    /// Days history is kept.
    #[schemars(range(min = 1))]
    pub retention_days: i64,
    /// Whether dry runs of the pruning are scheduled.
    #[serde(default)]
    pub dry_run_scheduling_enabled: bool,
    /// Whether pruning that deletes history is scheduled.
    #[serde(default)]
    pub destructive_scheduling_enabled: bool,
    /// Whether the policy is in effect.
    #[serde(default = "crate::common::default_true")]
    pub enabled: bool,
}

/// Who last changed a policy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicyStatus {
    /// When, by whom, and which generation was last acted on.
    #[serde(flatten)]
    pub change: PolicyChange,
    /// Current conditions; `Ready` once the policy is in effect.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// What the latest scheduled run of the policy found or deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RetentionRun>,
}

impl RetentionCategory {
    pub const ALL: [RetentionCategory; 6] = [
        Self::AuditRows,
        Self::DomainEventStreams,
        Self::ProcessAttempts,
        Self::ProviderJobLogs,
        Self::ResourceRuntimeLogArchives,
        Self::RuntimeMonitoringSamples,
    ];

    /// The category as the API and object names spell it, e.g. `process-attempts`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AuditRows => "audit-rows",
            Self::DomainEventStreams => "domain-event-streams",
            Self::ProcessAttempts => "process-attempts",
            Self::ProviderJobLogs => "provider-job-logs",
            Self::ResourceRuntimeLogArchives => "resource-runtime-log-archives",
            Self::RuntimeMonitoringSamples => "runtime-monitoring-samples",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == value)
    }

    /// Days kept by the system default Berth creates when none exists.
    pub fn default_days(self) -> i64 {
        match self {
            Self::AuditRows => 365,
            Self::DomainEventStreams | Self::ProviderJobLogs | Self::ProcessAttempts => 30,
            Self::ResourceRuntimeLogArchives => 14,
            Self::RuntimeMonitoringSamples => 7,
        }
    }
}
