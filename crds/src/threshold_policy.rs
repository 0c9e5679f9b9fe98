//! ThresholdPolicy: non-enforcing runtime-monitoring thresholds (spec §2.2 "Threshold policy").
//! Crossing a threshold is reported; nothing is stopped or throttled.

use berth_vocabulary::monitoring::{ScopeKind, Signal};
use berth_vocabulary::thresholds::MetricReading;
use berth_vocabulary::validate::{Checked, FieldError};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::PolicyChange;

/// How a boundary is compared and the largest `forSamples`: defined once in
/// `berth-vocabulary`, whose rule checks the REST API's requests run too.
pub use berth_vocabulary::thresholds::{Comparator, MAX_FOR_SAMPLES, actor_kind};
pub use berth_vocabulary::thresholds::{MonitoringScope, Severity, ThresholdRule};

/// Monitoring thresholds for one scope.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "ThresholdPolicy",
    namespaced,
    shortname = "bthr",
    category = "berth",
    doc = "Non-enforcing runtime-monitoring thresholds for a server or other scope.",
    status = "ThresholdPolicyStatus",
    printcolumn = r#"{"name":"Scope","type":"string","jsonPath":".spec.scope.kind"}"#,
    printcolumn = r#"{"name":"Enabled","type":"boolean","jsonPath":".spec.enabled"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdPolicySpec {
    /// What the thresholds watch.
    pub scope: MonitoringScope,
    /// The thresholds.
    #[serde(default)]
    pub rules: Vec<ThresholdRule>,
    /// Whether the thresholds are evaluated.
    #[serde(default = "crate::common::default_true")]
    pub enabled: bool,
}

impl ThresholdPolicySpec {
    /// The first inconsistent rule as read ([`Self::read`]), named under `spec.rules[i]`: a
    /// policy applied with `kubectl` skips the REST API's checks, and a rule on an unknown
    /// metric would otherwise never be evaluated without anyone being told. A former metric
    /// name no metric stands for now says so.
    pub fn problem(&self) -> Checked {
        let host = self.host();
        for (index, rule) in self.rules.iter().enumerate() {
            let at = format!("spec.rules[{index}]");
            if let MetricReading::Retired(former) = rule.reading(host) {
                let field = format!("{at}.metric");
                let message = format!("{field}: {}", former.retired_message());
                return Err(FieldError::new(&field, message));
            }
            rule.read(host).problem(&at)?;
        }
        Ok(())
    }

    /// The spec as it is checked, evaluated and shown: a rule naming a former flat metric
    /// (`memory` / `memoryUsedBytes`) reads as its current one (`memory` / `usedBytes`).
    ///
    /// Converted on read rather than rewritten in the object: the spec is the user's (often
    /// a GitOps tool's, which would fight a rewrite); it keeps their words, and `Ready` says
    /// what they are read as ([`Self::renamed_note`]) so they can update the YAML.
    pub fn read(&self) -> ThresholdPolicySpec {
        let host = self.host();
        ThresholdPolicySpec {
            rules: self.rules.iter().map(|rule| rule.read(host)).collect(),
            ..self.clone()
        }
    }

    /// The rules naming a former metric, and what each is read as.
    pub fn renamed(&self) -> Vec<RenamedMetric> {
        let host = self.host();
        let renamed = |(index, rule): (usize, &ThresholdRule)| match rule.reading(host) {
            MetricReading::Renamed { signal, metric, .. } => Some(RenamedMetric {
                at: format!("spec.rules[{index}]"),
                former_signal: rule.signal.clone(),
                former_metric: rule.metric.clone(),
                signal,
                metric,
            }),
            _ => None,
        };
        self.rules.iter().enumerate().filter_map(renamed).collect()
    }

    /// What the policy tells its author of the former names it reads as current ones, e.g.
    /// "spec.rules[0] names the former metric `memory` / `memoryUsedBytes`, read as `memory` /
    /// `usedBytes` …"; `None` when no rule names one.
    pub fn renamed_note(&self) -> Option<String> {
        let renamed = self.renamed();
        if renamed.is_empty() {
            return None;
        }
        let each: Vec<String> = renamed.iter().map(RenamedMetric::describe).collect();
        Some(format!(
            "{}; the object is left as written: use the new names in its YAML",
            each.join("; ")
        ))
    }

