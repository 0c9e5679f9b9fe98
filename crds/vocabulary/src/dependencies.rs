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

/// How a managed PostgreSQL moves to an image of another major version (which cannot read the
/// old one's data).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum MajorVersionUpgrade {
    /// Every database and login dumped (`pg_dumpall`, the old server read-only meanwhile),
    /// restored into a new server on a new volume, checked table by table, then switched to;
    /// the old volume is kept.
    DumpRestore,
}

/// How far a major-version upgrade is.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum UpgradePhase {
    /// Dumping, restoring and checking; the old server serves reads meanwhile.
    Running,
    /// The new server serves the restored data; the old volume is kept.
    Succeeded,
    /// Given up: the old server serves (writable again), the new volume removed.
    Failed,
}

/// The last major-version upgrade of a managed PostgreSQL.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DependencyUpgrade {
    /// Major version of the data before.
    pub from_version: String,
    /// Major version upgraded to.
    pub to_version: String,
    /// The image upgraded to.
    pub image: String,
    /// `running`, `succeeded` or `failed`.
    pub phase: UpgradePhase,
    /// What happened, or why it failed.
    pub message: String,
    /// The spec generation it was asked for in (a failed one is tried again only after a
    /// spec change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The volume the old version's data stays in.
    pub previous_volume: String,
    /// Tables of the `app` database counted on both servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    /// Rows of the `app` database counted on both servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// When it succeeded or failed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

/// Most source addresses one exposure lists.
pub const ALLOW_FROM_MAX: usize = 64;

/// A host port for a managed dependency, for clients outside its private network: only the
/// listed source addresses may connect (the server's firewall drops the rest).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DependencyExposure {
    /// Port on the server's host.
    #[schemars(range(min = 1, max = crate::limits::TCP_PORT_MAX))]
    pub host_port: i64,
    /// Source addresses (CIDRs such as `203.0.113.0/24` or `2001:db8::/32`) allowed to
    /// connect; at least one. Every other source is dropped.
    #[schemars(
        length(min = 1, max = ALLOW_FROM_MAX),
        inner(regex(pattern = r"^[0-9a-fA-F:.]+/[0-9]{1,3}$"))
    )]
    pub allow_from: Vec<String>,
}

impl DependencyExposure {
    /// What is wrong with it, as `(field, why)` with the field relative to the exposure
    /// (`hostPort`, `allowFrom[2]`); the schema cannot check a CIDR's address or prefix.
    pub fn problem(&self) -> Option<(String, String)> {
        if !(1..=crate::limits::TCP_PORT_MAX).contains(&self.host_port) {
            let why = format!("must be from 1 to {}", crate::limits::TCP_PORT_MAX);
            return Some(("hostPort".to_string(), why));
        }
        if self.allow_from.is_empty() || self.allow_from.len() > ALLOW_FROM_MAX {
            let why = format!(
                "must list 1-{ALLOW_FROM_MAX} source addresses (CIDRs such as 203.0.113.0/24): \
                 a port open to every address is not offered"
            );
            return Some(("allowFrom".to_string(), why));
        }
        self.allow_from
            .iter()
            .enumerate()
            .find_map(|(i, cidr)| cidr_problem(cidr).map(|why| (format!("allowFrom[{i}]"), why)))
    }

    /// The listed sources of one address family, as written.
    pub fn sources(&self, v6: bool) -> impl Iterator<Item = &str> {
        self.allow_from
            .iter()
            .map(String::as_str)
            .filter(move |cidr| cidr.contains(':') == v6)
    }
}

/// Why `cidr` is not an address with a prefix length its family allows, if it is not.
pub fn cidr_problem(cidr: &str) -> Option<String> {
    let Some((address, prefix)) = cidr.split_once('/') else {
        return Some(format!(
            "{cidr} is not a CIDR (address/prefix, e.g. 203.0.113.0/24)"
        ));
    };
    let Ok(address) = address.parse::<std::net::IpAddr>() else {
        return Some(format!("{address} is not an IPv4 or IPv6 address"));
    };
    let longest = if address.is_ipv4() { 32 } else { 128 };
    match prefix.parse::<u8>() {
        Ok(bits) if bits <= longest => None,
        _ => Some(format!("prefix /{prefix} must be from /0 to /{longest}")),
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
    fn an_exposure_names_the_field_it_refuses() {
        let exposure = |port: i64, sources: &[&str]| DependencyExposure {
            host_port: port,
            allow_from: sources.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            exposure(15432, &["198.18.0.0/15", "2001:db8::/32"]).problem(),
            None
        );
        let field = |e: DependencyExposure| e.problem().unwrap().0;
        assert_eq!(field(exposure(15432, &[])), "allowFrom");
        assert_eq!(field(exposure(0, &["198.18.0.1/32"])), "hostPort");
        assert_eq!(
            field(exposure(15432, &["198.18.0.1/32", "198.18.0.1"])),
            "allowFrom[1]"
        );
        assert_eq!(field(exposure(15432, &["300.1.1.1/32"])), "allowFrom[0]");
        assert_eq!(field(exposure(15432, &["198.18.0.1/33"])), "allowFrom[0]");
        let both = exposure(5, &["198.18.0.1/32", "::1/128"]);
        assert_eq!(both.sources(false).collect::<Vec<_>>(), ["198.18.0.1/32"]);
        assert_eq!(both.sources(true).collect::<Vec<_>>(), ["::1/128"]);
    }

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
