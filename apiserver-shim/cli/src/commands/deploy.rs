//! `berth deploy`: starts an attempt through `POST /deployments/stream` and shows its progress
//! as it arrives, ending with the URL that serves the resource.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use berth_api::deployments::{DeploymentCreated, DeploymentPreview, StartDeployment};
use berth_api::diagnostics::DiagnosticSummary;
use berth_api::progress::{ProgressEvent, StreamStatus};
use berth_api::resources::ResourceRecord;
use reqwest::Method;
use serde_json::Value;

use super::Ctx;
use super::find_resource;
use super::infra::server_id;
use crate::error::{CliError, CliResult};
use crate::output::Format;
use crate::progress::ProgressView;

/// Which revision of a git source to deploy; the followed ref's newest when empty.
pub struct Revision {
    pub commit: Option<String>,
    pub git_ref: Option<String>,
}

pub fn deploy(
    ctx: &Ctx,
    resource: &str,
    server: Option<String>,
    revision: Revision,
) -> CliResult<()> {
    let resource = find_resource(ctx, resource)?;
    let server = match server {
        Some(server) => server_id(ctx, &server)?,
        None => resource_server(ctx, &resource)?,
    };
    let body = StartDeployment {
        project_id: resource.project_id.clone(),
        server_id: server,
        environment_id: resource.environment_id.clone(),
        resource_id: resource.id.clone(),
        destination_id: None,
        commit_sha: revision.commit,
        git_ref: revision.git_ref,
        preview: None,
    };
    let events = ctx
        .api()?
        .stream(Method::POST, "/deployments/stream", &[], Some(&body))?;
    let spinner = (ctx.out.human() && std::io::stdout().is_terminal()).then(Spinner::start);
    let mut view = ProgressView::default();
    let mut last: Option<ProgressEvent> = None;
    for data in events {
        let data = data.map_err(|error| CliError::failure(format!("the stream broke: {error}")))?;
        let event: ProgressEvent = serde_json::from_str(&data).map_err(|error| {
            CliError::failure(format!("unexpected progress event ({error}): {data}"))
        })?;
        if ctx.out.human() {
            // A failure's message is the error printed last (on stderr): not twice.
            if event.status != StreamStatus::Failed {
                let lines = view.lines(&ctx.out, &event);
                match &spinner {
                    Some(spinner) => spinner.show(&lines, &event.step.label),
                    None => lines.iter().for_each(|line| println!("{line}")),
                }
            }
        } else if !ctx.out.quiet {
            print_event(ctx.out.format, &data);
        }
        last = Some(event);
    }
    drop(spinner);
    finish(ctx, &resource, last)
}

/// `berth deploy --preview pr-<n>`: moves the pull request's preview to the commit through
/// `POST /deployments` (the controller deploys it) and prints the attempt's id.
pub fn deploy_preview(
    ctx: &Ctx,
    resource: &str,
    preview: &str,
    revision: Revision,
) -> CliResult<()> {
    let Some(number) = berth_api::deployments::parse_preview_id(preview) else {
        return Err(CliError::Usage(format!(
            "--preview must be pr-<number> (a pull request's number, such as pr-7), not {preview}"
        )));
    };
    let resource = find_resource(ctx, resource)?;
    let server = resource_server(ctx, &resource)?;
    let body = StartDeployment {
        project_id: resource.project_id.clone(),
        server_id: server,
        environment_id: resource.environment_id.clone(),
        resource_id: resource.id.clone(),
        destination_id: None,
        commit_sha: revision.commit,
        git_ref: revision.git_ref,
        preview: Some(DeploymentPreview::pull_request(number)),
    };
    let answer = ctx
        .api()?
        .post::<DeploymentCreated>("/deployments", &body)?;
    let created = &answer.value;
    if ctx.out.quiet {
        println!("{}", created.id);
    }
    // The attempt is named `<preview>-<first 12 digits of the commit>`.
    let preview_id = created
        .id
        .rsplit_once('-')
        .map_or("", |(preview, _)| preview);
    ctx.out.done(
        &answer.raw,
        &format!(
            "Deploying to preview {preview_id} as {}; see `berth previews show {preview_id}`",
            created.id
        ),
    );
    Ok(())
}

