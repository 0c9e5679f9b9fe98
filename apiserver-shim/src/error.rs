//! One error envelope for every failure:
//! `{"error":{"code","category","message","retriable","details"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The body of every error response.
#[derive(Serialize, JsonSchema, Debug)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// What went wrong, for people and for programs.
#[derive(Serialize, JsonSchema, Debug, Clone)]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `validation_error`.
    pub code: &'static str,
    /// Who can fix it: `user`, `auth`, `conflict` or `infra`.
    pub category: &'static str,
    /// Human-readable explanation; never contains a secret value.
    pub message: String,
    /// Whether repeating the same request may succeed.
    pub retriable: bool,
    /// Structured context, e.g. the offending `field`.
    pub details: Map<String, Value>,
}

/// An error on its way to becoming a response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(
        status: StatusCode,
        code: &'static str,
        category: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            body: ErrorBody {
                code,
                category,
                message: message.into(),
                retriable: status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS,
                details: Map::new(),
            },
        }
    }

    /// Adds one entry to `details`.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.body.details.insert(key.to_string(), value.into());
        self
    }

    /// 400: the request could not be read at all (not JSON, wrong content type).
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "malformed_request",
            "user",
            message,
        )
    }

    /// 422: a field breaks a rule. `field` is the JSON path of the offending field.
    pub fn validation(field: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
            "user",
            message,
        )
        .with_detail("field", field)
    }

    /// 401: no valid credentials.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", "auth", message)
    }

    /// 403: authenticated, but the role or token scope does not allow this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "auth", message)
    }

    /// 404: no such object visible to the caller (another organization's objects included).
    pub fn not_found(kind: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "user",
            format!("{kind} {id} not found"),
        )
        .with_detail("kind", kind)
        .with_detail("id", id)
    }

    /// 409: the request conflicts with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", "conflict", message)
    }

    /// 409: a destructive call whose `confirmation` does not repeat the target.
    pub fn confirmation_mismatch(field: &str, expected_kind: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "confirmation_mismatch",
            "user",
            format!("confirmation.{field} must repeat the {expected_kind} being changed"),
        )
        .with_detail("field", format!("confirmation.{field}"))
    }

    /// 429: too many requests; `retry_after` seconds until it may work.
    pub fn rate_limited(message: impl Into<String>, retry_after: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "user",
            message,
        )
        .with_detail("retryAfterSeconds", retry_after)
    }

    /// 405: the path exists but not with this method.
    pub fn new_method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "user",
            "this path does not accept that method",
        )
    }

    /// 503: a dependency (API server, controller) is not available right now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "infra",
            message,
        )
    }

    /// 500: a fault of ours. The message is generic; the cause goes to the log only.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "infra",
            "internal error; see the berth-shim log",
        )
    }
}

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if status.code == 409 => {
                Self::conflict("the object changed or already exists; retry the request")
            }
            kube::Error::Api(status) if status.code == 422 => {
                // The API server's schema caught it; its message names the field.
                Self::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "validation_error",
                    "user",
                    status.message.clone(),
                )
            }
            kube::Error::Api(status) if status.code == 404 => {
                Self::new(StatusCode::NOT_FOUND, "not_found", "user", "not found")
            }
            _ => {
                tracing::warn!(%error, "Kubernetes API request failed");
                Self::unavailable("the Kubernetes API server did not answer; retry shortly")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.body }))).into_response()
    }
}
