//! The Resource health record (spec §2.2 "Resource health", `resources.health/v1`; its types
//! are in `berth_vocabulary::health`), built from
//! what Berth already knows: the Resource's status (its runtime as the server observer last saw
//! it, its route), its latest Deployment and its server. Pure, so the rules are unit-tested;
//! the REST shim serves it and the controller records it in the health history.

mod build;
mod route_intent;
mod runtime_control;
mod stored;
#[cfg(test)]
mod tests;

pub use berth_vocabulary::health::{
    Check, CopySafeSummary, HealthPolicy, LatestDeployment, LatestObservation, ProxyBlock,
    PublicAccess, ROUTE_INTENT_SCHEMA_VERSION, ResourceHealth, RouteContext, RouteIntent,
    RouteIntentStatus, RouteProxy, RuntimeBlock, RuntimeControlBlock, RuntimeControlPhaseBlock,
    SCHEMA_VERSION, SourceError, wire_runtime,
};
pub use build::{Inputs, build, health_name, lifecycle_name, overall};
pub use runtime_control::runtime_control_block;
pub use stored::stored_to_wire;

/// A Kubernetes time as the API shows it (RFC 3339, UTC `Z`).
fn timestamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    time.0.to_string()
}
