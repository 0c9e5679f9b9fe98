//! `POST /migrations/apply/stream`: the same run as `POST /migrations/apply`, answered at
//! once as an event stream — the task as it starts, each step's receipt once it is recorded in
//! the task, and the answer apply gives at the end. The run belongs to its request: when the
//! client leaves, it stops before its next step (nothing half done; applying again resumes).

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use berth_api::migrations::{ApplyProgress, ApplyProgressKind, ApplyRequest, Receipt};
use futures::channel::mpsc;
use futures::{SinkExt, Stream};

use super::apply::Listener;
use super::apply_run::ApplyRun;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Events buffered for a slow client before the run waits for it.
const BUFFER: usize = 8;

pub fn endpoint() -> Endpoint {
    Endpoint::post::<ApplyRequest, ApplyProgress, _, _>(
        "/migrations/apply/stream",
        "Apply a plan or resume it, as POST /migrations/apply does, and follow it: each event \
         is `event: message`, an increasing `id` and `data` holding the JSON object described \
         by the response schema — `started` (the task) at once, `step-completed` with each \
         receipt once the task holds it, and last `finished` with apply's answer (or \
         `interrupted`). A refused request is an ordinary error answer; closing the stream \
         stops the run before its next step",
        stream,
    )
    .event_stream()
}

async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ApplyRequest>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let run = ApplyRun::prepare(&state, &caller, &headers, body).await?;
    let (sender, receiver) = mpsc::channel(BUFFER);
    tokio::spawn(follow(run, sender));
    Ok(Sse::new(receiver).keep_alive(KeepAlive::default()))
}

/// Runs the task, sending an event as it starts, after each receipt and at its end.
async fn follow(run: ApplyRun, sender: mpsc::Sender<Result<Event, Infallible>>) {
    let mut client = Client {
        sender,
        sequence: 0,
        template: ApplyProgress {
            kind: ApplyProgressKind::Started,
            migration_name: run.migration_name(),
            plan_digest: run.plan().plan_digest.clone(),
            completed_steps: run.completed_before(),
            total_steps: run.plan().steps.len(),
            receipt: None,
            result: None,
            message: None,
        },
    };
    let started = client.template.clone();
    if !client.send(started).await {
        run.abandon().await;
        return;
    }
    let last = match run.finish(&mut client).await {
        Ok(result) => ApplyProgress {
            kind: ApplyProgressKind::Finished,
            completed_steps: result.receipts.len(),
            result: Some(result),
            ..client.template.clone()
        },
        Err(error) => ApplyProgress {
            kind: ApplyProgressKind::Interrupted,
            message: Some(error.body.message),
            ..client.template.clone()
        },
    };
    client.send(last).await;
}

/// The stream's client: who hears of each receipt.
struct Client {
    sender: mpsc::Sender<Result<Event, Infallible>>,
    sequence: u64,
    /// The task's fields every event repeats.
    template: ApplyProgress,
}

impl Client {
    /// False once the client has left.
    async fn send(&mut self, progress: ApplyProgress) -> bool {
        self.sequence += 1;
        let event = Event::default()
            .event("message")
            .id(self.sequence.to_string())
            .json_data(berth_api::wire::Wire(&progress));
        match event {
            Ok(event) => self.sender.send(Ok(event)).await.is_ok(),
            Err(_) => !self.sender.is_closed(),
        }
    }
}

impl Listener for Client {
    async fn landed(&mut self, receipt: &Receipt, completed: usize) -> bool {
        let progress = ApplyProgress {
            kind: ApplyProgressKind::StepCompleted,
            completed_steps: completed,
            receipt: Some(receipt.clone()),
            ..self.template.clone()
        };
        self.send(progress).await
    }
}
