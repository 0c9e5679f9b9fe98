//! What a container is made of beyond its image, and how Docker is told: a Compose service's
//! settings and the restart policies of Berth's vocabulary, without I/O.

use std::collections::HashMap;

use berth_crds::resource::RestartPolicy as Policy;
use bollard::models::{
    ContainerCreateBody, HealthConfig, Mount, RestartPolicy, RestartPolicyNameEnum,
};

/// What a service's container is made of, beyond its image.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerSettings {
    pub command: Option<Vec<String>>,
    pub entrypoint: Option<Vec<String>>,
    /// `KEY=value`: Berth's runtime variables, then the service's own (which win).
    pub env: Vec<String>,
    pub mounts: Vec<Mount>,
    pub healthcheck: Option<HealthConfig>,
    /// Docker's restart policy name.
    pub restart: Option<String>,
    pub user: Option<String>,
    pub working_dir: Option<String>,
    pub exposed: Vec<String>,
    pub labels: HashMap<String, String>,
    /// The stack network to join, and the names the container answers to there.
    pub network: Option<(String, Vec<String>)>,
    pub stop_grace_seconds: Option<i64>,
}

/// Docker's name of a restart policy.
pub fn docker_restart(policy: berth_crds::resource::RestartPolicy) -> RestartPolicyNameEnum {
    use berth_crds::resource::RestartPolicy as Policy;
    match policy {
        Policy::Never => RestartPolicyNameEnum::NO,
        Policy::Always => RestartPolicyNameEnum::ALWAYS,
        Policy::UnlessStopped => RestartPolicyNameEnum::UNLESS_STOPPED,
        Policy::OnFailure => RestartPolicyNameEnum::ON_FAILURE,
    }
}

/// Writes a service's settings into a container body (the routed container's too, beside
/// what its attempt sets).
pub fn apply_settings(body: &mut ContainerCreateBody, settings: &ContainerSettings) {
    if settings.command.is_some() {
        body.cmd = settings.command.clone();
    }
    if settings.entrypoint.is_some() {
        body.entrypoint = settings.entrypoint.clone();
    }
    body.env = Some(settings.env.clone());
    body.user = settings.user.clone();
    body.working_dir = settings.working_dir.clone();
    body.healthcheck = settings.healthcheck.clone();
    body.labels = Some(settings.labels.clone());
    let exposed = body.exposed_ports.get_or_insert_default();
    for port in &settings.exposed {
        let port = if port.contains('/') {
            port.clone()
        } else {
            format!("{port}/tcp")
        };
        if !exposed.contains(&port) {
            exposed.push(port);
        }
    }
    body.stop_timeout = settings.stop_grace_seconds;
    let host = body.host_config.get_or_insert_default();
    host.mounts
        .get_or_insert_default()
        .extend(settings.mounts.iter().cloned());
    if let Some(restart) = &settings.restart {
        host.restart_policy = Some(RestartPolicy {
            name: Some(docker_restart(match restart.as_str() {
                "no" => Policy::Never,
                "always" => Policy::Always,
                "on-failure" => Policy::OnFailure,
                _ => Policy::UnlessStopped,
            })),
            maximum_retry_count: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_settings_shape_its_container() {
        let settings = ContainerSettings {
            command: Some(vec!["sleep".into(), "60".into()]),
            env: vec!["A=1".into()],
            exposed: vec!["9000".into()],
            restart: Some("on-failure".into()),
            user: Some("1000".into()),
            ..Default::default()
        };
        let mut body = ContainerCreateBody::default();
        apply_settings(&mut body, &settings);
        assert_eq!(body.cmd.unwrap(), ["sleep", "60"]);
        assert_eq!(body.exposed_ports.unwrap(), ["9000/tcp"]);
        assert_eq!(body.user.as_deref(), Some("1000"));
        let policy = body.host_config.unwrap().restart_policy.unwrap();
        assert_eq!(
            policy.name,
            Some(bollard::models::RestartPolicyNameEnum::ON_FAILURE)
        );
    }
}
