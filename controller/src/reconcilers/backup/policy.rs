//! Backup policies (a database's DependencyResourceBackupPolicy and a volume's
//! StorageVolumeBackupPolicy, one controller each over [`BackupPolicy`]): a backup for each
//! slot of the policy's schedule, pruned by its rules. A slot's backup is named by policy and
//! slot, so a slot backed up twice — a controller killed after creating it, a new leader after a
//! failover — exists once. A slot that passed while the controller was away is backed up once,
//! late, on return (a `BackupLate` Warning and a `backup-late` notification); older missed slots
//! are counted in that message, not backed up. An idle policy costs a timer until its next
//! slot, no API request. Deleting a policy keeps its backups (delete them by hand).

use std::sync::Arc;
use std::time::Duration;

use berth_crds::backup::{BackupStatus, BackupTarget, PolicySlot};
use berth_crds::backup_policy::{
    BackupPolicyStatus, POLICY_LABEL, PolicyBackup, VerifiedBackup, slot_backup_name,
};
use berth_crds::condition::reason::{DEPENDENCY_MISSING, INVALID_SPEC};
use berth_crds::condition::{self, Condition};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::notification::NotificationEvent;
use berth_crds::storage_volume::StorageVolume;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use super::policy_kinds::{BackupPolicy, Subject};
use super::prune::{self, Kept};
use super::removal::StoredBackup;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::notices::{Notice, subject};
use crate::reconcilers::policy::{drain, error_policy};
use crate::reconcilers::slots::{self, SlotDecision, SlotRecord, rfc3339, until};
use crate::status::StatusWriter;

/// How soon a policy whose database or target does not exist is looked at again.
const WAIT_FOR_DEPENDENCY: Duration = Duration::from_secs(60);
/// Reasons of `Ready`.
const SCHEDULED: &str = "Scheduled";
const BACKUP_FAILED: &str = "BackupFailed";
const TARGET_MISSING: &str = "TargetMissing";

/// Runs the controller of policies of kind `P` (and a watch of their backups, each waking its
/// policy) until `shutdown`.
pub async fn run<P: BackupPolicy>(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let client = context.client.clone();
    let stream = Controller::new(Api::<P>::all(client.clone()), watcher::Config::default())
        .watches(
            Api::<P::Backup>::all(client),
            watcher::Config::default(),
            policy_of::<P>,
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile::<P>, error_policy(P::KIND), context);
    drain(P::KIND, stream).await;
}

/// The policy that took `backup`, by its label. Backups are not owned by their policy: deleting
/// a policy keeps the restore points it made.
fn policy_of<P: BackupPolicy>(backup: P::Backup) -> Option<ObjectRef<P>> {
    let policy = backup.labels().get(POLICY_LABEL)?;
    Some(ObjectRef::new(policy).within(&backup.namespace()?))
}

async fn reconcile<P: BackupPolicy>(policy: Arc<P>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(P::KIND);
    if policy.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = policy
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let job = Policy {
        object: policy.as_ref(),
        context: &context,
        namespace: &namespace,
        stamp: Stamp {
            generation: policy.meta().generation,
            now: Timestamp::now(),
        },
    };
    job.reconcile().await
}

/// One reconcile of one policy.
struct Policy<'a, P> {
    object: &'a P,
    context: &'a Context,
    namespace: &'a str,
    stamp: Stamp,
}

