//! How deployment progress events (spec §6) read in a terminal: a `step x/5 label` line when
//! the step changes, platform messages beneath it, and build or pull output indented. Shared
//! by `berth deploy` (live) and `berth timeline` (stored).

use berth_api::progress::{Level, ProgressEvent, Source, StreamStatus};

use crate::output::{Output, Style};

#[derive(Default)]
pub struct ProgressView {
    /// The step last shown, so each is announced once.
    step: Option<(i64, String)>,
}

impl ProgressView {
    /// The lines `event` adds to what was shown before.
    pub fn lines(&mut self, out: &Output, event: &ProgressEvent) -> Vec<String> {
        let mut lines = Vec::new();
        let step = (event.step.current, event.step.label.clone());
        let terminal = event.status != StreamStatus::Running;
        if self.step.as_ref() != Some(&step) && !terminal {
            let text = format!(
                "step {}/{} {}",
                event.step.current, event.step.total, event.step.label
            );
            lines.push(out.paint(Style::Bold, &text));
            self.step = Some(step);
        }
        let message = event.message.trim_end();
        match (event.source, event.status) {
            (Source::Application, _) => {
                lines.push(out.paint(Style::Dim, &format!("    | {message}")));
            }
            (Source::Platform, StreamStatus::Succeeded) => {
                lines.push(out.paint(Style::Green, message));
            }
            (Source::Platform, StreamStatus::Failed) => {
                lines.push(out.paint(Style::Red, message));
            }
            // The running step's own label says it already.
            (Source::Platform, StreamStatus::Running) if message == event.step.label => {}
            (Source::Platform, StreamStatus::Running) => {
                let style = match event.level {
                    Level::Warn | Level::Error => Style::Yellow,
                    Level::Debug | Level::Info => Style::Dim,
                };
                lines.push(out.paint(style, &format!("  {message}")));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;
    use berth_api::progress::{DeploymentPhase, DeploymentStep, OutputStream};

    fn event(
        current: i64,
        label: &str,
        source: Source,
        status: StreamStatus,
        message: &str,
    ) -> ProgressEvent {
        ProgressEvent {
            timestamp: "2026-11-23T06:00:00Z".into(),
            source,
            phase: DeploymentPhase::Package,
            level: Level::Info,
            message: message.into(),
            deployment_id: "dep-web-2".into(),
            status,
            step: DeploymentStep {
                current,
                total: 5,
                label: label.into(),
            },
            stream: (source == Source::Application).then_some(OutputStream::Stdout),
        }
    }

    #[test]
    fn steps_are_announced_once_with_output_beneath() {
        let out = Output {
            format: Format::Table,
            quiet: false,
            color: false,
        };
        let mut view = ProgressView::default();
        let running = StreamStatus::Running;
        let shown: Vec<String> = [
            event(1, "Detecting", Source::Platform, running, "Detecting"),
            event(3, "Building", Source::Platform, running, "Building"),
            event(
                3,
                "Building",
                Source::Application,
                running,
                "Step 1/2 : FROM busybox",
            ),
            event(
                3,
                "Building",
                Source::Platform,
                running,
                "waiting for the server",
            ),
            event(
                5,
                "Verifying",
                Source::Platform,
                StreamStatus::Failed,
                "deployment dep-web-2 failed: no (health_check_failed)",
            ),
        ]
        .iter()
        .flat_map(|e| view.lines(&out, e))
        .collect();
        assert_eq!(
            shown,
            vec![
                "step 1/5 Detecting",
                "step 3/5 Building",
                "    | Step 1/2 : FROM busybox",
                "  waiting for the server",
                "deployment dep-web-2 failed: no (health_check_failed)",
            ]
        );
    }
}
