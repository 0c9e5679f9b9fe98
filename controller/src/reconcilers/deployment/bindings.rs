//! A resource's dependency bindings at deploy time: each bound DependencyResource's connection
//! URL, read from its Secret, becomes the target variable (`berth_crds::config::binding_entries`),
//! and the container joins a managed dependency's network (`Plan::dependency_networks`; an
//! imported one is reached at its own address). A binding that cannot be served stops the
//! attempt in plan with the binding named.

use std::collections::BTreeMap;

use berth_crds::IMPORTED_CONNECTION_LABEL;
use berth_crds::dependency_resource::{
    APP_CA_PATH, CA_CERT_KEY, DATABASE_CA_SECRET, DependencyResource, DependencySource, URL_KEY,
    connection_secret_name, network_name,
};
use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::resource::{DependencyBinding, Resource};
use futures::future::try_join_all;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use super::plan::{ContainerFile, Plan, PlanError};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::Result;

/// Connection URLs by dependency id.
pub type Connections = BTreeMap<String, String>;

/// What an attempt's bindings give its container beside the URLs.
#[derive(Debug, Default)]
pub struct Attachments {
    /// The private networks of the managed dependencies, to join.
    pub networks: Vec<String>,
    /// The organization's database authority, which a managed PostgreSQL's URL names.
    pub files: Vec<ContainerFile>,
}

impl Attachments {
    pub fn apply_to(self, plan: &mut Plan) {
        plan.dependency_networks = self.networks;
        plan.files = self.files;
    }
}

/// What an attempt's bindings give it: the URLs, and the networks and files.
#[derive(Debug, Default)]
pub struct Bindings {
    pub connections: Connections,
    pub attachments: Attachments,
}

/// The URLs and networks of every dependency `resource` binds, as the API server has them now,
/// for an attempt on `server_id`; or why one binding cannot be served.
pub async fn fresh_bindings(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    server_id: &str,
) -> Result<std::result::Result<Bindings, PlanError>> {
    let dependencies = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let reads = resource.spec.dependency_bindings.iter().map(|binding| {
        let (dependencies, secrets) = (&dependencies, &secrets);
        async move {
            let id = &binding.dependency_resource_id;
            let secret_name = connection_secret_name(id);
            let (dependency, secret) =
                tokio::try_join!(dependencies.get_opt(id), secrets.get_opt(&secret_name),)?;
            Ok::<_, kube::Error>((binding, dependency, secret))
        }
    });
    let mut bindings = Bindings::default();
    for (binding, dependency, secret) in try_join_all(reads).await? {
        let bound = Bound {
            resource,
            server_id,
            binding,
        };
        let id = &binding.dependency_resource_id;
        match bound.url(dependency.as_ref(), secret.as_ref()) {
            Ok(url) => bindings.connections.insert(id.clone(), url),
            Err(problem) => return Ok(Err(problem)),
        };
        if !secret.as_ref().is_some_and(is_imported) {
            bindings
                .attachments
                .networks
                .push(network_name(namespace, id));
        }
    }
    if !bindings.attachments.networks.is_empty() {
        let authority = secrets.get_opt(DATABASE_CA_SECRET).await?;
        bindings.attachments.files = authority_file(authority.as_ref());
    }
    Ok(Ok(bindings))
}

/// The networks and files of the managed dependencies `resource` binds, by the cached Secrets:
/// what a container recreated beside the serving one, or a task's run, gets.
pub fn cached_attachments(context: &Context, namespace: &str, resource: &Resource) -> Attachments {
    let secrets = &context.caches.secrets;
    let networks: Vec<String> = resource
        .spec
        .dependency_bindings
        .iter()
        .map(|binding| &binding.dependency_resource_id)
        .filter(|id| {
            let secret = Caches::get(secrets, namespace, &connection_secret_name(id));
            !secret.is_some_and(|secret| is_imported(&secret))
        })
        .map(|id| network_name(namespace, id))
        .collect();
    let files = if networks.is_empty() {
        Vec::new()
    } else {
        authority_file(Caches::get(secrets, namespace, DATABASE_CA_SECRET).as_deref())
    };
    Attachments { networks, files }
}

/// The authority's certificate at the path a managed PostgreSQL's URL names, when the
/// organization has one (it is made with its first PostgreSQL, before any URL is published).
fn authority_file(authority: Option<&Secret>) -> Vec<ContainerFile> {
    let certificate = authority
        .and_then(|secret| secret.data.as_ref()?.get(CA_CERT_KEY).cloned())
        .and_then(|value| String::from_utf8(value.0).ok());
    certificate
        .map(|contents| ContainerFile {
            path: APP_CA_PATH.to_string(),
            contents,
        })
        .into_iter()
        .collect()
}

/// Whether a connection Secret is an imported database's (which has no network to join).
fn is_imported(secret: &Secret) -> bool {
    secret.labels().contains_key(IMPORTED_CONNECTION_LABEL)
}

/// The URLs the cached Secrets hold for `resource`'s bindings: what a configuration change is
/// compared with (no checks: an attempt makes them).
pub fn cached_connections(context: &Context, namespace: &str, resource: &Resource) -> Connections {
    resource
        .spec
        .dependency_bindings
        .iter()
        .filter_map(|binding| {
            let id = &binding.dependency_resource_id;
            let secret = Caches::get(
                &context.caches.secrets,
                namespace,
                &connection_secret_name(id),
            )?;
            Some((id.clone(), url_of(&secret)?))
        })
        .collect()
}

