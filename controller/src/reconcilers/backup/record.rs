//! What every backup's reconcile does with its object, whether it backs up a database or a
//! storage volume: its status as last written, the time it started (a backup whose servers
//! stay out of reach gives up after [`GIVE_UP_AFTER`]), and its end — `ready` with what the
//! test restore saw, or `failed` with a Warning and a `backup-failed` notification.

use std::time::Duration;

use berth_crds::backup::{BackupArtifact, BackupVerification, DependencyResourceBackupStatus};
use berth_crds::notification::NotificationEvent;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde::Serialize;

use super::plan::{self, Failure, code};
use super::removal::StoredBackup;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::notices::{Notice, subject};
use crate::status::StatusWriter;

/// How long a backup keeps trying to reach its servers before it is recorded failed.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(15 * 60);

/// How a backup ended: its artifact and test restore, or why it failed.
pub type Outcome = std::result::Result<(BackupArtifact, BackupVerification), Failure>;

/// One reconcile's hold on one pending backup object.
pub struct BackupRecord<'a, K: StoredBackup> {
    pub object: &'a K,
    pub context: &'a Context,
    pub api: Api<K>,
    pub namespace: &'a str,
}

impl<K: StoredBackup + Serialize> BackupRecord<'_, K> {
    pub fn stamp(&self) -> Stamp {
        Stamp {
            generation: self.object.meta().generation,
            now: Timestamp::now(),
        }
    }

    pub fn current(&self) -> DependencyResourceBackupStatus {
        self.object.status().cloned().unwrap_or_default()
    }

    /// Whether the backup has tried for longer than [`GIVE_UP_AFTER`].
    pub fn gave_up(&self) -> bool {
        let started = self.current().started_at.map(|t| t.0);
        started.is_some_and(|at| {
            Timestamp::now().duration_since(at).as_secs() >= GIVE_UP_AFTER.as_secs() as i64
        })
    }

    /// Ends a backup whose servers stayed out of reach.
    pub async fn end_unreachable(&self, error: &Error) -> Result<Action> {
        let minutes = GIVE_UP_AFTER.as_secs() / 60;
        let why = format!("gave up after {minutes} minutes of trying: {error}");
        self.end_from(self.current(), Err(Failure::new(code::UNREACHABLE, why)))
            .await
    }

    /// Records the outcome over `current` (the status last written, which keeps what earlier
    /// steps recorded): `ready` with what the test restore saw, or `failed`.
    pub async fn end_from(
        &self,
        current: DependencyResourceBackupStatus,
        outcome: Outcome,
    ) -> Result<Action> {
        let stamp = self.stamp();
        let (status, type_, reason, note) = match outcome {
            Ok((artifact, verification)) => {
                let note = format!(
                    "verified by a test restore: {}, {} bytes stored at {}",
                    plan::what_was_counted(&verification),
                    artifact.bytes,
                    artifact.location
                );
                let status = plan::verified(current, artifact, verification, stamp);
                (status, EventType::Normal, "BackupVerified", note)
            }
            Err(failure) => {
                self.notify_failed(&failure);
                let note = failure.message.clone();
                let status = plan::failed(current, &failure, stamp);
                (status, EventType::Warning, "BackupFailed", note)
            }
        };
        self.write(&status).await?;
        let reference = self.object.object_ref(&());
        self.context
            .publish_event(&reference, type_, reason, note)
            .await;
        Ok(Action::await_change())
    }

    fn notify_failed(&self, failure: &Failure) {
        let kind = K::kind(&()).to_string();
        self.context.notices.send(Notice {
            namespace: self.namespace.to_string(),
            event: NotificationEvent::BackupFailed,
            subject: subject(&kind, &self.object.name_any(), None),
            project_id: None,
            resource_id: None,
            summary: format!(
                "backup of {} failed: {}",
                self.object.taken_of_described(),
                failure.message
            ),
            occurred_at: Timestamp::now(),
        });
    }

    pub async fn write(&self, status: &DependencyResourceBackupStatus) -> Result<()> {
        StatusWriter::new(&self.api, self.object)
            .apply(None, status)
            .await?;
        Ok(())
    }
}
