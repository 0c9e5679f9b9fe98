//! The one input model of a Resource's services, source and profiles (spec §2.2 "Resource
//! source input", "Network profile", "Access profile" and the runtime profile). `POST
//! /resources` and every `POST /resources/{id}/…` update take these shapes and pass the same
//! `validate`; its limits are [`crate::limits`], the CRD schema's. Errors name the field by its
//! JSON path (`networkProfile.hostPort`) and say what is allowed.
//!
//! The enums are the Resource CRD's own (defined in `berth-vocabulary`, re-exported here and by
//! `berth-crds`), so a request, the stored spec and the response records spell the same values
//! by one definition.

use std::collections::{BTreeMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::build::{BuildStrategy, SourceFields, check_source};
use crate::limits::{
    DNS_LABEL_MAX, HEALTH_CHECK_RETRIES_MAX, HEALTH_CHECK_SECONDS_MAX, HTTP_STATUS_MAX,
    HTTP_STATUS_MIN, MAX_PORT_NUMBER, SOURCE_DISPLAY_NAME_MAX, SOURCE_KIND_MAX, TCP_PORT_MAX,
    TEXT_MAX,
};
use crate::validate::{
    Checked, FieldError, absolute_path, bounded, dns_label, in_range, optional_text,
};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::resource_input::{
    ExposureMode, FirstDeployment, GeneratedAccessMode, HealthCheckKind, ResourceKind,
    RestartPolicy, ServiceKind, UpstreamProtocol,
};

/// One service of a resource.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceInput {
    /// A DNS label (1-63 lowercase letters, digits or dashes), unique in the resource.
    pub name: String,
    pub kind: ServiceKind,
}

impl ServiceInput {
    /// Checks every service's name, and that no name repeats.
    pub fn validate_all(services: &[ServiceInput]) -> Checked {
        let mut seen = HashSet::new();
        for (i, service) in services.iter().enumerate() {
            let field = format!("services[{i}].name");
            dns_label(&field, &service.name, DNS_LABEL_MAX)?;
            if !seen.insert(service.name.as_str()) {
                return Err(FieldError::new(
                    &field,
                    format!("{field}: service names must be unique"),
                ));
            }
        }
        Ok(())
    }
}

/// Resource source input of spec §2.2, with Appaloft's `gitRef` and `commitSha`.
///
/// Serialised with its empty fields (`null`, `{}`): the digest of that JSON is what
/// `POST /resources/{id}/source` remembers per idempotency key, so its shape must not change
/// (the git fields, added later, are left out when absent).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceInput {
    /// `docker-image`, `local-folder`, `local-git`, `remote-git`, `git-public` or
    /// `git-deploy-key`.
    pub kind: String,
    /// An image reference, an absolute path on the controller, or a repository URL
    /// (`https://…`, `ssh://…`, `git@host:owner/repo.git`, `git://…`).
    pub locator: String,
    pub display_name: Option<String>,
    /// Directory inside the source to build from (relative, no `..`).
    pub base_directory: Option<String>,
    /// Branch, tag or ref of a git source; its default branch when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Commit of a git source (40 or 64 hex digits); the ref's newest when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    /// `credentialId` (the SSH credential of a deploy key) and `hostKeyFingerprint` (the git
    /// host's key, `SHA256:…`) for repositories read over SSH; nothing else.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl SourceInput {
    /// A source of `kind` at `locator`, nothing else set.
    pub fn new(kind: &str, locator: &str) -> Self {
        Self {
            kind: kind.to_string(),
            locator: locator.to_string(),
            display_name: None,
            base_directory: None,
            git_ref: None,
            commit_sha: None,
            metadata: BTreeMap::new(),
        }
    }

    pub fn validate(&self) -> Checked {
        bounded("source.kind", &self.kind, SOURCE_KIND_MAX)?;
        bounded("source.locator", &self.locator, TEXT_MAX)?;
        optional_text(
            "source.displayName",
            self.display_name.as_ref(),
            SOURCE_DISPLAY_NAME_MAX,
        )?;
        optional_text(
            "source.baseDirectory",
            self.base_directory.as_ref(),
            TEXT_MAX,
        )?;
        check_source(SourceFields {
            kind: &self.kind,
            locator: &self.locator,
            base_directory: self.base_directory.as_deref(),
            git_ref: self.git_ref.as_deref(),
            commit_sha: self.commit_sha.as_deref(),
            metadata: &self.metadata,
        })
        .map(drop)
    }
}

