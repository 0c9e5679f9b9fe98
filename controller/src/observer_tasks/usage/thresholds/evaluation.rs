//! The pure rules of threshold evaluation: which samples a scope takes, how a series moves
//! between `ok`, `warning` and `critical` (consecutive breaches, `clearAt` hysteresis), and the
//! evaluation of a policy over all its series (per rule the worst series, the worst rule).

use std::collections::HashMap;
use std::sync::Arc;

use berth_crds::monitoring::{MonitoringSample, ScopeKind, Signal};
use berth_crds::threshold_policy::{
    CrossedRule, INSPECT_RUNTIME_USAGE, MonitoringScope, Severity, ThresholdEvaluation,
    ThresholdPolicy, ThresholdRule,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Whether samples of `server` can fall under `scope`: a server scope only its own server's.
pub(super) fn covers(scope: &MonitoringScope, server: &str) -> bool {
    match scope_kind(scope) {
        Some(ScopeKind::Server) => scope.server_id.as_deref() == Some(server),
        Some(_) => true,
        None => false,
    }
}

fn scope_kind(scope: &MonitoringScope) -> Option<ScopeKind> {
    ScopeKind::parse(&scope.kind)
}

/// Whether `sample` falls under `scope`: a server scope takes its host's sample and every
/// container's on it (a rule on a container metric reads the containers, one on a host metric
/// the host); the others the container samples whose attribution matches every id the scope
/// names.
fn matches(scope: &MonitoringScope, sample: &MonitoringSample) -> bool {
    let evidence = &sample.scope_evidence;
    let same = |wanted: &Option<String>, seen: Option<&str>| {
        wanted.as_deref().is_none_or(|id| seen == Some(id))
    };
    let server = same(&scope.server_id, Some(&evidence.server_id));
    if scope_kind(scope) == Some(ScopeKind::Server) {
        return server;
    }
    !sample.is_host()
        && server
        && same(&scope.project_id, evidence.project_id.as_deref())
        && same(&scope.environment_id, evidence.environment_id.as_deref())
        && same(&scope.resource_id, evidence.resource_id.as_deref())
        && same(&scope.deployment_id, evidence.deployment_id.as_deref())
}

/// The value `rule` reads from `sample`: the field of the sample's `resourceMetrics` it names.
fn rule_value(rule: &ThresholdRule, sample: &MonitoringSample) -> Option<f64> {
    let signal = Signal::parse(&rule.signal)?;
    sample.metrics().get(signal, &rule.metric)
}

/// One series (a server's host, or one container) of one rule.
#[derive(Clone, Debug, Default, PartialEq)]
struct Series {
    /// The severity reported for the series.
    state: Severity,
    /// Consecutive samples at or past each boundary.
    warning_streak: u32,
    critical_streak: u32,
    /// The latest value and the sample it came from.
    value: f64,
    sample_id: String,
    /// The resource of the container measured; `None` for a host.
    resource_id: Option<String>,
}

impl Series {
    /// Takes one sample's value: a level is reached after `forSamples` consecutive samples
    /// at or past it, and left at once when the value is back past the boundary, or with
    /// `clearAt`, back past `clearAt`.
    fn observe(&mut self, rule: &ThresholdRule, value: f64, sample: &MonitoringSample) {
        let level = rule.level(value);
        let streak = |count: u32, reached: bool| if reached { count + 1 } else { 0 };
        self.warning_streak = streak(self.warning_streak, level >= Severity::Warning);
        self.critical_streak = streak(self.critical_streak, level >= Severity::Critical);
        let sustained = if self.critical_streak >= rule.for_samples {
            Severity::Critical
        } else if self.warning_streak >= rule.for_samples {
            Severity::Warning
        } else {
            Severity::Ok
        };
        let held = rule
            .clear_at
            .is_some_and(|clear_at| rule.comparator.breaches(value, clear_at));
        if sustained > self.state || !held {
            self.state = sustained;
        }
        self.value = value;
        self.sample_id = sample.sample_id.clone();
        self.resource_id = (!sample.is_host())
            .then(|| sample.scope_evidence.resource_id.clone())
            .flatten();
    }
}

/// `(rule id, server, runtime id or "host")`.
type SeriesKey = (String, String, String);

/// What is remembered of one policy between ticks.
#[derive(Debug, Default)]
pub(super) struct PolicyMemory {
    /// The spec generation the counters were kept for; new rules start afresh.
    generation: Option<i64>,
    series: HashMap<SeriesKey, Series>,
    /// What the status says now (from the status until the first write).
    pub(super) written: Option<Summary>,
}

/// The part of an evaluation whose change is reported.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Summary {
    state: Severity,
    /// `(rule id, severity, boundary)` of each rule crossed.
    crossed: Vec<(String, Severity, f64)>,
}

