//! One integration test binary (linking is the slow part on 2 cores), a module per area.
//! Every test here runs against the real local stack.

mod bookkeeping;
mod cli;
mod controller_process;
mod crd_manifests;
mod crd_validation;
mod deploy_support;
mod deployed_config;
mod deployment_timeline;
mod deployments;
mod deployments_build;
mod deployments_registry;
mod disruptive;
mod examples_apply;
mod org_project_env;
mod self_healing;
mod servers;
mod shim_access_failures;
mod shim_account;
mod shim_basics;
mod shim_decisions;
mod shim_deployments_stream;
mod shim_diagnostics;
mod shim_health;
mod shim_input_validation;
mod shim_monitoring;
mod shim_organizations;
mod shim_projects_envs;
mod shim_resource_config;
mod shim_resources;
mod shim_runtime_control;
mod shim_runtime_logs;
mod shim_servers;
mod shim_tokens;
mod shim_variables;
mod ssh_pool;
