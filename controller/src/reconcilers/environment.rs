//! Environment: `Ready` once its project exists; archive and lock are status transitions.

use std::sync::Arc;

use berth_crds::condition;
use berth_crds::environment::{Environment, EnvironmentStatus, reason};
use berth_crds::lifecycle::LifecycleStatus;
use berth_crds::project::Project;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};

use super::archive;
use super::policy::{RESYNC_AFTER, drain, error_policy};
use super::project::publish_lifecycle_change;
use crate::cache::Subscription;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::status::StatusWriter;

const KIND: &str = "Environment";

/// What the Environment controller reacts to.
pub struct Inputs {
    pub environments: Subscription<Environment>,
    pub projects: Subscription<Project>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let store = context.caches.environments.clone();
    // A project appearing, changing or going re-checks the environments that name it.
    let stream = Controller::for_shared_stream(inputs.environments, store.clone())
        .watches_shared_stream(inputs.projects, move |project| {
            let namespace = project.namespace();
            let name = project.name_any();
            store
                .state()
                .into_iter()
                .filter(|env| env.namespace() == namespace && env.spec.project_id == name)
                .map(|env| ObjectRef::from_obj(env.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The status an environment should have, given whether its project exists.
pub fn desired_status(
    environment: &Environment,
    project_exists: bool,
    now: Timestamp,
) -> EnvironmentStatus {
    let current = environment.status.clone().unwrap_or_default();
    let generation = environment.metadata.generation;
    let stamp = Stamp { generation, now };
    let spec = &environment.spec;
    let state = archive::plan(
        spec.archived,
        spec.archive_reason.as_deref(),
        current.archived_at.as_ref(),
        now,
    );
    // The time the lock was asked for, when its writer recorded it.
    let locked_at = spec.locked.then(|| {
        spec.locked_at
            .clone()
            .or_else(|| current.locked_at.clone())
            .unwrap_or(Time(now))
    });
    let mut status = EnvironmentStatus {
        lifecycle_status: Some(state.lifecycle),
        locked_at,
        archived_at: state.archived_at.clone(),
        archive_reason: state.archive_reason.clone(),
        observed_generation: generation,
        conditions: current.conditions,
    };
    condition::merge(&mut status.conditions, archive::condition(&state, stamp));
    let ready = if project_exists {
        let message = match state.lifecycle {
            LifecycleStatus::Active => "environment is active",
            LifecycleStatus::Archived => "environment is archived; its history stays readable",
        };
        stamp.reconciled(message)
    } else {
        stamp.not_ready(
            reason::PROJECT_NOT_FOUND,
            format!(
                "project {} does not exist in this organization",
                spec.project_id
            ),
        )
    };
    condition::merge(&mut status.conditions, ready);
    status
}

async fn reconcile(environment: Arc<Environment>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = environment
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let projects = Api::<Project>::namespaced(context.client.clone(), &namespace);
    let project_exists = projects
        .get_opt(&environment.spec.project_id)
        .await?
        .is_some();
    let api = Api::<Environment>::namespaced(context.client.clone(), &namespace);
    let current = environment.status.as_ref();
    let status = desired_status(&environment, project_exists, Timestamp::now());
    StatusWriter::new(&api, environment.as_ref())
        .apply(current, &status)
        .await?;
    publish_lifecycle_change(
        &context,
        &environment.object_ref(&()),
        current.and_then(|s| s.lifecycle_status),
        status.lifecycle_status,
        "environment",
    )
    .await;
    Ok(Action::requeue(RESYNC_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::{ConditionStatus, READY};
    use berth_crds::environment::EnvironmentSpec;

    fn environment(locked: bool) -> Environment {
        Environment::new(
            "env-1",
            EnvironmentSpec {
                project_id: "prj-1".into(),
                name: "production".into(),
                kind: "production".into(),
                parent_environment_id: None,
                variables: vec![],
                locked,
                lock_reason: None,
                locked_at: None,
                archived: false,
                archive_reason: None,
            },
        )
    }

    #[test]
    fn missing_project_is_not_ready_and_names_it() {
        let status = desired_status(&environment(false), false, Timestamp::now());
        let ready = condition::find(&status.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, reason::PROJECT_NOT_FOUND);
        assert!(ready.message.contains("prj-1"));
    }

    #[test]
    fn existing_project_makes_it_ready() {
        let status = desired_status(&environment(false), true, Timestamp::now());
        assert!(condition::is_true(&status.conditions, READY));
        assert!(status.locked_at.is_none());
    }

    #[test]
    fn locking_stamps_locked_at_once() {
        let mut environment = environment(true);
        let first = desired_status(&environment, true, "2026-01-01T00:00:00Z".parse().unwrap());
        environment.status = Some(first.clone());
        let second = desired_status(&environment, true, Timestamp::now());
        assert_eq!(second.locked_at, first.locked_at);
    }

    /// A lock written with its time (the REST API's) keeps that time in status; unlocked,
    /// the status has none.
    #[test]
    fn a_lock_written_with_its_time_keeps_it() {
        let mut environment = environment(true);
        let asked: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        environment.spec.locked_at = Some(Time(asked));
        let status = desired_status(&environment, true, Timestamp::now());
        assert_eq!(status.locked_at, Some(Time(asked)));
        environment.spec.locked = false;
        let status = desired_status(&environment, true, Timestamp::now());
        assert!(status.locked_at.is_none());
    }

    /// Whether its project exists is the one thing it asks the API server.
    #[tokio::test]
    async fn a_reconciled_environment_only_reads_its_project() {
        use crate::context::fixtures::Exchange;
        let (context, api, _feeds) = Context::test();
        let mut environment = environment(true);
        environment.metadata.namespace = Some("org-acme".into());
        let earlier = "2026-01-01T08:00:00Z".parse().unwrap();
        environment.status = Some(desired_status(&environment, true, earlier));
        let project: Project = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Project",
            "metadata": { "name": "prj-1", "namespace": "org-acme" },
            "spec": { "name": "Shop" },
        }))
        .unwrap();
        let script = api.serve([Exchange::get(
            "/apis/berth.dev/v1alpha1/namespaces/org-acme/projects/prj-1",
        )
        .returns(&project)]);
        let action = reconcile(Arc::new(environment), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        script.finish().await;
    }
}