impl<P: BackupPolicy> Policy<'_, P> {
    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.context.client.clone(), self.namespace)
    }

    async fn reconcile(&self) -> Result<Action> {
        let rules = self.object.rules();
        let schedule = match rules.parsed_schedule() {
            Ok(schedule) => schedule,
            Err(problem) => {
                let message = format!("spec.{}: {}", problem.field, problem.message);
                self.write(self.not_ready(INVALID_SPEC, message)).await?;
                return Ok(Action::await_change());
            }
        };
        if let Some((reason, message)) = self.missing().await? {
            self.write(self.not_ready(reason, message)).await?;
            return Ok(Action::requeue(WAIT_FOR_DEPENDENCY));
        }
        let now = self.stamp.now;
        let status = self.object.policy_status();
        let record = SlotRecord {
            last_slot: status.and_then(|s| s.last_slot.as_deref()),
            same_spec: status.and_then(|s| s.observed_generation) == self.object.meta().generation,
            created: self.object.meta().creation_timestamp.as_ref().map(|t| t.0),
        };
        let handled = slots::handled_through(record, now);
        let decision = slots::decide(&schedule, rules.enabled, true, handled, now.as_second());
        let mut backups = self.backups().await?;
        backups.extend(self.take(&decision).await?);
        self.prune(&mut backups).await;
        self.write(self.scheduled(&decision, &backups)).await?;
        Ok(match decision.next.filter(|_| rules.enabled) {
            Some(next) => Action::requeue(until(next, now)),
            None => Action::await_change(),
        })
    }

    /// Why the policy cannot back up now: what it backs up, or its target, does not exist.
    async fn missing(&self) -> Result<Option<(&'static str, String)>> {
        let exists = match self.object.subject() {
            Subject::Dependency(id) => self
                .api::<DependencyResource>()
                .get_opt(id)
                .await?
                .is_some(),
            Subject::Volume(id) => self.api::<StorageVolume>().get_opt(id).await?.is_some(),
        };
        if !exists {
            let (field, id) = self.object.subject().field_and_id();
            let message = format!("spec.{field}: {id} does not exist");
            return Ok(Some((DEPENDENCY_MISSING, message)));
        }
        let target = self.object.target_id();
        if self.api::<BackupTarget>().get_opt(target).await?.is_none() {
            let message = format!("spec.targetId: backup target {target} does not exist");
            return Ok(Some((TARGET_MISSING, message)));
        }
        Ok(None)
    }

    async fn backups(&self) -> Result<Vec<P::Backup>> {
        let selector = format!("{POLICY_LABEL}={}", self.object.name_any());
        let params = ListParams::default().labels(&selector);
        Ok(self.api::<P::Backup>().list(&params).await?.items)
    }

    /// Creates the backup `decision` asks for, on time or late: what was created.
    async fn take(&self, decision: &SlotDecision) -> Result<Vec<P::Backup>> {
        let (slot, late) = match (decision.run, decision.run_late) {
            (Some(slot), _) => (slot, false),
            (None, Some(slot)) => (slot, true),
            (None, None) => return Ok(Vec::new()),
        };
        let backup = self.slot_backup(slot, late);
        let created = match self
            .api::<P::Backup>()
            .create(&PostParams::default(), &backup)
            .await
        {
            Ok(created) => created,
            // Made already for this slot (before a restart or by the previous leader).
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(Vec::new()),
            Err(error) => return Err(error.into()),
        };
        if late {
            self.tell_late(slot, decision).await;
        }
        Ok(vec![created])
    }

    /// The backup of `slot`, labelled with its policy and what it backs up.
    fn slot_backup(&self, slot: i64, late: bool) -> P::Backup {
        let policy = self.object.name_any();
        let (label, subject) = self.object.subject().label();
        let labels = [
            (POLICY_LABEL.to_string(), policy.clone()),
            (label.to_string(), subject.to_string()),
        ];
        let metadata = ObjectMeta {
            name: Some(slot_backup_name(&policy, slot)),
            namespace: Some(self.namespace.to_string()),
            labels: Some(labels.into()),
            ..Default::default()
        };
        let slot = PolicySlot {
            policy_id: Some(policy),
            scheduled_for: Some(rfc3339(slot)),
            late,
        };
        self.object.backup(metadata, slot, None)
    }

    async fn tell_late(&self, slot: i64, decision: &SlotDecision) {
        let earlier = decision.missed.len() - 1 + decision.missed_uncounted;
        let mut note = format!(
            "the backup due at {} was taken late: the controller was stopped or had no leader \
             at its slot",
            rfc3339(slot)
        );
        if earlier > 0 {
            note.push_str(&format!(
                "; {earlier} earlier slots passed without a backup"
            ));
        }
        let reference = self.object.object_ref(&());
        self.context
            .publish_event(&reference, EventType::Warning, "BackupLate", note.clone())
            .await;
        let (_, backed_up) = self.object.subject().field_and_id();
        self.context.notices.send(Notice {
            namespace: self.namespace.to_string(),
            event: NotificationEvent::BackupLate,
            subject: subject(P::KIND, &self.object.name_any(), None),
            project_id: None,
            resource_id: None,
            summary: format!("backups of {backed_up}: {note}"),
            occurred_at: Timestamp::now(),
        });
    }

    /// Deletes what the rules no longer keep (a failure waits for the next reconcile).
    async fn prune(&self, backups: &mut Vec<P::Backup>) {
        let kept: Vec<Kept> = backups
            .iter()
            .filter(|b| b.meta().deletion_timestamp.is_none())
            .map(as_kept)
            .collect();
        let rules = &self.object.rules().retention;
        let pruning = prune::decide(&kept, rules, self.stamp.now.as_second());
        let api = self.api::<P::Backup>();
        for name in &pruning.delete {
            if let Err(error) = api.delete(name, &DeleteParams::default()).await {
                tracing::warn!(%error, backup = %name, "could not delete a pruned backup");
            }
        }
        backups.retain(|b| !pruning.delete.contains(&b.name_any()));
    }

    /// The status of a policy whose schedule runs.
    fn scheduled(&self, decision: &SlotDecision, backups: &[P::Backup]) -> BackupPolicyStatus {
        let enabled = self.object.rules().enabled;
        let latest = backups.iter().max_by_key(|b| taken_at(*b));
        let verified = backups
            .iter()
            .filter(|b| status_of(*b) == BackupStatus::Ready)
            .max_by_key(|b| taken_at(*b));
        let next = decision.next.filter(|_| enabled);
        let failed = latest.filter(|b| status_of(*b) == BackupStatus::Failed);
        let ready = match (failed, next) {
            (Some(backup), _) => self.stamp.not_ready(BACKUP_FAILED, failure_line(backup)),
            (None, Some(next)) => self
                .stamp
                .ready(SCHEDULED, format!("next backup at {}", rfc3339(next))),
            (None, None) if !enabled => self
                .stamp
                .ready(SCHEDULED, "disabled: slots pass without a backup"),
            (None, None) => self
                .stamp
                .ready(SCHEDULED, "the schedule matches no future time"),
        };
        let mut status = self.with_ready(ready);
        status.last_slot = Some(rfc3339(decision.handled_through));
        status.next_run_at = next.map(rfc3339);
        status.last_run_at = latest.map(|b| rfc3339(taken_at(b)));
        status.latest_backup = latest.map(|b| PolicyBackup {
            name: b.name_any(),
            status: status_of(b),
        });
        status.last_verified = verified.and_then(verified_backup);
        status.backups_kept = backups
            .iter()
            .filter(|b| status_of(*b) == BackupStatus::Ready)
            .count() as i64;
        status
    }

    fn not_ready(&self, reason: &str, message: String) -> BackupPolicyStatus {
        // Slots before now are not missed once the policy can run: nothing could back them up.
        BackupPolicyStatus {
            next_run_at: None,
            last_slot: Some(self.stamp.now.to_string()),
            ..self.with_ready(self.stamp.not_ready(reason, message))
        }
    }

    fn with_ready(&self, ready: Condition) -> BackupPolicyStatus {
        let mut status = self.object.policy_status().cloned().unwrap_or_default();
        condition::merge(&mut status.conditions, ready);
        status.observed_generation = self.object.meta().generation;
        status
    }

    async fn write(&self, status: BackupPolicyStatus) -> Result<()> {
        let api = self.api::<P>();
        StatusWriter::new(&api, self.object)
            .apply(self.object.policy_status(), &status)
            .await?;
        Ok(())
    }
}

