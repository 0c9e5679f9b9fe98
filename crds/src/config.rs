//! The effective configuration of a resource, shared by the REST shim (which shows it, masked)
//! and the controller (which hands it to containers and builds): entries from every scope,
//! merged weakest first so a later scope replaces an earlier one's entry with the same key and
//! exposure (spec §2.2 "Effective config").

use std::collections::BTreeMap;

use k8s_openapi::ByteString;

use crate::environment::Environment;
use crate::organization::Organization;
use crate::project::Project;
use crate::resource::Resource;
use crate::variable::{PlainVariable, VariableExposure, parse_secret_data_key};

/// Where an entry is defined, weakest first: the order is the precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigScope {
    /// What every container gets unless something else says otherwise, e.g. `PORT`.
    Defaults,
    /// Facts the platform provides about the resource, e.g. `BERTH_RESOURCE_ID`.
    System,
    Organization,
    Project,
    Environment,
    Resource,
    /// Overrides of one attempt, and the attempt's own id.
    Deployment,
}

impl ConfigScope {
    /// Every scope, weakest first.
    pub const PRECEDENCE: [ConfigScope; 7] = [
        Self::Defaults,
        Self::System,
        Self::Organization,
        Self::Project,
        Self::Environment,
        Self::Resource,
        Self::Deployment,
    ];

    /// The scope as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Defaults => "defaults",
            Self::System => "system",
            Self::Organization => "organization",
            Self::Project => "project",
            Self::Environment => "environment",
            Self::Resource => "resource",
            Self::Deployment => "deployment",
        }
    }
}

/// One configuration entry with the scope that defines it. `value` is the real value: callers
/// that show entries mask secret ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigEntry {
    pub scope: ConfigScope,
    pub key: String,
    pub value: String,
    pub exposure: VariableExposure,
    pub secret: bool,
}

impl ConfigEntry {
    fn plain(scope: ConfigScope, key: &str, value: impl Into<String>) -> Self {
        Self {
            scope,
            key: key.to_string(),
            value: value.into(),
            exposure: VariableExposure::Runtime,
            secret: false,
        }
    }
}

/// An entry hidden by the same key and exposure in a stronger scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigOverride {
    pub key: String,
    pub exposure: VariableExposure,
    pub winning_scope: ConfigScope,
    pub overridden_scope: ConfigScope,
}

/// Name of the Secret holding a resource's secret values: `spec.secretsRef`, or
/// `<resource>-secrets` (what the shim creates on the first secret write).
pub fn secret_name(resource: &Resource) -> String {
    use kube::ResourceExt;
    resource
        .spec
        .secrets_ref
        .clone()
        .unwrap_or_else(|| format!("{}-secrets", resource.name_any()))
}

/// Name of the Secret, owned by the Environment, holding its secret variable values (written
/// by the REST shim; every resource of the environment gets them unless it sets its own).
pub fn environment_secret_name(environment: &str) -> String {
    format!("{environment}-secrets")
}

/// Environment variable carrying the port the platform routes to.
pub const PORT_VARIABLE: &str = "PORT";

/// The objects whose entries apply to a resource before an attempt adds its own: the
/// resource, and its organization, project, environment and secret data when they exist.
pub struct Scopes<'a> {
    pub resource: &'a Resource,
    pub organization: Option<&'a Organization>,
    pub project: Option<&'a Project>,
    pub environment: Option<&'a Environment>,
    pub secret_data: Option<&'a BTreeMap<String, ByteString>>,
    /// The environment's secret values (its Secret [`environment_secret_name`]).
    pub environment_secret_data: Option<&'a BTreeMap<String, ByteString>>,
    /// Connection URLs of the dependencies the resource binds, by dependency id; a binding
    /// whose dependency has none (yet) contributes nothing.
    pub connections: &'a BTreeMap<String, String>,
}

/// Every entry of `scopes`, unmerged: what the controller hands an attempt (plus the attempt's
/// own) and what the shim shows as the effective configuration, gathered one way.
pub fn scope_entries(scopes: &Scopes) -> Vec<ConfigEntry> {
    let resource = scopes.resource;
    let mut entries = default_entries(resource);
    let resource_id = resource.metadata.name.clone().unwrap_or_default();
    entries.extend(system_entries(&resource_id, resource));
    if let Some(organization) = scopes.organization {
        entries.extend(plain_entries(
            ConfigScope::Organization,
            &organization.spec.variables,
        ));
    }
    if let Some(project) = scopes.project {
        entries.extend(plain_entries(ConfigScope::Project, &project.spec.variables));
    }
    if let Some(environment) = scopes.environment {
        entries.extend(plain_entries(
            ConfigScope::Environment,
            &environment.spec.variables,
        ));
    }
    if let Some(data) = scopes.environment_secret_data {
        entries.extend(scoped_secret_entries(ConfigScope::Environment, data));
    }
    entries.extend(plain_entries(
        ConfigScope::Resource,
        &resource.spec.variables,
    ));
    if let Some(data) = scopes.secret_data {
        entries.extend(secret_entries(data));
    }
    entries.extend(binding_entries(resource, scopes.connections));
    entries
}

