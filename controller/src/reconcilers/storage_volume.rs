//! StorageVolume: says whether the volume can be mounted (the `sourcePath` rule the schema
//! cannot express) and keeps it while a resource attaches it. The REST API refuses to delete
//! an attached volume; a deletion from kubectl or a GitOps tool waits instead, with
//! `DeletionBlocked` naming the resources, until they detach it or are gone; then a volume a
//! backup policy covers is backed up once more (`backup::final_backup`). Its data on servers is
//! kept either way.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::backup_policy::StorageVolumeBackupPolicy;
use berth_crds::condition::{self, DELETION_BLOCKED, reason};
use berth_crds::resource::Resource;
use berth_crds::storage_volume::{StorageVolume, StorageVolumeStatus};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource as _, ResourceExt};

use super::backup::final_backup;
use super::fresh::with_current_finalizers;
use super::policy::{CONFLICT_RECHECK, drain, error_policy};
use crate::cache::Subscription;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;

const KIND: &str = "StorageVolume";
/// Keeps a volume while resources attach it.
pub const FINALIZER: &str = "berth.dev/storage-volume-in-use";
/// How often a blocked deletion is checked again (resource changes also wake it).
const BLOCKED_RECHECK: Duration = Duration::from_secs(5);

/// What the StorageVolume controller reacts to.
pub struct Inputs {
    pub volumes: Subscription<StorageVolume>,
    pub resources: Subscription<Resource>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let volumes = context.caches.storage_volumes.clone();
    let by_resource = volumes.clone();
    // A resource that detaches a volume no longer names it: a resource change wakes every
    // volume of its namespace that waits to be deleted (few, and only while they wait).
    let stream = Controller::for_shared_stream(inputs.volumes, volumes)
        .watches_shared_stream(inputs.resources, move |resource| {
            let namespace = resource.namespace();
            by_resource
                .state()
                .into_iter()
                .filter(|v| v.namespace() == namespace && v.meta().deletion_timestamp.is_some())
                .map(|v| ObjectRef::from_obj(v.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The resources among `resources` that attach volume `id` of `namespace`, as
/// `resource/<id>`, sorted. A resource being deleted still counts: its containers may still
/// mount the volume until its cleanup ends.
pub fn attached_by(resources: &[Arc<Resource>], namespace: &str, id: &str) -> Vec<String> {
    let mut names: Vec<String> = resources
        .iter()
        .filter(|r| r.namespace().as_deref() == Some(namespace))
        .filter(|r| {
            r.spec
                .storage_attachments
                .iter()
                .any(|a| a.storage_volume_id == id)
        })
        .map(|r| format!("resource/{}", r.name_any()))
        .collect();
    names.sort();
    names
}

/// The status a volume should have, given the resources that attach it and, once none does,
/// why its deletion waits for a final backup. Pure.
pub fn desired_status(
    volume: &StorageVolume,
    attached: &[String],
    final_backup_wait: Option<&str>,
    now: Timestamp,
) -> StorageVolumeStatus {
    let generation = volume.metadata.generation;
    let stamp = Stamp { generation, now };
    let mut conditions = volume
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let ready = match volume.spec.problem() {
        None => stamp.reconciled("volume can be attached and mounted"),
        Some(problem) => stamp.not_ready(reason::INVALID_SPEC, problem),
    };
    condition::merge(&mut conditions, ready);
    if volume.metadata.deletion_timestamp.is_some() {
        let deletion = match (attached.is_empty(), final_backup_wait) {
            (true, None) => stamp.deletion_unblocked("no resource attaches this volume"),
            (true, Some(wait)) => stamp.holds(DELETION_BLOCKED, final_backup::REASON, wait),
            (false, _) => stamp.deletion_blocked(format!(
                "deletion waits until no resource attaches this volume (detach it, or delete \
                 the resource): {}",
                attached.join(", ")
            )),
        };
        condition::merge(&mut conditions, deletion);
    }
    StorageVolumeStatus {
        observed_generation: generation,
        conditions,
    }
}

async fn reconcile(volume: Arc<StorageVolume>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = volume
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<StorageVolume>::namespaced(context.client.clone(), &namespace);
    let Some(volume) = with_current_finalizers(&api, volume, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    let resources = context.caches.resources.state();
    let attached = attached_by(&resources, &namespace, &volume.name_any());
    let deleting = volume.metadata.deletion_timestamp.is_some();
    // Once nothing attaches it, a volume a policy covers is backed up once more first.
    let waiting = match deleting && attached.is_empty() {
        true => {
            final_backup::pending::<StorageVolumeBackupPolicy>(&*volume, &context, &namespace)
                .await?
        }
        false => None,
    };
    let wait_message = waiting.as_ref().map(|w| w.message.as_str());
    let current = volume.status.as_ref();
    let status = desired_status(&volume, &attached, wait_message, Timestamp::now());
    match StatusWriter::new(&api, volume.as_ref())
        .apply(current, &status)
        .await
    {
        Err(error) if error.is_conflict() => return Ok(Action::requeue(CONFLICT_RECHECK)),
        written => written?,
    };
    announce_block(&context, &volume, current, &status).await;
    if deleting && !attached.is_empty() {
        return Ok(Action::requeue(BLOCKED_RECHECK));
    }
    if let Some(waiting) = waiting {
        return Ok(waiting.next);
    }
    finalizer(&api, FINALIZER, volume, |event| async move {
        match event {
            FinalizerEvent::Apply(_) | FinalizerEvent::Cleanup(_) => Ok(Action::await_change()),
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// A Warning event when a deletion starts waiting, once per wait.
async fn announce_block(
    context: &Context,
    volume: &StorageVolume,
    before: Option<&StorageVolumeStatus>,
    after: &StorageVolumeStatus,
) {
    let was_blocked = before.is_some_and(|b| condition::is_true(&b.conditions, DELETION_BLOCKED));
    let blocked = condition::find(&after.conditions, DELETION_BLOCKED)
        .filter(|c| c.status == condition::ConditionStatus::True);
    if let (false, Some(blocked)) = (was_blocked, blocked) {
        context
            .publish_event(
                &volume.object_ref(&()),
                EventType::Warning,
                event_reason::DELETION_BLOCKED,
                blocked.message.clone(),
            )
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::{ConditionStatus, READY};
    use berth_crds::resource::StorageAttachment;
    use berth_crds::storage_volume::{StorageVolumeKind, StorageVolumeSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn volume(source_path: Option<&str>, deleting: bool) -> StorageVolume {
        let mut volume = StorageVolume::new(
            "uploads",
            StorageVolumeSpec {
                project_id: "shop".into(),
                environment_id: "prod".into(),
                name: "Uploads".into(),
                kind: StorageVolumeKind::NamedVolume,
                source_path: source_path.map(Into::into),
                description: None,
            },
        );
        volume.metadata.namespace = Some("org-a".into());
        volume.metadata.generation = Some(2);
        if deleting {
            volume.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        }
        volume
    }

    fn resource(namespace: &str, name: &str, volumes: &[&str]) -> Arc<Resource> {
        let mut resource: Resource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"projectId": "shop", "environmentId": "prod", "name": name,
                     "kind": "application"},
        }))
        .unwrap();
        resource.spec.storage_attachments = volumes
            .iter()
            .map(|v| StorageAttachment {
                attachment_id: format!("att-{v}"),
                storage_volume_id: v.to_string(),
                destination_path: "/data".into(),
                attached_at: None,
            })
            .collect();
        Arc::new(resource)
    }

    #[test]
    fn only_resources_of_the_volumes_namespace_that_attach_it_hold_it() {
        let resources = [
            resource("org-a", "web", &["uploads", "media"]),
            resource("org-a", "api", &["uploads"]),
            resource("org-a", "worker", &["media"]),
            resource("org-b", "web", &["uploads"]),
        ];
        assert_eq!(
            attached_by(&resources, "org-a", "uploads"),
            ["resource/api", "resource/web"]
        );
        assert!(attached_by(&resources, "org-a", "cache").is_empty());
    }

    #[test]
    fn a_deletion_waits_naming_the_resources_and_goes_once_they_detach() {
        let now = Timestamp::UNIX_EPOCH;
        let attached = ["resource/web".to_string()];
        let blocked = desired_status(&volume(None, true), &attached, None, now);
        let condition = condition::find(&blocked.conditions, DELETION_BLOCKED).unwrap();
        assert_eq!(condition.status, ConditionStatus::True);
        assert!(condition.message.contains("resource/web"), "{condition:?}");
        assert!(condition::is_true(&blocked.conditions, READY));

        let mut detached = volume(None, true);
        detached.status = Some(blocked);
        let free = desired_status(&detached, &[], None, now);
        let condition = condition::find(&free.conditions, DELETION_BLOCKED).unwrap();
        assert_eq!(condition.status, ConditionStatus::False);

        let live = desired_status(&volume(None, false), &attached, None, now);
        assert!(condition::find(&live.conditions, DELETION_BLOCKED).is_none());
        assert_eq!(live.observed_generation, Some(2));
    }

    #[test]
    fn an_unattached_volume_a_policy_covers_waits_for_its_final_backup() {
        let wait = "waiting for the final backup uploads-final-01234567 to be proven";
        let status = desired_status(&volume(None, true), &[], Some(wait), Timestamp::UNIX_EPOCH);
        let blocked = condition::find(&status.conditions, DELETION_BLOCKED).unwrap();
        assert_eq!(blocked.status, ConditionStatus::True);
        assert_eq!(blocked.reason, final_backup::REASON);
        assert_eq!(blocked.message, wait);
        let attached = ["resource/web".to_string()];
        let status = desired_status(
            &volume(None, true),
            &attached,
            Some(wait),
            Timestamp::UNIX_EPOCH,
        );
        let blocked = condition::find(&status.conditions, DELETION_BLOCKED).unwrap();
        assert!(
            blocked.message.contains("resource/web"),
            "attachments are said first"
        );
    }

    #[test]
    fn a_source_path_on_a_named_volume_is_not_ready_naming_the_field() {
        let status = desired_status(
            &volume(Some("/srv"), false),
            &[],
            None,
            Timestamp::UNIX_EPOCH,
        );
        let ready = condition::find(&status.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, reason::INVALID_SPEC);
        assert!(ready.message.starts_with("spec."), "{ready:?}");
    }
}
