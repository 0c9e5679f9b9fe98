//! The one input model of a Resource's services, source and profiles (spec §2.2 "Resource
//! source input", "Network profile", "Access profile" and the runtime profile). `POST
//! /resources` and every `POST /resources/{id}/…` update take these shapes and pass the same
//! `validate`; its limits are `berth_crds::limits`, the ones the Resource CRD's schema holds,
//! so a REST call and a YAML apply accept the same values. Errors are 422s naming the field by
//! its JSON path (`networkProfile.hostPort`) and saying what is allowed.

use std::collections::{BTreeMap, HashSet};

use berth_crds::common::SourceDescriptor;
use berth_crds::limits::{
    DNS_LABEL_MAX, HEALTH_CHECK_RETRIES_MAX, HEALTH_CHECK_SECONDS_MAX, HTTP_STATUS_MAX,
    HTTP_STATUS_MIN, MAX_PORT_NUMBER, SOURCE_DISPLAY_NAME_MAX, SOURCE_KIND_MAX, TCP_PORT_MAX,
    TEXT_MAX, URL_PATH_MAX,
};
use berth_crds::resource::{
    AccessProfile, ExposureMode, GeneratedAccessMode, HealthCheck, NetworkProfile, ResourceService,
    RestartPolicy, RuntimeProfile, ServiceKind, UpstreamProtocol,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{bounded, dns_label};
use crate::error::{ApiError, ApiResult};

/// One service of a resource.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceInput {
    /// A DNS label (1-63 lowercase letters, digits or dashes), unique in the resource.
    pub name: String,
    pub kind: ServiceKind,
}

impl ServiceInput {
    /// Checks every service's name, and that no name repeats.
    pub fn validate_all(services: &[ServiceInput]) -> ApiResult<()> {
        let mut seen = HashSet::new();
        for (i, service) in services.iter().enumerate() {
            let field = format!("services[{i}].name");
            dns_label(&field, &service.name, DNS_LABEL_MAX)?;
            if !seen.insert(service.name.as_str()) {
                return Err(ApiError::validation(
                    &field,
                    format!("{field}: service names must be unique"),
                ));
            }
        }
        Ok(())
    }

    pub fn into_service(self) -> ResourceService {
        ResourceService {
            name: self.name,
            kind: self.kind,
        }
    }
}

/// Resource source input of spec §2.2.
///
/// Serialised with its empty fields (`null`, `{}`): the digest of that JSON is what
/// `POST /resources/{id}/source` remembers per idempotency key, so its shape must not change.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceInput {
    /// e.g. `docker-image`, `local-folder`, `git`: 1-63 lowercase letters, digits or dashes.
    pub kind: String,
    /// An image reference, path or repository URL.
    pub locator: String,
    pub display_name: Option<String>,
    pub base_directory: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl SourceInput {
    pub fn validate(&self) -> ApiResult<()> {
        let field = "source.kind";
        bounded(field, &self.kind, SOURCE_KIND_MAX)?;
        let word = self
            .kind
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !word {
            return Err(ApiError::validation(
                field,
                format!("{field} must be lowercase letters, digits or dashes, e.g. local-folder"),
            ));
        }
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
        )
    }

    pub fn into_descriptor(self) -> SourceDescriptor {
        SourceDescriptor {
            kind: self.kind,
            locator: self.locator,
            display_name: self.display_name,
            base_directory: self.base_directory,
            metadata: self.metadata,
        }
    }
}

/// Network profile of spec §2.2.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkProfileInput {
    /// Port the application listens on (1..9007199254740991).
    pub internal_port: i64,
    /// `http` (default) or `tcp`.
    pub upstream_protocol: Option<UpstreamProtocol>,
    /// `reverse-proxy` (default), `direct-port` or `none`.
    pub exposure_mode: Option<ExposureMode>,
    /// Service that receives traffic: one of the resource's services when it has any (a DNS
    /// label).
    pub target_service_name: Option<String>,
    /// Host port for `direct-port` exposure (1..9007199254740991).
    pub host_port: Option<i64>,
}

impl NetworkProfileInput {
    /// Checks the profile against spec §8 and the names of the resource's services.
    pub fn validate<'a>(&self, services: impl IntoIterator<Item = &'a str>) -> ApiResult<()> {
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
            return Err(ApiError::validation(
                field,
                format!("{field} must name one of the resource's services"),
            ));
        }
        Ok(())
    }

    pub fn into_profile(self) -> NetworkProfile {
        NetworkProfile {
            internal_port: self.internal_port,
            upstream_protocol: self.upstream_protocol.unwrap_or_default(),
            exposure_mode: self.exposure_mode.unwrap_or_default(),
            target_service_name: self.target_service_name,
            host_port: self.host_port,
        }
    }
}

/// Access profile of spec §2.2.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccessProfileInput {
    /// `inherit` (default) or `disabled`.
    pub generated_access_mode: Option<GeneratedAccessMode>,
    /// Path prefix, starting with `/` (default `/`).
    pub path_prefix: Option<String>,
}

impl AccessProfileInput {
    pub fn validate(&self) -> ApiResult<()> {
        absolute_path("accessProfile.pathPrefix", self.path_prefix.as_ref())
    }

    pub fn into_profile(self) -> AccessProfile {
        AccessProfile {
            generated_access_mode: self.generated_access_mode.unwrap_or_default(),
            path_prefix: self.path_prefix.unwrap_or_else(|| "/".into()),
        }
    }
}