impl Summary {
    pub(super) fn of(evaluation: &ThresholdEvaluation) -> Self {
        let crossed = evaluation
            .crossed
            .iter()
            .map(|c| (c.rule_id.clone(), c.severity, c.boundary))
            .collect();
        Self {
            state: evaluation.state,
            crossed,
        }
    }
}

/// A policy whose state changed, to write and announce.
pub(super) struct Change {
    pub(super) policy: Arc<ThresholdPolicy>,
    pub(super) evaluation: ThresholdEvaluation,
    pub(super) previous: Option<Severity>,
}

impl PolicyMemory {
    pub(super) fn new(policy: &ThresholdPolicy) -> Self {
        let written = policy.status.as_ref().and_then(|s| s.evaluation.as_ref());
        Self {
            generation: policy.metadata.generation,
            series: HashMap::new(),
            written: written.map(Summary::of),
        }
    }

    /// Takes server `server`'s samples of one tick; the evaluation when it differs from
    /// what the status says.
    pub(super) fn step(
        &mut self,
        policy: &Arc<ThresholdPolicy>,
        server: &str,
        samples: &[MonitoringSample],
        now: Timestamp,
    ) -> Option<Change> {
        if self.generation != policy.metadata.generation {
            self.generation = policy.metadata.generation;
            self.series.clear();
        }
        // Former metric names read as the current ones (crossings name the current ones).
        let spec = policy.spec.read();
        let matching: Vec<&MonitoringSample> =
            samples.iter().filter(|s| matches(&spec.scope, s)).collect();
        self.observe(&spec.rules, server, &matching);
        let fallback = matching.first().map(|s| s.sample_id.clone());
        let evaluation = evaluation(&spec.rules, &self.series, fallback, now);
        let summary = Summary::of(&evaluation);
        if self.written.as_ref() == Some(&summary) {
            return None;
        }
        Some(Change {
            policy: Arc::clone(policy),
            previous: self.written.as_ref().map(|w| w.state),
            evaluation,
        })
    }

    /// Updates the series of `server` from its matching samples; its series without a sample
    /// this tick (a container gone) are dropped, other servers' kept.
    fn observe(&mut self, rules: &[ThresholdRule], server: &str, samples: &[&MonitoringSample]) {
        let mut seen = Vec::new();
        for sample in samples {
            let runtime = sample.labels.runtime_id.as_deref().unwrap_or("host");
            for rule in rules {
                let key = (
                    rule.rule_id.clone(),
                    server.to_string(),
                    runtime.to_string(),
                );
                if let Some(value) = rule_value(rule, sample) {
                    let series = self.series.entry(key.clone()).or_default();
                    series.observe(rule, value, sample);
                }
                seen.push(key);
            }
        }
        self.series
            .retain(|key, _| key.1 != server || seen.contains(key));
    }
}

/// The evaluation of `rules` over every series: per rule its worst series, the policy's state
/// the worst of those. `fallback` names the sample read when nothing is crossed.
fn evaluation(
    rules: &[ThresholdRule],
    series: &HashMap<SeriesKey, Series>,
    fallback: Option<String>,
    now: Timestamp,
) -> ThresholdEvaluation {
    let mut crossed: Vec<(CrossedRule, String)> = rules
        .iter()
        .filter_map(|rule| worst_of(rule, series))
        .collect();
    crossed.sort_by_key(|c| std::cmp::Reverse(c.0.severity));
    let state = crossed.first().map_or(Severity::Ok, |c| c.0.severity);
    let source_sample_id = crossed.first().map(|c| c.1.clone()).or(fallback);
    ThresholdEvaluation {
        state,
        evaluated_at: Time(now),
        source_sample_id,
        next_actions: if state == Severity::Ok {
            Vec::new()
        } else {
            vec![INSPECT_RUNTIME_USAGE.to_string()]
        },
        crossed: crossed.into_iter().map(|c| c.0).collect(),
        source_errors: Vec::new(),
    }
}

