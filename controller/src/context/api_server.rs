//! A scripted stand-in for the Kubernetes API server, behind the `kube::Client` of
//! [`Context::test`](crate::context::Context::test): a test lists the requests a reconcile may
//! make, in order, with the answer each gets; any other request (a PATCH above all) fails the
//! test, and so does an expected one that never came.
//!
//! ```ignore
//! let script = api.serve([Exchange::get("/apis/berth.dev/v1alpha1/namespaces/a/projects/p")
//!     .returns(&project)]);
//! reconcile(object, context).await?;
//! let sent = script.finish().await; // or `api.expect_nothing()` … `.finish()`
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The test's end of the mocked client.
pub type MockHandle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// How long [`Script::finish`] waits for requests sent after the reconcile returned (an Event
/// published in the background, say).
pub const GRACE: Duration = Duration::from_millis(100);

/// The API server of a test context. Until [`ApiServer::serve`] runs, a request waits forever.
/// One script runs at a time; the next one starts once the previous one finished.
pub struct ApiServer {
    handle: Arc<Mutex<MockHandle>>,
}

/// One request a test expects: its method and exact path (the query is not compared), and the
/// answer it gets.
pub struct Exchange {
    method: Method,
    path: String,
    status: StatusCode,
    body: Value,
}

/// A request as the API server received it.
#[derive(Clone, Debug)]
pub struct Sent {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub content_type: Option<String>,
    /// The JSON body; `Null` when empty.
    pub body: Value,
}

/// A script being served; [`Script::finish`] checks that it went as written.
pub struct Script {
    stop: oneshot::Sender<Duration>,
    task: JoinHandle<Served>,
}

#[derive(Default)]
struct Served {
    sent: Vec<Sent>,
    unexpected: Vec<String>,
    left: Vec<String>,
}

impl ApiServer {
    pub fn new(handle: MockHandle) -> Self {
        Self {
            handle: Arc::new(Mutex::new(handle)),
        }
    }

    /// Answers `script` in order, and every other request with a 500 (so the reconcile ends
    /// instead of waiting) that [`Script::finish`] then reports.
    pub fn serve(&self, script: impl IntoIterator<Item = Exchange>) -> Script {
        let (stop, stopped) = oneshot::channel();
        let script = script.into_iter().collect();
        let task = tokio::spawn(answer(Arc::clone(&self.handle), script, stopped));
        Script { stop, task }
    }

    /// Expects no request at all.
    pub fn expect_nothing(&self) -> Script {
        self.serve([])
    }
}

impl Exchange {
    fn new(method: Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            status: StatusCode::NOT_FOUND,
            body: status_body(StatusCode::NOT_FOUND, "NotFound", "not found"),
        }
    }

    /// A GET of `path`, answered 404 Not Found unless [`Exchange::returns`] says otherwise.
    pub fn get(path: impl Into<String>) -> Self {
        Self::new(Method::GET, path)
    }

    pub fn patch(path: impl Into<String>) -> Self {
        Self::new(Method::PATCH, path)
    }

    pub fn post(path: impl Into<String>) -> Self {
        Self::new(Method::POST, path)
    }

    /// Answers 200 with `object`.
    pub fn returns(mut self, object: &impl Serialize) -> Self {
        self.status = StatusCode::OK;
        self.body = serde_json::to_value(object).expect("a test object serializes");
        self
    }

    /// Answers with the failure `status` and `reason` (`Conflict`, say), as a `Status`.
    pub fn rejected(mut self, status: StatusCode, reason: &str) -> Self {
        self.status = status;
        self.body = status_body(status, reason, reason);
        self
    }

    fn matches(&self, sent: &Sent) -> bool {
        self.method == sent.method && self.path == sent.path
    }
}

impl fmt::Display for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

impl fmt::Display for Sent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}?{}", self.method, self.path, self.query)?;
        if !self.body.is_null() {
            write!(f, " {}", self.body)?;
        }
        Ok(())
    }
}

impl Script {
    /// Waits [`GRACE`] for late requests, then fails the test on any request the script did not
    /// expect and on any expected one not made. Returns every request, in order.
    pub async fn finish(self) -> Vec<Sent> {
        self.finish_within(GRACE).await
    }

    /// [`Script::finish`], waiting `grace` for late requests.
    pub async fn finish_within(self, grace: Duration) -> Vec<Sent> {
        // The task ends by itself only if the client is gone; then there is nothing to stop.
        let _ = self.stop.send(grace);
        let served = self.task.await.expect("the API server script panicked");
        assert!(
            served.unexpected.is_empty(),
            "unexpected requests to the API server:\n{}",
            served.unexpected.join("\n")
        );
        assert!(
            served.left.is_empty(),
            "expected requests never made:\n{}",
            served.left.join("\n")
        );
        served.sent
    }
}

/// Serves requests until told to stop, then for the grace period it is told.
async fn answer(
    handle: Arc<Mutex<MockHandle>>,
    mut script: VecDeque<Exchange>,
    mut stop: oneshot::Receiver<Duration>,
) -> Served {
    let mut handle = handle.lock_owned().await;
    let mut served = Served::default();
    let mut deadline: Option<Instant> = None;
    loop {
        let next = match deadline {
            None => tokio::select! {
                next = handle.next_request() => next,
                grace = &mut stop => {
                    deadline = Some(Instant::now() + grace.unwrap_or_default());
                    continue;
                }
            },
            Some(at) => match tokio::time::timeout_at(at, handle.next_request()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let Some((request, respond)) = next else {
            break;
        };
        let sent = read(request).await;
        let response = match script.front() {
            Some(expected) if expected.matches(&sent) => {
                let expected = script.pop_front().expect("just looked at it");
                response(expected.status, &expected.body)
            }
            _ => {
                served.unexpected.push(sent.to_string());
                let message = format!("the test did not expect {sent}");
                let status = StatusCode::INTERNAL_SERVER_ERROR;
                response(status, &status_body(status, "InternalError", &message))
            }
        };
        respond.send_response(response);
        served.sent.push(sent);
    }
    served.left = script.iter().map(ToString::to_string).collect();
    served
}

async fn read(request: Request<Body>) -> Sent {
    let (parts, body) = request.into_parts();
    let bytes = body.collect_bytes().await.expect("a request body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("a JSON request body")
    };
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    Sent {
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        method: parts.method,
        content_type,
        body,
    }
}

fn response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(body).expect("JSON")))
        .expect("a valid response")
}

/// A `Status` object as the API server sends with a failure.
fn status_body(status: StatusCode, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "reason": reason, "message": message, "code": status.as_u16(),
    })
}