/// Network profile of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkProfileInput {
    /// Port the application listens on (1..9007199254740991).
    pub internal_port: i64,
    /// `http` (default) or `tcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_protocol: Option<UpstreamProtocol>,
    /// `reverse-proxy` (default), `direct-port` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure_mode: Option<ExposureMode>,
    /// Service that receives traffic: one of the resource's services when it has any (a DNS
    /// label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_service_name: Option<String>,
    /// Host port for `direct-port` exposure (1..9007199254740991).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i64>,
}

impl NetworkProfileInput {
    /// A profile with only the internal port set.
    pub fn port(internal_port: i64) -> Self {
        Self {
            internal_port,
            upstream_protocol: None,
            exposure_mode: None,
            target_service_name: None,
            host_port: None,
        }
    }

    /// Checks the profile against spec §8 and the names of the resource's services.
    pub fn validate<'a>(&self, services: impl IntoIterator<Item = &'a str>) -> Checked {
        let port = |field, value| in_range(field, Some(value), 1, MAX_PORT_NUMBER);
        port("networkProfile.internalPort", self.internal_port)?;
        if let Some(host_port) = self.host_port {
            port("networkProfile.hostPort", host_port)?;
        }
        let field = "networkProfile.targetServiceName";
        let Some(name) = &self.target_service_name else {
            return Ok(());
        };
        dns_label(field, name, DNS_LABEL_MAX)?;
        let mut services = services.into_iter().peekable();
        if services.peek().is_some() && !services.any(|s| s == name) {
            return Err(FieldError::new(
                field,
                format!("{field} must name one of the resource's services"),
            ));
        }
        Ok(())
    }
}

/// Access profile of spec §2.2.
#[derive(Deserialize, Serialize, JsonSchema, Default, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccessProfileInput {
    /// `inherit` (default) or `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_access_mode: Option<GeneratedAccessMode>,
    /// Path prefix, starting with `/` (default `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
}

impl AccessProfileInput {
    pub fn validate(&self) -> Checked {
        absolute_path("accessProfile.pathPrefix", self.path_prefix.as_ref())
    }
}

/// How the resource is built and run; fields left out are unset. A field the resource's
/// source and strategy would not use is refused, naming it.
#[derive(Deserialize, Serialize, JsonSchema, Default, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeProfileInput {
    /// `auto` (default), `dockerfile`, `docker-compose`, `prebuilt-image`,
    /// `workspace-commands` or `static`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<BuildStrategy>,
    /// Run in the build on `baseImage` (`workspace-commands`, `static`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_command: Option<String>,
    /// Run in the build after the install command (`workspace-commands`, `static`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_command: Option<String>,
    /// Run by `/bin/sh -c` in place of the image's command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_command: Option<String>,
    /// Directory a static site serves, relative to the base directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish_directory: Option<String>,
    /// Image the commands run on, e.g. `node:22-alpine`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_image: Option<String>,
    /// Dockerfile to build, relative to the base directory (default `Dockerfile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dockerfile_path: Option<String>,
    /// Stage of a multi-stage Dockerfile to build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_target: Option<String>,
    /// Compose file of a `compose-stack`, relative to the base directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_compose_file_path: Option<String>,
    /// Health check a new container must pass before it takes traffic. An update that leaves
    /// it out keeps the resource's current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckInput>,
    /// `unless-stopped` (default), `always`, `on-failure` or `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
}

impl RuntimeProfileInput {
    pub fn validate(&self) -> Checked {
        let texts = [
            ("runtimeProfile.installCommand", &self.install_command),
            ("runtimeProfile.buildCommand", &self.build_command),
            ("runtimeProfile.startCommand", &self.start_command),
            ("runtimeProfile.publishDirectory", &self.publish_directory),
            ("runtimeProfile.baseImage", &self.base_image),
            ("runtimeProfile.dockerfilePath", &self.dockerfile_path),
            ("runtimeProfile.buildTarget", &self.build_target),
            (
                "runtimeProfile.dockerComposeFilePath",
                &self.docker_compose_file_path,
            ),
        ];
        for (field, value) in texts {
            optional_text(field, value.as_ref(), TEXT_MAX)?;
        }
        self.health_check
            .as_ref()
            .map_or(Ok(()), HealthCheckInput::validate)
    }
}