    /// Whether the rules read a server's host (a `server` scope) rather than containers: what
    /// a former `memoryUsedBytes` read depended on it.
    fn host(&self) -> bool {
        ScopeKind::parse(&self.scope.kind) == Some(ScopeKind::Server)
    }
}

/// A rule naming a former metric, and what it is read as ([`ThresholdPolicySpec::read`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RenamedMetric {
    /// Where the rule is, e.g. `spec.rules[0]`.
    pub at: String,
    /// The signal as written.
    pub former_signal: String,
    /// The metric as written, e.g. `memoryUsedBytes`.
    pub former_metric: String,
    /// The signal it is read as.
    pub signal: Signal,
    /// The metric it is read as, e.g. `usedBytes`.
    pub metric: &'static str,
}

impl RenamedMetric {
    /// E.g. "spec.rules[0] names the former metric `memory` / `memoryUsedBytes`, read as
    /// `memory` / `usedBytes`".
    pub fn describe(&self) -> String {
        format!(
            "{} names the former metric `{}` / `{}`, read as `{}` / `{}`",
            self.at,
            self.former_signal,
            self.former_metric,
            self.signal.as_str(),
            self.metric
        )
    }
}

/// Who last changed a policy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdPolicyStatus {
    /// When, by whom, and which generation was last acted on.
    #[serde(flatten)]
    pub change: PolicyChange,
    /// Current conditions: `Ready`, and `ThresholdCrossed` once evaluated.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The latest evaluation, rewritten only when its state changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<ThresholdEvaluation>,
}

/// Condition type: whether a boundary is crossed (`True`, reason `Warning` or `Critical`) or
/// not (`False`, reason `WithinBounds`).
pub const THRESHOLD_CROSSED: &str = "ThresholdCrossed";
/// `ThresholdCrossed=False`.
pub const WITHIN_BOUNDS: &str = "WithinBounds";
/// `nextActions` entry while a boundary is crossed.
pub const INSPECT_RUNTIME_USAGE: &str = "inspect-runtime-usage";

/// Spec §2.2 "Threshold evaluation".
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdEvaluation {
    /// The worst severity crossed: `ok`, `warning` or `critical`.
    pub state: Severity,
    pub evaluated_at: Time,
    /// The sample the worst crossing (or, within bounds, the evaluation) was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_sample_id: Option<String>,
    /// One entry per rule crossed, at its worst series.
    #[serde(default)]
    pub crossed: Vec<CrossedRule>,
    /// What to do next, e.g. `inspect-runtime-usage`.
    #[serde(default)]
    pub next_actions: Vec<String>,
    /// Sources that could not be read for the evaluation.
    #[serde(default)]
    pub source_errors: Vec<EvaluationSourceError>,
}

/// A source the evaluation could not read (the shape of a sample's `sourceErrors`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvaluationSourceError {
    /// What could not be read, e.g. `monitoring-store`.
    pub source: String,
    /// Machine-readable code.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Whether a later evaluation may succeed.
    pub retryable: bool,
}

