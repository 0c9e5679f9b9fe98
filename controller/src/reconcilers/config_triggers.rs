//! Changes that alter a Resource's configuration without touching the Resource itself: its
//! secret values, and the variables of its environment, project and organization. Each maps to
//! the Resources it feeds, so auto-deploy rolls a change out at once instead of at the next
//! periodic recheck.

use berth_crds::config::secret_name;
use berth_crds::environment::Environment;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use futures::Stream;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Api, Client, ResourceExt};

type Changes<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// Objects of kind `K` as they change; with `spec_only`, only when their spec (generation)
/// changes, so status writes of other reconcilers trigger nothing.
fn changes<K>(client: &Client, spec_only: bool) -> Changes<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let touched = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .touched_objects();
    if spec_only {
        Box::pin(touched.predicate_filter(predicates::generation, Default::default()))
    } else {
        Box::pin(touched)
    }
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

pub fn secret_changes(client: &Client) -> Changes<Secret> {
    changes(client, false)
}

/// A Secret feeds the Resources whose secret values it holds.
pub fn resources_of_secret(store: &Store<Resource>, secret: &Secret) -> Vec<ObjectRef<Resource>> {
    let name = secret.name_any();
    resources_in(store, secret.namespace(), |r| secret_name(r) == name)
}

pub fn environment_changes(client: &Client) -> Changes<Environment> {
    changes(client, true)
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

pub fn project_changes(client: &Client) -> Changes<Project> {
    changes(client, true)
}

pub fn resources_of_project(
    store: &Store<Resource>,
    project: &Project,
) -> Vec<ObjectRef<Resource>> {
    let name = project.name_any();
    resources_in(store, project.namespace(), |r| r.spec.project_id == name)
}

pub fn organization_changes(client: &Client) -> Changes<Organization> {
    changes(client, true)
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
