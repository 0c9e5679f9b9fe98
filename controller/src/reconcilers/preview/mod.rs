//! PreviewEnvironment: a pull request's head deployed beside production. The reconciler makes
//! the preview's Environment (kind `preview`), copies the resource into it at the head commit
//! with its own host name, starts one attempt per head commit and reports where it serves.
//! A preview over its policy's quota waits, saying so; one past its time to live removes
//! itself. Deleting a preview (the pull request closed) removes its resource first — whose
//! own cleanup takes its containers, route and images off the server — then its environment
//! and copied Secrets, and only then lets the object go. A policy with a domain template (or
//! TLS) gives the preview a host name of its own through a DomainBinding it owns; the preview
//! is Ready once that binding is (its route applied, its certificate served).

mod cleanup;
mod database_plan;
mod databases;
mod plan;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::backup::DependencyResourceRestore;
use berth_crds::condition::ConditionStatus;
use berth_crds::condition::reason::DEPENDENCY_MISSING;
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::preview::{
    PREVIEW_FINALIZER, PREVIEW_LABEL, PreviewDomain, PreviewEnvironment, PreviewEnvironmentStatus,
    PreviewPolicy, PreviewPolicySpec, reason,
};
use berth_crds::resource::Resource;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, Resource as _, ResourceExt};

use crate::cache::{Caches, Subscription};
use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;
use crate::reconcilers::fresh::{release_finalizer, with_finalizer};
use crate::reconcilers::policy::{drain, error_policy};
use crate::status::StatusWriter;

const KIND: &str = "PreviewEnvironment";
/// How soon a preview whose resource is missing looks again.
const WAIT_FOR_RESOURCE: Duration = Duration::from_secs(30);
/// How soon a preview over the quota looks again (a sibling's removal also wakes it).
const QUOTA_RECHECK: Duration = Duration::from_secs(30);

