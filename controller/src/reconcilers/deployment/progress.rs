//! An attempt's status, written as it goes without holding the attempt up: every update is
//! queued to a writer task, which writes the newest of those queued within
//! [`PROGRESS_WRITE_DELAY`] (the attempt waits for the queue only when it ends). Each step and
//! the outcome are recorded at once in the attempt's timeline, with the build's output lines:
//! the timeline is the step-by-step record, the status the latest summary.

use berth_crds::condition::{self, Condition, READY};
use berth_crds::deployment::{
    Deployment, DeploymentError, DeploymentPhase, DeploymentState, DeploymentStatus, DeploymentStep,
};
use berth_crds::progress::{Level, OutputStream, ProgressEvent, Source, StreamStatus, TOTAL_STEPS};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::conditions::Stamp;
use crate::error::Result;
use crate::status::StatusWriter;
use berth_observations::{MAX_OUTPUT_LINES, ObservationWriter, TimelineKey};

/// How long a queued status waits for a newer one before it is written; the attempt's end is
/// written at once. Each write wakes every watcher of Deployments (the resource reconciler, the
/// shim), and on a 2-core server the four writes of a fast attempt's first steps slowed the
/// container start they reported by about 10 % (`hack/bench.sh deploy`): an image deploy that
/// ends within the delay writes only its outcome, a longer one shows its step within the delay.
pub const PROGRESS_WRITE_DELAY: Duration = Duration::from_millis(500);

/// The attempt's status and the queue to its writer.
pub struct Progress<'a> {
    pub deployment: &'a Deployment,
    pub status: DeploymentStatus,
    queue: Option<mpsc::UnboundedSender<DeploymentStatus>>,
    writer: Option<JoinHandle<Result<()>>>,
    observations: ObservationWriter,
    key: TimelineKey,
}

impl<'a> Progress<'a> {
    /// Starts the writer for `deployment`'s status, from the status it has now.
    pub fn start(
        api: Api<Deployment>,
        deployment: &'a Deployment,
        observations: ObservationWriter,
    ) -> Self {
        let (queue, updates) = mpsc::unbounded_channel();
        let current = deployment.status.clone();
        let writer = tokio::spawn(write_in_order(api, deployment.clone(), current, updates));
        let key = TimelineKey::new(
            deployment.namespace().unwrap_or_default(),
            deployment.spec.resource_id.clone(),
            deployment.name_any(),
        );
        Self {
            deployment,
            status: deployment.status.clone().unwrap_or_default(),
            queue: Some(queue),
            writer: Some(writer),
            observations,
            key,
        }
    }

    /// A progress that writes nothing anywhere, for tests of the phases.
    #[cfg(test)]
    pub fn detached(deployment: &'a Deployment) -> Self {
        Self {
            deployment,
            status: deployment.status.clone().unwrap_or_default(),
            queue: None,
            writer: None,
            observations: ObservationWriter::default(),
            key: TimelineKey::new("", "", ""),
        }
    }

    /// A timeline event at the attempt's current phase and step.
    fn event(&self, level: Level, status: StreamStatus, message: String) -> ProgressEvent {
        ProgressEvent {
            timestamp: format!("{:.3}", Timestamp::now()),
            source: Source::Platform,
            phase: self.status.phase.unwrap_or(DeploymentPhase::Detect),
            level,
            message,
            deployment_id: self.key.deployment.clone(),
            status,
            step: self.status.current_step.clone().unwrap_or(DeploymentStep {
                current: 1,
                total: TOTAL_STEPS,
                label: "Starting".into(),
            }),
            stream: None,
        }
    }

    /// Records a platform message of the attempt's own in its timeline (not in its status).
    pub fn note(&self, level: Level, message: impl Into<String>) {
        let event = self.event(level, StreamStatus::Running, message.into());
        self.observations.record(&self.key, event);
    }

    /// Where the current step's output lines go (the timeline).
    pub fn output(&self) -> OutputSink {
        let template = self.event(Level::Info, StreamStatus::Running, String::new());
        OutputSink {
            observations: self.observations.clone(),
            key: self.key.clone(),
            template: ProgressEvent {
                source: Source::Application,
                ..template
            },
            lines: Arc::default(),
        }
    }

    /// Waits until the output recorded so far is stored in the timeline.
    pub async fn flush_output(&self) {
        self.observations.flush().await;
    }

    /// Queues the current status for writing.
    pub fn write(&mut self) {
        if let Some(queue) = &self.queue {
            // The writer only stops early after a failed write; `end` reports that.
            let _ = queue.send(self.status.clone());
        }
    }

