//! The Resource health record (spec §2.2 "Resource health", `resources.health/v1`) and its
//! route intent status (`route-intent-status/v1`): what `GET /resources/{id}/health` answers,
//! what the health history keeps and what the diagnostic summary quotes. `berth-crds` builds
//! it from a Resource's status; the CLI and the console read it.

mod record;
mod route_intent;
mod runtime_control;

pub use record::{
    Check, HealthPolicy, LatestDeployment, ProxyBlock, PublicAccess, ResourceHealth, RuntimeBlock,
    SourceError, wire_runtime,
};
pub use route_intent::{
    CopySafeSummary, LatestObservation, RouteContext, RouteIntent, RouteIntentStatus, RouteProxy,
};
pub use runtime_control::{RuntimeControlBlock, RuntimeControlPhaseBlock};

pub const SCHEMA_VERSION: &str = "resources.health/v1";
pub const ROUTE_INTENT_SCHEMA_VERSION: &str = "route-intent-status/v1";