/// `rule`'s most severe series, the most extreme value breaking ties; `None` when none is
/// crossed.
fn worst_of(
    rule: &ThresholdRule,
    series: &HashMap<SeriesKey, Series>,
) -> Option<(CrossedRule, String)> {
    let worst = series
        .iter()
        .filter(|(key, s)| key.0 == rule.rule_id && s.state > Severity::Ok)
        .map(|(_, s)| s)
        .reduce(|a, b| {
            let b_worse = b.state > a.state
                || (b.state == a.state && rule.comparator.worse(b.value, a.value));
            if b_worse { b } else { a }
        })?;
    let crossed = CrossedRule {
        rule_id: rule.rule_id.clone(),
        signal: rule.signal.clone(),
        metric: rule.metric.clone(),
        severity: worst.state,
        observed_value: worst.value,
        boundary: rule.boundary(worst.state)?,
        resource_id: worst.resource_id.clone(),
    };
    Some((crossed, worst.sample_id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::monitoring::{SampleLabels, ScopeEvidence, Totals};
    use berth_crds::threshold_policy::{Comparator, ThresholdPolicySpec};
    use serde_json::json;

    fn rule(comparator: Comparator, warning: f64, critical: f64) -> ThresholdRule {
        ThresholdRule {
            rule_id: "mem".into(),
            signal: "memory".into(),
            metric: "containerUsedBytes".into(),
            warning: Some(warning),
            critical,
            comparator,
            for_samples: 1,
            clear_at: None,
        }
    }

    /// The states a series goes through for `values`.
    fn states(rule: &ThresholdRule, values: &[f64]) -> Vec<Severity> {
        let mut series = Series::default();
        values
            .iter()
            .map(|value| {
                series.observe(rule, *value, &sample("edge", Some("c1"), 0.0));
                series.state
            })
            .collect()
    }

    use Severity::{Critical as C, Ok as O, Warning as W};

    #[test]
    fn each_comparator_breaches_on_its_side() {
        let above = rule(Comparator::GreaterThanOrEqual, 80.0, 90.0);
        assert_eq!(states(&above, &[79.0, 80.0, 90.0, 10.0]), [O, W, C, O]);
        let strictly = rule(Comparator::GreaterThan, 80.0, 90.0);
        assert_eq!(states(&strictly, &[80.0, 80.1, 90.0, 90.1]), [O, W, W, C]);
        let below = rule(Comparator::LessThan, 20.0, 10.0);
        assert_eq!(states(&below, &[20.0, 19.0, 9.0, 50.0]), [O, W, C, O]);
        let at_most = rule(Comparator::LessThanOrEqual, 20.0, 10.0);
        assert_eq!(states(&at_most, &[21.0, 20.0, 10.0]), [O, W, C]);
    }

    #[test]
    fn for_samples_needs_consecutive_breaches_and_one_spike_is_none() {
        let mut sustained = rule(Comparator::GreaterThanOrEqual, 80.0, 90.0);
        sustained.for_samples = 3;
        assert_eq!(
            states(&sustained, &[95.0, 95.0, 10.0, 85.0, 95.0, 95.0, 50.0]),
            [O, O, O, O, O, W, O],
        );
        assert_eq!(states(&sustained, &[95.0, 95.0, 95.0]), [O, O, C]);
        // Warning for three samples, then critical only once critical lasted three too.
        assert_eq!(
            states(&sustained, &[85.0, 85.0, 85.0, 95.0, 95.0, 95.0]),
            [O, O, W, W, W, C],
        );
    }

    #[test]
    fn clear_at_holds_a_crossed_state_until_the_value_is_back_past_it() {
        let mut hysteresis = rule(Comparator::GreaterThanOrEqual, 80.0, 90.0);
        hysteresis.clear_at = Some(70.0);
        assert_eq!(
            states(&hysteresis, &[85.0, 75.0, 70.0, 69.9, 75.0]),
            [W, W, W, O, O],
        );
        assert_eq!(states(&hysteresis, &[95.0, 85.0, 60.0]), [C, C, O]);
        // Without clearAt a state clears as soon as the value is back past its boundary.
        let plain = rule(Comparator::GreaterThanOrEqual, 80.0, 90.0);
        assert_eq!(states(&plain, &[95.0, 85.0, 75.0]), [C, W, O]);
        let mut falling = rule(Comparator::LessThan, 20.0, 10.0);
        falling.clear_at = Some(30.0);
        assert_eq!(states(&falling, &[15.0, 25.0, 30.0]), [W, W, O]);
    }

    fn sample(server: &str, runtime: Option<&str>, memory: f64) -> MonitoringSample {
        MonitoringSample {
            sample_id: format!("{server}:{}", runtime.unwrap_or("host")),
            observed_at: "2030-01-01T00:00:00Z".into(),
            collected_at: "2030-01-01T00:00:00Z".into(),
            scope_evidence: ScopeEvidence {
                scope: Some(if runtime.is_some() {
                    ScopeKind::Resource
                } else {
                    ScopeKind::Server
                }),
                server_id: server.into(),
                project_id: runtime.map(|_| "shop".to_string()),
                resource_id: runtime.map(|_| "web".to_string()),
                ..ScopeEvidence::default()
            },
            totals: Totals {
                memory_used_bytes: Some(memory),
                ..Totals::default()
            },
            freshness: "live".into(),
            partial: false,
            labels: SampleLabels {
                provider_key: "docker".into(),
                artifact_kind: "container".into(),
                runtime_id: runtime.map(str::to_string),
            },
            warnings: Vec::new(),
            source_errors: Vec::new(),
        }
    }

    fn policy(scope: serde_json::Value, rules: Vec<ThresholdRule>) -> Arc<ThresholdPolicy> {
        let spec = ThresholdPolicySpec {
            scope: serde_json::from_value(scope).unwrap(),
            rules,
            enabled: true,
        };
        let mut policy = ThresholdPolicy::new("p", spec);
        policy.metadata.generation = Some(1);
        Arc::new(policy)
    }

    #[test]
    fn a_scope_takes_its_host_or_its_attributed_containers() {
        let host = sample("edge", None, 1.0);
        let web = sample("edge", Some("c1"), 1.0);
        let server: MonitoringScope =
            serde_json::from_value(json!({"kind": "server", "serverId": "edge"})).unwrap();
        assert!(matches(&server, &host) && matches(&server, &web));
        assert!(!matches(&server, &sample("db", Some("c9"), 1.0)));
        assert!(covers(&server, "edge") && !covers(&server, "db"));
        let project: MonitoringScope =
            serde_json::from_value(json!({"kind": "project", "projectId": "shop"})).unwrap();
        assert!(matches(&project, &web) && !matches(&project, &host));
        let other: MonitoringScope =
            serde_json::from_value(json!({"kind": "resource", "resourceId": "api"})).unwrap();
        assert!(!matches(&other, &web));
    }

    #[test]
    fn the_worst_series_of_the_worst_rule_is_reported_and_only_changes_count() {
        let now = Timestamp::now();
        let cpu = ThresholdRule {
            rule_id: "cpu".into(),
            signal: "cpu".into(),
            metric: "containerCpuPercent".into(),
            ..rule(Comparator::GreaterThanOrEqual, 50.0, 90.0)
        };
        let memory = rule(Comparator::GreaterThanOrEqual, 100.0, 1000.0);
        let policy = policy(
            json!({"kind": "project", "projectId": "shop"}),
            vec![memory, cpu],
        );
        let mut memory = PolicyMemory::new(&policy);
        let tick = [
            sample("edge", None, 5000.0),
            sample("edge", Some("c1"), 150.0),
            sample("edge", Some("c2"), 2000.0),
            sample("edge", Some("c3"), 1500.0),
        ];
        let change = memory.step(&policy, "edge", &tick, now).unwrap();
        let evaluation = &change.evaluation;
        assert_eq!(evaluation.state, Severity::Critical);
        assert_eq!(
            evaluation.crossed.len(),
            1,
            "cpu unmeasured: {evaluation:?}"
        );
        assert_eq!(evaluation.crossed[0].observed_value, 2000.0);
        assert_eq!(evaluation.crossed[0].resource_id.as_deref(), Some("web"));
        assert_eq!(evaluation.crossed[0].boundary, 1000.0);
        assert_eq!(evaluation.source_sample_id.as_deref(), Some("edge:c2"));
        assert_eq!(evaluation.next_actions, [INSPECT_RUNTIME_USAGE]);
        assert_eq!(change.previous, None);
        memory.written = Some(Summary::of(evaluation));
        // The same state again is no change; a breach on another server still counts.
        assert!(memory.step(&policy, "edge", &tick, now).is_none());
        let calm = [sample("edge", Some("c1"), 1.0)];
        assert!(
            memory
                .step(&policy, "db", &[sample("db", Some("c9"), 5000.0)], now)
                .is_none()
        );
        assert!(memory.step(&policy, "edge", &calm, now).is_none());
        let change = memory
            .step(&policy, "db", &[sample("db", Some("c9"), 1.0)], now)
            .unwrap();
        assert_eq!(change.evaluation.state, Severity::Ok);
        assert!(change.evaluation.crossed.is_empty());
        assert_eq!(change.previous, Some(Severity::Critical));
    }

    #[test]
    fn a_former_metric_name_is_evaluated_as_the_current_one() {
        let former = ThresholdRule {
            metric: "memoryUsedBytes".into(),
            ..rule(Comparator::GreaterThanOrEqual, 100.0, 1000.0)
        };
        // On a server scope it read the host then, and reads `usedBytes` now.
        let policy = policy(json!({"kind": "server", "serverId": "edge"}), vec![former]);
        let mut memory = PolicyMemory::new(&policy);
        let tick = [sample("edge", None, 500.0), sample("edge", Some("c1"), 5.0)];
        let change = memory
            .step(&policy, "edge", &tick, Timestamp::now())
            .unwrap();
        let crossed = &change.evaluation.crossed[0];
        assert_eq!(
            (crossed.signal.as_str(), crossed.metric.as_str()),
            ("memory", "usedBytes")
        );
        assert_eq!(crossed.observed_value, 500.0);
        assert_eq!(crossed.resource_id, None, "the host's");
    }

    #[test]
    fn a_server_scoped_rule_on_a_container_metric_reads_every_container_on_the_server() {
        let now = Timestamp::now();
        let cpu = ThresholdRule {
            rule_id: "cpu".into(),
            signal: "cpu".into(),
            metric: "containerCpuPercent".into(),
            ..rule(Comparator::GreaterThanOrEqual, 0.0, 90.0)
        };
        let policy = policy(json!({"kind": "server", "serverId": "edge"}), vec![cpu]);
        let mut memory = PolicyMemory::new(&policy);
        let with_cpu = |runtime: &str, percent: Option<f64>| {
            let mut sample = sample("edge", Some(runtime), 1.0);
            sample.sample_id = format!("edge:{runtime}:2");
            sample.totals.container_cpu_percent = percent;
            sample
        };
        // The first tick has no CPU share yet (no earlier counters): nothing to compare.
        let first = [sample("edge", None, 1.0), with_cpu("c1", None)];
        let change = memory.step(&policy, "edge", &first, now).unwrap();
        assert_eq!(change.evaluation.state, Severity::Ok);
        memory.written = Some(Summary::of(&change.evaluation));
        let second = [sample("edge", None, 1.0), with_cpu("c1", Some(0.3))];
        let change = memory.step(&policy, "edge", &second, now).unwrap();
        let evaluation = &change.evaluation;
        assert_eq!(evaluation.state, Severity::Warning, "{evaluation:?}");
        assert_eq!(evaluation.crossed[0].resource_id.as_deref(), Some("web"));
        assert_eq!(evaluation.crossed[0].observed_value, 0.3);
        assert_eq!(evaluation.source_sample_id.as_deref(), Some("edge:c1:2"));
    }
}
