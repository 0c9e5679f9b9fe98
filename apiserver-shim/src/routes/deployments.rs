//! Spec §4.8 `POST /deployments/stream`: starts a deployment attempt (a Deployment object the
//! controller runs) and streams its progress as `text/event-stream` with the envelope of spec
//! §6, until the attempt ends. The stream follows the Deployment with a watch on the API
//! server; an event goes out when the attempt is created, each time its phase or step changes,
//! and once at the end (`succeeded` or `failed`). Build output the controller records in the
//! attempt's timeline goes out as `application` events in between. Closing the stream does
//! not cancel the attempt; it runs on, its Deployment object keeps the outcome and its
//! timeline stays readable at `GET /resources/{resourceId}/deployments/{deploymentId}/timeline`.

mod progress;
mod timeline;

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use berth_api::build::SourceKind;
use berth_api::repository::RepoLocator;
use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_crds::preview::preview_name;
use berth_crds::resource::Resource;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use berth_observations::TimelineKey;
use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use self::timeline::TimelineFollower;
use super::Endpoint;
use crate::auth::{Caller, Principal, ScopeDimension};
use crate::domain::deployments::{check_server, create_deployment, deployment_name};
use crate::domain::objects::all_in;
use crate::domain::previews::ci::{self, CiHead};
use crate::domain::previews::policies::effective;
use crate::domain::previews::write::{Writer, write};
use crate::domain::resource_access::{masker, require_writable};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use self::progress::{Level, Masker, ProgressEvent, StreamStatus, Tracker};
pub use berth_api::deployments::{DeploymentCreated, StartDeployment};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<StartDeployment, DeploymentCreated, _, _>(
            "/deployments",
            "Start a deployment attempt without following it (201 with its id); a git source's \
             commitSha or gitRef may be given, which a deploy token needs the \
             `source-link-deploy` workflow command and the repository in its scope for. With \
             `preview` ({kind: pull-request, previewId: pr-<number>}) and commitSha, the commit \
             goes to that pull request's preview environment instead (created, or moved to \
             the commit) and the id is that of the attempt the controller starts for it",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<StartDeployment, ProgressEvent, _, _>(
            "/deployments/stream",
            "Deploy a resource to a server and stream progress: each event is `event: message`, \
         an increasing `id` and `data` holding the JSON object described by the response \
         schema; the last event has status `succeeded` or `failed` and the stream then ends",
            start,
        )
        .event_stream(),
        Endpoint::get::<timeline::Timeline, _, _>(
            "/resources/{resourceId}/deployments/{deploymentId}/timeline",
            "A deployment attempt's recorded timeline: its steps, build output and outcome, \
             kept after the attempt and its stream end (query: after, limit 1..1000)",
            timeline::show,
        ),
    ]
}

/// How long a stream waits for its attempt to end before it gives up (the attempt goes on).
pub const STREAM_DEADLINE: Duration = Duration::from_secs(15 * 60);
/// Events buffered for a slow client before the watch waits for it.
const BUFFER: usize = 16;
/// How often the stream looks for new build output in the attempt's timeline.
const OUTPUT_POLL: Duration = Duration::from_millis(250);
/// What started attempts made through this endpoint (`spec.trigger`).
pub const TRIGGER: &str = "manual";

/// A commit or ref asked for: only on a git source, and for a deploy token only with the
/// `source-link-deploy` workflow command and the repository in its scope.
fn check_source_link(
    caller: &Caller,
    resource: &Resource,
    body: &StartDeployment,
) -> ApiResult<()> {
    let (field, _) = match (&body.commit_sha, &body.git_ref) {
        (Some(sha), _) => ("commitSha", sha),
        (None, Some(git_ref)) => ("gitRef", git_ref),
        (None, None) => return Ok(()),
    };
    let source = resource.spec.source.as_ref();
    let repository = source
        .filter(|s| SourceKind::parse("source.kind", &s.kind).is_ok_and(SourceKind::is_git))
        .and_then(|s| RepoLocator::parse(&s.locator).ok())
        .ok_or_else(|| {
            ApiError::validation(
                field,
                format!("{field}: the resource's source is not a git repository"),
            )
        })?;
    caller.require_in_scope(ScopeDimension::WorkflowCommand, SOURCE_LINK_DEPLOY)?;
    if let Principal::DeployToken { scope, .. } = &caller.principal {
        let name = repository.full_name();
        let allowed = &scope.repository_full_names;
        if !allowed.is_empty() && !allowed.iter().any(|a| a.eq_ignore_ascii_case(&name)) {
            return Err(ApiError::forbidden(format!(
                "this deploy token's scope does not include the repository {name}"
            )));
        }
    }
    Ok(())
}

/// The workflow command of a deploy of a given commit from CI (spec §4.2).
pub const SOURCE_LINK_DEPLOY: &str = "source-link-deploy";

