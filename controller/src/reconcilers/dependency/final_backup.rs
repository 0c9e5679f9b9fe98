//! The last backup before a database goes: deleting a managed dependency that a backup policy
//! covers first takes a backup of it to the policy's target and waits until it is proven by
//! its test restore. A failed one keeps the database (a person decides: annotate
//! `berth.dev/skip-final-backup` with the dependency's name to delete it without one). The
//! backup is not the policy's, so its pruning keeps it; it outlives the database.
//!
//! `decide` chooses without I/O; `before_removal` reads, creates and writes.

use std::time::Duration;

use berth_crds::backup::{
    BackupStatus, DependencyResourceBackup, DependencyResourceBackupSpec, PolicySlot,
};
use berth_crds::backup_policy::DependencyResourceBackupPolicy;
use berth_crds::condition::{self, DELETION_BLOCKED};
use berth_crds::dependency_resource::{DependencyResource, SKIP_FINAL_BACKUP_ANNOTATION};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;

/// Why a condition says deletion waits for the final backup.
const REASON: &str = "FinalBackup";
/// How often a deletion waiting for its final backup looks at it (the backup's changes do
/// not wake the dependency).
const LOOK_AGAIN: Duration = Duration::from_secs(3);

/// What a deletion does about its final backup.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Remove the database: its final backup is proven, or none is wanted.
    Remove,
    /// Create the final backup to this target.
    Take { target: String },
    /// The final backup is being taken.
    Wait,
    /// The final backup failed: the database stays until a person decides.
    Blocked(String),
}

/// The final backup's name: one per dependency object (a namesake created later gets its own).
pub fn backup_name(dependency: &DependencyResource) -> String {
    let uid = dependency.uid().unwrap_or_default();
    format!(
        "{}-final-{}",
        dependency.name_any(),
        &uid[..uid.len().min(8)]
    )
}

/// What to do, given the target of a policy covering the dependency and the final backup so far.
pub fn decide(
    dependency: &DependencyResource,
    policy_target: Option<&str>,
    backup: Option<&DependencyResourceBackup>,
) -> Step {
    let name = dependency.name_any();
    let skipped = dependency.annotations().get(SKIP_FINAL_BACKUP_ANNOTATION) == Some(&name);
    let Some(target) = policy_target.filter(|_| !skipped) else {
        return Step::Remove;
    };
    let Some(backup) = backup else {
        return Step::Take {
            target: target.to_string(),
        };
    };
    let status = backup.status.clone().unwrap_or_default();
    match status.status {
        BackupStatus::Pending => Step::Wait,
        BackupStatus::Ready => Step::Remove,
        BackupStatus::Failed => Step::Blocked(format!(
            "the final backup {} failed ({}); {name} is kept: annotate \
             {SKIP_FINAL_BACKUP_ANNOTATION}={name} to delete it without one",
            backup.name_any(),
            status.failure_message.unwrap_or_default()
        )),
    }
}

/// Takes or waits for the final backup of a dependency being deleted: `None` when it may be
/// removed now, else when to look again. Waiting and a failed backup show on its
/// `DeletionBlocked` condition.
pub async fn before_removal(
    dependency: &DependencyResource,
    context: &Context,
    namespace: &str,
) -> Result<Option<Action>> {
    let name = dependency.name_any();
    let policies =
        Api::<DependencyResourceBackupPolicy>::namespaced(context.client.clone(), namespace);
    let covering = policies.list(&ListParams::default()).await?;
    let target = covering
        .items
        .iter()
        .find(|p| p.spec.dependency_resource_id == name && p.metadata.deletion_timestamp.is_none())
        .map(|p| p.spec.target_id.clone());
    let backups = Api::<DependencyResourceBackup>::namespaced(context.client.clone(), namespace);
    let backup_name = backup_name(dependency);
    let backup = backups.get_opt(&backup_name).await?;
    let (message, next) = match decide(dependency, target.as_deref(), backup.as_ref()) {
        Step::Remove => return Ok(None),
        Step::Take { target } => match create(&backups, &backup_name, &name, target).await? {
            Created::Yes => (
                format!("taking a final backup ({backup_name}) before {name} goes"),
                Action::requeue(LOOK_AGAIN),
            ),
            Created::NamespaceGoing => {
                let note = "its namespace is being deleted, backups with it: no final backup";
                let reason = event_reason::CLEANUP_INCOMPLETE;
                publish(context, dependency, EventType::Warning, reason, note.into()).await;
                return Ok(None);
            }
        },
        Step::Wait => (
            format!("waiting for the final backup {backup_name} to be proven"),
            Action::requeue(LOOK_AGAIN),
        ),
        // The annotation that lets it go is a change of the object, which wakes it.
        Step::Blocked(why) => (why, Action::await_change()),
    };
    block(dependency, context, namespace, message).await?;
    Ok(Some(next))
}

