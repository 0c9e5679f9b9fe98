//! Monitoring threshold rules as the ThresholdPolicy CRD stores them and the REST API takes
//! them: the comparators, a rule's checks ([`RuleFields`]), a scope's policy name and who last
//! changed a record. The request bodies stay in `berth-api`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::monitoring::{Signal, rule_metrics};
use crate::validate::{Checked, FieldError};

mod former;
mod policy;
pub use former::{FORMER_METRICS, FormerMetric, MetricReading, read_metric};
pub use policy::{MonitoringScope, Severity, ThresholdRule};

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
/// (`berth_api::thresholds::RuleInput::fields`), or a stored one (the ThresholdPolicy CRD's
/// `ThresholdRule`).
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
            let signals: Vec<&str> = Signal::ALL.iter().map(|s| s.as_str()).collect();
            let message = format!(
                "unknown signal `{}`: one of {}",
                self.signal,
                signals.join(", ")
            );
            return error("signal", message).map_err(|e| allowing(e, &signals));
        };
        let metrics = rule_metrics(signal);
        if !metrics.contains(&self.metric) {
            let message = format!(
                "`{}` is not a metric of signal `{}`: one of {}",
                self.metric,
                signal.as_str(),
                metrics.join(", ")
            );
            return error("metric", message).map_err(|e| allowing(e, &metrics));
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

/// `error`, listing the values `allowed`.
fn allowing(error: FieldError, allowed: &[&str]) -> FieldError {
    let allowed = allowed.iter().map(|value| value.to_string()).collect();
    FieldError { allowed, ..error }
}

#[cfg(test)]
mod tests {
    use super::*;

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
