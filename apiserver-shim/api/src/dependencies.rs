//! Dependency resources (Appaloft's `/dependency-resources` routes and records) and a
//! resource's dependency bindings (`/resources/{id}/dependency-bindings`). Connections are
//! only ever shown masked (`****`); the password stays in the dependency's Secret.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};
use crate::validate::{Checked, FieldError, bounded, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::dependencies::{
    BindingScope, DependencyCredentials, DependencyExposure, DependencyKind,
    DependencyLifecycleStatus, DependencyUpgrade, InjectionMode, RealizationStatus, UpgradePhase,
};

/// `GET /dependency-resources` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "dependency-resources.list/v1";
/// `GET /dependency-resources/{id}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "dependency-resources.show/v1";
/// `GET /resources/{id}/dependency-bindings` answer's `schemaVersion`.
pub const BINDINGS_LIST_SCHEMA: &str = "resources.dependency-bindings.list/v1";
/// `GET /resources/{id}/dependency-bindings/{bindingId}` answer's `schemaVersion`.
pub const BINDING_SHOW_SCHEMA: &str = "resources.dependency-bindings.show/v1";
/// Longest binding target name (an environment variable name).
pub const TARGET_NAME_MAX: usize = 128;

/// Appaloft's provision-dependency-resource input: a managed PostgreSQL or Redis that Berth
/// runs on the server.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProvisionDependencyResource {
    /// `postgres` or `redis`.
    pub kind: DependencyKind,
    /// The project it belongs to.
    pub project_id: String,
    /// An environment of that project; only its resources may bind the dependency.
    pub environment_id: String,
    /// The server it runs on.
    pub server_id: String,
    /// Display name (1-120 characters); its slug must be free in the environment.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Image to run instead of the official `postgres:16` / `redis:7`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// A host port open to the listed source addresses only (Berth; none by default: the
    /// dependency is reachable from its bound apps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<DependencyExposure>,
}

impl ProvisionDependencyResource {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("environmentId", &self.environment_id, OBJECT_NAME_MAX)?;
        bounded("serverId", &self.server_id, OBJECT_NAME_MAX)?;
        bounded("name", &self.name, NAME_MAX)?;
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        if let Some(image) = &self.image {
            check_image(image)?;
        }
        if let Some(exposure) = &self.exposure {
            check_exposure("exposure.", exposure)?;
        }
        Ok(())
    }
}

/// `POST /dependency-resources/{id}/exposure` (Berth): publish a managed dependency's port on
/// its server's host, open to `allowFrom` only; `DELETE` closes it again.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExposeDependencyResource {
    /// Port on the server's host (1-65535).
    pub host_port: i64,
    /// Source addresses (CIDRs) allowed to connect: at least one.
    pub allow_from: Vec<String>,
}

impl ExposeDependencyResource {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        check_exposure("", &self.exposure())
    }

    pub fn exposure(&self) -> DependencyExposure {
        DependencyExposure {
            host_port: self.host_port,
            allow_from: self
                .allow_from
                .iter()
                .map(|s| s.trim().to_string())
                .collect(),
        }
    }
}

/// `POST /dependency-resources/{id}/major-version-upgrades` (Berth): move a managed
/// PostgreSQL to an image of a newer major version by dump and restore.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpgradeDependencyMajorVersion {
    /// The new image; its tag names the major version (`postgres:17`).
    pub image: String,
}

impl UpgradeDependencyMajorVersion {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        check_image(&self.image)
    }
}

/// The upgrade asked for: it runs in the background; the dependency's `upgrade` follows it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MajorVersionUpgradeStarted {
    pub id: String,
    pub from_version: String,
    pub to_version: String,
    pub image: String,
}

/// `DELETE /dependency-resources/{id}/exposure` (Berth): no body fields.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseDependencyExposure {}

/// The exposure's rule, its field named under `prefix` (`exposure.` in a provision request).
fn check_exposure(prefix: &str, exposure: &DependencyExposure) -> Checked {
    match exposure.problem() {
        None => Ok(()),
        Some((field, why)) => Err(FieldError::new(&format!("{prefix}{field}"), why)),
    }
}

