//! Berth's REST wire types (DESIGN §1): the bodies `berth-shim` accepts and answers with and
//! the `berth` CLI sends and reads, defined once so client and server cannot drift. Only serde
//! and schemars: no web server, no Kubernetes client, no I/O. Modules mirror the shim's route
//! groups; the shim re-exports each type where its routes declare it. What the CRDs hold too
//! (progress, access summaries, limits, field checks…) is defined in `berth-vocabulary`, below
//! both, and re-exported here at the same paths.
//!
//! Request types derive `Serialize` for the CLI; an absent optional field is left out of the
//! JSON rather than sent as `null` (except where a stored digest fixes the shape).
//!
//! Checks a request can pass without the cluster live here too ([`validate`]): the shim maps
//! their [`validate::FieldError`] to its 422, the CLI runs them before sending.

#![forbid(unsafe_code)]

// The vocabulary shared with the CRDs, defined in `berth-vocabulary` and re-exported at the
// paths it always had here. Modules below that define wire types of their own re-export the
// shared ones beside them.
pub use berth_vocabulary::{
    access, access_failure, build, conditions, health, limits, progress, repository, validate, wire,
};

pub mod access_failures;
pub mod account;
pub mod activity;
pub mod backup_policies;
pub mod backups;
pub mod bootstrap;
pub mod certificates;
pub mod common;
pub mod credentials;
pub mod decisions;
pub mod dependencies;
pub mod deploy_tokens;
pub mod deployment_proof;
pub mod deployment_records;
pub mod deployments;
pub mod diagnostics;
pub mod domain_binding_changes;
pub mod domain_binding_readiness;
pub mod environments;
pub mod error;
pub mod health_history;
pub mod identity;
pub mod invitations;
pub mod members;
pub mod migrations;
pub mod monitoring;
pub mod notifications;
pub mod organizations;
pub mod overlays;
pub mod previews;
pub mod profiles;
pub mod projects;
pub mod resource_detail;
pub mod resource_input;
pub mod resources;
pub mod retention;
pub mod runtime_control;
pub mod runtime_logs;
pub mod scheduled_tasks;
pub mod secrets;
pub mod server_capacity;
pub mod server_rollups;
pub mod servers;
pub mod source;
pub mod storage;
pub mod terminal;
pub mod thresholds;
pub mod usage_intents;
pub mod users;
pub mod variables;
pub mod volume_backup_policies;
pub mod volume_backups;
pub mod webhooks;