/// What the preview controller reacts to besides its own kind: the resources and attempts it
/// made (their changes move its status).
pub struct Inputs {
    pub resources: Subscription<Resource>,
    pub deployments: Subscription<Deployment>,
    pub domain_bindings: Subscription<DomainBinding>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let client = context.client.clone();
    let controller = Controller::new(
        Api::<PreviewEnvironment>::all(client),
        watcher::Config::default(),
    );
    let previews = controller.store();
    let waiting = previews.clone();
    // The databases and fillings previews made, by their label (few, and only previews').
    let made = watcher::Config::default().labels(PREVIEW_LABEL);
    let dependencies = Api::<DependencyResource>::all(context.client.clone());
    let restores = Api::<DependencyResourceRestore>::all(context.client.clone());
    let stream = controller
        .watches_shared_stream(inputs.resources, move |resource| {
            // The preview that made it, and its siblings waiting for a free place.
            let mut woken = made_by(resource.as_ref());
            woken.extend(waiting_siblings(&waiting, resource.as_ref()));
            woken
        })
        .watches_shared_stream(inputs.deployments, |attempt| made_by(attempt.as_ref()))
        .watches_shared_stream(inputs.domain_bindings, |binding| made_by(binding.as_ref()))
        .watches(dependencies, made.clone(), |dependency| {
            made_by(&dependency)
        })
        .watches(restores, made, |restore| made_by(&restore))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The preview an object made, by its label.
fn made_by<K: kube::Resource>(object: &K) -> Vec<ObjectRef<PreviewEnvironment>> {
    let labels = object.meta().labels.as_ref();
    let Some(name) = labels.and_then(|l| l.get(PREVIEW_LABEL)) else {
        return Vec::new();
    };
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    vec![ObjectRef::new(name).within(&namespace)]
}

/// Previews in `resource`'s namespace that wait for quota (few, and only while they wait):
/// a preview's resource going away may free a place.
fn waiting_siblings(
    previews: &Store<PreviewEnvironment>,
    resource: &Resource,
) -> Vec<ObjectRef<PreviewEnvironment>> {
    if resource.meta().deletion_timestamp.is_none() || made_by(resource).is_empty() {
        return Vec::new();
    }
    previews
        .state()
        .into_iter()
        .filter(|p| p.namespace() == resource.namespace())
        .filter(|p| ready_reason(p) == Some(reason::QUOTA_REACHED))
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

fn ready_reason(preview: &PreviewEnvironment) -> Option<&str> {
    let conditions = &preview.status.as_ref()?.conditions;
    let ready = berth_crds::condition::find(conditions, berth_crds::condition::READY)?;
    Some(ready.reason.as_str())
}

async fn reconcile(preview: Arc<PreviewEnvironment>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = preview
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<PreviewEnvironment>::namespaced(context.client.clone(), &namespace);
    let Some(preview) = with_finalizer(&api, preview, PREVIEW_FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    if preview.metadata.deletion_timestamp.is_some() {
        return match cleanup::remove_made(&preview, &context, &namespace).await? {
            Some(later) => Ok(later),
            None => {
                release_finalizer(&api, &preview, PREVIEW_FINALIZER).await?;
                Ok(Action::await_change())
            }
        };
    }
    apply(&preview, &context, &api, &namespace).await
}

/// One reconcile of a live preview: its place and time, then what it makes, then its status.
async fn apply(
    preview: &PreviewEnvironment,
    context: &Context,
    api: &Api<PreviewEnvironment>,
    namespace: &str,
) -> Result<Action> {
    let now = Timestamp::now();
    let base_id = &preview.spec.resource_id;
    let Some(base) = Caches::get(&context.caches.resources, namespace, base_id) else {
        let message = format!("spec.resourceId: resource {base_id} does not exist");
        return wait_for(api, preview, reason::RESOURCE_MISSING, message, now).await;
    };
    if let Some(kind) = plan::non_git_source(&base) {
        let message = format!(
            "resource {base_id} is not built from a git repository (source {kind}): a preview \
             deploys a pull request's commit"
        );
        return wait_for(api, preview, reason::SOURCE_NOT_GIT, message, now).await;
    }
    let policy = effective_policy(context, namespace, &base).await?;
    let expires = plan::expires_at(preview, &policy);
    if let Some(at) = expires.filter(|at| *at <= now) {
        return expire(preview, context, api, at).await;
    }
    if let Some(later) = hold_for_quota(preview, context, api, &policy, now).await? {
        return Ok(later);
    }
    let base_environment = policy
        .environment_profile_base_environment_id
        .clone()
        .unwrap_or_else(|| base.spec.environment_id.clone());
    let Some(environment) = Caches::get(&context.caches.environments, namespace, &base_environment)
    else {
        let message = format!("the base environment {base_environment} does not exist");
        return wait_for(api, preview, DEPENDENCY_MISSING, message, now).await;
    };
    let domain = match domain_of(preview, context, namespace, &base, &policy) {
        Ok(domain) => domain,
        Err(why) => {
            let message = format!("the preview policy's previewDomainTemplate: {why}");
            let invalid = reason::INVALID_DOMAIN_TEMPLATE;
            return wait_for(api, preview, invalid, message, now).await;
        }
    };
    let policy_databases = policy.preview_databases;
    let databases = databases::make(preview, context, namespace, &base, policy_databases).await?;
    let made = Made {
        base: &base,
        base_environment: &environment,
        domain: domain.as_ref(),
        databases: &databases,
    };
    let copy = make(preview, context, namespace, &made).await?;
    let attempt = Caches::get(
        &context.caches.deployments,
        namespace,
        &plan::attempt_name(preview),
    );
    let current = Caches::get(&context.caches.resources, namespace, &copy.name_any());
    let binding_name = plan::domain_binding_name(preview);
    let binding = Caches::get(&context.caches.domain_bindings, namespace, &binding_name);
    let access = match domain {
        Some(_) => plan::Access::Bound(binding.as_deref()),
        None => plan::Access::Generated(current.as_deref()),
    };
    let progress = plan::seeding(&databases.records)
        .unwrap_or_else(|| plan::progress(attempt.as_deref(), access));
    let mut status = plan::status(preview, current.as_deref(), &progress, expires, now);
    status.databases = databases.records;
    write(api, preview, &status).await?;
    Ok(match expires {
        Some(at) => Action::requeue(plan::until(at, now)),
        None => Action::await_change(),
    })
}

/// The preview cannot be made yet: its status says why, and it is looked at again later.
async fn wait_for(
    api: &Api<PreviewEnvironment>,
    preview: &PreviewEnvironment,
    reason: &str,
    message: String,
    now: Timestamp,
) -> Result<Action> {
    let status = plan::base_status(preview, ConditionStatus::False, reason, message, now);
    write(api, preview, &status).await?;
    Ok(Action::requeue(WAIT_FOR_RESOURCE))
}

/// The host name of its own `policy` gives the preview (`Err`: why its template gives none).
fn domain_of(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
    base: &Resource,
    policy: &PreviewPolicySpec,
) -> std::result::Result<Option<PreviewDomain>, String> {
    let server = base.spec.server_id.as_deref();
    let server = server.and_then(|id| Caches::get(&context.caches.servers, namespace, id));
    let slug = plan::host_slug(preview, base);
    let generated = crate::routes::generated_hostname(&slug, server.as_deref());
    plan::domain(preview, base, policy, &generated)
}

/// The resource's own policy, else its project's, else the defaults.
async fn effective_policy(
    context: &Context,
    namespace: &str,
    base: &Resource,
) -> Result<PreviewPolicySpec> {
    let api = Api::<PreviewPolicy>::namespaced(context.client.clone(), namespace);
    let policies = api.list(&Default::default()).await?.items;
    let project = &base.spec.project_id;
    let resource = base.name_any();
    let of_resource = policies
        .iter()
        .find(|p| p.spec.resource_id.as_deref() == Some(resource.as_str()));
    let of_project = policies
        .iter()
        .find(|p| p.spec.resource_id.is_none() && &p.spec.project_id == project);
    Ok(of_resource.or(of_project).map_or_else(
        || PreviewPolicySpec::default_for(project, None),
        |p| p.spec.clone(),
    ))
}

/// Removes a preview past its time to live (its deletion runs the cleanup).
async fn expire(
    preview: &PreviewEnvironment,
    context: &Context,
    api: &Api<PreviewEnvironment>,
    at: Timestamp,
) -> Result<Action> {
    let message = format!("no push since its time to live ended at {at}; removing it");
    let status = plan::base_status(
        preview,
        ConditionStatus::False,
        reason::EXPIRED,
        message.clone(),
        Timestamp::now(),
    );
    write(api, preview, &status).await?;
    let expired = event_reason::PREVIEW_EXPIRED;
    let reference = preview.object_ref(&());
    context
        .publish_event(&reference, EventType::Normal, expired, message)
        .await;
    match api
        .delete(&preview.name_any(), &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        deleted => drop(deleted?),
    }
    Ok(Action::await_change())
}

/// `Some` when the resource already has as many previews as its policy allows: the preview
/// waits with its reason and makes nothing.
async fn hold_for_quota(
    preview: &PreviewEnvironment,
    context: &Context,
    api: &Api<PreviewEnvironment>,
    policy: &PreviewPolicySpec,
    now: Timestamp,
) -> Result<Option<Action>> {
    let siblings = siblings(context, preview).await?;
    let refs: Vec<&PreviewEnvironment> = siblings.iter().collect();
    if plan::admitted(preview, &refs, policy) {
        return Ok(None);
    }
    let max = policy.max_active_previews.unwrap_or_default();
    let resource = &preview.spec.resource_id;
    let active = if max == 1 {
        format!("1 preview of resource {resource} is active")
    } else {
        format!("{max} previews of resource {resource} are active")
    };
    let message = format!(
        "{active}, as many as its preview policy allows (maxActivePreviews); this one starts \
         when one of them is closed"
    );
    let status = plan::base_status(
        preview,
        ConditionStatus::False,
        reason::QUOTA_REACHED,
        message,
        now,
    );
    write(api, preview, &status).await?;
    Ok(Some(Action::requeue(QUOTA_RECHECK)))
}

/// The previews of the same resource, as the API server has them (a quota decision must not
/// rest on a cache that has not seen a sibling yet).
async fn siblings(
    context: &Context,
    preview: &PreviewEnvironment,
) -> Result<Vec<PreviewEnvironment>> {
    let namespace = preview.namespace().unwrap_or_default();
    let api = Api::<PreviewEnvironment>::namespaced(context.client.clone(), &namespace);
    let previews = api.list(&Default::default()).await?.items;
    Ok(previews
        .into_iter()
        .filter(|p| p.spec.resource_id == preview.spec.resource_id)
        .collect())
}

/// What a preview is made from: the resource it previews, the environment it starts from, the
/// host name of its own, if any, and its own databases.
struct Made<'a> {
    base: &'a Resource,
    base_environment: &'a Environment,
    domain: Option<&'a PreviewDomain>,
    databases: &'a databases::Own,
}

/// Makes (or brings up to date) the preview's environment, Secrets, resource, domain binding
/// and the head commit's attempt; the resource as the API server has it.
async fn make(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
    made: &Made<'_>,
) -> Result<Resource> {
    let Made {
        base,
        base_environment,
        domain,
        databases,
    } = *made;
    let client = &context.client;
    let environment = plan::environment(preview, base_environment);
    apply_object(&Api::namespaced(client.clone(), namespace), &environment).await?;
    copy_secrets(
        preview,
        context,
        namespace,
        base,
        &base_environment.name_any(),
    )
    .await?;
    let bindings = database_plan::rebind(&base.spec.dependency_bindings, &databases.ids);
    let shape = plan::CopyShape {
        bound: domain.is_some(),
        bindings: &bindings,
    };
    let copy = apply_object(
        &Api::<Resource>::namespaced(client.clone(), namespace),
        &plan::resource(preview, base, &shape),
    )
    .await?;
    let bindings = Api::<DomainBinding>::namespaced(client.clone(), namespace);
    match domain {
        Some(domain) => {
            drop(apply_object(&bindings, &plan::domain_binding(preview, domain)).await?)
        }
        // The policy no longer gives one: a binding made before goes.
        None => {
            let name = plan::domain_binding_name(preview);
            if Caches::get(&context.caches.domain_bindings, namespace, &name).is_some() {
                cleanup::delete(&bindings, &name).await?;
            }
        }
    }
    // The head deploys once its databases are ready to deploy on (filled, when asked).
    if !databases.settled() {
        return Ok(copy);
    }
    let attempts = Api::<Deployment>::namespaced(client.clone(), namespace);
    let attempt = plan::attempt(preview, &copy);
    match attempts.create(&PostParams::default(), &attempt).await {
        Ok(_) => {
            tracing::info!(preview = %preview.name_any(), attempt = %attempt.name_any(), "preview: attempt started")
        }
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    Ok(copy)
}

/// Copies the resource's and the environment's secret values when the preview may have them;
/// removes copies it may no longer have.
async fn copy_secrets(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
    base: &Resource,
    base_environment: &str,
) -> Result<()> {
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let copies = plan::secret_copies(preview, base, base_environment);
    for (from, to) in &copies {
        let Some(source) = Caches::get(&context.caches.secrets, namespace, from) else {
            continue;
        };
        let copy = Secret {
            metadata: plan::owned_meta(preview, to.clone()),
            data: source.data.clone(),
            ..Default::default()
        };
        apply_object(&secrets, &copy).await?;
    }
    if copies.is_empty() {
        cleanup::delete_secret_copies(preview, context, namespace).await?;
    }
    Ok(())
}

/// Server-side applies `object` as the controller; the object as stored.
async fn apply_object<K>(api: &Api<K>, object: &K) -> Result<K>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut object = object.clone();
    object.meta_mut().managed_fields = None;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    Ok(api
        .patch(&object.name_any(), &params, &Patch::Apply(&object))
        .await?)
}

async fn write(
    api: &Api<PreviewEnvironment>,
    preview: &PreviewEnvironment,
    status: &PreviewEnvironmentStatus,
) -> Result<()> {
    StatusWriter::new(api, preview)
        .apply(preview.status.as_ref(), status)
        .await?;
    Ok(())
}