fn status_of(backup: &impl StoredBackup) -> BackupStatus {
    backup.status().map(|s| s.status).unwrap_or_default()
}

/// When a backup was asked for: its slot, else its creation (Unix seconds).
fn taken_at(backup: &impl StoredBackup) -> i64 {
    let slot = backup
        .slot()
        .scheduled_for
        .as_deref()
        .and_then(|s| s.parse::<Timestamp>().ok());
    let created = backup.meta().creation_timestamp.as_ref().map(|t| t.0);
    slot.or(created).map_or(0, |t| t.as_second())
}

fn as_kept(backup: &impl StoredBackup) -> Kept {
    Kept {
        name: backup.name_any(),
        status: status_of(backup),
        taken_at: taken_at(backup),
    }
}

fn verified_backup(backup: &impl StoredBackup) -> Option<VerifiedBackup> {
    let verification = backup.status()?.verification.as_ref()?;
    Some(VerifiedBackup {
        name: backup.name_any(),
        verified_at: verification.verified_at.0.to_string(),
        tables: verification.tables,
        rows: verification.rows,
        keys: verification.keys,
        files: verification.tree.as_ref().map(|tree| tree.files),
    })
}

fn failure_line(backup: &impl StoredBackup) -> String {
    let why = backup
        .status()
        .and_then(|s| s.failure_message.clone())
        .unwrap_or_else(|| "no cause recorded".into());
    format!("the newest backup {} failed: {why}", backup.name_any())
}