/// The resource's dependency bindings as secret runtime entries: each target variable holds
/// its dependency's connection URL. Last in the resource scope, so a binding wins over a
/// variable of the same name.
pub fn binding_entries(
    resource: &Resource,
    connections: &BTreeMap<String, String>,
) -> Vec<ConfigEntry> {
    resource
        .spec
        .dependency_bindings
        .iter()
        .filter_map(|binding| {
            Some(ConfigEntry {
                scope: ConfigScope::Resource,
                key: binding.target_name.clone(),
                value: connections.get(&binding.dependency_resource_id)?.clone(),
                exposure: VariableExposure::Runtime,
                secret: true,
            })
        })
        .collect()
}

/// Platform defaults: `PORT` is the network profile's internal port, so an application that
/// reads `PORT` listens where the proxy and the health check look.
pub fn default_entries(resource: &Resource) -> Vec<ConfigEntry> {
    resource
        .spec
        .network_profile
        .iter()
        .map(|n| {
            ConfigEntry::plain(
                ConfigScope::Defaults,
                PORT_VARIABLE,
                n.internal_port.to_string(),
            )
        })
        .collect()
}

/// Facts the platform provides: which resource, project and environment a container runs for.
pub fn system_entries(resource_id: &str, resource: &Resource) -> Vec<ConfigEntry> {
    let system = |key: &str, value: &str| ConfigEntry::plain(ConfigScope::System, key, value);
    vec![
        system("BERTH_RESOURCE_ID", resource_id),
        system("BERTH_PROJECT_ID", &resource.spec.project_id),
        system("BERTH_ENVIRONMENT_ID", &resource.spec.environment_id),
    ]
}

/// The entries of a deployment attempt: its id and its own overrides.
pub fn deployment_entries(deployment_id: &str, overrides: &[PlainVariable]) -> Vec<ConfigEntry> {
    let mut entries = vec![ConfigEntry::plain(
        ConfigScope::Deployment,
        "BERTH_DEPLOYMENT_ID",
        deployment_id,
    )];
    entries.extend(plain_entries(ConfigScope::Deployment, overrides));
    entries
}

/// Plain variables of a scope.
pub fn plain_entries(scope: ConfigScope, variables: &[PlainVariable]) -> Vec<ConfigEntry> {
    variables
        .iter()
        .map(|v| ConfigEntry {
            scope,
            key: v.key.clone(),
            value: v.value.clone(),
            exposure: v.exposure,
            secret: false,
        })
        .collect()
}

/// Secret entries of a resource from its Secret's data (keys `<exposure>.<KEY>`). Values that
/// are not UTF-8 are skipped: an environment variable cannot carry them.
pub fn secret_entries(data: &BTreeMap<String, ByteString>) -> Vec<ConfigEntry> {
    scoped_secret_entries(ConfigScope::Resource, data)
}

/// Secret entries of `scope` from its Secret's data, as [`secret_entries`].
pub fn scoped_secret_entries(
    scope: ConfigScope,
    data: &BTreeMap<String, ByteString>,
) -> Vec<ConfigEntry> {
    data.iter()
        .filter_map(|(data_key, bytes)| {
            let (exposure, key) = parse_secret_data_key(data_key);
            let value = String::from_utf8(bytes.0.clone()).ok()?;
            Some(ConfigEntry {
                scope,
                key: key.to_string(),
                value,
                exposure,
                secret: true,
            })
        })
        .collect()
}

/// Merges entries of any scopes into the effective ones (one per key and exposure, from the
/// strongest scope; a later entry of the same scope wins) and the entries they hide.
pub fn merge(mut entries: Vec<ConfigEntry>) -> (Vec<ConfigEntry>, Vec<ConfigOverride>) {
    // Stable: entries of one scope keep their order.
    entries.sort_by_key(|e| e.scope);
    let mut effective: BTreeMap<(VariableExposure, String), ConfigEntry> = BTreeMap::new();
    let mut overrides = Vec::new();
    for entry in entries {
        let slot = (entry.exposure, entry.key.clone());
        if let Some(previous) = effective.get(&slot) {
            overrides.push(ConfigOverride {
                key: entry.key.clone(),
                exposure: entry.exposure,
                winning_scope: entry.scope,
                overridden_scope: previous.scope,
            });
        }
        effective.insert(slot, entry);
    }
    (effective.into_values().collect(), overrides)
}

/// SHA-256 over the effective entries of every scope but `deployment` (an attempt's own id
/// differs every time): equal fingerprints mean a container would get the same configuration.
pub fn fingerprint(entries: &[ConfigEntry]) -> String {
    use sha2::{Digest, Sha256};
    let lasting = entries
        .iter()
        .filter(|e| e.scope != ConfigScope::Deployment)
        .cloned()
        .collect();
    let (effective, _) = merge(lasting);
    let mut digest = Sha256::new();
    for entry in &effective {
        for part in [entry.exposure.as_str(), &entry.key, &entry.value] {
            digest.update(part.len().to_le_bytes());
            digest.update(part.as_bytes());
        }
    }
    format!("sha256:{}", hex::encode(digest.finalize()))
}

