//! The enums of a Resource's spec (kind, services, network, access, restart policy, health
//! check): one definition for the CRD, the REST API's requests and records, and the CLI.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a resource is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceKind {
    Application,
    Service,
    Database,
    Cache,
    ComposeStack,
    Worker,
    StaticSite,
    External,
}

/// When a resource is deployed the first time.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FirstDeployment {
    /// As soon as it names a server and a source it can deploy.
    #[default]
    OnCreate,
    /// Only when a deployment is asked for (`POST /deployments`, `berth deploy`): what a
    /// migration creates, so its variables, secrets, volumes and domains exist first.
    OnRequest,
}

impl FirstDeployment {
    pub fn is_on_create(&self) -> bool {
        *self == Self::OnCreate
    }
}

/// What one service of a resource does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceKind {
    Web,
    Api,
    Worker,
    Database,
    Cache,
    Service,
}

/// Protocol the edge proxy speaks to the container.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamProtocol {
    #[default]
    Http,
    Tcp,
}

/// How traffic reaches the container.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExposureMode {
    None,
    #[default]
    ReverseProxy,
    DirectPort,
}

/// Whether a resource gets a generated access URL.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GeneratedAccessMode {
    #[default]
    Inherit,
    Disabled,
}

/// Container restart policy. Docker's `no` is spelled `never` here: YAML 1.1 readers such as
/// kubectl turn a bare `no` into `false`, which a string field then rejects.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    Never,
    Always,
    #[default]
    UnlessStopped,
    OnFailure,
}

impl RestartPolicy {
    /// The policy name as Docker spells it.
    pub fn docker_name(self) -> &'static str {
        match self {
            Self::Never => "no",
            Self::Always => "always",
            Self::UnlessStopped => "unless-stopped",
            Self::OnFailure => "on-failure",
        }
    }
}

/// What a health check does: an HTTP request (or, for `upstreamProtocol: tcp`, a connection)
/// to a port, or a command run in the container (exit 0 is healthy).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HealthCheckKind {
    #[default]
    Http,
    Command,
}
