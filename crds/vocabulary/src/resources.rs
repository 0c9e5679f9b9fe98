//! A Resource's services and its network and access profiles (spec §2.2 "Network profile",
//! "Access profile"), stored in its spec and shown as they are by the REST API.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{
    ABSOLUTE_PATH_PATTERN, DNS_LABEL_MAX, DNS_LABEL_PATTERN, MAX_PORT_NUMBER, URL_PATH_MAX,
};
use crate::resource_input::{ExposureMode, GeneratedAccessMode, ServiceKind, UpstreamProtocol};

/// One service of a resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceService {
    /// Service name (a DNS label), unique in the resource.
    #[schemars(length(min = 1, max = DNS_LABEL_MAX), regex(pattern = DNS_LABEL_PATTERN))]
    pub name: String,
    /// What the service does.
    pub kind: ServiceKind,
}

/// Which port a resource listens on and how traffic reaches it (spec §2.2 "Network profile").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkProfile {
    /// Port the application listens on inside the container.
    #[schemars(range(min = 1, max = MAX_PORT_NUMBER))]
    pub internal_port: i64,
    /// `http` (default) or `tcp`.
    #[serde(default)]
    pub upstream_protocol: UpstreamProtocol,
    /// `reverse-proxy` (default), `direct-port` or `none`.
    #[serde(default)]
    pub exposure_mode: ExposureMode,
    /// Service that receives traffic, for resources with several services (a DNS label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = DNS_LABEL_MAX), regex(pattern = DNS_LABEL_PATTERN))]
    pub target_service_name: Option<String>,
    /// Host port published with `direct-port` exposure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_PORT_NUMBER))]
    pub host_port: Option<i64>,
}

/// How the generated access URL behaves (spec §2.2 "Access profile").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessProfile {
    /// `inherit` (default) or `disabled`.
    #[serde(default)]
    pub generated_access_mode: GeneratedAccessMode,
    /// Path prefix the resource is served under.
    #[serde(default = "default_root_path")]
    #[schemars(length(min = 1, max = URL_PATH_MAX), regex(pattern = ABSOLUTE_PATH_PATTERN))]
    pub path_prefix: String,
}

fn default_root_path() -> String {
    "/".to_string()
}
