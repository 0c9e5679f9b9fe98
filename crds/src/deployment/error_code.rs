//! The stable codes of a failed attempt (`lastError.code`), as the README lists them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why an attempt stopped: the stable `lastError.code` users match on (listed in the README,
/// "Deployment error codes"). Also the reason of the Event the attempt ends with.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentErrorCode {
    /// The attempt was canceled on request (`spec.cancelRequested`).
    Canceled,
    /// A newer attempt for the same resource started; this one stopped.
    Superseded,
    /// The Deployment was deleted while its attempt ran.
    Deleted,
    /// A phase did not finish within its deadline.
    PhaseTimeout,
    /// The Resource named by `spec.resourceId` does not exist.
    ResourceNotFound,
    /// The server exists but cannot take deployments (for example, its credential is invalid).
    ServerNotReady,
    /// The server's SSH connection, Docker or proxy did not answer.
    ServerUnreachable,
    /// Neither the attempt nor the resource declares a source.
    SourceMissing,
    /// The source kind is not one this controller deploys.
    SourceKindUnsupported,
    /// A `local-folder` locator is not an absolute directory path.
    SourceLocatorInvalid,
    /// The source's `baseDirectory` leaves the source folder.
    BaseDirectoryInvalid,
    /// `runtimeProfile.publishDirectory` leaves the source folder.
    PublishDirectoryInvalid,
    /// The source's `metadata.dockerfile` leaves the source folder.
    DockerfilePathInvalid,
    /// The server's proxy image, which serves static sites, is not an image reference.
    ProxyImageInvalid,
    /// A field of the resource's spec would not take effect for its source and strategy.
    FieldNotSupported,
    /// No longer given (an app without a `networkProfile` deploys without a route); kept so
    /// attempts recorded with it still read.
    NetworkProfileMissing,
    /// `networkProfile.internalPort` is not a TCP port.
    InternalPortInvalid,
    /// `upstreamProtocol: tcp` with `exposureMode: reverse-proxy`, which routes HTTP only.
    TcpReverseProxyUnsupported,
    /// `exposureMode: direct-port` without `networkProfile.hostPort`.
    HostPortMissing,
    /// `networkProfile.hostPort` is not a TCP port.
    HostPortInvalid,
    /// A storage attachment names a StorageVolume that does not exist.
    StorageVolumeNotFound,
    /// An attached StorageVolume cannot be mounted: it breaks the `sourcePath` rule or belongs
    /// to another environment.
    StorageVolumeInvalid,
    /// The `local-folder` source is not a directory the controller can read.
    SourceFolderNotFound,
    /// The source folder has no Dockerfile at the expected path.
    DockerfileNotFound,
    /// `auto` found neither a Dockerfile nor an `index.html` to decide how to build.
    BuildStrategyUndetermined,
    /// The git repository, ref or commit could not be fetched (or the host refused the key).
    SourceFetchFailed,
    /// The git host did not answer or the connection broke (retried).
    SourceUnreachable,
    /// The git host's SSH key is not the pinned one.
    SourceHostKeyMismatch,
    /// The SshCredential of a deploy key does not exist or holds no usable key.
    DeployKeyInvalid,
    /// The Compose file is missing, unreadable, or asks for what a Berth stack cannot do.
    ComposeFileInvalid,
    /// A service of the stack did not start, or did not reach its `depends_on` condition.
    ComposeServiceFailed,
    /// A file of the build context could not be read.
    BuildContextUnreadable,
    /// The build context exceeds the upload limit.
    BuildContextTooLarge,
    /// Docker refused the build, or it produced no image.
    BuildFailed,
    /// The registry refused the pull, or it left no image on the server.
    ImagePullFailed,
    /// The Secret named by `imagePullSecretRef` does not exist.
    ImagePullSecretMissing,
    /// The Secret named by `imagePullSecretRef` could not be read.
    ImagePullSecretUnreadable,
    /// The Secret named by `imagePullSecretRef` holds no usable credentials.
    ImagePullSecretInvalid,
    /// The server's Docker failed on the way (not a refusal of the build or pull itself).
    DockerError,
    /// Docker could not create or start the container.
    ContainerStartFailed,
    /// The new container did not pass its health check; the old one keeps serving.
    HealthCheckFailed,
    /// `runtimeProfile.healthCheck` cannot be carried out (a command check without a command,
    /// an http check of an app with no port).
    HealthCheckInvalid,
    /// The new container exited (or was killed) before it was healthy: its exit code and
    /// last output are in the timeline.
    ContainerExited,
    /// The start command (or the image's) was not found or not executable (exit 126 or 127).
    StartCommandNotFound,
    /// Nothing listens on the probed port; the ports the app listens on are in the message.
    PortNotListening,
    /// The health check answered, but not with the expected status.
    HealthCheckUnexpectedStatus,
    /// The health check got no answer in time while the container kept running.
    HealthCheckTimedOut,
    /// The edge proxy's route or the upstream name could not be switched to the new container.
    RouteSwitchFailed,
    /// A dependency binding names a DependencyResource that does not exist, is being deleted,
    /// or belongs to another project or environment.
    DependencyBindingInvalid,
    /// A bound DependencyResource has no connection yet (still being provisioned); with
    /// auto-deploy on, the resource deploys again once it has one.
    DependencyNotReady,
}

