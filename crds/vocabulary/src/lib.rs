//! Berth's shared vocabulary: the enums, records, limits and checks that both the custom
//! resources (`berth-crds`) and the REST wire types (`berth-api`) are made of. They live here,
//! below both, so that neither crate depends on the other: the CRDs need no REST types and the
//! REST types no Kubernetes. Only serde, serde_json and schemars.
//!
//! Modules carry the names of the `berth-api` modules that re-export them, so every
//! `berth_api::<module>::<item>` path still names the same item.

#![forbid(unsafe_code)]

pub mod access;
pub mod access_failure;
pub mod backups;
pub mod build;
pub mod certificates;
pub mod conditions;
pub mod credentials;
pub mod decisions;
pub mod dependencies;
pub mod deploy_tokens;
pub mod deployed_spec;
pub mod deployments;
pub mod domain_bindings;
pub mod environments;
pub mod health;
pub mod limits;
pub mod members;
pub mod migration_runner;
pub mod migrations;
pub mod monitoring;
pub mod notifications;
pub mod previews;
pub mod progress;
pub mod repository;
pub mod resource_input;
pub mod resources;
pub mod retention;
pub mod runtime_control;
pub mod s3_bucket;
pub mod scheduled_tasks;
pub mod servers;
pub mod storage;
pub mod thresholds;
pub mod validate;
pub mod wire;
