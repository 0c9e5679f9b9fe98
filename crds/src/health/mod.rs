//! The Resource health record (spec §2.2 "Resource health", `resources.health/v1`), built from
//! what Berth already knows: the Resource's status (its runtime as the server observer last saw
//! it, its route), its latest Deployment and its server. Pure, so the rules are unit-tested;
//! the REST shim serves it and the controller records it in the health history.

mod build;
mod record;
mod route_intent;
mod runtime_control;
mod stored;
#[cfg(test)]
mod tests;

pub use build::{Inputs, build, health_name, lifecycle_name, overall};
pub use record::{
    Check, HealthPolicy, LatestDeployment, ProxyBlock, PublicAccess, ResourceHealth, RuntimeBlock,
    SourceError, wire_runtime,
};
pub use route_intent::{
    CopySafeSummary, LatestObservation, RouteContext, RouteIntent, RouteIntentStatus, RouteProxy,
};
pub use runtime_control::{RuntimeControlBlock, RuntimeControlPhaseBlock, runtime_control_block};
pub use stored::stored_to_wire;

pub const SCHEMA_VERSION: &str = "resources.health/v1";
pub const ROUTE_INTENT_SCHEMA_VERSION: &str = "route-intent-status/v1";

/// A Kubernetes time as the API shows it (RFC 3339, UTC `Z`).
fn timestamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    time.0.to_string()
}
