//! The last backup before a database or a volume goes: deleting a managed dependency or a
//! storage volume that a backup policy covers first takes a backup of it to the policy's target
//! (as the policy takes its own: a volume's on the policy's server, with its consistency) and
//! waits until it is proven. A failed one keeps the object (a person decides: annotate
//! `berth.dev/skip-final-backup` with its name to delete it without one). The backup is not
//! the policy's, so its pruning keeps it; it outlives what it backed up.
//!
//! `decide` chooses without I/O; `pending` reads and creates; each kind's reconciler shows the
//! wait on its own `DeletionBlocked` condition.

use std::time::Duration;

use berth_crds::backup::{BackupStatus, PolicySlot};
use berth_crds::backup_policy::SKIP_FINAL_BACKUP_ANNOTATION;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::policy_kinds::BackupPolicy;
use super::removal::StoredBackup;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::event_reason;

/// Why a `DeletionBlocked` condition says the deletion waits for the final backup.
pub const REASON: &str = "FinalBackup";
/// How often a deletion waiting for its final backup looks at it (the backup's changes do
/// not wake what it backs up).
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

/// The final backup's name: one per object (a namesake created later gets its own).
pub fn backup_name(subject: &impl ResourceExt) -> String {
    let uid = subject.uid().unwrap_or_default();
    format!("{}-final-{}", subject.name_any(), &uid[..uid.len().min(8)])
}

/// What to do, given the target of a policy covering the object being deleted and the final
/// backup so far.
pub fn decide(
    subject: &impl ResourceExt,
    policy_target: Option<&str>,
    backup: Option<&impl StoredBackup>,
) -> Step {
    let name = subject.name_any();
    let skipped = subject.annotations().get(SKIP_FINAL_BACKUP_ANNOTATION) == Some(&name);
    let Some(target) = policy_target.filter(|_| !skipped) else {
        return Step::Remove;
    };
    let Some(backup) = backup else {
        return Step::Take {
            target: target.to_string(),
        };
    };
    let status = backup.status().cloned().unwrap_or_default();
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

/// A failed final backup is a Warning; taking and waiting are Normal.
pub fn event_type(message: &str) -> EventType {
    if message.contains("failed") {
        EventType::Warning
    } else {
        EventType::Normal
    }
}

/// Why a deletion waits for its final backup, and when to look again.
pub struct Waiting {
    pub message: String,
    pub next: Action,
}

/// Takes or looks at the final backup of `subject`, being deleted, under a policy of kind `P`
/// covering it: `None` when it may be removed now.
pub async fn pending<P: BackupPolicy>(
    subject: &impl kube::Resource<DynamicType = ()>,
    context: &Context,
    namespace: &str,
) -> Result<Option<Waiting>> {
    let name = subject.name_any();
    let policies = Api::<P>::namespaced(context.client.clone(), namespace);
    let covering = policies.list(&ListParams::default()).await?.items;
    let policy = covering
        .into_iter()
        .find(|p| p.subject().field_and_id().1 == name && p.meta().deletion_timestamp.is_none());
    let backups = Api::<P::Backup>::namespaced(context.client.clone(), namespace);
    let backup_name = backup_name(subject);
    let backup = backups.get_opt(&backup_name).await?;
    let target = policy.as_ref().map(|p| p.target_id());
    let waiting = |message: String, next| Ok(Some(Waiting { message, next }));
    match decide(subject, target, backup.as_ref()) {
        Step::Remove => Ok(None),
        Step::Take { target } => {
            let policy = policy.expect("a target comes from a covering policy");
            let metadata = ObjectMeta {
                name: Some(backup_name.clone()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            };
            let why = format!("the last backup before {name} was deleted");
            let backup = policy.backup(metadata, PolicySlot::default(), Some(why));
            match backups.create(&PostParams::default(), &backup).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                // A terminating namespace takes no new object (and its backups go with it).
                Err(kube::Error::Api(e))
                    if e.code == 403 && e.message.contains("being terminated") =>
                {
                    let note = "its namespace is being deleted, backups with it: no final backup";
                    let reason = event_reason::CLEANUP_INCOMPLETE;
                    context
                        .publish_event(
                            &subject.object_ref(&()),
                            EventType::Warning,
                            reason,
                            note.into(),
                        )
                        .await;
                    return Ok(None);
                }
                Err(error) => return Err(error.into()),
            }
            waiting(
                format!("taking a final backup ({backup_name}) to {target} before {name} goes"),
                Action::requeue(LOOK_AGAIN),
            )
        }
        Step::Wait => waiting(
            format!("waiting for the final backup {backup_name} to be proven"),
            Action::requeue(LOOK_AGAIN),
        ),
        // The annotation that lets it go is a change of the object, which wakes it.
        Step::Blocked(why) => waiting(why, Action::await_change()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::backup::{DependencyResourceBackup, DependencyResourceBackupStatus};
    use berth_crds::dependency_resource::DependencyResource;

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

    const NO_BACKUP: Option<&DependencyResourceBackup> = None;

    #[test]
    fn a_database_without_a_policy_goes_at_once() {
        assert_eq!(decide(&dependency(&[]), None, NO_BACKUP), Step::Remove);
    }

    #[test]
    fn a_covered_database_is_backed_up_to_its_policys_target_and_goes_once_proven() {
        let db = dependency(&[]);
        assert_eq!(backup_name(&db), "db-final-01234567");
        let take = Step::Take {
            target: "offsite".into(),
        };
        assert_eq!(decide(&db, Some("offsite"), NO_BACKUP), take);
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
        assert_eq!(decide(&typed, Some("offsite"), NO_BACKUP), Step::Remove);
    }
}