/// The outcome: the URL after a success; the error (code in its message) after a failure.
fn finish(ctx: &Ctx, resource: &ResourceRecord, last: Option<ProgressEvent>) -> CliResult<()> {
    let Some(last) = last else {
        return Err(CliError::failure(
            "the deployment stream ended without an event",
        ));
    };
    match last.status {
        StreamStatus::Succeeded => {
            let resource = find_resource(ctx, &resource.id)?;
            if ctx.out.quiet {
                println!("{}", last.deployment_id);
            } else if ctx.out.human() {
                match resource.url() {
                    Some(url) => println!("URL: {url}"),
                    None => {
                        println!("(no route: the resource is not exposed through the edge proxy)")
                    }
                }
            }
            Ok(())
        }
        StreamStatus::Failed => Err(CliError::failure(last.message)),
        StreamStatus::Running => Err(CliError::failure(format!(
            "the stream ended before deployment {} finished; see `berth timeline {} {}`",
            last.deployment_id, resource.slug, last.deployment_id
        ))),
    }
}

/// One event as the API sent it: a JSON line each, or a YAML document each.
fn print_event(format: Format, data: &str) {
    let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    match format {
        Format::Yaml => print!(
            "---\n{}",
            serde_yaml::to_string(&value).expect("JSON values are YAML")
        ),
        _ => println!(
            "{}",
            serde_json::to_string(&value).expect("values serialize")
        ),
    }
}

/// The server a resource deploys to. The resource list does not name it, so it is read from
/// the diagnostic summary's context (without its log tails).
fn resource_server(ctx: &Ctx, resource: &ResourceRecord) -> CliResult<String> {
    let query = [
        ("includeDeploymentTimelineTail", "false".to_string()),
        ("includeRuntimeLogTail", "false".to_string()),
        ("tailLines", "0".to_string()),
    ];
    let path = format!("/resources/{}/diagnostic-summary", resource.id);
    let summary = ctx.api()?.get::<DiagnosticSummary>(&path, &query)?.value;
    summary
        .context
        .server_id
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "resource {} names no server: pass --server",
                resource.slug
            ))
        })
}

/// A spinner with the running step's label and its elapsed time, on the line below the
/// output; output lines are printed above it.
struct Spinner {
    state: Arc<Mutex<SpinnerState>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct SpinnerState {
    label: String,
    since: Instant,
}

const FRAMES: [&str; 4] = ["|", "/", "-", "\\"];
const CLEAR_LINE: &str = "\r\x1b[2K";

impl Spinner {
    fn start() -> Self {
        let state = Arc::new(Mutex::new(SpinnerState {
            label: "starting".into(),
            since: Instant::now(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (state, stop) = (state.clone(), stop.clone());
            move || {
                let mut frame = 0;
                while !stop.load(Ordering::Relaxed) {
                    {
                        let state = state.lock().expect("spinner state");
                        let seconds = state.since.elapsed().as_secs();
                        let mut stdout = std::io::stdout().lock();
                        let _ = write!(
                            stdout,
                            "{CLEAR_LINE}{} {} ({seconds}s)",
                            FRAMES[frame % FRAMES.len()],
                            state.label
                        );
                        let _ = stdout.flush();
                    }
                    frame += 1;
                    std::thread::sleep(Duration::from_millis(120));
                }
            }
        });
        Self {
            state,
            stop,
            thread: Some(thread),
        }
    }

    fn show(&self, lines: &[String], label: &str) {
        let mut state = self.state.lock().expect("spinner state");
        if state.label != label {
            state.label = label.to_string();
            state.since = Instant::now();
        }
        let mut stdout = std::io::stdout().lock();
        for line in lines {
            let _ = writeln!(stdout, "{CLEAR_LINE}{line}");
        }
        let _ = stdout.flush();
    }
}

/// Stops the spinner and clears its line, also when the stream fails midway.
impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        print!("{CLEAR_LINE}");
        let _ = std::io::stdout().flush();
    }
}
