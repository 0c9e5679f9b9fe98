//! Turns what a Deployment's status says into the deployment progress events of spec §6, and
//! masks secret values out of every message.

use berth_crds::deployment::{
    Deployment, DeploymentPhase, DeploymentState, DeploymentStatus, DeploymentStep,
};
use berth_crds::progress::TOTAL_STEPS;
pub use berth_crds::progress::{Level, ProgressEvent, Source, StreamStatus};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

pub use berth_crds::masking::Masker;

/// The part of a status the stream reports on: a change here is a new event.
#[derive(Debug, Clone, PartialEq)]
struct Position {
    phase: Option<DeploymentPhase>,
    step: Option<DeploymentStep>,
    cancel_requested: bool,
}

impl Position {
    fn of(status: &DeploymentStatus) -> Self {
        Self {
            phase: status.phase,
            step: status.current_step.clone(),
            cancel_requested: status.status == Some(DeploymentState::CancelRequested),
        }
    }
}

/// Follows one attempt and produces its events.
pub struct Tracker {
    deployment_id: String,
    masker: Masker,
    last: Option<Position>,
    /// The last step reported, for events that carry no step of their own.
    step: DeploymentStep,
    phase: DeploymentPhase,
}

impl Tracker {
    pub fn new(deployment: &Deployment, masker: Masker) -> Self {
        Self {
            deployment_id: deployment.name_any(),
            masker,
            last: None,
            step: DeploymentStep {
                current: 1,
                total: TOTAL_STEPS,
                label: "Waiting for the controller".into(),
            },
            phase: DeploymentPhase::Detect,
        }
    }

    fn event(&self, level: Level, status: StreamStatus, message: &str) -> ProgressEvent {
        ProgressEvent {
            timestamp: format!("{:.3}", Timestamp::now()),
            source: Source::Platform,
            phase: self.phase,
            level,
            message: self.masker.mask(message),
            deployment_id: self.deployment_id.clone(),
            status,
            step: self.step.clone(),
            stream: None,
        }
    }

    /// An entry of the attempt's timeline (build output or a step), masked once more with what
    /// this stream knows to be secret; `None` for a step the stream reported already.
    /// The timeline can be ahead of the watch: its entry's step becomes the one reported, so
    /// steps only go forward, and a status that later shows the same step is not news.
    pub fn recorded(&mut self, event: &ProgressEvent) -> Option<ProgressEvent> {
        if event.source == Source::Platform {
            let position = Position {
                phase: Some(event.phase),
                step: Some(event.step.clone()),
                cancel_requested: false,
            };
            if self.passed(event) || self.last.as_ref() == Some(&position) {
                return None;
            }
            self.last = Some(position);
            self.phase = event.phase;
        }
        if event.step.current > self.step.current {
            self.step = event.step.clone();
        }
        Some(ProgressEvent {
            message: self.masker.mask(&event.message),
            ..event.clone()
        })
    }

    /// The first event: the attempt exists and waits for the controller.
    pub fn created(&mut self, deployment: &Deployment) -> ProgressEvent {
        self.last = Some(Position::of(&deployment.status.clone().unwrap_or_default()));
        let spec = &deployment.spec;
        let message = format!(
            "deployment {} of resource {} to server {} created",
            self.deployment_id, spec.resource_id, spec.server_id
        );
        self.event(Level::Info, StreamStatus::Running, &message)
    }

    /// Whether the stream already reported a later step than `event`'s.
    pub fn passed(&self, event: &ProgressEvent) -> bool {
        event.step.current < self.step.current
    }

