//! What a threshold policy is made of, as stored in a ThresholdPolicy and answered by
//! `GET /runtime-monitoring/thresholds`: its scope, its rules and the severity they report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Comparator, DEFAULT_FOR_SAMPLES, MetricReading, RuleFields, ScopeInput, policy_name,
    read_metric,
};
use crate::validate::{Checked, FieldError};

/// What a monitoring policy watches (spec §2.1 `scope`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringScope {
    /// Scope kind, e.g. `server`.
    #[schemars(length(min = 1))]
    pub kind: String,
    /// Id of the Server, when the kind is `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server_id: Option<String>,
    /// Id of the Project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub project_id: Option<String>,
    /// Id of the Environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub environment_id: Option<String>,
    /// Id of the Resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub resource_id: Option<String>,
    /// Id of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub deployment_id: Option<String>,
}

/// The REST API's scope as stored, and back: one place spells out the fields, so the scope's
/// own id and policy name come from `berth-vocabulary` alone ([`ScopeInput::own_id`]).
impl From<ScopeInput> for MonitoringScope {
    fn from(input: ScopeInput) -> Self {
        let ScopeInput {
            kind,
            server_id,
            project_id,
            environment_id,
            resource_id,
            deployment_id,
        } = input;
        Self {
            kind,
            server_id,
            project_id,
            environment_id,
            resource_id,
            deployment_id,
        }
    }
}

impl From<MonitoringScope> for ScopeInput {
    fn from(scope: MonitoringScope) -> Self {
        let MonitoringScope {
            kind,
            server_id,
            project_id,
            environment_id,
            resource_id,
            deployment_id,
        } = scope;
        Self {
            kind,
            server_id,
            project_id,
            environment_id,
            resource_id,
            deployment_id,
        }
    }
}

impl MonitoringScope {
    /// The one policy name of the scope, `<kind>-<id>`, by `berth-vocabulary`'s rule (which a
    /// POST body's checks run too); an error names `scope.<field>`.
    pub fn policy_name(&self) -> Result<String, FieldError> {
        let input = ScopeInput::from(self.clone());
        policy_name(&self.kind, input.own_id())
    }
}

/// One threshold on one metric.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdRule {
    /// Id of the rule, unique in the policy.
    #[schemars(length(min = 1))]
    pub rule_id: String,
    /// Signal watched: a group of the samples' totals (`cpu`, `memory`, `disk`, `inode`,
    /// `docker`, `network`).
    #[schemars(length(min = 1))]
    pub signal: String,
    /// Metric of the signal, a field of that group, e.g. `containerCpuPercent`.
    #[schemars(length(min = 1))]
    pub metric: String,
    /// Boundary reported as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<f64>,
    /// Boundary reported as critical.
    pub critical: f64,
    /// How the observed value is compared with a boundary.
    #[serde(default)]
    pub comparator: Comparator,
    /// Consecutive breaching samples before the state changes: one spike is not a breach.
    #[serde(default = "default_for_samples")]
    #[schemars(range(min = 1, max = 100))]
    pub for_samples: u32,
    /// Hysteresis: once a boundary is crossed, the state holds until the value is back past
    /// `clearAt` (without it, until the value is back past the boundary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_at: Option<f64>,
}

fn default_for_samples() -> u32 {
    DEFAULT_FOR_SAMPLES
}

impl ThresholdRule {
    /// The most severe level whose boundary `value` breaches, ignoring duration and hysteresis.
    pub fn level(&self, value: f64) -> Severity {
        let breaches = |boundary| self.comparator.breaches(value, boundary);
        if breaches(self.critical) {
            Severity::Critical
        } else if self.warning.is_some_and(breaches) {
            Severity::Warning
        } else {
            Severity::Ok
        }
    }

    /// The boundary of `severity` (`None` for `ok` or a rule without a warning).
    pub fn boundary(&self, severity: Severity) -> Option<f64> {
        match severity {
            Severity::Ok => None,
            Severity::Warning => self.warning,
            Severity::Critical => Some(self.critical),
        }
    }

    /// The rule as `berth-vocabulary`'s rule checks read it; every field but the id (spelt out,
    /// so a new field is weighed here).
    pub fn fields(&self) -> RuleFields<'_> {
        let Self {
            rule_id: _,
            signal,
            metric,
            warning,
            critical,
            comparator,
            for_samples,
            clear_at,
        } = self;
        RuleFields {
            signal,
            metric,
            warning: *warning,
            critical: *critical,
            comparator: *comparator,
            for_samples: *for_samples,
            clear_at: *clear_at,
        }
    }

    /// How the rule's metric is read: a former name as its current one. `host`: the policy is
    /// of a `server` scope.
    pub fn reading(&self, host: bool) -> MetricReading {
        read_metric(&self.signal, &self.metric, host)
    }

    /// The rule as read ([`ThresholdPolicySpec::read`]): its former metric name, if it names
    /// one, replaced by the current signal and metric.
    pub fn read(&self, host: bool) -> ThresholdRule {
        match self.reading(host) {
            MetricReading::Renamed { signal, metric, .. } => ThresholdRule {
                signal: signal.as_str().to_string(),
                metric: metric.to_string(),
                ..self.clone()
            },
            MetricReading::AsWritten | MetricReading::Retired(_) => self.clone(),
        }
    }

    /// Why the rule is inconsistent, by `berth-vocabulary`'s rule checks (the REST API runs them
    /// on a request's rules): the error names the field under `at`, e.g. `spec.rules[2].metric`.
    pub fn problem(&self, at: &str) -> Checked {
        self.fields().check(at)
    }
}

/// How bad a state is, worst last.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    #[default]
    Ok,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}
