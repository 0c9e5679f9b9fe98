//! An attempt's status, written as it goes without holding the attempt up: every update is
//! queued to a writer task that applies them in order (so watchers such as the progress stream
//! see each step), and the attempt waits for the queue only when it ends.

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::deployment::{
    Deployment, DeploymentError, DeploymentPhase, DeploymentState, DeploymentStatus, DeploymentStep,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::status::apply_status;

/// Steps every attempt reports (spec §6 `step.total`).
pub const TOTAL_STEPS: i64 = 5;

/// The attempt's status and the queue to its writer.
pub struct Progress<'a> {
    pub deployment: &'a Deployment,
    pub status: DeploymentStatus,
    queue: Option<mpsc::UnboundedSender<DeploymentStatus>>,
    writer: Option<JoinHandle<Result<()>>>,
}

impl<'a> Progress<'a> {
    /// Starts the writer for `deployment`'s status, from the status it has now.
    pub fn start(api: Api<Deployment>, deployment: &'a Deployment) -> Self {
        let (queue, updates) = mpsc::unbounded_channel();
        let current = deployment.status.clone();
        let writer = tokio::spawn(write_in_order(api, deployment.clone(), current, updates));
        Self {
            deployment,
            status: deployment.status.clone().unwrap_or_default(),
            queue: Some(queue),
            writer: Some(writer),
        }
    }

    /// Queues the current status for writing.
    pub fn write(&mut self) {
        if let Some(queue) = &self.queue {
            // The writer only stops early after a failed write; `end` reports that.
            let _ = queue.send(self.status.clone());
        }
    }

    /// Moves to step `current` of `phase` and queues the status.
    pub fn step(&mut self, phase: DeploymentPhase, current: i64, label: &str) {
        self.status.phase = Some(phase);
        self.status.current_step = Some(DeploymentStep {
            current,
            total: TOTAL_STEPS,
            label: label.into(),
        });
        self.write();
    }

    /// Ends the attempt: the final status is written, after every queued one, before this
    /// returns; a failed write anywhere in the queue is returned (and retried by the caller).
    pub async fn end(
        &mut self,
        state: DeploymentState,
        error: Option<DeploymentError>,
    ) -> Result<()> {
        let succeeded = state == DeploymentState::Succeeded;
        self.status.status = Some(state);
        self.status.finished_at = Some(Time(Timestamp::now()));
        self.status.last_error = error;
        let generation = self.deployment.metadata.generation;
        self.status.observed_generation = generation;
        let (status, reason, message) = if succeeded {
            (ConditionStatus::True, "Succeeded", "the attempt succeeded")
        } else {
            (
                ConditionStatus::False,
                "Ended",
                "the attempt did not succeed",
            )
        };
        condition::merge(
            &mut self.status.conditions,
            Condition::new(READY, status, reason, message.to_string(), generation),
        );
        self.write();
        self.queue = None;
        match self.writer.take() {
            Some(writer) => writer.await.unwrap_or_else(|join| {
                tracing::warn!(error = %join, "the status writer stopped");
                Ok(())
            }),
            None => Ok(()),
        }
    }
}

/// Applies queued statuses in order, skipping those equal to the last one written. A failed
/// progress write is only logged (the next one carries the same and newer facts); the result
/// of the last write, the final status, is returned.
async fn write_in_order(
    api: Api<Deployment>,
    deployment: Deployment,
    mut written: Option<DeploymentStatus>,
    mut updates: mpsc::UnboundedReceiver<DeploymentStatus>,
) -> Result<()> {
    let mut last = Ok(());
    while let Some(status) = updates.recv().await {
        last = apply_status(&api, &deployment, written.as_ref(), &status)
            .await
            .map(drop);
        match &last {
            Ok(()) => written = Some(status),
            Err(error) => tracing::warn!(%error, "could not write a deployment's progress"),
        }
    }
    last
}