/// One binding of an attempt's resource, deployed to `server_id`.
struct Bound<'a> {
    resource: &'a Resource,
    server_id: &'a str,
    binding: &'a DependencyBinding,
}

impl Bound<'_> {
    /// The URL the binding puts into the container, or why it cannot: the dependency must
    /// exist in the resource's project and environment on the attempt's server (its network
    /// is local to that server), not be going away, and have its connection.
    fn url(
        &self,
        dependency: Option<&DependencyResource>,
        secret: Option<&Secret>,
    ) -> std::result::Result<String, PlanError> {
        let Bound {
            resource,
            server_id,
            binding,
        } = self;
        let id = &binding.dependency_resource_id;
        let target = &binding.target_name;
        let invalid = |why: String| PlanError {
            code: Code::DependencyBindingInvalid,
            message: format!("{target} is bound to dependency resource {id}, which {why}"),
        };
        let Some(dependency) = dependency else {
            return Err(invalid("does not exist".into()));
        };
        if dependency.metadata.deletion_timestamp.is_some() {
            return Err(invalid("is being deleted".into()));
        }
        let spec = &dependency.spec;
        if spec.project_id != resource.spec.project_id
            || spec.environment_id != resource.spec.environment_id
        {
            return Err(invalid(format!(
                "belongs to project {} and environment {}, not the resource's {} and {}",
                spec.project_id,
                spec.environment_id,
                resource.spec.project_id,
                resource.spec.environment_id
            )));
        }
        // An imported database is reached at its own address, from any server.
        if spec.source == DependencySource::Managed && spec.server_id != *server_id {
            return Err(invalid(format!(
                "runs on server {}, not on {server_id} where this attempt deploys: bind a dependency \
             of the same server",
                spec.server_id
            )));
        }
        secret.and_then(url_of).ok_or_else(|| PlanError {
            code: Code::DependencyNotReady,
            message: format!(
                "{target} is bound to dependency resource {id}, which has no connection yet (still \
             being provisioned); with auto-deploy on, the resource deploys again once it has one"
            ),
        })
    }
}

fn url_of(secret: &Secret) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(URL_KEY)?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use serde_json::json;

    fn resource(bindings: serde_json::Value) -> Resource {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": { "name": "web", "namespace": "org-a" },
            "spec": { "projectId": "p", "environmentId": "e", "name": "Web", "kind": "worker",
                      "dependencyBindings": bindings },
        }))
        .unwrap()
    }

    fn dependency(environment: &str) -> DependencyResource {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": { "name": "db", "namespace": "org-a" },
            "spec": { "kind": "postgres", "projectId": "p", "environmentId": environment,
                      "serverId": "s", "name": "DB" },
        }))
        .unwrap()
    }

    fn secret(url: &str) -> Secret {
        Secret {
            data: Some(BTreeMap::from([(
                URL_KEY.to_string(),
                ByteString(url.as_bytes().to_vec()),
            )])),
            ..Default::default()
        }
    }

    fn check(
        dependency: Option<&DependencyResource>,
        secret: Option<&Secret>,
    ) -> std::result::Result<String, PlanError> {
        let resource =
            resource(json!([{ "dependencyResourceId": "db", "targetName": "DATABASE_URL" }]));
        let bound = Bound {
            resource: &resource,
            server_id: "s",
            binding: &resource.spec.dependency_bindings[0],
        };
        bound.url(dependency, secret)
    }

    #[test]
    fn a_bound_dependency_of_the_same_environment_gives_its_url() {
        let url = check(Some(&dependency("e")), Some(&secret("postgres://x"))).unwrap();
        assert_eq!(url, "postgres://x");
    }

    #[test]
    fn a_missing_or_foreign_dependency_is_an_invalid_binding_naming_the_variable() {
        let missing = check(None, None).unwrap_err();
        assert_eq!(missing.code, Code::DependencyBindingInvalid);
        assert!(
            missing.message.contains("DATABASE_URL"),
            "{}",
            missing.message
        );
        assert!(
            missing.message.contains("does not exist"),
            "{}",
            missing.message
        );
        let foreign = check(Some(&dependency("other")), Some(&secret("u"))).unwrap_err();
        assert_eq!(foreign.code, Code::DependencyBindingInvalid);
        assert!(
            foreign.message.contains("environment other"),
            "{}",
            foreign.message
        );
    }

    #[test]
    fn a_dependency_on_another_server_cannot_be_reached() {
        let mut elsewhere = dependency("e");
        elsewhere.spec.server_id = "other-server".into();
        let problem = check(Some(&elsewhere), Some(&secret("u"))).unwrap_err();
        assert_eq!(problem.code, Code::DependencyBindingInvalid);
        assert!(
            problem.message.contains("other-server"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn a_dependency_without_its_connection_is_not_ready() {
        let problem = check(Some(&dependency("e")), None).unwrap_err();
        assert_eq!(problem.code, Code::DependencyNotReady);
    }
}
