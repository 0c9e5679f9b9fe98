//! The shim's long-lived services: things that live as long as the process, are held by
//! [`AppState`](crate::state::AppState) and are used by the handlers in `routes/` (connection
//! pools, in-memory caches and registries, the store of pending terminal sessions).
//!
//! A service imports neither `crate::state` nor `crate::routes`: it takes what it needs (the
//! cluster client, a cache, the observation store) as arguments, so the imports run one way,
//! routes → state → services and routes → services.

pub mod delete_receipts;
pub mod recent_access_failures;
pub mod server_access;
pub mod terminals;