/// The effective entries of one exposure as `(KEY, value)` pairs.
pub fn values_of(
    effective: &[ConfigEntry],
    exposure: VariableExposure,
) -> impl Iterator<Item = (&str, &str)> {
    effective
        .iter()
        .filter(move |e| e.exposure == exposure)
        .map(|e| (e.key.as_str(), e.value.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceSpec;
    use serde_json::json;

    fn resource() -> Resource {
        let spec: ResourceSpec = serde_json::from_value(json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "web",
            "kind": "application", "networkProfile": { "internalPort": 3000 },
        }))
        .unwrap();
        Resource::new("web", spec)
    }

    fn var(key: &str, value: &str) -> PlainVariable {
        PlainVariable {
            key: key.into(),
            value: value.into(),
            exposure: VariableExposure::Runtime,
        }
    }

    #[test]
    fn every_scope_overrides_the_weaker_ones() {
        let resource = resource();
        let mut entries = deployment_entries("dep-1", &[var("LEVEL", "deployment")]);
        entries.extend(plain_entries(
            ConfigScope::Resource,
            &[var("LEVEL", "resource")],
        ));
        entries.extend(plain_entries(
            ConfigScope::Organization,
            &[var("LEVEL", "org")],
        ));
        entries.extend(plain_entries(
            ConfigScope::Project,
            &[var("ONLY_PROJECT", "p")],
        ));
        entries.extend(default_entries(&resource));
        entries.extend(system_entries("web", &resource));
        entries.extend(plain_entries(
            ConfigScope::Environment,
            &[var("PORT", "4000")],
        ));
        let (effective, overrides) = merge(entries);
        let value = |key: &str| {
            values_of(&effective, VariableExposure::Runtime)
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        assert_eq!(value("LEVEL").as_deref(), Some("deployment"));
        assert_eq!(value("PORT").as_deref(), Some("4000"));
        assert_eq!(value("ONLY_PROJECT").as_deref(), Some("p"));
        assert_eq!(value("BERTH_RESOURCE_ID").as_deref(), Some("web"));
        assert_eq!(value("BERTH_DEPLOYMENT_ID").as_deref(), Some("dep-1"));
        let level: Vec<_> = overrides.iter().filter(|o| o.key == "LEVEL").collect();
        assert_eq!(level.len(), 2);
        assert_eq!(level[1].winning_scope, ConfigScope::Deployment);
        assert_eq!(level[1].overridden_scope, ConfigScope::Resource);
    }

    #[test]
    fn a_binding_is_a_secret_runtime_entry_that_wins_over_a_variable_of_its_name() {
        let mut resource = resource();
        resource.spec.variables = vec![var("DATABASE_URL", "postgres://by-hand")];
        resource.spec.dependency_bindings = serde_json::from_value(json!([
            { "dependencyResourceId": "db", "targetName": "DATABASE_URL" },
            { "dependencyResourceId": "cache", "targetName": "REDIS_URL" },
        ]))
        .unwrap();
        let connections = BTreeMap::from([("db".to_string(), "postgres://bound".to_string())]);
        let entries = scope_entries(&Scopes {
            resource: &resource,
            organization: None,
            project: None,
            environment: None,
            secret_data: None,
            environment_secret_data: None,
            connections: &connections,
        });
        let (effective, _) = merge(entries);
        let url = effective.iter().find(|e| e.key == "DATABASE_URL").unwrap();
        assert_eq!(url.value, "postgres://bound");
        assert!(url.secret, "shown masked, never logged");
        assert!(
            !effective.iter().any(|e| e.key == "REDIS_URL"),
            "a dependency without a connection contributes nothing"
        );
    }

    #[test]
    fn fingerprints_follow_values_but_not_the_attempt() {
        let base = plain_entries(ConfigScope::Resource, &[var("LEVEL", "a")]);
        let mut first = base.clone();
        first.extend(deployment_entries("dep-1", &[]));
        let mut second = base;
        second.extend(deployment_entries("dep-2", &[]));
        assert_eq!(fingerprint(&first), fingerprint(&second));
        let changed = plain_entries(ConfigScope::Resource, &[var("LEVEL", "b")]);
        assert_ne!(fingerprint(&first), fingerprint(&changed));
        assert!(fingerprint(&first).starts_with("sha256:"));
    }

    #[test]
    fn secrets_keep_their_exposure_and_build_time_stays_apart() {
        let data = BTreeMap::from([
            (
                "build-time.NPM_TOKEN".to_string(),
                ByteString(b"t0k".to_vec()),
            ),
            (
                "runtime.DB_PASSWORD".to_string(),
                ByteString(b"pw".to_vec()),
            ),
        ]);
        let (effective, _) = merge(secret_entries(&data));
        let runtime: Vec<_> = values_of(&effective, VariableExposure::Runtime).collect();
        assert_eq!(runtime, vec![("DB_PASSWORD", "pw")]);
        let build: Vec<_> = values_of(&effective, VariableExposure::BuildTime).collect();
        assert_eq!(build, vec![("NPM_TOKEN", "t0k")]);
        assert!(effective.iter().all(|e| e.secret));
    }
}