/// A health check; omitted settings take the platform's defaults.
#[derive(Deserialize, Serialize, JsonSchema, Default, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HealthCheckInput {
    /// `http` (default) or `command`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<HealthCheckKind>,
    /// With `type: command`: run by `/bin/sh -c` in the container; exit 0 is healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Request path, starting with `/` (default `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Container port (1-65535); the network profile's internal port when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Status a healthy container answers (100-599, default 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_status_code: Option<i64>,
    /// Seconds between probes (1-86400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i64>,
    /// Seconds before a probe fails (1-86400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Failed probes in a row before giving up (0-1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    /// Seconds after start during which failures do not count (0-86400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_period_seconds: Option<i64>,
}

impl HealthCheckInput {
    pub fn validate(&self) -> Checked {
        absolute_path("runtimeProfile.healthCheck.path", self.path.as_ref())?;
        let field = "runtimeProfile.healthCheck.command";
        optional_text(field, self.command.as_ref(), TEXT_MAX)?;
        match (self.kind.unwrap_or_default(), &self.command) {
            (HealthCheckKind::Command, None) => {
                return Err(FieldError::new(
                    field,
                    format!("{field} is required with type command"),
                ));
            }
            (HealthCheckKind::Http, Some(_)) => {
                return Err(FieldError::new(
                    field,
                    format!("{field} is allowed with type command only"),
                ));
            }
            _ => {}
        }
        let seconds = HEALTH_CHECK_SECONDS_MAX;
        let limits = [
            ("port", self.port, 1, TCP_PORT_MAX),
            (
                "expectedStatusCode",
                self.expected_status_code,
                HTTP_STATUS_MIN,
                HTTP_STATUS_MAX,
            ),
            ("intervalSeconds", self.interval_seconds, 1, seconds),
            ("timeoutSeconds", self.timeout_seconds, 1, seconds),
            ("retries", self.retries, 0, HEALTH_CHECK_RETRIES_MAX),
            ("startPeriodSeconds", self.start_period_seconds, 0, seconds),
        ];
        for (name, value, min, max) in limits {
            in_range(
                &format!("runtimeProfile.healthCheck.{name}"),
                value,
                min,
                max,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::URL_PATH_MAX;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn parse<T: DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    fn field_of(result: Checked) -> String {
        result.unwrap_err().field
    }

    #[test]
    fn source_kinds_are_the_ones_berth_deploys() {
        let source = |kind: &str| parse::<SourceInput>(json!({"kind": kind, "locator": "/x"}));
        assert!(source("local-folder").validate().is_ok());
        for bad in [
            "",
            "Docker-Image",
            "git lab",
            "git",
            &"a".repeat(SOURCE_KIND_MAX + 1),
        ] {
            assert_eq!(field_of(source(bad).validate()), "source.kind", "{bad}");
        }
    }

    #[test]
    fn source_texts_have_the_crd_limits() {
        let source = |extra: Value| {
            let mut value = json!({"kind": "remote-git", "locator": "https://example.com/a.git"});
            value
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            parse::<SourceInput>(value).validate()
        };
        let long = |n: usize| "a".repeat(n);
        assert!(source(json!({"displayName": long(SOURCE_DISPLAY_NAME_MAX)})).is_ok());
        let cases = [
            (json!({"locator": ""}), "source.locator"),
            (json!({"locator": long(TEXT_MAX + 1)}), "source.locator"),
            (
                json!({"displayName": long(SOURCE_DISPLAY_NAME_MAX + 1)}),
                "source.displayName",
            ),
            (json!({"baseDirectory": ""}), "source.baseDirectory"),
        ];
        for (extra, field) in cases {
            assert_eq!(field_of(source(extra)), field);
        }
    }

    /// `POST /resources/{id}/source` stores the digest of this JSON per idempotency key; a
    /// changed shape would turn every remembered repeat into a 409.
    #[test]
    fn source_digest_input_keeps_its_shape() {
        let source = parse::<SourceInput>(json!({"kind": "local-folder", "locator": "/srv/app"}));
        assert_eq!(
            serde_json::to_string(&source).unwrap(),
            r#"{"kind":"local-folder","locator":"/srv/app","displayName":null,"baseDirectory":null,"metadata":{}}"#
        );
    }

    #[test]
    fn target_service_names_are_labels_of_the_resource() {
        let network = |target: &str| {
            parse::<NetworkProfileInput>(json!({"internalPort": 80, "targetServiceName": target}))
        };
        let field = "networkProfile.targetServiceName";
        assert!(network("web").validate([]).is_ok());
        assert!(network("web").validate(["api", "web"]).is_ok());
        assert_eq!(field_of(network("web").validate(["api"])), field);
        assert_eq!(field_of(network("").validate([])), field);
        assert_eq!(field_of(network("Web").validate([])), field);
        // 64 characters: accepted by updates before, but never a service name.
        assert_eq!(field_of(network(&"a".repeat(64)).validate([])), field);
    }

    #[test]
    fn ports_run_to_the_largest_json_integer() {
        let network = |value: Value| parse::<NetworkProfileInput>(value).validate([]);
        assert!(network(json!({"internalPort": MAX_PORT_NUMBER, "hostPort": 1})).is_ok());
        let cases = [
            (json!({"internalPort": 0}), "networkProfile.internalPort"),
            (
                json!({"internalPort": MAX_PORT_NUMBER + 1}),
                "networkProfile.internalPort",
            ),
            (
                json!({"internalPort": 80, "hostPort": -1}),
                "networkProfile.hostPort",
            ),
        ];
        for (value, field) in cases {
            assert_eq!(field_of(network(value)), field);
        }
        let error = network(json!({"internalPort": 0})).unwrap_err();
        assert_eq!(error.max, Some(MAX_PORT_NUMBER));
    }

    #[test]
    fn services_are_unique_labels() {
        let services = |value: Value| ServiceInput::validate_all(&parse::<Vec<_>>(value));
        assert!(
            services(json!([{"name": "web", "kind": "web"}, {"name": "api", "kind": "api"}]))
                .is_ok()
        );
        let cases = [
            (json!([{"name": "", "kind": "web"}]), "services[0].name"),
            (json!([{"name": "Web", "kind": "web"}]), "services[0].name"),
            (
                json!([{"name": "a", "kind": "web"}, {"name": "a", "kind": "api"}]),
                "services[1].name",
            ),
        ];
        for (value, field) in cases {
            assert_eq!(field_of(services(value)), field);
        }
    }

    #[test]
    fn paths_are_absolute() {
        let access = |p: &str| parse::<AccessProfileInput>(json!({"pathPrefix": p}));
        assert!(access("/api").validate().is_ok());
        for bad in ["", "api", &format!("/{}", "a".repeat(URL_PATH_MAX))] {
            assert_eq!(field_of(access(bad).validate()), "accessProfile.pathPrefix");
        }
        let runtime =
            |check: Value| parse::<RuntimeProfileInput>(json!({"healthCheck": check})).validate();
        assert_eq!(
            field_of(runtime(json!({"path": "healthz"}))),
            "runtimeProfile.healthCheck.path"
        );
    }

    #[test]
    fn runtime_profiles_are_checked_alike_on_create_and_update() {
        let runtime = |value: Value| parse::<RuntimeProfileInput>(value).validate();
        let cases = [
            (
                json!({"baseImage": "a".repeat(TEXT_MAX + 1)}),
                "runtimeProfile.baseImage",
            ),
            (
                json!({"buildCommand": "a".repeat(TEXT_MAX + 1)}),
                "runtimeProfile.buildCommand",
            ),
            (
                json!({"healthCheck": {"expectedStatusCode": 99}}),
                "runtimeProfile.healthCheck.expectedStatusCode",
            ),
            (
                json!({"healthCheck": {"intervalSeconds": HEALTH_CHECK_SECONDS_MAX + 1}}),
                "runtimeProfile.healthCheck.intervalSeconds",
            ),
            (
                json!({"healthCheck": {"port": TCP_PORT_MAX + 1}}),
                "runtimeProfile.healthCheck.port",
            ),
        ];
        for (value, field) in cases {
            assert_eq!(field_of(runtime(value)), field);
        }
    }
}