/// A managed dependency's host port as shown (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DependencyExposureSummary {
    pub host_port: i64,
    pub allow_from: Vec<String>,
    /// Whether the port is published behind its firewall rules now.
    pub published: bool,
    /// What the server's firewall did, or why the port is not published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Appaloft's import-dependency-resource input: an external PostgreSQL or Redis that Berth
/// records, checks from a server and binds, but does not run. The URL is kept in a Secret and
/// only ever shown masked.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportDependencyResource {
    /// `postgres` or `redis`.
    pub kind: DependencyKind,
    /// The project it belongs to.
    pub project_id: String,
    /// An environment of that project; only its resources may bind the dependency.
    pub environment_id: String,
    /// The server it is checked from (Berth; Appaloft has none): its client logs in from there
    /// before the dependency says it is ready.
    pub server_id: String,
    /// Display name (1-120 characters); its slug must be free in the environment.
    pub name: String,
    /// The connection URL with its credentials (`postgres://user:password@host:5432/db`,
    /// `redis://:password@host:6379/0`); never echoed.
    pub connection_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Image whose client (`psql`, `redis-cli`) checks the database from the server, instead
    /// of the official `postgres:16` / `redis:7` (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

impl ImportDependencyResource {
    /// Every rule the request can be checked by without the cluster; the URL's form is checked
    /// by the shim (with the rule the controller uses).
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("environmentId", &self.environment_id, OBJECT_NAME_MAX)?;
        bounded("serverId", &self.server_id, OBJECT_NAME_MAX)?;
        bounded("name", &self.name, NAME_MAX)?;
        // The URL is never repeated in an error: only its length is named.
        if self.connection_url.trim().is_empty() || self.connection_url.len() > TEXT_MAX {
            return Err(FieldError::new(
                "connectionUrl",
                format!("must be a connection URL of 1-{TEXT_MAX} characters"),
            ));
        }
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        if let Some(image) = &self.image {
            check_image(image)?;
        }
        Ok(())
    }
}

/// `POST /dependency-resources/{id}/credential-rotations` (Berth): rotate a managed
/// PostgreSQL's login with no failed request of a bound app.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateDependencyCredentials {}

/// The rotation asked for: it runs in the background; `GET /dependency-resources/{id}` (its
/// `credentials`) and the object's status follow it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CredentialRotationStarted {
    /// The dependency resource.
    pub id: String,
    /// The value written to `spec.rotateCredentials`.
    pub rotation: String,
}

/// Appaloft's rotate-dependency-binding-secret input (`POST
/// /resources/{resourceId}/dependency-bindings/{bindingId}/secret-rotations`). Berth issues the
/// new secret itself: a managed PostgreSQL's credentials are generated, never chosen by the
/// caller, so `secretRef` and `secretValue` are refused.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateBindingSecret {
    /// Refused: Berth generates the new credentials (Appaloft takes a secret reference here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// Refused, and never echoed: Berth generates the new credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_value: Option<String>,
    /// Must be `true`: deployments made before keep the login they were made with until the
    /// bound apps are redeployed on the new one (the old login is revoked only then).
    #[serde(default)]
    pub confirm_historical_snapshots_remain_unchanged: bool,
}

impl RotateBindingSecret {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        if self.secret_ref.is_some() {
            return Err(generated_here("secretRef"));
        }
        if self.secret_value.is_some() {
            return Err(generated_here("secretValue"));
        }
        if !self.confirm_historical_snapshots_remain_unchanged {
            return Err(FieldError::new(
                "confirmHistoricalSnapshotsRemainUnchanged",
                "confirmHistoricalSnapshotsRemainUnchanged must be true: deployments made \
                 before keep their login until the bound apps redeploy on the new one",
            ));
        }
        Ok(())
    }
}

fn generated_here(field: &str) -> FieldError {
    FieldError::new(
        field,
        format!(
            "{field} is not taken: Berth generates a managed dependency's new credentials \
             itself; send only confirmHistoricalSnapshotsRemainUnchanged: true"
        ),
    )
}

