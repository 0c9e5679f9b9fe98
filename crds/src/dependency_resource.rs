//! DependencyResource: a database or cache of an environment (Appaloft's dependency resource).
//! A managed one runs as one container of its image on the named server, with a named Docker
//! volume for its data and a private network of its own; the credentials Berth generates live
//! in a Secret the object owns, never in its status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};
use crate::masking::MASK;

pub use berth_vocabulary::dependencies::{
    DependencyCredentials, DependencyExposure, DependencyKind, DependencyLifecycleStatus,
    DependencySource, DependencyUpgrade, MajorVersionUpgrade, RealizationStatus, UpgradePhase,
};

/// Condition type present while a host port is asked for (`spec.exposure`) or its firewall
/// rules are left on the server: `True` once the port is published behind rules that let only
/// `allowFrom` in.
pub const EXPOSED_CONDITION: &str = "Exposed";

/// Annotation that lets a deletion remove the data volume too: its value must be the object's
/// name, typed out. Without it the volume is kept.
pub const DELETE_DATA_ANNOTATION: &str = "berth.dev/delete-data";
pub use crate::backup_policy::SKIP_FINAL_BACKUP_ANNOTATION;
/// Key of the connection Secret holding the generated password.
pub const PASSWORD_KEY: &str = "password";
/// Key of the connection Secret holding the full connection URL on the private network.
pub const URL_KEY: &str = "url";
/// Secret of an organization's namespace holding the certificate authority that issues its
/// managed PostgreSQL servers their certificates: [`CA_CERT_KEY`] (served for download and
/// put into bound apps' containers) and [`CA_PRIVATE_KEY_KEY`]. Made on first use.
pub const DATABASE_CA_SECRET: &str = "berth-database-ca";
/// Key of [`DATABASE_CA_SECRET`] holding the authority's certificate (PEM).
pub const CA_CERT_KEY: &str = "ca.crt";
/// Key of [`DATABASE_CA_SECRET`] holding the authority's private key (PEM).
pub const CA_PRIVATE_KEY_KEY: &str = "ca.key";
/// Where an app bound to a managed dependency finds the authority's certificate: its
/// PostgreSQL URL names it (`sslmode=verify-full&sslrootcert=…`).
pub const APP_CA_PATH: &str = "/etc/berth/database-ca.crt";
/// The database user of a managed PostgreSQL.
pub const POSTGRES_USER: &str = "berth";
/// The database a managed PostgreSQL creates.
pub const POSTGRES_DATABASE: &str = "app";

/// A database or cache of an environment.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DependencyResource",
    namespaced,
    shortname = "bdb",
    category = "berth",
    doc = "A database or cache of an environment: PostgreSQL or Redis run by Berth on a server, or an external one imported.",
    status = "DependencyResourceStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Server","type":"string","jsonPath":".spec.serverId"}"#,
    printcolumn = r#"{"name":"Lifecycle","type":"string","jsonPath":".status.lifecycleStatus"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceSpec {
    /// `postgres` or `redis`.
    pub kind: DependencyKind,
    /// Id (object name) of the Project the dependency belongs to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub project_id: String,
    /// Id (object name) of the Environment the dependency belongs to; only its resources bind it.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub environment_id: String,
    /// Id (object name) of the Server a managed dependency runs on, or an imported one is
    /// reached from.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub server_id: String,
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// Free-text description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = DESCRIPTION_MAX))]
    pub description: Option<String>,
    /// Image of a managed dependency; default the official `postgres:16` or `redis:7`. A
    /// PostgreSQL image must initialise from `POSTGRES_PASSWORD`/`POSTGRES_USER`/`POSTGRES_DB`
    /// as the official one does. For an imported one, the image whose client (`psql`,
    /// `redis-cli`) checks it from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub image: Option<String>,
    /// A port on the server's host for clients outside the private network, open only to the
    /// listed source addresses (the server's firewall drops the rest); none by default. Managed
    /// dependencies only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<DependencyExposure>,
    /// `managed` (default: Berth runs it) or `imported` (an external one, reached through
    /// `connectionSecretRef`).
    #[serde(default)]
    pub source: DependencySource,
    /// For `imported`: the Secret whose `url` key holds the connection URL. The controller checks
    /// it from `serverId` and publishes it, once the database answers, in the Secret
    /// `<name>-connection` that bound apps read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_secret_ref: Option<ConnectionSecretRef>,
    /// How a change of `image` to another PostgreSQL major version is done: `dump-restore`.
    /// Without it such a change is refused (the new version cannot read the old data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_version_upgrade: Option<MajorVersionUpgrade>,
    /// Set or change this value to rotate a managed PostgreSQL's credentials: a new login
    /// valid beside the old one, the bound apps redeployed on it, then the old one revoked
    /// (`status.credentials` follows it). Any text, e.g. a date or a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub rotate_credentials: Option<String>,
}