/// How the resource is built and run; fields left out are unset.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuntimeProfileInput {
    /// e.g. `dockerfile`, `docker-image`, `static`.
    pub strategy: Option<String>,
    pub install_command: Option<String>,
    pub build_command: Option<String>,
    pub start_command: Option<String>,
    /// Directory a static site serves, relative to the source.
    pub publish_directory: Option<String>,
    /// Health check a new container must pass before it takes traffic. An update that leaves
    /// it out keeps the resource's current one.
    pub health_check: Option<HealthCheckInput>,
    /// `unless-stopped` (default), `always`, `on-failure` or `never`.
    pub restart_policy: Option<RestartPolicy>,
}

impl RuntimeProfileInput {
    pub fn validate(&self) -> ApiResult<()> {
        let texts = [
            ("runtimeProfile.strategy", &self.strategy),
            ("runtimeProfile.installCommand", &self.install_command),
            ("runtimeProfile.buildCommand", &self.build_command),
            ("runtimeProfile.startCommand", &self.start_command),
            ("runtimeProfile.publishDirectory", &self.publish_directory),
        ];
        for (field, value) in texts {
            optional_text(field, value.as_ref(), TEXT_MAX)?;
        }
        self.health_check
            .as_ref()
            .map_or(Ok(()), HealthCheckInput::validate)
    }

    /// The profile to store; `current_health_check` is kept when the input has none.
    pub fn into_profile(
        self,
        current_health_check: Option<HealthCheck>,
    ) -> ApiResult<RuntimeProfile> {
        let health_check = match self.health_check {
            Some(input) => Some(input.into_health_check()?),
            None => current_health_check,
        };
        Ok(RuntimeProfile {
            strategy: self.strategy,
            install_command: self.install_command,
            build_command: self.build_command,
            start_command: self.start_command,
            publish_directory: self.publish_directory,
            health_check,
            restart_policy: self.restart_policy.unwrap_or_default(),
        })
    }
}

/// An HTTP health check; omitted settings take the platform's defaults.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HealthCheckInput {
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
    pub fn validate(&self) -> ApiResult<()> {
        absolute_path("runtimeProfile.healthCheck.path", self.path.as_ref())?;
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

    /// The stored health check: the input through the CRD type's serde, so the CRD's own
    /// defaults fill what was left out.
    fn into_health_check(self) -> ApiResult<HealthCheck> {
        let field = "runtimeProfile.healthCheck";
        serde_json::to_value(self)
            .and_then(serde_json::from_value)
            .map_err(|e| ApiError::validation(field, format!("{field}: {e}")))
    }
}

/// An optional string of 1..=`max` characters.
pub fn optional_text(field: &str, value: Option<&String>, max: usize) -> ApiResult<()> {
    value.map_or(Ok(()), |text| bounded(field, text, max))
}

/// An optional integer within `min..=max`.
pub fn in_range(field: &str, value: Option<i64>, min: i64, max: i64) -> ApiResult<()> {
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(ApiError::validation(
            field,
            format!("{field} must be from {min} to {max}"),
        )
        .with_detail("min", min)
        .with_detail("max", max)),
        _ => Ok(()),
    }
}

/// An optional URL path: 1..=`URL_PATH_MAX` characters starting with `/`.
fn absolute_path(field: &str, value: Option<&String>) -> ApiResult<()> {
    optional_text(field, value, URL_PATH_MAX)?;
    if value.is_some_and(|p| !p.starts_with('/')) {
        return Err(ApiError::validation(
            field,
            format!("{field} must start with /"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn parse<T: DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    fn field_of(result: ApiResult<()>) -> String {
        let error = result.unwrap_err();
        assert_eq!(error.status, 422);
        error.body.details["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn source_kinds_are_words_on_every_endpoint() {
        let source = |kind: &str| parse::<SourceInput>(json!({"kind": kind, "locator": "x"}));
        assert!(source("local-folder").validate().is_ok());
        for bad in [
            "",
            "Docker-Image",
            "git lab",
            &"a".repeat(SOURCE_KIND_MAX + 1),
        ] {
            assert_eq!(field_of(source(bad).validate()), "source.kind", "{bad}");
        }
    }

    #[test]
    fn source_texts_have_the_crd_limits() {
        let source = |extra: Value| {
            let mut value = json!({"kind": "git", "locator": "https://example.com/a.git"});
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
        assert_eq!(error.body.details["max"], MAX_PORT_NUMBER);
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
            (json!({"strategy": ""}), "runtimeProfile.strategy"),
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

    #[test]
    fn conversions_apply_the_crd_defaults_and_keep_the_health_check() {
        let network = parse::<NetworkProfileInput>(json!({"internalPort": 8080})).into_profile();
        assert_eq!(network.exposure_mode, ExposureMode::ReverseProxy);
        assert_eq!(network.upstream_protocol, UpstreamProtocol::Http);
        let access = AccessProfileInput::default().into_profile();
        assert_eq!(access.path_prefix, "/");
        let runtime = parse::<RuntimeProfileInput>(json!({"healthCheck": {"path": "/healthz"}}))
            .into_profile(None)
            .unwrap();
        let check = runtime.health_check.clone().unwrap();
        assert_eq!(
            (check.path.as_str(), check.expected_status_code),
            ("/healthz", 200)
        );
        assert_eq!(runtime.restart_policy, RestartPolicy::UnlessStopped);
        let kept = RuntimeProfileInput::default()
            .into_profile(Some(check.clone()))
            .unwrap();
        assert_eq!(kept.health_check, Some(check));
    }
}
