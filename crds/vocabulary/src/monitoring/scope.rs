//! What a monitoring query or sample is about: a scope and its kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a monitoring scope is about (spec §2.1 `scope`; Appaloft's five kinds).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// A server: its host, and the containers running on it.
    Server,
    Project,
    Environment,
    /// One resource's containers.
    Resource,
    Deployment,
}

impl ScopeKind {
    pub const ALL: [ScopeKind; 5] = [
        Self::Server,
        Self::Project,
        Self::Environment,
        Self::Resource,
        Self::Deployment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Project => "project",
            Self::Environment => "environment",
            Self::Resource => "resource",
            Self::Deployment => "deployment",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

/// A monitoring scope (spec §2.1): its kind and the kind's id; in the filter form of a query's
/// answer, every filter it was given. A query that names no scope (the whole organization)
/// answers with no `kind`: there is none to name.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    pub kind: Option<ScopeKind>,
    pub server_id: Option<String>,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
}

impl Scope {
    /// A scope of `kind` naming `id`.
    pub fn of(kind: ScopeKind, id: &str) -> Self {
        let id = Some(id.to_string());
        let mut scope = Scope {
            kind: Some(kind),
            ..Scope::default()
        };
        match kind {
            ScopeKind::Server => scope.server_id = id,
            ScopeKind::Project => scope.project_id = id,
            ScopeKind::Environment => scope.environment_id = id,
            ScopeKind::Resource => scope.resource_id = id,
            ScopeKind::Deployment => scope.deployment_id = id,
        }
        scope
    }
}
