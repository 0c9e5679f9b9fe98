//! Running a build on the server's Docker: the context uploaded through the tunnel as it is
//! read, the output followed line by line (masked, recorded in the timeline), and a failure
//! explained with Docker's message and the last lines of output.

use std::collections::{HashMap, VecDeque};

use berth_crds::deployment::DeploymentErrorCode as Code;
use berth_crds::masking::Masker;
use berth_crds::progress::OutputStream;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures::StreamExt;

use super::BUILD_TIMEOUT;
use super::context;
use super::recipe::Build;
use crate::reconcilers::deployment::package_failure::{PackageFailure, failure};
use crate::reconcilers::deployment::plan::Plan;
use crate::reconcilers::deployment::progress::OutputSink;
use crate::reconcilers::deployment::server_target::Target;
use berth_remote::docker::docker_over_ssh_within;

/// Build output lines a failure message quotes.
const TAIL_LINES: usize = 10;
/// Longest quoted build output line, in characters.
const MAX_LINE_CHARS: usize = 300;

/// Where a build goes and what it may pull with.
pub struct Destination<'a> {
    pub target: &'a Target,
    pub docker_socket: &'a str,
    pub plan: &'a Plan,
    /// Registry credentials for the base images, by registry host.
    pub credentials: Option<HashMap<String, DockerCredentials>>,
}

/// Uploads the context and follows the build's output to its end.
pub async fn run_build(
    destination: Destination<'_>,
    build: Build,
    sink: &OutputSink,
) -> Result<(), PackageFailure> {
    let Destination {
        target,
        docker_socket,
        plan,
        credentials,
    } = destination;
    let masker = Masker::new(build.build_args.values());
    let mut options = BuildImageOptionsBuilder::new()
        .dockerfile(&build.dockerfile)
        .t(&plan.image)
        .rm(true)
        .forcerm(true)
        // No labels: the classic builder turns each into a step of its own (a container made
        // and committed, about 0.1 s). The image's repository says whose it is.
        .buildargs(&build.build_args);
    if let Some(stage) = &build.target {
        options = options.target(stage);
    }
    let options = options.build();
    sink.line(OutputStream::Stdout, &format!("Building {}", build.what));
    tracing::info!(
        image = %plan.image,
        files = build.listing.files.len(),
        bytes = build.listing.bytes,
        "building an image"
    );
    let (body, writer) = context::stream(build.listing, build.generated);
    // Docker answers only once it has read the whole context: the deadline covers the upload.
    let docker = docker_over_ssh_within(target.connection.clone(), docker_socket, BUILD_TIMEOUT);
    let mut output = docker.build_image(options, credentials, Some(bollard::body_try_stream(body)));
    let mut log = BuildLog::new(&masker, &plan.image, sink);
    let mut failed = None;
    while let Some(item) = output.next().await {
        match item {
            Ok(info) => {
                log.push(info.stream.as_deref().unwrap_or_default());
                if let Some(status) = info.status {
                    log.push(&format!("{status}\n"));
                }
            }
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
    }
    drop(output);
    log.finish();
    // A context that could not be read explains a failed upload better than the upload error.
    if let Ok(Err(error)) = writer.await {
        let message = format!("could not read the build context: {error}");
        return Err(failure(Code::BuildContextUnreadable, masker.mask(&message)));
    }
    match failed {
        None => Ok(()),
        Some(error) => Err(build_failure(&error, &log, &masker)),
    }
}

/// A failed build: Docker's own refusals are the user's to fix (`build_failed`); a broken
/// transport is not (`docker_error`).
fn build_failure(
    error: &bollard::errors::Error,
    log: &BuildLog<'_>,
    masker: &Masker,
) -> PackageFailure {
    use bollard::errors::Error::{DockerResponseServerError, DockerStreamError};
    let (code, reason) = match error {
        DockerStreamError { error } => (Code::BuildFailed, error.clone()),
        DockerResponseServerError { message, .. } => (Code::BuildFailed, message.clone()),
        other => (Code::DockerError, other.to_string()),
    };
    let mut message = masker.mask(reason.trim());
    let tail = log.tail();
    if !tail.is_empty() {
        message.push_str("\nlast build output:\n");
        message.push_str(&tail.join("\n"));
    }
    failure(code, message)
}

/// Build output cut into masked lines: recorded in the attempt's timeline, logged at debug
/// level, the last few kept for a failure.
struct BuildLog<'a> {
    masker: &'a Masker,
    image: &'a str,
    output: &'a OutputSink,
    partial: String,
    tail: VecDeque<String>,
}

impl<'a> BuildLog<'a> {
    fn new(masker: &'a Masker, image: &'a str, output: &'a OutputSink) -> Self {
        Self {
            masker,
            image,
            output,
            partial: String::new(),
            tail: VecDeque::new(),
        }
    }

    /// Adds output; only whole lines are masked, so a value split across chunks still is.
    fn push(&mut self, text: &str) {
        self.partial.push_str(text);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(&line);
        }
        // A line this long without an end is flushed anyway.
        if self.partial.len() > 64 * 1024 {
            let line = std::mem::take(&mut self.partial);
            self.line(&line);
        }
    }

    fn finish(&mut self) {
        let line = std::mem::take(&mut self.partial);
        self.line(&line);
    }

    fn line(&mut self, line: &str) {
        let line = line.trim_end();
        if line.trim().is_empty() {
            return;
        }
        let masked = self.masker.mask(line);
        tracing::debug!(image = %self.image, line = %masked, "build output");
        self.output.line(OutputStream::Stdout, &masked);
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(shorten(&masked));
    }

    fn tail(&self) -> Vec<String> {
        self.tail.iter().cloned().collect()
    }
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let mut short: String = line.chars().take(MAX_LINE_CHARS).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_arg_values_are_masked_in_output_and_failures() {
        let args = HashMap::from([
            ("TOKEN".to_string(), "s3cr3t-value".to_string()),
            ("SHORT".to_string(), "s3cr3t".to_string()),
            ("EMPTY".to_string(), String::new()),
        ]);
        let masker = Masker::new(args.values());
        assert_eq!(
            masker.mask("echo s3cr3t-value and s3cr3t"),
            "echo **** and ****"
        );
        let sink = OutputSink::disabled();
        let mut log = BuildLog::new(&masker, "img", &sink);
        // A value split across two output chunks is still masked.
        log.push("Step 2/3 : RUN echo s3cr");
        log.push("3t-value\nok\n");
        log.finish();
        assert_eq!(log.tail(), vec!["Step 2/3 : RUN echo ****", "ok"]);
        let error = bollard::errors::Error::DockerStreamError {
            error: "The command '/bin/sh -c test s3cr3t' returned a non-zero code: 1".into(),
        };
        let failure = build_failure(&error, &log, &masker);
        assert_eq!(failure.code, "build_failed");
        assert!(!failure.message.contains("s3cr3t"), "{}", failure.message);
        assert!(failure.message.contains("last build output:\nStep 2/3"));
    }

    #[test]
    fn the_failure_tail_keeps_the_last_lines() {
        let masker = Masker::default();
        let sink = OutputSink::disabled();
        let mut log = BuildLog::new(&masker, "img", &sink);
        for i in 0..25 {
            log.push(&format!("line {i}\n"));
        }
        let tail = log.tail();
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail.last().unwrap(), "line 24");
    }
}
