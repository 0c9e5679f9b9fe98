//! The shim's domain layer, under the routes: scoped lookups with their authorization
//! decisions, the operations several endpoints share, and the rules they apply. A route parses
//! its request, calls the domain and answers; routes never import each other, so what two
//! areas share lives here (what one area alone uses may stay in its route).

pub mod accounts;
pub mod backup_policies;
pub mod backup_targets;
pub mod backups;
pub mod containers;
pub mod credentials;
pub mod database_authority;
pub mod decision_records;
pub mod dependency_imports;
pub mod dependency_resources;
pub mod deployments;
pub mod dump_uploads;
pub mod environment_secrets;
pub mod environments;
pub mod fields;
pub mod identity;
pub mod kept_secrets;
pub mod members;
pub mod monitoring_scope;
pub mod notifications;
pub mod objects;
pub mod previews;
pub mod projects;
pub mod resource_access;
pub mod resource_health;
pub mod resource_input;
pub mod retention;
pub mod runtime_logs;
pub mod scheduled_tasks;
pub mod secret_values;
pub mod servers;
pub mod spec_variables;
pub mod storage_volumes;
pub mod time;
pub mod variables;
pub mod volume_backup_policies;
pub mod volume_backups;
pub mod webhooks;
