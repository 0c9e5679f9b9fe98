//! What runs on a server, counted: the `rollups` of Appaloft's `servers.show/v1`. Observational
//! (navigation aids), never what admits a change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::deployments::DeploymentState;

/// The resources, deployments and domain bindings on one server.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
pub struct ServerRollups {
    pub resources: ResourceRollup,
    pub deployments: DeploymentRollup,
    pub domains: DomainRollup,
}

/// The resources with deployments or domain bindings on the server.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRollup {
    /// How many distinct resources.
    pub total: usize,
    /// Their ids, sorted.
    pub deployed_resource_ids: Vec<String>,
}

/// The deployment attempts on the server: those whose objects exist and those the attempt
/// archive kept after berth-controller removed them (as `GET /deployments?serverId=` lists).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRollup {
    pub total: usize,
    /// One entry for each status with attempts, by status name.
    pub status_counts: Vec<DeploymentStatusCount>,
    /// The attempt requested last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_deployment_status: Option<DeploymentState>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DeploymentStatusCount {
    pub status: DeploymentState,
    pub count: usize,
}

/// The domain bindings whose edge proxy is the server's.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DomainRollup {
    pub total: usize,
    /// One entry for each status with bindings, by status name.
    pub status_counts: Vec<DomainStatusCount>,
    /// The binding created last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_domain_binding_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_domain_binding_status: Option<DomainBindingStatus>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DomainStatusCount {
    pub status: DomainBindingStatus,
    pub count: usize,
}

/// A domain binding's state in Appaloft's words, read from the binding's conditions.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DomainBindingStatus {
    /// Not observed yet: no `Verified` condition.
    Requested,
    /// The host name does not lead to the server yet (`Verified` false).
    PendingVerification,
    /// Verified; the edge proxy's route not reported yet.
    Bound,
    /// Routed, waiting for its certificate (`CertificateServed` false, `WaitingForCertificate`).
    CertificatePending,
    /// Served (`Ready`).
    Ready,
    /// Verified but not served: the route failed or another certificate is presented.
    NotReady,
    /// Appaloft's failed binding; Berth keeps retrying instead, so never sends it.
    Failed,
    /// Being deleted.
    Deleted,
}

impl DomainBindingStatus {
    /// The wire name (`pending_verification`…), by which status counts are ordered.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::PendingVerification => "pending_verification",
            Self::Bound => "bound",
            Self::CertificatePending => "certificate_pending",
            Self::Ready => "ready",
            Self::NotReady => "not_ready",
            Self::Failed => "failed",
            Self::Deleted => "deleted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_spelled_as_appaloft_spells_them() {
        for status in [
            DomainBindingStatus::Requested,
            DomainBindingStatus::PendingVerification,
            DomainBindingStatus::Bound,
            DomainBindingStatus::CertificatePending,
            DomainBindingStatus::Ready,
            DomainBindingStatus::NotReady,
            DomainBindingStatus::Failed,
            DomainBindingStatus::Deleted,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }
}