impl DeploymentErrorCode {
    /// Every code, in the order the README lists them.
    pub const ALL: [Self; 50] = [
        Self::Canceled,
        Self::Superseded,
        Self::Deleted,
        Self::PhaseTimeout,
        Self::ResourceNotFound,
        Self::ServerNotReady,
        Self::ServerUnreachable,
        Self::SourceMissing,
        Self::SourceKindUnsupported,
        Self::SourceLocatorInvalid,
        Self::BaseDirectoryInvalid,
        Self::PublishDirectoryInvalid,
        Self::DockerfilePathInvalid,
        Self::ProxyImageInvalid,
        Self::FieldNotSupported,
        Self::NetworkProfileMissing,
        Self::InternalPortInvalid,
        Self::TcpReverseProxyUnsupported,
        Self::HostPortMissing,
        Self::HostPortInvalid,
        Self::StorageVolumeNotFound,
        Self::StorageVolumeInvalid,
        Self::SourceFolderNotFound,
        Self::DockerfileNotFound,
        Self::BuildStrategyUndetermined,
        Self::SourceFetchFailed,
        Self::SourceUnreachable,
        Self::SourceHostKeyMismatch,
        Self::DeployKeyInvalid,
        Self::ComposeFileInvalid,
        Self::ComposeServiceFailed,
        Self::BuildContextUnreadable,
        Self::BuildContextTooLarge,
        Self::BuildFailed,
        Self::ImagePullFailed,
        Self::ImagePullSecretMissing,
        Self::ImagePullSecretUnreadable,
        Self::ImagePullSecretInvalid,
        Self::DockerError,
        Self::ContainerStartFailed,
        Self::HealthCheckFailed,
        Self::HealthCheckInvalid,
        Self::ContainerExited,
        Self::StartCommandNotFound,
        Self::PortNotListening,
        Self::HealthCheckUnexpectedStatus,
        Self::HealthCheckTimedOut,
        Self::RouteSwitchFailed,
        Self::DependencyBindingInvalid,
        Self::DependencyNotReady,
    ];

    /// The code as it is serialised in `lastError.code`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Canceled => "canceled",
            Self::Superseded => "superseded",
            Self::Deleted => "deleted",
            Self::PhaseTimeout => "phase_timeout",
            Self::ResourceNotFound => "resource_not_found",
            Self::ServerNotReady => "server_not_ready",
            Self::ServerUnreachable => "server_unreachable",
            Self::SourceMissing => "source_missing",
            Self::SourceKindUnsupported => "source_kind_unsupported",
            Self::SourceLocatorInvalid => "source_locator_invalid",
            Self::BaseDirectoryInvalid => "base_directory_invalid",
            Self::PublishDirectoryInvalid => "publish_directory_invalid",
            Self::DockerfilePathInvalid => "dockerfile_path_invalid",
            Self::ProxyImageInvalid => "proxy_image_invalid",
            Self::FieldNotSupported => "field_not_supported",
            Self::NetworkProfileMissing => "network_profile_missing",
            Self::InternalPortInvalid => "internal_port_invalid",
            Self::TcpReverseProxyUnsupported => "tcp_reverse_proxy_unsupported",
            Self::HostPortMissing => "host_port_missing",
            Self::HostPortInvalid => "host_port_invalid",
            Self::StorageVolumeNotFound => "storage_volume_not_found",
            Self::StorageVolumeInvalid => "storage_volume_invalid",
            Self::SourceFolderNotFound => "source_folder_not_found",
            Self::DockerfileNotFound => "dockerfile_not_found",
            Self::BuildStrategyUndetermined => "build_strategy_undetermined",
            Self::SourceFetchFailed => "source_fetch_failed",
            Self::SourceUnreachable => "source_unreachable",
            Self::SourceHostKeyMismatch => "source_host_key_mismatch",
            Self::DeployKeyInvalid => "deploy_key_invalid",
            Self::ComposeFileInvalid => "compose_file_invalid",
            Self::ComposeServiceFailed => "compose_service_failed",
            Self::BuildContextUnreadable => "build_context_unreadable",
            Self::BuildContextTooLarge => "build_context_too_large",
            Self::BuildFailed => "build_failed",
            Self::ImagePullFailed => "image_pull_failed",
            Self::ImagePullSecretMissing => "image_pull_secret_missing",
            Self::ImagePullSecretUnreadable => "image_pull_secret_unreadable",
            Self::ImagePullSecretInvalid => "image_pull_secret_invalid",
            Self::DockerError => "docker_error",
            Self::ContainerStartFailed => "container_start_failed",
            Self::HealthCheckFailed => "health_check_failed",
            Self::HealthCheckInvalid => "health_check_invalid",
            Self::ContainerExited => "container_exited",
            Self::StartCommandNotFound => "start_command_not_found",
            Self::PortNotListening => "port_not_listening",
            Self::HealthCheckUnexpectedStatus => "health_check_unexpected_status",
            Self::HealthCheckTimedOut => "health_check_timed_out",
            Self::RouteSwitchFailed => "route_switch_failed",
            Self::DependencyBindingInvalid => "dependency_binding_invalid",
            Self::DependencyNotReady => "dependency_not_ready",
        }
    }
}

impl std::fmt::Display for DeploymentErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Clients (and tests) compare a code with its wire spelling.
impl PartialEq<str> for DeploymentErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for DeploymentErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