    /// The stamp of a condition set now (an attempt runs long; each condition has its own time).
    fn stamp(&self) -> Stamp {
        Stamp {
            generation: self.deployment.metadata.generation,
            now: Timestamp::now(),
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
        let event = self.event(Level::Info, StreamStatus::Running, label.into());
        self.observations.record(&self.key, event);
    }

    /// Marks the attempt as waiting (`Ready` false with `reason`, the step label saying why)
    /// and queues the status; returns whether this is news (not the wait already recorded).
    pub fn waiting_for(&mut self, reason: &str, message: &str) -> bool {
        let news = !condition::find(&self.status.conditions, READY)
            .is_some_and(|ready| ready.reason == reason && ready.message == message);
        let waiting = self.stamp().not_ready(reason, message);
        condition::merge(&mut self.status.conditions, waiting);
        let step = self.status.current_step.as_ref().map_or(1, |s| s.current);
        self.status.current_step = Some(DeploymentStep {
            current: step,
            total: TOTAL_STEPS,
            label: message.to_string(),
        });
        self.write();
        news
    }

    /// Waits until every queued status is written (the attempt pauses without ending).
    pub async fn settle(mut self) -> Result<()> {
        self.observations.flush().await;
        self.finish_writes().await
    }

    async fn finish_writes(&mut self) -> Result<()> {
        self.queue = None;
        match self.writer.take() {
            Some(writer) => writer.await.unwrap_or_else(|join| {
                tracing::warn!(error = %join, "the status writer stopped");
                Ok(())
            }),
            None => Ok(()),
        }
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
        let ready = if succeeded {
            self.stamp().attempt_succeeded()
        } else {
            self.stamp().attempt_ended()
        };
        condition::merge(&mut self.status.conditions, ready);
        self.record_outcome(state);
        // Readers of the timeline follow the status: once it says the attempt ended, every
        // entry of the attempt is stored.
        self.observations.flush().await;
        self.write();
        self.finish_writes().await
    }
}

/// The `Ready` an attempt ends with.
impl Stamp {
    /// `Ready=True`: the attempt succeeded.
    fn attempt_succeeded(&self) -> Condition {
        self.ready("Succeeded", "the attempt succeeded")
    }

    /// `Ready=False`: the attempt ended without success.
    fn attempt_ended(&self) -> Condition {
        self.not_ready("Ended", "the attempt did not succeed")
    }
}

impl Progress<'_> {
    /// The outcome as the timeline's last entry; failures carry the last error (masked text).
    fn record_outcome(&self, state: DeploymentState) {
        let word = serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let (level, status) = match state {
            DeploymentState::Succeeded => (Level::Info, StreamStatus::Succeeded),
            DeploymentState::Failed => (Level::Error, StreamStatus::Failed),
            _ => (Level::Warn, StreamStatus::Failed),
        };
        let message = match (&self.status.last_error, &self.status.image_ref) {
            (Some(error), _) => format!("deployment {word}: {} ({})", error.message, error.code),
            (None, Some(image)) if state == DeploymentState::Succeeded => {
                format!("deployment {word}: {image} serves the resource")
            }
            (None, _) => format!("deployment {word}"),
        };
        let mut event = self.event(level, status, message);
        if let Some(error) = &self.status.last_error {
            event.phase = error.phase;
        }
        self.observations.record(&self.key, event);
    }
}

/// Output lines of one step, recorded as `application` entries of the attempt's timeline; at
/// most [`MAX_OUTPUT_LINES`] per attempt step, then one line saying the rest was left out.
#[derive(Clone)]
pub struct OutputSink {
    observations: ObservationWriter,
    key: TimelineKey,
    template: ProgressEvent,
    lines: Arc<AtomicUsize>,
}

impl OutputSink {
    /// A sink that records nothing.
    #[cfg(test)]
    pub fn disabled() -> Self {
        Self {
            observations: ObservationWriter::default(),
            key: TimelineKey::new("", "", ""),
            template: ProgressEvent {
                timestamp: String::new(),
                source: Source::Application,
                phase: DeploymentPhase::Package,
                level: Level::Info,
                message: String::new(),
                deployment_id: String::new(),
                status: StreamStatus::Running,
                step: DeploymentStep {
                    current: 1,
                    total: TOTAL_STEPS,
                    label: String::new(),
                },
                stream: None,
            },
            lines: Arc::default(),
        }
    }

    /// Records one line, which the caller has already masked.
    pub fn line(&self, stream: OutputStream, masked: &str) {
        let count = self.lines.fetch_add(1, Ordering::Relaxed);
        let (level, message) = match count.cmp(&MAX_OUTPUT_LINES) {
            std::cmp::Ordering::Less => (Level::Info, masked.to_string()),
            std::cmp::Ordering::Equal => (
                Level::Warn,
                format!("output beyond {MAX_OUTPUT_LINES} lines is not kept"),
            ),
            std::cmp::Ordering::Greater => return,
        };
        let event = ProgressEvent {
            timestamp: format!("{:.3}", Timestamp::now()),
            level,
            message,
            stream: Some(stream),
            ..self.template.clone()
        };
        self.observations.record(&self.key, event);
    }
}