    /// The event a new look at the Deployment calls for, if any, and whether it is the last.
    pub fn observe(&mut self, deployment: &Deployment) -> Option<(ProgressEvent, bool)> {
        let status = deployment.status.clone().unwrap_or_default();
        if let Some(phase) = status.phase {
            self.phase = phase;
        }
        let step = status.current_step.clone().filter(valid_step);
        // A step the stream already passed (its output went out first) is not reported again.
        let behind = step
            .as_ref()
            .is_some_and(|step| step.current < self.step.current);
        if let Some(step) = step.filter(|_| !behind) {
            self.step = step;
        }
        if let Some(state) = status.status.filter(|s| s.is_terminal()) {
            return Some((self.finished(state, &status), true));
        }
        if behind && status.status != Some(DeploymentState::CancelRequested) {
            return None;
        }
        let position = Position::of(&status);
        if self.last.as_ref() == Some(&position) {
            return None;
        }
        self.last = Some(position.clone());
        let (level, message) = if position.cancel_requested {
            (
                Level::Warn,
                "cancel requested; stopping before the next step".to_string(),
            )
        } else {
            (Level::Info, self.step.label.clone())
        };
        Some((self.event(level, StreamStatus::Running, &message), false))
    }

    /// The last event of an attempt that ended. Canceled and rolled-back attempts did not
    /// deploy what was asked, so they are `failed` too, at level `warn` (the previous version
    /// still serves); a failed attempt is level `error`.
    fn finished(&mut self, state: DeploymentState, status: &DeploymentStatus) -> ProgressEvent {
        if state == DeploymentState::Succeeded {
            let image = status
                .image_ref
                .as_deref()
                .map(|image| format!(": {image} serves the resource"))
                .unwrap_or_default();
            let message = format!("deployment {} succeeded{image}", self.deployment_id);
            return self.event(Level::Info, StreamStatus::Succeeded, &message);
        }
        let level = if state == DeploymentState::Failed {
            Level::Error
        } else {
            Level::Warn
        };
        let word = serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "failed".into());
        let cause = match &status.last_error {
            Some(error) => {
                self.phase = error.phase;
                format!("{} ({})", error.message, error.code)
            }
            None => "no error was recorded".to_string(),
        };
        let message = format!("deployment {} {word}: {cause}", self.deployment_id);
        self.event(level, StreamStatus::Failed, &message)
    }

    /// The last event when the Deployment object disappeared before the attempt ended.
    pub fn deleted(&self) -> ProgressEvent {
        let message = format!(
            "deployment {} was deleted before it finished",
            self.deployment_id
        );
        self.event(Level::Error, StreamStatus::Failed, &message)
    }

    /// The last event when the stream gives up waiting; the attempt itself goes on.
    pub fn timed_out(&self, minutes: u64) -> ProgressEvent {
        let message = format!(
            "deployment {} did not finish within {minutes} minutes; the stream ends, the \
             attempt continues (see its Deployment object)",
            self.deployment_id
        );
        self.event(Level::Error, StreamStatus::Failed, &message)
    }
}

