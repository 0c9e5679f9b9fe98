//! Monitoring threshold policies: the body that creates or replaces a scope's policy. The
//! rules' own checks (signal, metric, boundaries in order) are the ThresholdPolicy CRD's and
//! run in the shim.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Checked, FieldError, non_empty};

/// Most rules in one policy.
pub const MAX_RULES: usize = 32;
/// The scope kinds a policy may watch (the CRD's `ScopeKind`, as the shim's tests hold).
pub const SCOPE_KINDS: [&str; 5] = ["server", "project", "environment", "resource", "deployment"];

/// How an observed value is compared with a boundary; "breaches" means the comparison holds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum Comparator {
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
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
    /// `cpu`, `memory`, `load`, `disk`, `network` or `docker-storage`.
    pub signal: String,
    /// A sample total of that signal, e.g. `memoryUsedBytes`, `containerCpuPercent`.
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
    /// The scope's kind and ids, and the number of rules.
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
        let (field, id) = scope.own_id();
        if id.is_none() {
            let field = format!("scope.{field}");
            let message = format!("{field} is required for a {} scope", scope.kind);
            return Err(FieldError::new(&field, message));
        }
        if self.rules.is_empty() || self.rules.len() > MAX_RULES {
            return Err(FieldError::new(
                "rules",
                format!("rules must hold 1 to {MAX_RULES} rules"),
            ));
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
