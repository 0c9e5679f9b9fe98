//! Spec §4.11, resources.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::access::{AccessSummary, ProxyRouteStatus};
use crate::common::Confirmation;
use crate::deployments::DeploymentState;
use crate::limits::{DESCRIPTION_MAX, DNS_LABEL_MAX, NAME_MAX, OBJECT_NAME_MAX};
use crate::resource_input::{
    AccessProfileInput, FirstDeployment, NetworkProfileInput, ResourceKind, RuntimeProfileInput,
    ServiceInput, SourceInput,
};
use crate::validate::{Checked, bounded, dns_label, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::deployed_spec::DeployedState;
pub use berth_vocabulary::resources::{AccessProfile, NetworkProfile, ResourceService};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteResource {
    /// Must carry `resourceSlug` equal to the slug of the resource being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Repeating a delete with the same key (within 24 hours, on the same shim) returns the
    /// same `{id}`, even once the resource is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

// `POST /resources` (not in the spec's endpoint list: REST users need something to deploy).
// No doc comment: it would become the OpenAPI schema's description.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateResource {
    /// The project (in the caller's organization).
    pub project_id: String,
    /// An environment of that project.
    pub environment_id: String,
    /// Display name (1-120 characters).
    pub name: String,
    pub kind: ResourceKind,
    /// URL-safe short name (the generated host's first label, 1-63 lowercase letters, digits
    /// or dashes); derived from the name when omitted. Unique within the environment and on
    /// the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The server deployments go to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// Deployment destination on the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    /// Services the resource runs (unique names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<ServiceInput>>,
    /// Where the code or artifact comes from, e.g. `{"kind":"docker-image","locator":"app:1"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceInput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfileInput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_profile: Option<AccessProfileInput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_profile: Option<RuntimeProfileInput>,
    /// Name of a `kubernetes.io/dockerconfigjson` Secret (in the organization's namespace)
    /// whose credentials pull a `docker-image` source the server does not have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_secret_name: Option<String>,
    /// Berth: `on-create` (default) deploys as soon as the resource has a server and a source;
    /// `on-request` waits for `POST /deployments` (a migration's resources do, so they deploy
    /// after their variables, secrets, volumes and domains exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_deployment: Option<FirstDeployment>,
}

impl CreateResource {
    /// Checks every field that needs no lookup; the source and profiles as their update
    /// endpoints do.
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("environmentId", &self.environment_id, OBJECT_NAME_MAX)?;
        bounded("name", &self.name, NAME_MAX)?;
        if let Some(slug) = &self.slug {
            dns_label("slug", slug, DNS_LABEL_MAX)?;
        }
        let ids = [
            ("description", &self.description, DESCRIPTION_MAX),
            ("serverId", &self.server_id, OBJECT_NAME_MAX),
            ("destinationId", &self.destination_id, OBJECT_NAME_MAX),
            (
                "imagePullSecretName",
                &self.image_pull_secret_name,
                OBJECT_NAME_MAX,
            ),
        ];
        for (field, value, max) in ids {
            optional_text(field, value.as_ref(), max)?;
        }
        let services = self.services.as_deref().unwrap_or_default();
        ServiceInput::validate_all(services)?;
        if let Some(source) = &self.source {
            source.validate()?;
        }
        if let Some(network) = &self.network_profile {
            network.validate(services.iter().map(|s| s.name.as_str()))?;
        }
        if let Some(access) = &self.access_profile {
            access.validate()?;
        }
        self.runtime_profile
            .as_ref()
            .map_or(Ok(()), RuntimeProfileInput::validate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(extra: serde_json::Value) -> CreateResource {
        let mut value = json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web", "kind": "application",
        });
        if let (Some(base), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            base.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (json!({"name": " "}), "name"),
            (json!({"slug": "Bad_Slug"}), "slug"),
            (json!({"serverId": ""}), "serverId"),
            (
                json!({"source": {"kind": "docker-image", "locator": ""}}),
                "source.locator",
            ),
            (
                json!({"networkProfile": {"internalPort": 0}}),
                "networkProfile.internalPort",
            ),
            (
                json!({"networkProfile": {"internalPort": 80, "hostPort": -1}}),
                "networkProfile.hostPort",
            ),
            (
                json!({"services": [{"name": "web", "kind": "web"}],
                       "networkProfile": {"internalPort": 80, "targetServiceName": "api"}}),
                "networkProfile.targetServiceName",
            ),
            (
                json!({"services": [{"name": "a", "kind": "web"}, {"name": "a", "kind": "api"}]}),
                "services[1].name",
            ),
            // Checked on create as on `POST /resources/{id}/source` and `/network-profile`.
            (
                json!({"source": {"kind": "Docker Image", "locator": "app:1"}}),
                "source.kind",
            ),
            (
                json!({"networkProfile": {"internalPort": 80, "targetServiceName": "Web"}}),
                "networkProfile.targetServiceName",
            ),
            (
                json!({"services": [{"name": "web_1", "kind": "web"}]}),
                "services[0].name",
            ),
            (
                json!({"accessProfile": {"pathPrefix": "api"}}),
                "accessProfile.pathPrefix",
            ),
            (
                json!({"runtimeProfile": {"healthCheck": {"path": "healthz"}}}),
                "runtimeProfile.healthCheck.path",
            ),
            (
                json!({"runtimeProfile": {"healthCheck": {"expectedStatusCode": 99}}}),
                "runtimeProfile.healthCheck.expectedStatusCode",
            ),
        ];
        for (extra, field) in cases {
            assert_eq!(body(extra).validate().unwrap_err().field, field);
        }
        assert!(body(json!({"slug": "web-1"})).validate().is_ok());
    }

    #[test]
    fn the_cli_sends_only_what_it_sets() {
        let mut create = body(json!({}));
        create.network_profile = Some(NetworkProfileInput::port(8080));
        assert_eq!(
            serde_json::to_value(&create).unwrap(),
            json!({"projectId": "prj-1", "environmentId": "env-1", "name": "Web",
                   "kind": "application", "networkProfile": {"internalPort": 8080}})
        );
    }

    #[test]
    fn an_archive_or_deletion_names_the_field_it_refuses() {
        let archive = |reason: Option<&str>, key: Option<&str>| ArchiveResource {
            reason: reason.map(str::to_string),
            idempotency_key: key.map(str::to_string),
        };
        assert!(archive(None, None).validate().is_ok());
        // Spaces around a reason are not counted.
        let padded = format!("  {}  ", "r".repeat(ARCHIVE_REASON_MAX));
        assert!(archive(Some(&padded), Some("k-1")).validate().is_ok());
        let long_key = "k".repeat(IDEMPOTENCY_KEY_MAX + 1);
        for (body, field) in [
            (archive(Some("  "), None), "reason"),
            (archive(Some(&"r".repeat(281)), None), "reason"),
            (archive(None, Some(&long_key)), "idempotencyKey"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
        let delete = DeleteResource {
            confirmation: None,
            idempotency_key: Some(long_key),
        };
        assert_eq!(delete.validate().unwrap_err().field, "idempotencyKey");
    }
}

/// The Resource list item of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRecord {
    pub id: String,
    pub project_id: String,
    pub environment_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    pub name: String,
    /// URL-safe short name; the first label of the generated host name.
    pub slug: String,
    pub kind: ResourceKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub created_at: String,
    pub services: Vec<ResourceService>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_profile: Option<AccessProfile>,
    pub deployment_count: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_deployment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_deployment_status: Option<DeploymentState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_summary: Option<AccessSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_route_status: Option<ProxyRouteStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_route_realization_deployment_id: Option<String>,
    /// Whether the serving deployment runs the declared spec, and the changed spec fields it
    /// does not run yet (the Resource's `Deployed` condition); absent while nothing serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_state: Option<DeployedState>,
}

impl ResourceRecord {
    /// The URL that serves the resource, when it has one.
    pub fn url(&self) -> Option<&str> {
        self.access_summary.as_ref().and_then(AccessSummary::url)
    }
}

/// `{ items }` of `GET /resources`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct ResourceList {
    pub items: Vec<ResourceRecord>,
}

/// `POST /resources/{resourceId}/archive`: the resource takes no deployments or changes
/// until restored; its runtime, route and history stay.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveResource {
    /// Why (at most 280 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// Longest `reason` of an archive.
pub const ARCHIVE_REASON_MAX: usize = 280;
/// Longest `idempotencyKey` of an archive or a deletion.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

impl ArchiveResource {
    /// `reason` is measured without the spaces around it (those are not stored).
    pub fn validate(&self) -> Checked {
        if let Some(reason) = &self.reason {
            bounded("reason", reason.trim(), ARCHIVE_REASON_MAX)?;
        }
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

impl DeleteResource {
    pub fn validate(&self) -> Checked {
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// `POST /resources/{resourceId}/restore` (and `POST /projects/{projectId}/restore`): no
/// field.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct RestoreResource {}