/// Steps outside 1 <= current <= total would break the stream's promise; they are skipped.
fn valid_step(step: &DeploymentStep) -> bool {
    step.current >= 1 && step.total >= step.current
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::deployment::{DeploymentError, DeploymentSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn deployment(status: Option<DeploymentStatus>) -> Deployment {
        let spec: DeploymentSpec = serde_json::from_value(serde_json::json!({
            "resourceId": "web", "projectId": "prj-1", "environmentId": "env-1",
            "serverId": "srv-1",
        }))
        .unwrap();
        let mut deployment = Deployment::new("dep-web-x", spec);
        deployment.status = status;
        deployment
    }

    fn at(phase: DeploymentPhase, current: i64, label: &str) -> DeploymentStatus {
        DeploymentStatus {
            status: Some(DeploymentState::Running),
            phase: Some(phase),
            current_step: Some(DeploymentStep {
                current,
                total: TOTAL_STEPS,
                label: label.into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn output_ahead_of_the_watch_keeps_steps_going_forward() {
        let mut tracker = Tracker::new(&deployment(None), Masker::new(Vec::<String>::new()));
        let mut line = tracker.event(Level::Info, StreamStatus::Running, "building");
        line.step.current = 3;
        assert_eq!(tracker.recorded(&line).unwrap().step.current, 3);
        let late = deployment(Some(at(DeploymentPhase::Detect, 2, "Planning")));
        assert!(tracker.observe(&late).is_none(), "a step already passed");
        let next = deployment(Some(at(DeploymentPhase::Deploy, 4, "Starting")));
        assert_eq!(tracker.observe(&next).unwrap().0.step.current, 4);
    }

    #[test]
    fn a_step_from_the_timeline_is_reported_once() {
        let mut tracker = Tracker::new(&deployment(None), Masker::new(Vec::<String>::new()));
        let status = at(DeploymentPhase::Deploy, 4, "Starting");
        let mut step = tracker.event(Level::Info, StreamStatus::Running, "Starting");
        (step.phase, step.step) = (
            DeploymentPhase::Deploy,
            status.current_step.clone().unwrap(),
        );
        assert_eq!(tracker.recorded(&step).unwrap().step.current, 4);
        assert!(tracker.recorded(&step).is_none(), "the same step again");
        assert!(
            tracker.observe(&deployment(Some(status))).is_none(),
            "the status showing the step the timeline reported"
        );
        let mut earlier = step.clone();
        earlier.step.current = 2;
        assert!(
            tracker.recorded(&earlier).is_none(),
            "a step already passed"
        );
    }

    #[test]
    fn one_event_per_step_then_a_final_one() {
        let mut tracker = Tracker::new(&deployment(None), Masker::new(Vec::<String>::new()));
        let first = tracker.created(&deployment(None));
        assert_eq!(
            (first.status, first.step.current),
            (StreamStatus::Running, 1)
        );
        assert!(tracker.observe(&deployment(None)).is_none());
        let detect = deployment(Some(at(DeploymentPhase::Detect, 1, "Detecting")));
        let (event, last) = tracker.observe(&detect).unwrap();
        assert_eq!((event.message.as_str(), last), ("Detecting", false));
        assert!(tracker.observe(&detect).is_none(), "no change, no event");
        let mut done = at(DeploymentPhase::Verify, 5, "Verify");
        done.status = Some(DeploymentState::Succeeded);
        done.image_ref = Some("berth/sample-app:1".into());
        let (event, last) = tracker.observe(&deployment(Some(done))).unwrap();
        assert!(last);
        assert_eq!(event.status, StreamStatus::Succeeded);
        assert_eq!(event.step.current, 5);
        assert!(event.message.contains("berth/sample-app:1"));
    }

    #[test]
    fn failures_carry_the_last_error_masked() {
        let masker = Masker::new(["hunter2-secret".to_string(), "ab".to_string()]);
        let mut tracker = Tracker::new(&deployment(None), masker);
        let mut failed = at(DeploymentPhase::Verify, 5, "Verify");
        failed.status = Some(DeploymentState::Failed);
        failed.last_error = Some(DeploymentError {
            timestamp: Time(Timestamp::now()),
            phase: DeploymentPhase::Verify,
            code: berth_crds::deployment::DeploymentErrorCode::HealthCheckFailed,
            message: "health check GET /nope failed; env hunter2-secret ab".into(),
        });
        let (event, last) = tracker.observe(&deployment(Some(failed.clone()))).unwrap();
        assert!(last);
        assert_eq!(
            (event.status, event.level),
            (StreamStatus::Failed, Level::Error)
        );
        assert!(event.message.contains("health check GET /nope"));
        assert!(!event.message.contains("hunter2"), "{}", event.message);
        assert!(event.message.contains("**** ab"), "short values stay");
        failed.status = Some(DeploymentState::Canceled);
        let (event, _) = tracker.observe(&deployment(Some(failed))).unwrap();
        assert_eq!(
            (event.status, event.level),
            (StreamStatus::Failed, Level::Warn)
        );
    }

    #[test]
    fn envelope_values_are_the_spec_spellings() {
        let tracker = Tracker::new(&deployment(None), Masker::default());
        let value = serde_json::to_value(tracker.deleted()).unwrap();
        assert_eq!(value["source"], "platform");
        assert_eq!(value["phase"], "detect");
        assert_eq!(value["level"], "error");
        assert_eq!(value["status"], "failed");
        assert_eq!(value["deploymentId"], "dep-web-x");
        assert!(value["timestamp"].as_str().unwrap().ends_with('Z'));
    }
}