/// Applies queued statuses in order, each the newest queued within [`PROGRESS_WRITE_DELAY`] of
/// the first not yet written, skipping those equal to the last one written. A failed progress
/// write is only logged (the next one carries the same and newer facts); the result of the
/// last write, the final status, is returned.
async fn write_in_order(
    api: Api<Deployment>,
    deployment: Deployment,
    mut written: Option<DeploymentStatus>,
    mut updates: mpsc::UnboundedReceiver<DeploymentStatus>,
) -> Result<()> {
    let mut last = Ok(());
    while let Some(first) = updates.recv().await {
        let status = newest_within(&mut updates, first, PROGRESS_WRITE_DELAY).await;
        last = StatusWriter::new(&api, &deployment)
            .apply(written.as_ref(), &status)
            .await
            .map(drop);
        match &last {
            Ok(()) => written = Some(status),
            Err(error) => tracing::warn!(%error, "could not write a deployment's progress"),
        }
    }
    last
}

/// The newest of `first` and what is queued after it within `delay`; at once when the queue
/// closes (the attempt ended or paused: its last status must not wait).
async fn newest_within<T>(
    updates: &mut mpsc::UnboundedReceiver<T>,
    first: T,
    delay: Duration,
) -> T {
    let deadline = tokio::time::Instant::now() + delay;
    let mut newest = first;
    loop {
        tokio::select! {
            next = updates.recv() => match next {
                Some(newer) => newest = newer,
                None => return newest,
            },
            () = tokio::time::sleep_until(deadline) => return newest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::testing::{expected, stamp};
    use berth_crds::condition::ConditionStatus::{False, True};
    use berth_observations::{SqliteStore, TimelineStore};

    #[test]
    fn an_ending_attempt_says_whether_it_succeeded() {
        let succeeded = expected("Ready", True, "Succeeded", "the attempt succeeded");
        assert_eq!(stamp().attempt_succeeded(), succeeded);
        let ended = expected("Ready", False, "Ended", "the attempt did not succeed");
        assert_eq!(stamp().attempt_ended(), ended);
    }

    #[tokio::test(start_paused = true)]
    async fn statuses_queued_within_the_delay_are_written_as_the_newest() {
        let (queue, mut updates) = mpsc::unbounded_channel();
        for step in 1..=3 {
            queue.send(step).unwrap();
        }
        let writer = tokio::spawn(async move {
            let first = updates.recv().await.unwrap();
            let newest = newest_within(&mut updates, first, PROGRESS_WRITE_DELAY).await;
            (newest, updates)
        });
        tokio::time::sleep(PROGRESS_WRITE_DELAY / 2).await;
        queue.send(4).unwrap();
        let (newest, mut updates) = writer.await.unwrap();
        assert_eq!(newest, 4, "the newest within the delay");
        // One queued after the delay is the next write's.
        queue.send(5).unwrap();
        assert_eq!(updates.recv().await, Some(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_status_is_written_at_once_when_the_attempt_ends() {
        let (queue, mut updates) = mpsc::unbounded_channel();
        queue.send("running").unwrap();
        queue.send("succeeded").unwrap();
        drop(queue);
        let started = tokio::time::Instant::now();
        let first = updates.recv().await.unwrap();
        let newest = newest_within(&mut updates, first, PROGRESS_WRITE_DELAY).await;
        assert_eq!(newest, "succeeded");
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "no wait once the queue closed"
        );
    }

    #[tokio::test]
    async fn output_beyond_the_cap_is_left_out_with_one_line_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("t.sqlite")).unwrap());
        let writer = ObservationWriter::start(store.clone()).unwrap();
        let key = TimelineKey::new("org-a", "web", "dep-web-1");
        let mut sink = OutputSink::disabled();
        sink.observations = writer.clone();
        sink.key = key.clone();
        for i in 0..MAX_OUTPUT_LINES + 10 {
            sink.line(OutputStream::Stdout, &format!("line {i}"));
        }
        writer.flush().await;
        let stored = store.read(&key, 0, MAX_OUTPUT_LINES + 100).unwrap();
        assert_eq!(stored.len(), MAX_OUTPUT_LINES + 1);
        assert_eq!(stored[0].event.message, "line 0");
        assert_eq!(stored[0].event.stream, Some(OutputStream::Stdout));
        let last = &stored.last().unwrap().event;
        assert_eq!(last.level, Level::Warn);
        assert!(last.message.contains("not kept"), "{}", last.message);
    }
}
