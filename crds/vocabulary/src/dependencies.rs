//! Dependency resources (Appaloft's words): the databases and caches an environment's apps use,
//! PostgreSQL and Redis for now. The kinds, where each keeps its data and listens, and the
//! lifecycle values the custom resource reports and the REST API will show.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a dependency resource is.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum DependencyKind {
    /// A PostgreSQL server (image default `postgres:16`).
    Postgres,
    /// A Redis server (image default `redis:7`).
    Redis,
}

impl DependencyKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
            Self::Redis => "redis",
        }
    }

    /// The official image a user would pull, used when the spec names none.
    pub fn default_image(self) -> &'static str {
        match self {
            Self::Postgres => "postgres:16",
            Self::Redis => "redis:7",
        }
    }

    /// The port the server listens on inside its container.
    pub fn port(self) -> u16 {
        match self {
            Self::Postgres => 5432,
            Self::Redis => 6379,
        }
    }

    /// Where the official image keeps its data: the named volume is mounted there.
    pub fn data_path(self) -> &'static str {
        match self {
            Self::Postgres => "/var/lib/postgresql/data",
            Self::Redis => "/data",
        }
    }

    /// The URL scheme of a connection.
    pub fn scheme(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
            Self::Redis => "redis",
        }
    }
}

/// Whether Berth runs the dependency or only records one that runs elsewhere.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum DependencySource {
    /// Berth runs it as a container on the named server (Appaloft's `appaloft-managed`).
    #[default]
    Managed,
    /// An external database whose connection URL the user keeps in a Secret
    /// (Appaloft's `imported-external`).
    Imported,
}

/// Lifecycle of a dependency resource, as Appaloft reports it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum DependencyLifecycleStatus {
    /// Not serving yet: being created, or its first health check has not passed.
    Provisioning,
    /// Serving and healthy.
    Ready,
    /// Realized once, but its health check fails now (the `Ready` condition says why).
    Degraded,
    /// Being deleted.
    Deleted,
}

impl DependencyLifecycleStatus {
    /// The value as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provisioning => "provisioning",
            Self::Ready => "ready",
            Self::Degraded => "degraded",
            Self::Deleted => "deleted",
        }
    }
}

/// Where the provider's realization of the dependency stands (Appaloft's
/// `providerRealization.status`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum RealizationStatus {
    /// Not realized yet.
    Pending,
    /// The container, its volume and network exist.
    Ready,
    /// Realizing it failed (`failureCode`, `failureMessage`).
    Failed,
    /// Deletion asked for; the container and network are being removed.
    DeletePending,
    /// Removed from the server.
    Deleted,
}

/// Where a binding's value reaches the app (Appaloft's `target.scope`). Only `runtime-only` is
/// built: the container's environment when it runs, never a build arg.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum BindingScope {
    #[default]
    RuntimeOnly,
}

/// How a binding's value reaches the app (Appaloft's `target.injectionMode`). Only `env` is
/// built: an environment variable read from the dependency's Secret when the container starts.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum InjectionMode {
    #[default]
    Env,
}

/// One dependency a resource uses: the dependency's connection URL, read from its Secret at
/// deploy time, becomes the environment variable `targetName` (e.g. `DATABASE_URL`), and the
/// container joins the dependency's private network. Its id is its `targetName` (one per
/// variable).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct DependencyBinding {
    /// Id (object name) of a DependencyResource of the same project and environment.
    #[schemars(length(min = 1, max = 253))]
    pub dependency_resource_id: String,
    /// The environment variable the connection URL is put in, e.g. `DATABASE_URL`.
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")
    )]
    pub target_name: String,
    /// `runtime-only` (the default and only one built).
    #[serde(default)]
    pub scope: BindingScope,
    /// `env` (the default and only one built).
    #[serde(default)]
    pub injection_mode: InjectionMode,
}

impl DependencyBinding {
    /// The binding's id in the API: its target name, unique among a resource's bindings.
    pub fn id(&self) -> &str {
        &self.target_name
    }
}

/// The login of a managed PostgreSQL and its last rotation.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DependencyCredentials {
    /// The database user the connection Secret's URL logs in as.
    pub user: String,
    /// The `spec.rotateCredentials` value the current login was issued for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<String>,
    /// When the current login was issued (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<String>,
    /// The previous login, still valid until every bound app serves with the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoking: Option<String>,
    /// Bound resources whose serving deployment still uses the previous login.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_statuses_are_spelled_as_appaloft_spells_them() {
        for (kind, text) in [
            (DependencyKind::Postgres, "postgres"),
            (DependencyKind::Redis, "redis"),
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), text);
            assert_eq!(kind.as_str(), text);
        }
        assert_eq!(
            serde_json::to_value(RealizationStatus::DeletePending).unwrap(),
            "delete-pending"
        );
        assert_eq!(
            serde_json::to_value(DependencyLifecycleStatus::Degraded).unwrap(),
            DependencyLifecycleStatus::Degraded.as_str()
        );
        assert_eq!(DependencySource::default(), DependencySource::Managed);
    }
}