/// Appaloft's rotate-dependency-binding-secret answer: the rotation asked for runs in the
/// background (the binding's `secretRotation` and the dependency's `credentials` follow it).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BindingSecretRotated {
    /// The binding (its target name).
    pub id: String,
    /// When the rotation was asked for (RFC 3339).
    pub rotated_at: String,
    /// The new secret's version: the value written to the dependency's
    /// `spec.rotateCredentials`, which the binding's `secretRotation.secretVersion` shows once
    /// the new login is issued.
    pub secret_version: String,
}

/// A binding's secret as last rotated (Appaloft's `secretRotation`): present once the
/// dependency's login was rotated.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct BindingSecretRotation {
    /// The dependency's connection Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    /// The rotation the current login was issued for.
    pub secret_version: String,
    /// When the current login was issued (RFC 3339).
    pub rotated_at: String,
}

/// An image reference: `[registry/]repository[:tag][@digest]`, no spaces.
fn check_image(image: &str) -> Checked {
    bounded("image", image, TEXT_MAX)?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-/:@".contains(c);
    let starts_well = image.starts_with(|c: char| c.is_ascii_alphanumeric());
    if !starts_well || !image.chars().all(allowed) {
        return Err(FieldError::new(
            "image",
            "image must be an image reference such as postgres:16 or \
             registry.example.com/team/postgres:15 (letters, digits and . _ - / : @)",
        ));
    }
    Ok(())
}

/// `POST /dependency-resources/{id}/rename`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameDependencyResource {
    /// New display name (1-120 characters); its slug must be free in the environment.
    pub name: String,
}

impl RenameDependencyResource {
    pub fn validate(&self) -> Checked {
        bounded("name", &self.name, NAME_MAX)
    }
}

/// `DELETE /dependency-resources/{id}`: the object always goes (its container and network
/// with it, after a final backup when a backup policy covers it); the data volume only when
/// `deleteDataConfirmation` repeats the dependency's display name.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteDependencyResource {
    /// The dependency's name, typed out, to remove its data volume too. Without it the
    /// volume (and the data) is kept on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_data_confirmation: Option<String>,
    /// The dependency's name, typed out, to delete it without the final backup a dependency
    /// covered by a backup policy otherwise gets first (the deletion waits until that backup
    /// is proven, and keeps the database if it fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_final_backup_confirmation: Option<String>,
}

/// `POST /resources/{resourceId}/dependency-bindings` (Appaloft's bind-resource-dependency).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BindDependency {
    /// A dependency resource of the resource's project and environment.
    pub dependency_resource_id: String,
    /// The environment variable that receives the connection URL, e.g. `DATABASE_URL`; also
    /// the binding's id.
    pub target_name: String,
    /// `runtime-only` (the default and the only one Berth builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<BindingScope>,
    /// `env` (the default and the only one Berth builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_mode: Option<InjectionMode>,
}

impl BindDependency {
    pub fn validate(&self) -> Checked {
        bounded(
            "dependencyResourceId",
            &self.dependency_resource_id,
            OBJECT_NAME_MAX,
        )?;
        check_target_name(&self.target_name)
    }
}

/// An environment variable name: a letter or `_`, then letters, digits and `_`.
pub fn check_target_name(name: &str) -> Checked {
    bounded("targetName", name, TARGET_NAME_MAX)?;
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(FieldError::new(
            "targetName",
            "targetName must be an environment variable name such as DATABASE_URL (a letter or \
             _, then letters, digits and _)",
        ));
    }
    Ok(())
}

/// A body with no fields (an empty body is accepted too).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct UnbindDependency {}

/// Who runs the dependency (Appaloft's `sourceMode`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SourceMode {
    /// Berth runs it on the server (Appaloft's name kept for its clients).
    AppaloftManaged,
    /// An external one whose connection the user keeps in a Secret.
    ImportedExternal,
}

/// How apps on the dependency's private network connect; the password is `****`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DependencyConnectionSummary {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_name: Option<String>,
    /// The connection URL with the password shown as `****`.
    pub masked_connection: String,
    /// The Secret whose `url` key holds the full URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
}

