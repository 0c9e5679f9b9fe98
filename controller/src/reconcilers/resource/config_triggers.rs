//! Changes that alter a Resource's configuration without touching the Resource itself: its
//! secret values, and the variables of its environment, project and organization. Each maps to
//! the Resources it feeds, so auto-deploy rolls a change out at once instead of at the next
//! periodic recheck.

use berth_crds::config::{environment_secret_name, secret_name};
use berth_crds::dependency_resource::connection_secret_name;
use berth_crds::environment::Environment;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use std::sync::Arc;

use futures::Stream;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::cache::Subscription;
use crate::cache::{changed_by, digest};

/// Objects of kind `K` whose spec (generation) changed, so status writes of other reconcilers
/// trigger nothing.
pub fn spec_changes<K>(objects: Subscription<K>) -> impl Stream<Item = Arc<K>> + Send
where
    K: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    changed_by(objects, |object: &K| digest(object.meta().generation))
}

/// Secrets whose contents may have changed.
pub fn secret_changes(secrets: Subscription<Secret>) -> impl Stream<Item = Arc<Secret>> + Send {
    changed_by(secrets, |secret: &Secret| digest(secret.resource_version()))
}

/// The Resources of `namespace` that `feeds` says a change reaches.
fn resources_in(
    store: &Store<Resource>,
    namespace: Option<String>,
    feeds: impl Fn(&Resource) -> bool,
) -> Vec<ObjectRef<Resource>> {
    let Some(namespace) = namespace else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|r| r.namespace().as_deref() == Some(namespace.as_str()) && feeds(r))
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// A Secret feeds the Resources whose secret values it holds (their own or their
/// environment's), and those binding the dependency whose connection it holds (a rotated
/// password, a first connection).
pub fn resources_of_secret(store: &Store<Resource>, secret: &Secret) -> Vec<ObjectRef<Resource>> {
    let name = secret.name_any();
    resources_in(store, secret.namespace(), |r| {
        secret_name(r) == name
            || environment_secret_name(&r.spec.environment_id) == name
            || r.spec
                .dependency_bindings
                .iter()
                .any(|b| connection_secret_name(&b.dependency_resource_id) == name)
    })
}

pub fn resources_of_environment(
    store: &Store<Resource>,
    environment: &Environment,
) -> Vec<ObjectRef<Resource>> {
    let name = environment.name_any();
    resources_in(store, environment.namespace(), |r| {
        r.spec.environment_id == name
    })
}

pub fn resources_of_project(
    store: &Store<Resource>,
    project: &Project,
) -> Vec<ObjectRef<Resource>> {
    let name = project.name_any();
    resources_in(store, project.namespace(), |r| r.spec.project_id == name)
}

/// An organization feeds every Resource in its namespace.
pub fn resources_of_organization(
    store: &Store<Resource>,
    organization: &Organization,
) -> Vec<ObjectRef<Resource>> {
    let namespace = organization
        .status
        .as_ref()
        .and_then(|s| s.namespace.clone());
    resources_in(store, namespace, |_| true)
}
