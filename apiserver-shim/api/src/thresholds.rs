//! Monitoring threshold policies: the body that creates or replaces a scope's policy, and the
//! checks of one rule (a known signal, one of its metrics, boundaries in order). The
//! ThresholdPolicy CRD's rules run the same checks: `berth-crds` re-exports [`Comparator`] and
//! checks its `ThresholdRule` through [`RuleFields`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::monitoring::{Signal, rule_metrics};
use crate::validate::{Checked, FieldError, non_empty};

/// Most rules in one policy.
pub const MAX_RULES: usize = 32;
/// The scope kinds a policy may watch (the CRD's `ScopeKind`, as the shim's tests hold).
pub const SCOPE_KINDS: [&str; 5] = ["server", "project", "environment", "resource", "deployment"];
/// `forSamples` of a rule that gives none.
pub const DEFAULT_FOR_SAMPLES: u32 = 1;
/// Largest `forSamples`.
pub const MAX_FOR_SAMPLES: u32 = 100;
/// Longest policy name, `<kind>-<id>`: a Kubernetes object name.
pub const POLICY_NAME_MAX: usize = 253;

/// How an observed value is compared with a boundary; "breaches" means the comparison holds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Comparator {
    GreaterThan,
    #[default]
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
}

impl Comparator {
    pub const ALL: [Comparator; 4] = [
        Self::GreaterThan,
        Self::GreaterThanOrEqual,
        Self::LessThan,
        Self::LessThanOrEqual,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::GreaterThan => "greater-than",
            Self::GreaterThanOrEqual => "greater-than-or-equal",
            Self::LessThan => "less-than",
            Self::LessThanOrEqual => "less-than-or-equal",
        }
    }

    /// Whether `value` breaches `boundary`.
    pub fn breaches(self, value: f64, boundary: f64) -> bool {
        match self {
            Self::GreaterThan => value > boundary,
            Self::GreaterThanOrEqual => value >= boundary,
            Self::LessThan => value < boundary,
            Self::LessThanOrEqual => value <= boundary,
        }
    }

    /// Whether larger values are worse (the `greater-than` comparators).
    pub fn rising(self) -> bool {
        matches!(self, Self::GreaterThan | Self::GreaterThanOrEqual)
    }

    /// Whether `a` is further on the breaching side than `b`.
    pub fn worse(self, a: f64, b: f64) -> bool {
        if self.rising() { a > b } else { a < b }
    }
}

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
pub struct ScopeInput {
    /// `server`, `project`, `environment`, `resource` or `deployment`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
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

impl ScopeInput {
    /// The scope's own id: `serverId` of a `server` scope, and so on.
    pub fn own_id(&self) -> (&'static str, Option<&str>) {
        match self.kind.as_str() {
            "server" => ("serverId", self.server_id.as_deref()),
            "project" => ("projectId", self.project_id.as_deref()),
            "environment" => ("environmentId", self.environment_id.as_deref()),
            "resource" => ("resourceId", self.resource_id.as_deref()),
            _ => ("deploymentId", self.deployment_id.as_deref()),
        }
    }
}

/// The one policy name of a scope, `<kind>-<id>`, from the scope's own id as
/// [`ScopeInput::own_id`] gives it; an error names `scope.<field>`.
pub fn policy_name(kind: &str, (field, id): (&str, Option<&str>)) -> Result<String, FieldError> {
    let field = format!("scope.{field}");
    let Some(id) = id else {
        let message = format!("{field} is required for a {kind} scope");
        return Err(FieldError::new(&field, message));
    };
    let name = format!("{kind}-{id}");
    if name.len() > POLICY_NAME_MAX {
        return Err(FieldError::new(&field, format!("{field} is too long")));
    }
    Ok(name)
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

/// `updatedByActorKind` of a record (Appaloft's closed set): `deploy-token`, `user`, or
/// `system` for Berth's own writes. A change made outside the API (kubectl, a GitOps tool) is
/// a person's: `user`, unless its field manager is one of Berth's (`berth-…`).
pub fn actor_kind(recorded: &str, actor_id: &str) -> &'static str {
    match recorded {
        "deploy-token" => "deploy-token",
        "system" => "system",
        "user" => "user",
        _ if actor_id.starts_with("berth-") => "system",
        _ => "user",
    }
}

/// One threshold rule as its checks read it: a request's rule with its defaults filled in
/// ([`RuleInput::fields`]), or a stored one (the ThresholdPolicy CRD's `ThresholdRule`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RuleFields<'a> {
    pub signal: &'a str,
    pub metric: &'a str,
    pub warning: Option<f64>,
    pub critical: f64,
    pub comparator: Comparator,
    pub for_samples: u32,
    pub clear_at: Option<f64>,
}

impl RuleFields<'_> {
    /// Why the rule is inconsistent: an unknown signal, an unknown metric or one of another
    /// signal, a warning past the critical boundary, a `clearAt` past the lowest boundary, a
    /// `forSamples` out of range. `at` is where the rule is (`rules[2]`); the error names the
    /// field under it (`rules[2].metric`).
    pub fn check(&self, at: &str) -> Checked {
        let error = |field: &str, message: String| {
            let field = format!("{at}.{field}");
            Err(FieldError::new(&field, format!("{field}: {message}")))
        };
        let Some(signal) = Signal::parse(self.signal) else {
            return error("signal", format!("unknown signal `{}`", self.signal));
        };
        let metrics = rule_metrics(signal);
        if !metrics.contains(&self.metric) {
            let message = format!(
                "`{}` is not a metric of signal `{}`: one of {}",
                self.metric,
                signal.as_str(),
                metrics.join(", ")
            );
            return error("metric", message);
        }
        let comparator = self.comparator.as_str();
        if let Some(warning) = self.warning
            && self.comparator.worse(warning, self.critical)
        {
            let message = format!("with `{comparator}`, warning must not be past critical");
            return error("warning", message);
        }
        let lowest = self.warning.unwrap_or(self.critical);
        if let Some(clear_at) = self.clear_at
            && self.comparator.worse(clear_at, lowest)
        {
            let message =
                format!("with `{comparator}`, clearAt must not be past the lowest boundary");
            return error("clearAt", message);
        }
        if !(1..=MAX_FOR_SAMPLES).contains(&self.for_samples) {
            let message = format!("forSamples must be 1..={MAX_FOR_SAMPLES}");
            return error("forSamples", message);
        }
        Ok(())
    }
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

    #[test]
    fn a_policy_is_named_after_its_scope_and_fits_an_object_name() {
        assert_eq!(
            policy_name("server", ("serverId", Some("edge"))),
            Ok("server-edge".into())
        );
        let missing = policy_name("server", ("serverId", None)).unwrap_err();
        assert_eq!(missing.field, "scope.serverId");
        let long = "a".repeat(POLICY_NAME_MAX);
        let error = policy_name("project", ("projectId", Some(&long))).unwrap_err();
        assert_eq!(error.field, "scope.projectId");
    }
}
