//! Where a resource can be reached (spec §2.2 "Access summary"): written by the controller into
//! a Resource's status (`berth-crds` re-exports these types) and served as they are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::deployments::DeploymentState;
use crate::servers::ProxyKind;

/// Whether the edge proxy serves a resource's route.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyRouteStatus {
    Unknown,
    Ready,
    NotReady,
    Failed,
}

/// URL scheme of an access route.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AccessScheme {
    Http,
    Https,
}

/// Where a resource can be reached (spec §2.2 "Access summary").
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessSummary {
    /// The generated route the next deployment will serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_generated_access_route: Option<PlannedAccessRoute>,
    /// The generated route the latest deployment serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_generated_access_route: Option<AppliedAccessRoute>,
    /// The latest route through a durable domain binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_durable_domain_route: Option<AppliedAccessRoute>,
    /// The latest domain route applied on the server's edge proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_server_applied_domain_route: Option<AppliedAccessRoute>,
    /// Whether the edge proxy serves the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_route_status: Option<ProxyRouteStatus>,
}

impl AccessSummary {
    /// The URL that serves the resource: the newest applied domain route, else the generated
    /// route, else the one planned for the next deployment.
    pub fn url(&self) -> Option<&str> {
        let applied = [
            &self.latest_server_applied_domain_route,
            &self.latest_durable_domain_route,
            &self.latest_generated_access_route,
        ];
        applied
            .into_iter()
            .flatten()
            .map(|route| route.url.as_str())
            .next()
            .or_else(|| {
                let planned = self.planned_generated_access_route.as_ref();
                planned.map(|route| route.url.as_str())
            })
    }
}

/// A route planned for the next deployment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedAccessRoute {
    /// Full URL.
    pub url: String,
    /// Host name of the URL.
    pub hostname: String,
    /// `http` or `https`.
    pub scheme: AccessScheme,
    /// Edge proxy provider, e.g. `caddy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// Path prefix of the route.
    pub path_prefix: String,
    /// Edge proxy kind.
    pub proxy_kind: ProxyKind,
    /// Container port the route forwards to.
    pub target_port: i64,
}

/// A route a deployment realized.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedAccessRoute {
    /// Full URL.
    pub url: String,
    /// Host name of the URL.
    pub hostname: String,
    /// `http` or `https`.
    pub scheme: AccessScheme,
    /// Edge proxy provider, e.g. `caddy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// Id of the Deployment that realized the route.
    pub deployment_id: String,
    /// Status of that Deployment.
    pub deployment_status: DeploymentState,
    /// Path prefix of the route.
    pub path_prefix: String,
    /// Edge proxy kind.
    pub proxy_kind: ProxyKind,
    /// Container port the route forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<i64>,
    /// When the route was last updated.
    // RFC 3339 in whole seconds, as Kubernetes writes times (`berth_crds::condition::wire_time`).
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(url: &str) -> AppliedAccessRoute {
        AppliedAccessRoute {
            url: url.into(),
            hostname: "h".into(),
            scheme: AccessScheme::Http,
            provider_key: None,
            deployment_id: "dep-1".into(),
            deployment_status: DeploymentState::Succeeded,
            path_prefix: "/".into(),
            proxy_kind: ProxyKind::Caddy,
            target_port: None,
            updated_at: "2030-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn the_url_is_the_newest_applied_route_else_the_planned_one() {
        let planned = PlannedAccessRoute {
            url: "http://planned".into(),
            hostname: "planned".into(),
            scheme: AccessScheme::Http,
            provider_key: None,
            path_prefix: "/".into(),
            proxy_kind: ProxyKind::Caddy,
            target_port: 80,
        };
        let mut summary = AccessSummary {
            planned_generated_access_route: Some(planned),
            ..AccessSummary::default()
        };
        assert_eq!(summary.url(), Some("http://planned"));
        summary.latest_generated_access_route = Some(applied("http://generated"));
        assert_eq!(summary.url(), Some("http://generated"));
        summary.latest_durable_domain_route = Some(applied("https://shop.example"));
        assert_eq!(summary.url(), Some("https://shop.example"));
        assert_eq!(AccessSummary::default().url(), None);
    }
}