/// Where the server's container, volume and network stand.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRealizationSummary {
    pub status: RealizationStatus,
    /// `generation-<n>`: the spec generation the controller last acted on.
    pub attempt_id: String,
    /// When that happened, as far as the status tells (realization, else creation).
    pub attempted_at: String,
    /// The container that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_resource_handle: Option<String>,
    /// The Docker volume holding its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// The private Docker network apps bound to it join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realized_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// A capability (extension, module) asked for or read back; Berth asks for none yet, so the
/// lists are empty.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DependencyCapability {
    /// `postgres-extension` or `redis-module`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub required: bool,
}

/// Whether a binding can take the dependency's connection.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ReadinessStatus {
    Ready,
    Blocked,
    /// Only in a binding's `snapshotReadiness`: ready once the dependency is.
    Deferred,
}

/// `ready` when a resource bound to it can use it now, `blocked` with the reason otherwise.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `ready` or `blocked` (for a binding's `snapshotReadiness` also `deferred`).
    pub status: ReadinessStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One thing that keeps a dependency from being deleted: for `resource-binding`, one per
/// resource that binds it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBlocker {
    /// `resource-binding`: a resource binds it.
    pub kind: String,
    /// The resource that binds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_entity_id: Option<String>,
    /// `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_entity_type: Option<String>,
    /// How many bindings of that resource use it.
    pub count: usize,
    /// Those bindings (their target names).
    pub binding_ids: Vec<String>,
}

/// What keeps a delete from going through; empty when it may.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeleteSafety {
    pub blockers: Vec<DeleteBlocker>,
}

/// Appaloft's dependency resource summary.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceSummary {
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    /// The server it runs on.
    pub server_id: String,
    pub name: String,
    pub slug: String,
    pub kind: DependencyKind,
    pub source_mode: SourceMode,
    /// `berth-managed-postgres`, `berth-managed-redis`, or `external-<kind>` when imported.
    pub provider_key: String,
    pub provider_managed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The image a managed one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    pub lifecycle_status: DependencyLifecycleStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<DependencyConnectionSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_realization: Option<ProviderRealizationSummary>,
    pub desired_capabilities: Vec<DependencyCapability>,
    pub capability_readbacks: Vec<DependencyCapability>,
    pub binding_readiness: Readiness,
    pub delete_safety: DeleteSafety,
    /// Berth: the login a managed PostgreSQL's connection uses and how far a rotation is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<DependencyCredentials>,
    /// Berth: the host port asked for, if any, and whether it is published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<DependencyExposureSummary>,
    /// Berth: the major version of a managed PostgreSQL's data, once it served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_version: Option<String>,
    /// Berth: its last major-version upgrade, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<DependencyUpgrade>,
    pub created_at: String,
}

/// `GET /dependency-resources`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceList {
    /// `dependency-resources.list/v1`.
    pub schema_version: String,
    pub items: Vec<DependencyResourceSummary>,
    pub generated_at: String,
}

/// `GET /dependency-resources/{dependencyResourceId}/ca-certificate` (Berth): the certificate of
/// the organization's authority that issued a managed PostgreSQL's server certificate, for a
/// client outside Berth to verify it with (`sslmode=verify-full`). Bound apps get it at
/// `caPath` already.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyCaCertificate {
    pub dependency_resource_id: String,
    /// The authority's certificate, PEM-encoded (public; its key never leaves its Secret).
    pub certificate_pem: String,
    /// The Secret of the organization's namespace that keeps the authority.
    pub secret_ref: String,
    /// Where a bound app's container has the certificate; its `DATABASE_URL` names it.
    pub ca_path: String,
}

/// `GET /dependency-resources/{dependencyResourceId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceShow {
    /// `dependency-resources.show/v1`.
    pub schema_version: String,
    pub dependency_resource: DependencyResourceSummary,
    pub generated_at: String,
}

/// Where a binding's value goes.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct BindingTarget {
    /// The environment variable.
    pub target_name: String,
    pub scope: BindingScope,
    pub injection_mode: InjectionMode,
    /// The dependency's Secret the value is read from (key `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
}