/// A Secret in the dependency's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub name: String,
}

impl DependencyResourceSpec {
    /// The image a managed dependency runs.
    pub fn image(&self) -> &str {
        self.image
            .as_deref()
            .unwrap_or_else(|| self.kind.default_image())
    }

    /// What the schema cannot refuse (Kubernetes 1.20 has no CEL), naming the field.
    pub fn problem(&self) -> Option<String> {
        match (self.source, &self.connection_secret_ref) {
            (DependencySource::Imported, None) => {
                Some("spec.connectionSecretRef is required for an imported dependency".to_string())
            }
            (DependencySource::Managed, Some(_)) => Some(
                "spec.connectionSecretRef is only for an imported dependency (a managed one's \
                 credentials are generated)"
                    .to_string(),
            ),
            (DependencySource::Imported, _) if self.exposure.is_some() => Some(
                "spec.exposure is only for a managed dependency (Berth does not run an imported \
                 one)"
                    .to_string(),
            ),
            _ if let Some((field, why)) =
                self.exposure.as_ref().and_then(DependencyExposure::problem) =>
            {
                Some(format!("spec.exposure.{field}: {why}"))
            }
            _ if self.rotate_credentials.is_some()
                && (self.source, self.kind)
                    != (DependencySource::Managed, DependencyKind::Postgres) =>
            {
                Some(
                    "spec.rotateCredentials: rotation is built for a managed PostgreSQL only \
                     (not for Redis or an imported dependency yet)"
                        .to_string(),
                )
            }
            _ => None,
        }
    }
}

/// What the controller observed about a dependency resource. No secret value is ever here.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceStatus {
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `provisioning`, `ready`, `degraded` or `deleted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<DependencyLifecycleStatus>,
    /// How far the server's container, volume and network are realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_realization: Option<ProviderRealization>,
    /// How apps reach it, with the password masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<DependencyConnection>,
    /// Major version of the data on the volume (PostgreSQL), recorded when it first served:
    /// an image of another major version cannot read it and is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_version: Option<String>,
    /// The Docker volume holding the data now, once it is not `<container>-data` (after a
    /// major-version upgrade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume: Option<String>,
    /// The last major-version upgrade, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<DependencyUpgrade>,
    /// Which login apps use now and how far a rotation is (no secret: the password stays in
    /// the connection Secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<DependencyCredentials>,
    /// Current conditions; `Ready` while it serves and its health check passes.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The database user a managed PostgreSQL's connection logs in as now.
pub fn current_user(status: Option<&DependencyResourceStatus>) -> &str {
    status
        .and_then(|s| s.credentials.as_ref())
        .map_or(POSTGRES_USER, |c| c.user.as_str())
}

/// The realization of a managed dependency on its server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRealization {
    /// `pending`, `ready`, `failed`, `delete-pending` or `deleted`.
    pub status: RealizationStatus,
    /// The container that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_resource_handle: Option<String>,
    /// The Docker volume holding its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// The private Docker network apps bound to it join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// When it was first realized (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realized_at: Option<String>,
    /// Machine-readable cause of the failure, such as `image_pull_failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    /// The failure, said for a person (no secret in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// How apps on the private network connect.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyConnection {
    /// Host name on the private network (the container's name).
    pub host: String,
    /// Port on the private network.
    pub port: i64,
    /// Database name (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_name: Option<String>,
    /// The connection URL with the password shown as `****`.
    pub masked_connection: String,
    /// Name of the Secret whose `url` key holds the full URL and `password` the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
}

/// Name of a managed dependency's container and of the private network its bound apps join:
/// the host name of its connection URL.
pub fn network_name(namespace: &str, dependency_name: &str) -> String {
    format!("berth-dep-{namespace}-{dependency_name}")
}

/// Name of the Secret holding a managed dependency's generated password and connection URL.
pub fn connection_secret_name(dependency_name: &str) -> String {
    format!("{dependency_name}-connection")
}

/// Name of the Secret holding a managed PostgreSQL's server certificate and key.
pub fn tls_secret_name(dependency_name: &str) -> String {
    format!("{dependency_name}-tls")
}

