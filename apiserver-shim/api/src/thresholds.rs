//! Monitoring threshold policies: the body that creates or replaces a scope's policy, and the
//! checks of one rule (a known signal, one of its metrics, boundaries in order). The
//! ThresholdPolicy CRD's rules run the same checks: [`Comparator`] and [`RuleFields`] are
//! defined in `berth-vocabulary`, which `berth-crds` uses to check its `ThresholdRule`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Checked, FieldError, non_empty};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::thresholds::{
    Comparator, DEFAULT_FOR_SAMPLES, MAX_FOR_SAMPLES, MonitoringScope, POLICY_NAME_MAX, RuleFields,
    ScopeInput, ThresholdRule, actor_kind, policy_name,
};

/// Most rules in one policy.
pub const MAX_RULES: usize = 32;
/// The scope kinds a policy may watch (the CRD's `ScopeKind`, as the shim's tests hold).
pub const SCOPE_KINDS: [&str; 5] = ["server", "project", "environment", "resource", "deployment"];

/// `DELETE /runtime-monitoring/thresholds/{policyId}`: no field.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct DeleteThresholds {}

/// `POST` body.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetThresholds {
    /// What the thresholds watch: `kind` and the kind's id (e.g. `serverId` for `server`).
    pub scope: ScopeInput,
    /// 1..=32 rules.
    pub rules: Vec<RuleInput>,
    /// Whether the thresholds are evaluated (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleInput {
    /// A group of the samples' `totals`: `cpu`, `memory`, `disk`, `inode`, `docker` or
    /// `network`.
    pub signal: String,
    /// A field of that group: `cpu` `containerCpuPercent` or `loadAverage1m`; `memory`
    /// `containerUsedBytes` or `usedBytes`; `disk` `usedBytes` or `attributedBytes`; `inode`
    /// `used`; `docker` `imageBytes`, `buildCacheBytes` or `containerWritableBytes`; `network`
    /// `rxBytes` or `txBytes`.
    pub metric: String,
    /// Boundary reported as a warning (not past `critical`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<f64>,
    /// Boundary reported as critical.
    pub critical: f64,
    /// Default `greater-than-or-equal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparator: Option<Comparator>,
    /// Consecutive breaching samples before the state changes, 1..=100 (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub for_samples: Option<u32>,
    /// Once crossed, the state holds until the value is back past this (hysteresis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_at: Option<f64>,
}

impl SetThresholds {
    /// The scope's kind and ids, the number of rules, and every rule's own checks.
    pub fn validate(&self) -> Checked {
        let scope = &self.scope;
        if !SCOPE_KINDS.contains(&scope.kind.as_str()) {
            return Err(FieldError::not_one_of("scope.kind", &SCOPE_KINDS));
        }
        for (field, id) in [
            ("scope.serverId", &scope.server_id),
            ("scope.projectId", &scope.project_id),
            ("scope.environmentId", &scope.environment_id),
            ("scope.resourceId", &scope.resource_id),
            ("scope.deploymentId", &scope.deployment_id),
        ] {
            if let Some(id) = id {
                non_empty(field, id)?;
            }
        }
        policy_name(&scope.kind, scope.own_id())?;
        if self.rules.is_empty() || self.rules.len() > MAX_RULES {
            return Err(FieldError::new(
                "rules",
                format!("rules must hold 1 to {MAX_RULES} rules"),
            ));
        }
        for (index, rule) in self.rules.iter().enumerate() {
            rule.fields().check(&format!("rules[{index}]"))?;
        }
        Ok(())
    }
}

impl RuleInput {
    /// The rule as its checks read it, with the defaults filled in.
    pub fn fields(&self) -> RuleFields<'_> {
        RuleFields {
            signal: &self.signal,
            metric: &self.metric,
            warning: self.warning,
            critical: self.critical,
            comparator: self.comparator.unwrap_or_default(),
            for_samples: self.for_samples.unwrap_or(DEFAULT_FOR_SAMPLES),
            clear_at: self.clear_at,
        }
    }
}

/// Spec §2.2 "Threshold evaluation", as `GET /runtime-monitoring/thresholds` answers it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// `ok`, `warning` or `critical`; `unknown` until the policy is first evaluated.
    pub state: String,
    /// When the policy was last held against a sample: the newest sample of its scope.
    pub evaluated_at: Option<String>,
    /// The sample the worst crossing was read from; within bounds, the newest evaluated.
    pub source_sample_id: Option<String>,
    pub crossed: Vec<Crossing>,
    /// `inspect-runtime-usage` while a boundary is crossed.
    pub next_actions: Vec<String>,
    pub source_errors: Vec<crate::monitoring::SourceError>,
}