enum Created {
    Yes,
    /// A terminating namespace takes no new object (and its backups go with it).
    NamespaceGoing,
}

async fn create(
    backups: &Api<DependencyResourceBackup>,
    backup_name: &str,
    dependency: &str,
    target: String,
) -> Result<Created> {
    let spec = DependencyResourceBackupSpec {
        dependency_resource_id: dependency.to_string(),
        target_id: target,
        description: Some(format!("the last backup before {dependency} was deleted")),
        slot: PolicySlot::default(),
    };
    let backup = DependencyResourceBackup::new(backup_name, spec);
    match backups.create(&PostParams::default(), &backup).await {
        Ok(_) => Ok(Created::Yes),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Created::Yes),
        Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("being terminated") => {
            Ok(Created::NamespaceGoing)
        }
        Err(error) => Err(error.into()),
    }
}

/// Shows why the deletion waits on the dependency's `DeletionBlocked` condition (an event
/// when that changes).
async fn block(
    dependency: &DependencyResource,
    context: &Context,
    namespace: &str,
    message: String,
) -> Result<()> {
    let current = dependency.status.clone().unwrap_or_default();
    let shown = condition::find(&current.conditions, DELETION_BLOCKED).map(|c| &c.message);
    if shown == Some(&message) {
        return Ok(());
    }
    let stamp = Stamp {
        generation: dependency.metadata.generation,
        now: Timestamp::now(),
    };
    let mut status = current.clone();
    condition::merge(
        &mut status.conditions,
        stamp.holds(DELETION_BLOCKED, REASON, message.clone()),
    );
    let api = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    StatusWriter::new(&api, dependency)
        .apply(Some(&current), &status)
        .await?;
    let type_ = if message.contains("failed") {
        EventType::Warning
    } else {
        EventType::Normal
    };
    publish(context, dependency, type_, REASON, message).await;
    Ok(())
}

async fn publish(
    context: &Context,
    dependency: &DependencyResource,
    type_: EventType,
    reason: &str,
    note: String,
) {
    use kube::Resource as _;
    context
        .publish_event(&dependency.object_ref(&()), type_, reason, note)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::backup::DependencyResourceBackupStatus;

    fn dependency(annotations: &[(&str, &str)]) -> DependencyResource {
        let spec = serde_json::from_value(serde_json::json!({
            "kind": "postgres", "projectId": "p", "environmentId": "e", "serverId": "s",
            "name": "Orders", "image": "postgres:15",
        }))
        .unwrap();
        let mut dependency = DependencyResource::new("db", spec);
        dependency.metadata.uid = Some("0123456789abcdef".into());
        dependency.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        dependency
    }

    fn backup(status: BackupStatus) -> DependencyResourceBackup {
        let spec = serde_json::from_value(serde_json::json!({
            "dependencyResourceId": "db", "targetId": "offsite",
        }))
        .unwrap();
        let mut backup = DependencyResourceBackup::new("db-final-01234567", spec);
        backup.status = Some(DependencyResourceBackupStatus {
            status,
            failure_message: Some("the target refused the upload".into()),
            ..Default::default()
        });
        backup
    }

    #[test]
    fn a_database_without_a_policy_goes_at_once() {
        assert_eq!(decide(&dependency(&[]), None, None), Step::Remove);
    }

    #[test]
    fn a_covered_database_is_backed_up_to_its_policys_target_and_goes_once_proven() {
        let db = dependency(&[]);
        assert_eq!(backup_name(&db), "db-final-01234567");
        let take = Step::Take {
            target: "offsite".into(),
        };
        assert_eq!(decide(&db, Some("offsite"), None), take);
        let pending = backup(BackupStatus::Pending);
        assert_eq!(decide(&db, Some("offsite"), Some(&pending)), Step::Wait);
        let ready = backup(BackupStatus::Ready);
        assert_eq!(decide(&db, Some("offsite"), Some(&ready)), Step::Remove);
    }

    #[test]
    fn a_failed_final_backup_keeps_the_database_until_the_name_is_typed() {
        let failed = backup(BackupStatus::Failed);
        let Step::Blocked(why) = decide(&dependency(&[]), Some("offsite"), Some(&failed)) else {
            panic!("a failed final backup blocks the deletion");
        };
        assert!(why.contains("refused the upload") && why.contains("skip-final-backup=db"));
        let wrong = dependency(&[(SKIP_FINAL_BACKUP_ANNOTATION, "Orders")]);
        assert!(matches!(
            decide(&wrong, Some("offsite"), Some(&failed)),
            Step::Blocked(_)
        ));
        let typed = dependency(&[(SKIP_FINAL_BACKUP_ANNOTATION, "db")]);
        assert_eq!(decide(&typed, Some("offsite"), Some(&failed)), Step::Remove);
        assert_eq!(decide(&typed, Some("offsite"), None), Step::Remove);
    }
}