/// The resource (404 naming `resourceId` when the caller cannot see it), matching the project
/// and environment of the request, with a source to deploy.
fn deployable(state: &AppState, caller: &Caller, body: &StartDeployment) -> ApiResult<Resource> {
    let resource = crate::domain::resource_access::lookup(state, caller, &body.resource_id)
        .map_err(|e| e.with_detail("field", "resourceId"))?;
    if resource.metadata.deletion_timestamp.is_some() {
        return Err(
            ApiError::not_found("resource", &body.resource_id).with_detail("field", "resourceId")
        );
    }
    let spec = &resource.spec;
    for (field, given, actual) in [
        ("projectId", &body.project_id, &spec.project_id),
        ("environmentId", &body.environment_id, &spec.environment_id),
    ] {
        if given != actual {
            return Err(ApiError::validation(
                field,
                format!("{field}: resource {} is not in {given}", body.resource_id),
            ));
        }
    }
    require_writable(state, &resource)?;
    if spec.source.is_none() {
        return Err(ApiError::conflict(format!(
            "resource {} has no source to deploy; bind one with POST /resources/{}/source",
            body.resource_id, body.resource_id
        ))
        .with_detail("field", "resourceId"));
    }
    Ok(resource.as_ref().clone())
}

/// The Deployment object for the attempt, labelled and annotated as the controller's own, plus
/// who asked for it.
fn new_deployment(caller: &Caller, resource: &Resource, body: &StartDeployment) -> Deployment {
    let destination_id = body
        .destination_id
        .clone()
        .or_else(|| resource.spec.destination_id.clone());
    let mut deployment = Deployment::of_resource(
        &deployment_name(&resource.name_any()),
        resource,
        body.server_id.clone(),
        destination_id,
        TRIGGER,
    );
    if let Some(source) = deployment.spec.source_snapshot.as_mut() {
        if body.git_ref.is_some() {
            source.git_ref = body.git_ref.clone();
        }
        if body.commit_sha.is_some() {
            source.commit_sha = body.commit_sha.clone();
        }
    }
    let (kind, actor) = caller.actor();
    let annotations = deployment.metadata.annotations.get_or_insert_default();
    annotations.insert(UPDATED_BY_KIND.to_string(), kind.to_string());
    annotations.insert(UPDATED_BY_ID.to_string(), actor.to_string());
    deployment
}

/// One SSE event of spec §6: `event: message`, an increasing `id`, JSON `data`.
fn sse_event(id: u64, data: &ProgressEvent) -> Event {
    Event::default()
        .event("message")
        .id(id.to_string())
        .json_data(berth_api::wire::Wire(data))
        .unwrap_or_else(|_| Event::default().event("message").id(id.to_string()))
}

/// Checks the request and creates its attempt; returns the attempt and its resource.
async fn start_attempt(
    state: &AppState,
    caller: &Caller,
    body: &StartDeployment,
) -> ApiResult<(Deployment, Resource)> {
    let organization = caller.require_role(OrganizationRole::Member)?.clone();
    body.validate()?;
    if body.preview.is_some() {
        return Err(ApiError::validation(
            "preview",
            "preview: a preview's deployment starts with POST /deployments (the controller \
             runs it; follow it with GET /preview-environments/{id})",
        ));
    }
    let resource = deployable(state, caller, body)?;
    check_server(state, caller, &resource, &body.server_id)?;
    check_source_link(caller, &resource, body)?;
    let api = Api::<Deployment>::namespaced(state.client.clone(), &organization.namespace);
    let created = create_deployment(&api, new_deployment(caller, &resource, body)).await?;
    tracing::info!(
        deployment = %created.name_any(),
        resource = %resource.name_any(),
        organization = %organization.id,
        "deployment started"
    );
    Ok((created, resource))
}

/// Checks a request with `preview` and writes the pull request's preview at `commitSha`;
/// returns the id of the attempt the controller starts for that commit.
async fn start_preview(
    state: &AppState,
    caller: &Caller,
    body: &StartDeployment,
) -> ApiResult<String> {
    caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let (Some(preview), Some(sha)) = (&body.preview, body.commit_sha.as_deref()) else {
        return Err(ApiError::validation("preview", "preview: missing"));
    };
    let number = preview.pull_request_number()?;
    let resource = deployable(state, caller, body)?;
    check_server(state, caller, &resource, &body.server_id)?;
    if let Some(destination) = &body.destination_id
        && Some(destination) != resource.spec.destination_id.as_ref()
    {
        return Err(ApiError::validation(
            "destinationId",
            "destinationId: a preview deploys to the resource's own destination",
        ));
    }
    check_source_link(caller, &resource, body)?;
    let namespace = resource.namespace().unwrap_or_default();
    let resource_id = resource.name_any();
    let policies = all_in(&state.caches.preview_policies, &namespace);
    let policy = effective(&policies, &resource.spec.project_id, Some(&resource_id));
    let existing = state
        .caches
        .preview_environments
        .get(&ObjectRef::new(&preview_name(&resource_id, number)).within(&namespace));
    let head = CiHead {
        number,
        sha,
        head_ref: body.git_ref.as_deref(),
    };
    let now = Time(Timestamp::now());
    let planned = ci::plan(&resource, &policy.spec, head, existing.as_deref(), now)?;
    write(
        state,
        &namespace,
        &planned.name,
        planned.spec,
        Writer::Caller(caller),
    )
    .await?;
    tracing::info!(
        preview = %planned.name,
        resource = %resource_id,
        attempt = %planned.attempt_id,
        "preview deployment requested"
    );
    Ok(planned.attempt_id)
}