/// The connection URL of a managed dependency at `host` with `password`: pass [`MASK`] for
/// the masked one. A PostgreSQL's asks for TLS with the server's name and chain verified
/// against the organization's authority, whose certificate bound apps find at [`APP_CA_PATH`].
pub fn connection_url(kind: DependencyKind, host: &str, user: &str, password: &str) -> String {
    match kind {
        DependencyKind::Postgres => format!(
            "postgres://{user}:{password}@{host}:{}/{POSTGRES_DATABASE}\
             ?sslmode=verify-full&sslrootcert={APP_CA_PATH}",
            kind.port()
        ),
        DependencyKind::Redis => format!("redis://:{password}@{host}:{}/0", kind.port()),
    }
}

/// The connection of a managed dependency as the status shows it.
pub fn managed_connection(
    kind: DependencyKind,
    host: &str,
    user: &str,
    secret: &str,
) -> DependencyConnection {
    DependencyConnection {
        host: host.to_string(),
        port: i64::from(kind.port()),
        database_name: (kind == DependencyKind::Postgres).then(|| POSTGRES_DATABASE.to_string()),
        masked_connection: connection_url(kind, host, user, MASK),
        secret_ref: Some(secret.to_string()),
    }
}

/// The major version an image reference names in its tag (`postgres:16.3-alpine` → 16,
/// `127.0.0.1:5000/berth/postgres:15` → 15); `None` for `latest`, no tag or a digest only.
pub fn major_version(image: &str) -> Option<u32> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let (_, tag) = last.split_once(':')?;
    let digits: String = tag.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `url` with the password of its user-info part (`scheme://user:password@host…`) replaced by
/// [`MASK`]: how an imported connection is shown.
pub fn mask_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let user = user_info
        .split_once(':')
        .map_or(user_info, |(user, _)| user);
    if !user_info.contains(':') {
        return url.to_string();
    }
    format!("{scheme}://{user}:{MASK}@{host}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> DependencyResourceSpec {
        let mut base = serde_json::json!({
            "kind": "postgres", "projectId": "p", "environmentId": "e", "serverId": "local",
            "name": "Main DB",
        });
        base.as_object_mut()
            .unwrap()
            .extend(value.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn the_image_defaults_to_the_official_one_of_the_kind() {
        assert_eq!(spec(serde_json::json!({})).image(), "postgres:16");
        assert_eq!(
            spec(serde_json::json!({"kind": "redis"})).image(),
            "redis:7"
        );
        let local = spec(serde_json::json!({"image": "127.0.0.1:5000/berth/postgres:15"}));
        assert_eq!(local.image(), "127.0.0.1:5000/berth/postgres:15");
    }

    #[test]
    fn an_import_needs_its_secret_and_a_managed_one_has_none() {
        assert_eq!(spec(serde_json::json!({})).problem(), None);
        let import = spec(serde_json::json!({"source": "imported"}));
        assert!(
            import
                .problem()
                .unwrap()
                .contains("spec.connectionSecretRef")
        );
        let managed = spec(serde_json::json!({"connectionSecretRef": {"name": "s"}}));
        assert!(managed.problem().is_some());
    }

    #[test]
    fn the_major_version_is_read_from_the_image_tag() {
        assert_eq!(major_version("postgres:16"), Some(16));
        assert_eq!(major_version("postgres:16.3-alpine"), Some(16));
        assert_eq!(major_version("127.0.0.1:5000/berth/postgres:15"), Some(15));
        assert_eq!(major_version("127.0.0.1:5000/berth/postgres"), None);
        assert_eq!(major_version("postgres:latest"), None);
        assert_eq!(major_version("postgres@sha256:abc"), None);
    }

    #[test]
    fn connections_are_shown_masked() {
        let connection = managed_connection(
            DependencyKind::Postgres,
            "berth-dep-org-a-db",
            "berth",
            "db-conn",
        );
        assert_eq!(
            connection.masked_connection,
            "postgres://berth:****@berth-dep-org-a-db:5432/app\
             ?sslmode=verify-full&sslrootcert=/etc/berth/database-ca.crt"
        );
        assert_eq!(connection.database_name.as_deref(), Some("app"));
        assert_eq!(
            connection_url(DependencyKind::Redis, "cache", "berth", "pw12"),
            "redis://:pw12@cache:6379/0"
        );
        assert_eq!(
            mask_url_password("postgres://u:s3cr3t@db.example:5432/x?sslmode=require"),
            "postgres://u:****@db.example:5432/x?sslmode=require"
        );
        assert_eq!(
            mask_url_password("redis://:pw@h:6379"),
            "redis://:****@h:6379"
        );
        assert_eq!(mask_url_password("redis://h:6379"), "redis://h:6379");
    }
}