/// A rule whose boundary is crossed.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Crossing {
    pub rule_id: String,
    pub signal: String,
    pub metric: String,
    /// `warning` or `critical`.
    pub severity: String,
    pub observed_value: f64,
    pub boundary: f64,
    /// The resource whose container crossed it; absent for a server's host.
    pub resource_id: Option<String>,
}

pub const SHOW_SCHEMA_VERSION: &str = "runtime-monitoring-thresholds.show/v1";
pub const POLICY_SCHEMA_VERSION: &str = "runtime-monitoring-thresholds.policy/v1";

/// Spec §2.2 "Threshold policy".
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRecord {
    pub schema_version: String,
    pub policy_id: String,
    pub scope: MonitoringScope,
    pub rules: Vec<ThresholdRule>,
    pub enabled: bool,
    pub updated_at: String,
    pub updated_by_actor_id: String,
    /// `user`, `deploy-token`, or `system`; a change made outside the API (kubectl, a GitOps
    /// tool) is `user`, with its field manager as the actor id.
    pub updated_by_actor_kind: String,
}

/// `GET` answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdsShow {
    pub schema_version: String,
    pub scope: MonitoringScope,
    pub generated_at: String,
    /// The window asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    pub policy: PolicyRecord,
    /// `state: unknown` until berth-controller first evaluated the policy.
    pub evaluation: Evaluation,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub from: Option<String>,
    pub to: Option<String>,
}

/// `POST` answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct ThresholdsAnswer {
    pub policy: PolicyRecord,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field a rule's checks name, for a CPU rule with `critical: 95` and `changes`.
    fn named(changes: serde_json::Value) -> Option<String> {
        let mut rule =
            serde_json::json!({"signal": "cpu", "metric": "containerCpuPercent", "critical": 95});
        let fields = rule.as_object_mut().unwrap();
        fields.extend(changes.as_object().unwrap().clone());
        let rule: RuleInput = serde_json::from_value(rule).unwrap();
        let field = rule.fields().check("rules[2]").err()?.field;
        Some(field.strip_prefix("rules[2].").unwrap().to_string())
    }

    #[test]
    fn inconsistent_rules_name_their_field() {
        let named = |changes| named(changes).unwrap_or_default();
        for (changes, field) in [
            (
                serde_json::json!({"comparator": "greater-than", "warning": 80}),
                "",
            ),
            (
                serde_json::json!({"comparator": "greater-than", "warning": 96}),
                "warning",
            ),
            (
                serde_json::json!({"comparator": "less-than", "critical": 5, "warning": 4}),
                "warning",
            ),
            (
                serde_json::json!({"comparator": "less-than", "critical": 5, "warning": 6}),
                "",
            ),
            (serde_json::json!({"metric": "usedBytes"}), "metric"),
            (serde_json::json!({"metric": "hostCpuPercent"}), "metric"),
            (serde_json::json!({"metric": "loadAverage1m"}), ""),
            (
                serde_json::json!({"signal": "memory", "metric": "usedBytes"}),
                "",
            ),
            (
                serde_json::json!({"signal": "gpu", "metric": "usedBytes"}),
                "signal",
            ),
            (serde_json::json!({"warning": 80, "clearAt": 81}), "clearAt"),
            (serde_json::json!({"warning": 80, "clearAt": 70}), ""),
            (serde_json::json!({"clearAt": 96}), "clearAt"),
            (serde_json::json!({"forSamples": 100}), ""),
            (serde_json::json!({"forSamples": 101}), "forSamples"),
            (serde_json::json!({"forSamples": 0}), "forSamples"),
        ] {
            assert_eq!(named(changes.clone()), field, "{changes}");
        }
    }

    fn body(value: serde_json::Value) -> SetThresholds {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_body_checks_every_rule_with_its_defaults() {
        let cpu =
            serde_json::json!({"signal": "cpu", "metric": "containerCpuPercent", "critical": 90});
        let memory =
            serde_json::json!({"signal": "cpu", "metric": "containerUsedBytes", "critical": 1});
        let scope = serde_json::json!({"kind": "server", "serverId": "edge"});
        assert_eq!(
            body(serde_json::json!({"scope": scope, "rules": [cpu]})).validate(),
            Ok(())
        );
        let error = body(serde_json::json!({"scope": scope, "rules": [cpu, memory]}))
            .validate()
            .unwrap_err();
        assert_eq!(error.field, "rules[1].metric");
        assert_eq!(
            error.message,
            "rules[1].metric: `containerUsedBytes` is not a metric of signal `cpu`: one of \
             containerCpuPercent, loadAverage1m"
        );
        // The default comparator is `greater-than-or-equal`: a warning above critical is past it.
        let mut warning = cpu.clone();
        warning["warning"] = 95.into();
        let error = body(serde_json::json!({"scope": scope, "rules": [warning]}))
            .validate()
            .unwrap_err();
        assert_eq!(error.field, "rules[0].warning");
    }
}
