//! The configuration an attempt hands to its container and its build: the effective entries of
//! every scope (berth_crds::config), read when the attempt plans. Runtime entries become the
//! container's environment, build-time entries Docker build args; neither ever reaches a log
//! line, an event or a status.

use std::collections::HashMap;

use berth_crds::config::{self, ConfigEntry, Scopes, deployment_entries};
use berth_crds::deployment::Deployment;
use berth_crds::environment::Environment;
use berth_crds::organization::{NAMESPACE_PREFIX, Organization};
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use berth_crds::variable::VariableExposure;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

use super::bindings::{self, Attachments, Connections};
use super::plan::{Plan, PlanError};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::Result;

/// Every entry that applies to `deployment` of `resource`, from all scopes, not yet merged.
/// Read from the API server: an attempt must see a write made just before it was created
/// (a secret set, then a deploy started).
pub async fn entries(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    deployment: &Deployment,
    connections: &Connections,
) -> Result<Vec<ConfigEntry>> {
    let mut entries = fresh_lasting_entries(context, namespace, resource, connections).await?;
    entries.extend(deployment_entries(
        &deployment.name_any(),
        &deployment.spec.variables,
    ));
    Ok(entries)
}

/// Every entry of the attempt, its bindings' connection URLs included, and what the bound
/// dependencies attach (networks, files); or why a binding cannot be served, with the
/// fingerprint of what the caches hold (so the configuration changing later, e.g. the
/// dependency's connection appearing, deploys again).
pub async fn attempt_entries(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    deployment: &Deployment,
) -> Result<std::result::Result<(Vec<ConfigEntry>, Attachments), (PlanError, String)>> {
    let server = &deployment.spec.server_id;
    let bound = match bindings::fresh_bindings(context, namespace, resource, server).await? {
        Ok(bound) => bound,
        Err(problem) => {
            let cached = lasting_entries(context, namespace, resource);
            return Ok(Err((problem, config::fingerprint(&cached))));
        }
    };
    let entries = entries(context, namespace, resource, deployment, &bound.connections).await?;
    Ok(Ok((entries, bound.attachments)))
}

/// The entries of every scope but an attempt's own, from the caches.
pub fn lasting_entries(
    context: &Context,
    namespace: &str,
    resource: &Resource,
) -> Vec<ConfigEntry> {
    let caches = &context.caches;
    let organization = namespace
        .strip_prefix(NAMESPACE_PREFIX)
        .and_then(|name| caches.organizations.get(&ObjectRef::new(name)));
    gather(
        resource,
        organization.as_deref(),
        Caches::get(&caches.projects, namespace, &resource.spec.project_id).as_deref(),
        Caches::get(
            &caches.environments,
            namespace,
            &resource.spec.environment_id,
        )
        .as_deref(),
        Caches::get(&caches.secrets, namespace, &config::secret_name(resource)).as_deref(),
        Caches::get(
            &caches.secrets,
            namespace,
            &config::environment_secret_name(&resource.spec.environment_id),
        )
        .as_deref(),
        &bindings::cached_connections(context, namespace, resource),
    )
}

/// [`lasting_entries`] as the API server has them now.
async fn fresh_lasting_entries(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    connections: &Connections,
) -> Result<Vec<ConfigEntry>> {
    let client = &context.client;
    // Independent reads, at once: they sit on the attempt's critical path.
    let organizations = Api::<Organization>::all(client.clone());
    let projects = Api::<Project>::namespaced(client.clone(), namespace);
    let environments = Api::<Environment>::namespaced(client.clone(), namespace);
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let secret_name = config::secret_name(resource);
    let environment_secret_name = config::environment_secret_name(&resource.spec.environment_id);
    // Namespaces that belong to no organization (made by hand) have no organization scope.
    let organization = async {
        match namespace.strip_prefix(NAMESPACE_PREFIX) {
            Some(name) => organizations.get_opt(name).await,
            None => Ok(None),
        }
    };
    let (organization, project, environment, secret, environment_secret) = tokio::try_join!(
        organization,
        projects.get_opt(&resource.spec.project_id),
        environments.get_opt(&resource.spec.environment_id),
        secrets.get_opt(&secret_name),
        secrets.get_opt(&environment_secret_name),
    )?;
    Ok(gather(
        resource,
        organization.as_ref(),
        project.as_ref(),
        environment.as_ref(),
        secret.as_ref(),
        environment_secret.as_ref(),
        connections,
    ))
}

/// The entries of every scope but an attempt's own. A scope whose object is gone (a
/// hand-written resource naming a deleted environment, say) contributes nothing.
fn gather(
    resource: &Resource,
    organization: Option<&Organization>,
    project: Option<&Project>,
    environment: Option<&Environment>,
    secret: Option<&Secret>,
    environment_secret: Option<&Secret>,
    connections: &Connections,
) -> Vec<ConfigEntry> {
    config::scope_entries(&Scopes {
        resource,
        organization,
        project,
        environment,
        secret_data: secret.and_then(|s| s.data.as_ref()),
        environment_secret_data: environment_secret.and_then(|s| s.data.as_ref()),
        connections,
    })
}

/// Puts the configuration of `serving` as it is now (lasting scopes and the attempt's own) and
/// what its bound dependencies attach into `plan`: what a container recreated beside it, or a
/// task's run, starts with.
pub fn apply_serving(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    serving: &Deployment,
    plan: &mut Plan,
) {
    let entries = lasting_entries(context, namespace, resource)
        .into_iter()
        .chain(deployment_entries(
            &serving.name_any(),
            &serving.spec.variables,
        ))
        .collect();
    apply_to(plan, entries);
    bindings::cached_attachments(context, namespace, resource).apply_to(plan);
}

/// Puts the effective runtime entries into the container's environment and the build-time ones
/// into the build args.
pub fn apply_to(plan: &mut Plan, entries: Vec<ConfigEntry>) {
    let (effective, _) = config::merge(entries);
    plan.env = config::values_of(&effective, VariableExposure::Runtime)
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    plan.build_args = config::values_of(&effective, VariableExposure::BuildTime)
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect::<HashMap<_, _>>();
    plan.secret_values = effective
        .iter()
        .filter(|entry| entry.secret)
        .map(|entry| entry.value.clone())
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::config::ConfigScope;

    fn entry(key: &str, value: &str, exposure: VariableExposure) -> ConfigEntry {
        ConfigEntry {
            scope: ConfigScope::Resource,
            key: key.into(),
            value: value.into(),
            exposure,
            secret: false,
        }
    }

    #[test]
    fn runtime_entries_reach_the_container_and_build_time_ones_the_build_only() {
        let mut plan = super::super::plan::tests::sample_plan();
        apply_to(
            &mut plan,
            vec![
                entry("GREETING", "hi", VariableExposure::Runtime),
                entry("NODE_ENV", "production", VariableExposure::BuildTime),
            ],
        );
        assert_eq!(plan.env, vec!["GREETING=hi".to_string()]);
        assert_eq!(
            plan.build_args.get("NODE_ENV").map(String::as_str),
            Some("production")
        );
        assert_eq!(plan.build_args.len(), 1);
    }
}
