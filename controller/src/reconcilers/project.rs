//! Project: `Ready` while reconciled; archive is a status transition with an Event.

use std::sync::Arc;

use berth_crds::condition;
use berth_crds::lifecycle::LifecycleStatus;
use berth_crds::project::{Project, ProjectStatus};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};

use super::archive;
use super::policy::{RESYNC_AFTER, drain, error_policy};
use crate::cache::Subscription;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;

const KIND: &str = "Project";

pub async fn run(
    context: Arc<Context>,
    projects: Subscription<Project>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let stream = Controller::for_shared_stream(projects, context.caches.projects.clone())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The status a project should have now.
pub fn desired_status(project: &Project, now: Timestamp) -> ProjectStatus {
    let current = project.status.clone().unwrap_or_default();
    let generation = project.metadata.generation;
    let stamp = Stamp { generation, now };
    let state = archive::plan(
        project.spec.archived,
        project.spec.archive_reason.as_deref(),
        current.archived_at.as_ref(),
        now,
    );
    let mut status = ProjectStatus {
        lifecycle_status: Some(state.lifecycle),
        archived_at: state.archived_at.clone(),
        archive_reason: state.archive_reason.clone(),
        observed_generation: generation,
        conditions: current.conditions,
    };
    condition::merge(&mut status.conditions, archive::condition(&state, stamp));
    let message = match state.lifecycle {
        LifecycleStatus::Active => "project is active".to_string(),
        LifecycleStatus::Archived => "project is archived; its history stays readable".to_string(),
    };
    condition::merge(&mut status.conditions, stamp.reconciled(message));
    status
}

async fn reconcile(project: Arc<Project>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = project
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Project>::namespaced(context.client.clone(), &namespace);
    let current = project.status.as_ref();
    let status = desired_status(&project, Timestamp::now());
    StatusWriter::new(&api, project.as_ref())
        .apply(current, &status)
        .await?;
    publish_lifecycle_change(
        &context,
        &project.object_ref(&()),
        current.and_then(|s| s.lifecycle_status),
        status.lifecycle_status,
        "project",
    )
    .await;
    Ok(Action::requeue(RESYNC_AFTER))
}

/// Emits `Archived` or `Restored` when the lifecycle really changed (not on first sight).
pub async fn publish_lifecycle_change(
    context: &Context,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    before: Option<LifecycleStatus>,
    after: Option<LifecycleStatus>,
    noun: &str,
) {
    let (reason, note) = match (before, after) {
        (Some(LifecycleStatus::Active) | None, Some(LifecycleStatus::Archived)) => {
            (event_reason::ARCHIVED, format!("{noun} archived"))
        }
        (Some(LifecycleStatus::Archived), Some(LifecycleStatus::Active)) => {
            (event_reason::RESTORED, format!("{noun} restored"))
        }
        _ => return,
    };
    context
        .publish_event(reference, EventType::Normal, reason, note)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::READY;
    use berth_crds::project::ProjectSpec;

    fn project(archived: bool) -> Project {
        let mut project = Project::new(
            "prj-1",
            ProjectSpec {
                name: "Shop".into(),
                slug: None,
                description: None,
                display_order: 0,
                archived,
                variables: Vec::new(),
                archive_reason: archived.then(|| "retired".into()),
            },
        );
        project.metadata.generation = Some(3);
        project
    }

    #[test]
    fn active_project_is_ready_and_not_archived() {
        let status = desired_status(&project(false), Timestamp::now());
        assert_eq!(status.lifecycle_status, Some(LifecycleStatus::Active));
        assert!(condition::is_true(&status.conditions, READY));
        assert!(!condition::is_true(&status.conditions, condition::ARCHIVED));
        assert_eq!(status.observed_generation, Some(3));
    }

    #[test]
    fn archived_project_keeps_reason_and_stays_ready() {
        let status = desired_status(&project(true), Timestamp::now());
        assert_eq!(status.lifecycle_status, Some(LifecycleStatus::Archived));
        assert_eq!(status.archive_reason.as_deref(), Some("retired"));
        assert!(status.archived_at.is_some());
        assert!(condition::is_true(&status.conditions, condition::ARCHIVED));
        assert!(condition::is_true(&status.conditions, READY));
    }

    #[test]
    fn reconciling_twice_plans_the_same_status() {
        let mut project = project(true);
        let first = desired_status(&project, Timestamp::now());
        project.status = Some(first.clone());
        assert_eq!(desired_status(&project, Timestamp::now()), first);
    }

    #[tokio::test]
    async fn a_reconciled_project_costs_no_request() {
        let (context, api, _feeds) = Context::test();
        let mut project = project(true);
        project.metadata.namespace = Some("org-acme".into());
        let earlier = "2026-01-01T08:00:00Z".parse().unwrap();
        project.status = Some(desired_status(&project, earlier));
        let script = api.expect_nothing();
        let action = reconcile(Arc::new(project), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        script.finish().await;
    }
}