/// A rule whose boundary is crossed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossedRule {
    /// The rule crossed.
    pub rule_id: String,
    /// Its signal, e.g. `memory`.
    pub signal: String,
    /// Its metric, e.g. `containerUsedBytes`.
    pub metric: String,
    /// `warning` or `critical`.
    pub severity: Severity,
    /// The value of the worst series when the state changed.
    pub observed_value: f64,
    /// The boundary of `severity`.
    pub boundary: f64,
    /// The resource whose container is the worst series; absent for a server's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(comparator: Comparator, warning: Option<f64>, critical: f64) -> ThresholdRule {
        ThresholdRule {
            rule_id: "r".into(),
            signal: "cpu".into(),
            metric: "containerCpuPercent".into(),
            warning,
            critical,
            comparator,
            for_samples: 1,
            clear_at: None,
        }
    }

    #[test]
    fn comparators_and_levels() {
        let above = rule(Comparator::GreaterThanOrEqual, Some(80.0), 95.0);
        assert_eq!(above.level(79.9), Severity::Ok);
        assert_eq!(above.level(80.0), Severity::Warning);
        assert_eq!(above.level(95.0), Severity::Critical);
        let strictly = rule(Comparator::GreaterThan, Some(80.0), 95.0);
        assert_eq!(strictly.level(80.0), Severity::Ok);
        assert_eq!(strictly.level(95.0), Severity::Warning);
        let below = rule(Comparator::LessThan, Some(20.0), 5.0);
        assert_eq!(below.level(20.0), Severity::Ok);
        assert_eq!(below.level(19.0), Severity::Warning);
        assert_eq!(below.level(4.0), Severity::Critical);
        let at_most = rule(Comparator::LessThanOrEqual, None, 5.0);
        assert_eq!(at_most.level(5.0), Severity::Critical);
        assert_eq!(at_most.level(6.0), Severity::Ok);
    }

    fn spec(kind: &str, signal: &str, metric: &str) -> ThresholdPolicySpec {
        let mut rule = rule(Comparator::GreaterThan, Some(80.0), 95.0);
        (rule.signal, rule.metric) = (signal.into(), metric.into());
        ThresholdPolicySpec {
            scope: MonitoringScope {
                kind: kind.into(),
                server_id: Some("edge".into()),
                project_id: Some("shop".into()),
                environment_id: None,
                resource_id: None,
                deployment_id: None,
            },
            rules: vec![rule],
            enabled: true,
        }
    }

    #[test]
    fn a_former_metric_name_is_read_as_the_current_one_and_said() {
        let written = spec("server", "memory", "memoryUsedBytes");
        assert_eq!(written.problem(), Ok(()));
        let read = written.read();
        assert_eq!(read.rules[0].metric, "usedBytes", "the host's");
        assert_eq!(read.rules[0].signal, "memory");
        assert_eq!(
            written.rules[0].metric, "memoryUsedBytes",
            "left as written"
        );
        let note = written.renamed_note().unwrap();
        assert!(note.contains("spec.rules[0]"), "{note}");
        assert!(note.contains("`memory` / `memoryUsedBytes`"), "{note}");
        assert!(note.contains("`memory` / `usedBytes`"), "{note}");
        // A project's read containers then, and does now.
        let project = spec("project", "memory", "memoryUsedBytes").read();
        assert_eq!(project.rules[0].metric, "containerUsedBytes");
        // A former signal goes too.
        let docker = spec("server", "docker-storage", "dockerImageBytes");
        assert_eq!(docker.problem(), Ok(()));
        assert_eq!(docker.read().rules[0].signal, "docker");
        assert_eq!(docker.read().rules[0].metric, "imageBytes");
    }

    #[test]
    fn current_names_are_read_as_written_with_nothing_to_say() {
        let current = spec("server", "memory", "usedBytes");
        assert_eq!(current.read(), current);
        assert_eq!(current.renamed(), Vec::new());
        assert_eq!(current.renamed_note(), None);
    }

    #[test]
    fn names_of_neither_vocabulary_or_retired_ones_stay_invalid_listing_the_allowed() {
        let unknown = spec("server", "memory", "ramBytes").problem().unwrap_err();
        assert_eq!(unknown.field, "spec.rules[0].metric");
        assert!(unknown.message.contains("usedBytes"), "{}", unknown.message);
        assert!(unknown.allowed.contains(&"containerUsedBytes".to_string()));
        let retired = spec("server", "cpu", "hostCpuPercent")
            .problem()
            .unwrap_err();
        assert_eq!(retired.field, "spec.rules[0].metric");
        assert!(retired.message.contains("former"), "{}", retired.message);
        assert!(
            retired.message.contains("containerCpuPercent"),
            "{}",
            retired.message
        );
        let signal = spec("server", "gpu", "usedBytes").problem().unwrap_err();
        assert_eq!(signal.field, "spec.rules[0].signal");
        assert!(signal.message.contains("memory"), "{}", signal.message);
    }

    #[test]
    fn a_stored_rule_is_checked_as_a_request_rule() {
        let mut rule = rule(Comparator::GreaterThan, Some(80.0), 95.0);
        assert_eq!(rule.problem("spec.rules[0]"), Ok(()));
        rule.metric = "containerUsedBytes".into();
        let error = rule.problem("spec.rules[0]").unwrap_err();
        assert_eq!(error.field, "spec.rules[0].metric");
    }
}
