//! Runs an ordinary operation of the REST API in process, as the caller: the same routing,
//! body checks, role and scope checks and writes as a request from outside, so a plan can do
//! nothing its caller could not do directly, and every object it writes is audited the same.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use berth_api::error::ErrorEnvelope;
use serde_json::Value;
use tower::ServiceExt;

use crate::state::AppState;

/// Request bodies and answers an operation may have; more is refused (plans are bounded).
const ANSWER_LIMIT: usize = 4 * 1024 * 1024;

/// How an ordinary operation failed: its error envelope, as the caller would have seen it.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: String,
    pub category: String,
    pub message: String,
    pub retriable: bool,
}

impl Refusal {
    fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal_error".into(),
            category: "infra".into(),
            message: message.into(),
            retriable: true,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status == StatusCode::NOT_FOUND
    }
}

/// The caller's credentials, forwarded to each operation.
#[derive(Clone)]
pub struct Dispatcher {
    state: AppState,
    authorization: HeaderValue,
    /// The whole application, built once per run (not per operation).
    app: axum::Router,
}

impl Dispatcher {
    pub fn new(state: AppState, authorization: HeaderValue) -> Self {
        Self {
            app: crate::routes::app(state.clone()),
            state,
            authorization,
        }
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Calls `method path` (under `/api`) with `body` as JSON and reads the JSON answer.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Refusal> {
        let request = self.request(method, path, body)?;
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .map_err(|never| match never {})?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), ANSWER_LIMIT)
            .await
            .map_err(|e| Refusal::internal(format!("reading the operation's answer: {e}")))?;
        if status.is_success() {
            return Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
        }
        Err(refusal(status, &bytes))
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Request<Body>, Refusal> {
        let builder = Request::builder()
            .method(method)
            .uri(format!("/api{path}"))
            .header(header::AUTHORIZATION, self.authorization.clone());
        let request = match body {
            Some(body) => builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        };
        request.map_err(|e| Refusal::internal(format!("building the operation's request: {e}")))
    }
}

fn refusal(status: StatusCode, bytes: &[u8]) -> Refusal {
    match serde_json::from_slice::<ErrorEnvelope>(bytes) {
        Ok(envelope) => Refusal {
            status,
            code: envelope.error.code.into_owned(),
            category: envelope.error.category.into_owned(),
            message: match envelope.error.details.get("field").and_then(Value::as_str) {
                Some(field) if !envelope.error.message.contains(field) => {
                    format!("{} (field {field})", envelope.error.message)
                }
                _ => envelope.error.message,
            },
            retriable: envelope.error.retriable,
        },
        Err(_) => Refusal {
            status,
            ..Refusal::internal(format!("the operation answered {status}"))
        },
    }
}
