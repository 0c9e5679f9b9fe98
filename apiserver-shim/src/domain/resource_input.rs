//! The input model of a Resource's services, source and profiles is `berth-api`'s (the CLI
//! sends it); here it becomes the Resource CRD's types. The checks are `berth-api`'s too
//! (`validate`), so a REST call and the CLI refuse the same values; their limits equal
//! `berth_crds::limits`, the CRD schema's, as the tests below hold.

use berth_crds::common::SourceDescriptor;
use berth_crds::resource::{
    AccessProfile, HealthCheck, NetworkProfile, ResourceService, RuntimeProfile,
};

use crate::error::{ApiError, ApiResult};

pub use berth_api::resource_input::{
    AccessProfileInput, HealthCheckInput, NetworkProfileInput, RuntimeProfileInput, ServiceInput,
    SourceInput,
};

/// An optional string of 1..=`max` characters.
pub fn optional_text(field: &str, value: Option<&String>, max: usize) -> ApiResult<()> {
    Ok(berth_api::validate::optional_text(field, value, max)?)
}

/// An optional integer within `min..=max`.
pub fn in_range(field: &str, value: Option<i64>, min: i64, max: i64) -> ApiResult<()> {
    Ok(berth_api::validate::in_range(field, value, min, max)?)
}

pub fn service(input: ServiceInput) -> ResourceService {
    ResourceService {
        name: input.name,
        kind: input.kind,
    }
}

pub fn source_descriptor(input: SourceInput) -> SourceDescriptor {
    SourceDescriptor {
        kind: input.kind,
        locator: input.locator,
        display_name: input.display_name,
        base_directory: input.base_directory,
        git_ref: input.git_ref,
        commit_sha: input.commit_sha,
        metadata: input.metadata,
    }
}

pub fn network_profile(input: NetworkProfileInput) -> NetworkProfile {
    NetworkProfile {
        internal_port: input.internal_port,
        upstream_protocol: input.upstream_protocol.unwrap_or_default(),
        exposure_mode: input.exposure_mode.unwrap_or_default(),
        target_service_name: input.target_service_name,
        host_port: input.host_port,
    }
}

pub fn access_profile(input: AccessProfileInput) -> AccessProfile {
    AccessProfile {
        generated_access_mode: input.generated_access_mode.unwrap_or_default(),
        path_prefix: input.path_prefix.unwrap_or_else(|| "/".into()),
    }
}

/// The runtime profile to store; `current_health_check` is kept when the input has none.
pub fn runtime_profile(
    input: RuntimeProfileInput,
    current_health_check: Option<HealthCheck>,
) -> ApiResult<RuntimeProfile> {
    let health_check = match input.health_check {
        Some(check) => Some(health_check(check)?),
        None => current_health_check,
    };
    Ok(RuntimeProfile {
        strategy: input.strategy,
        install_command: input.install_command,
        build_command: input.build_command,
        start_command: input.start_command,
        publish_directory: input.publish_directory,
        base_image: input.base_image,
        dockerfile_path: input.dockerfile_path,
        build_target: input.build_target,
        docker_compose_file_path: input.docker_compose_file_path,
        health_check,
        restart_policy: input.restart_policy.unwrap_or_default(),
    })
}

/// The stored health check: the input through the CRD type's serde, so the CRD's own defaults
/// fill what was left out.
fn health_check(input: HealthCheckInput) -> ApiResult<HealthCheck> {
    let field = "runtimeProfile.healthCheck";
    serde_json::to_value(input)
        .and_then(serde_json::from_value)
        .map_err(|e| ApiError::validation(field, format!("{field}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::resource::{ExposureMode, RestartPolicy, UpstreamProtocol};
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn parse<T: DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_field_error_is_a_422_naming_the_field_and_its_bounds() {
        let network = parse::<NetworkProfileInput>(json!({"internalPort": 0}));
        let error = ApiError::from(network.validate([]).unwrap_err());
        assert_eq!(error.status, 422);
        assert_eq!(error.body.details["field"], "networkProfile.internalPort");
        assert_eq!(error.body.details["min"], 1);
        assert_eq!(
            error.body.details["max"],
            berth_crds::limits::MAX_PORT_NUMBER
        );
    }

    #[test]
    fn conversions_apply_the_crd_defaults_and_keep_the_health_check() {
        let network = network_profile(parse(json!({"internalPort": 8080})));
        assert_eq!(network.exposure_mode, ExposureMode::ReverseProxy);
        assert_eq!(network.upstream_protocol, UpstreamProtocol::Http);
        let access = access_profile(AccessProfileInput::default());
        assert_eq!(access.path_prefix, "/");
        let input = parse(json!({"healthCheck": {"path": "/healthz"}}));
        let runtime = runtime_profile(input, None).unwrap();
        let check = runtime.health_check.clone().unwrap();
        assert_eq!(
            (check.path.as_str(), check.expected_status_code),
            ("/healthz", 200)
        );
        assert_eq!(runtime.restart_policy, RestartPolicy::UnlessStopped);
        let kept = runtime_profile(RuntimeProfileInput::default(), Some(check.clone())).unwrap();
        assert_eq!(kept.health_check, Some(check));
    }
}
