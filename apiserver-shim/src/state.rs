//! Shared state of every handler.

use std::sync::Arc;

use kube::Client;

use crate::cache::Caches;
use crate::metrics::HttpMetrics;
use crate::ratelimit::LoginLimiter;
use crate::services::delete_receipts::DeleteReceipts;
use crate::services::recent_access_failures::RecentLatest;
use crate::services::server_access::ServerAccess;
use crate::services::terminals::Terminals;

/// Field manager of every write the shim makes (server-side apply).
pub const FIELD_MANAGER: &str = "berth-shim";
/// Field manager of the variables the shim sets on a Resource: it sends only its own entries,
/// so entries another manager (kubectl, GitOps) applied to the same list stay that manager's.
pub const VARIABLES_FIELD_MANAGER: &str = "berth-shim-variables";

#[derive(Clone)]
pub struct AppState {
    pub client: Client,
    pub caches: Caches,
    pub config: Arc<Config>,
    /// Login attempts per email, counted in the observation store every replica shares.
    pub login_limiter: Arc<LoginLimiter>,
    pub metrics: Arc<HttpMetrics>,
    /// This process's connected terminal sessions and the SSH connections they use (pending
    /// ones are in the observation store).
    pub terminals: Arc<Terminals>,
    /// SSH connections for reads on servers (runtime logs), closed when idle.
    pub server_access: Arc<ServerAccess>,
    /// Recent `DELETE /servers` idempotency keys.
    pub server_deletions: Arc<DeleteReceipts>,
    /// The observation store berth-controller records in (deployment timelines, health
    /// history, monitoring samples, access failures), shared by every replica: the shim reads
    /// it and keeps there what replicas share (attempts, audit, login attempts, terminals).
    pub observations: Arc<dyn berth_observations::ShimStore>,
    /// Resources' latest access-failure evidence as recently read, for cached health.
    pub recent_access_failures: Arc<RecentLatest>,
    /// Set on SIGTERM: /readyz answers 503 while the shim drains.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
}

/// Lets the metrics middleware and `GET /metrics` take the metrics alone, so `metrics` needs
/// nothing of the state that holds it.
impl axum::extract::FromRef<AppState> for Arc<HttpMetrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

/// Settings from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// Namespace of sessions, users' password hashes and system policies.
    pub system_namespace: String,
    /// Public base URL of the API (ends in `/api`), used in `loginUrl`.
    pub public_url: String,
    /// How long a login session lasts.
    pub session_ttl: std::time::Duration,
    /// The observation store's database: `sqlite` or `postgresql` (diagnostics show it).
    pub observation_store_driver: &'static str,
    /// How often berth-controller's server observer samples (`--monitoring-interval-seconds`,
    /// the controller's option of the same name): sets `freshness` and `missing-samples`.
    pub monitoring_interval: std::time::Duration,
    /// The DNS server host names are resolved with (`--acme-dns`); the system's when unset.
    pub dns_server: Option<std::net::SocketAddr>,
}