/// Appaloft's resource dependency binding summary.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DependencyBindingSummary {
    /// The target name.
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    pub resource_id: String,
    pub dependency_resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_resource_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_resource_slug: Option<String>,
    /// Absent when the dependency no longer exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<DependencyKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_mode: Option<SourceMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_managed: Option<bool>,
    /// The dependency's (`deleted` when it no longer exists).
    pub lifecycle_status: DependencyLifecycleStatus,
    pub target: BindingTarget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_rotation: Option<BindingSecretRotation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<DependencyConnectionSummary>,
    pub binding_readiness: Readiness,
    /// Whether the next deployment can take the value: `ready`, `deferred` (the dependency is
    /// still provisioning) or `blocked`.
    pub snapshot_readiness: Readiness,
    /// `active`.
    pub status: String,
    /// The resource's creation time: bindings carry no time of their own.
    pub created_at: String,
}

/// `GET /resources/{resourceId}/dependency-bindings`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyBindingList {
    /// `resources.dependency-bindings.list/v1`.
    pub schema_version: String,
    pub items: Vec<DependencyBindingSummary>,
    pub generated_at: String,
}

/// `GET /resources/{resourceId}/dependency-bindings/{bindingId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyBindingShow {
    /// `resources.dependency-bindings.show/v1`.
    pub schema_version: String,
    pub binding: DependencyBindingSummary,
    pub generated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provision_request_names_the_field_it_breaks() {
        let request = |extra: serde_json::Value| {
            let mut body = serde_json::json!({
                "kind": "postgres", "projectId": "prj-1", "environmentId": "env-1",
                "serverId": "srv-1", "name": "Main DB",
            });
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value::<ProvisionDependencyResource>(body).unwrap()
        };
        assert!(request(serde_json::json!({})).validate().is_ok());
        let local = serde_json::json!({"image": "127.0.0.1:5000/berth/postgres:15"});
        assert!(request(local).validate().is_ok());
        for (extra, field) in [
            (serde_json::json!({"name": " "}), "name"),
            (serde_json::json!({"serverId": ""}), "serverId"),
            (serde_json::json!({"image": "postgres 16"}), "image"),
            (serde_json::json!({"image": "-x"}), "image"),
            (serde_json::json!({"description": ""}), "description"),
        ] {
            assert_eq!(request(extra).validate().unwrap_err().field, field);
        }
    }

    #[test]
    fn a_binding_secret_rotation_is_confirmed_and_takes_no_secret_from_the_caller() {
        let request = |body: serde_json::Value| {
            serde_json::from_value::<RotateBindingSecret>(body)
                .unwrap()
                .validate()
        };
        let confirmed = serde_json::json!({"confirmHistoricalSnapshotsRemainUnchanged": true});
        assert!(request(confirmed).is_ok());
        for (body, field) in [
            (
                serde_json::json!({}),
                "confirmHistoricalSnapshotsRemainUnchanged",
            ),
            (
                serde_json::json!({"confirmHistoricalSnapshotsRemainUnchanged": false}),
                "confirmHistoricalSnapshotsRemainUnchanged",
            ),
            (
                serde_json::json!({"secretValue": "hunter2",
                    "confirmHistoricalSnapshotsRemainUnchanged": true}),
                "secretValue",
            ),
            (
                serde_json::json!({"secretRef": "mine",
                    "confirmHistoricalSnapshotsRemainUnchanged": true}),
                "secretRef",
            ),
        ] {
            let error = request(body).unwrap_err();
            assert_eq!(error.field, field);
            assert!(!error.message.contains("hunter2"), "never echoed");
        }
    }

    #[test]
    fn a_target_name_is_an_environment_variable_name() {
        for good in ["DATABASE_URL", "_X", "redis1"] {
            assert!(check_target_name(good).is_ok(), "{good}");
        }
        for bad in ["", "1DB", "DATABASE-URL", "A B", "É"] {
            assert_eq!(check_target_name(bad).unwrap_err().field, "targetName");
        }
        let scope = serde_json::json!({
            "dependencyResourceId": "dep-1", "targetName": "DB", "scope": "build-only",
        });
        let error = serde_json::from_value::<BindDependency>(scope).unwrap_err();
        assert!(error.to_string().contains("runtime-only"), "{error}");
    }
}