/// Starts the attempt (or, with `preview`, moves the preview to the commit) and answers with
/// its id (201).
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<StartDeployment>,
) -> ApiResult<(StatusCode, Json<DeploymentCreated>)> {
    if body.preview.is_some() {
        let id = start_preview(&state, &caller, &body).await?;
        return Ok((StatusCode::CREATED, Json(DeploymentCreated { id })));
    }
    let (created, _) = start_attempt(&state, &caller, &body).await?;
    let id = created.name_any();
    Ok((StatusCode::CREATED, Json(DeploymentCreated { id })))
}

/// Starts the attempt, then streams its progress.
async fn start(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<StartDeployment>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let organization = caller.organization()?.clone();
    let (created, resource) = start_attempt(&state, &caller, &body).await?;
    let masker = masker(&state, &caller, &resource).await?;
    let api = Api::<Deployment>::namespaced(state.client.clone(), &organization.namespace);
    let (sender, receiver) = mpsc::channel(BUFFER);
    let key = TimelineKey::new(
        &organization.namespace,
        resource.name_any(),
        created.name_any(),
    );
    let timeline = TimelineFollower::new(state.observations.clone(), key);
    tokio::spawn(follow(api, created, masker, timeline, sender));
    Ok(Sse::new(receiver).keep_alive(KeepAlive::default()))
}

/// Sends events until the attempt ends, the Deployment goes, the deadline passes or the
/// client leaves (a failed send); build output as the timeline records it, each line before
/// the step that followed it.
async fn follow(
    api: Api<Deployment>,
    created: Deployment,
    masker: Masker,
    mut timeline: TimelineFollower,
    mut sender: mpsc::Sender<Result<Event, Infallible>>,
) {
    let mut tracker = Tracker::new(&created, masker);
    let mut sequence = 0u64;
    let mut send = async |event: ProgressEvent| {
        sequence += 1;
        sender.send(Ok(sse_event(sequence, &event))).await.is_ok()
    };
    if !send(tracker.created(&created)).await {
        return;
    }
    let name = created.name_any();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(api, config).default_backoff();
    futures::pin_mut!(events);
    let deadline = tokio::time::Instant::now() + STREAM_DEADLINE;
    let mut listed = false;
    let mut poll = tokio::time::interval(OUTPUT_POLL);
    loop {
        let next = tokio::select! {
            next = tokio::time::timeout_at(deadline, events.next()) => next,
            _ = poll.tick() => {
                for entry in timeline.next_entries().await {
                    let Some(event) = tracker.recorded(&entry) else { continue };
                    if !send(event).await {
                        return;
                    }
                }
                continue;
            }
        };
        let (event, last) = match next {
            Err(_) => (tracker.timed_out(STREAM_DEADLINE.as_secs() / 60), true),
            // A watcher never ends by itself; should it, the attempt can no longer be followed.
            Ok(None) => (tracker.deleted(), true),
            Ok(Some(Err(error))) => {
                tracing::warn!(%error, deployment = %name, "deployment watch error; retrying");
                continue;
            }
            Ok(Some(Ok(change))) => match on_change(change, &mut tracker, &mut listed) {
                Some(found) => found,
                None => continue,
            },
        };
        // What the timeline recorded before this change goes out before it, so steps only go
        // forward.
        for entry in timeline.remaining_entries().await {
            let Some(event) = tracker.recorded(&entry) else {
                continue;
            };
            if !send(event).await {
                return;
            }
        }
        // That output may be of a later step than this change: the change is old news then.
        if !last && tracker.passed(&event) {
            continue;
        }
        if !send(event).await || last {
            return;
        }
    }
}

/// What a watch event of the attempt means for its stream: an event to send and whether it is
/// the last, or nothing. `listed` says whether the current (re)list has shown the attempt.
fn on_change(
    change: watcher::Event<Deployment>,
    tracker: &mut Tracker,
    listed: &mut bool,
) -> Option<(ProgressEvent, bool)> {
    match change {
        watcher::Event::Init => {
            *listed = false;
            None
        }
        watcher::Event::InitApply(d) | watcher::Event::Apply(d) => {
            *listed = true;
            tracker.observe(&d)
        }
        // A relist without the object: it was deleted while the watch was down.
        watcher::Event::InitDone if !*listed => Some((tracker.deleted(), true)),
        watcher::Event::InitDone => None,
        watcher::Event::Delete(_) => Some((tracker.deleted(), true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_sort_after_the_controllers() {
        let name = deployment_name("res-abc");
        assert_eq!(name.len(), "dep-res-abc-mxxx".len(), "{name}");
        assert!(name.as_str() > "dep-res-abc-999", "{name}");
    }
}
