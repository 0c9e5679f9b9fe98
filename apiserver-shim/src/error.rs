//! One error envelope for every failure:
//! `{"error":{"code","category","message","retriable","details"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

pub use berth_api::error::{ErrorBody, ErrorEnvelope};

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
                code: code.into(),
                category: category.into(),
                message: message.into(),
                retriable: status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS,
                details: Map::new(),
            },
        }
    }

    /// Marks an error a retry of the same request can fix.
    pub fn retriable(mut self) -> Self {
        self.body.retriable = true;
        self
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

    /// 400 `validation_error`, naming the field: where Appaloft's contract answers 400 for a
    /// readable body that breaks a rule of the operation (migration read-backs).
    pub fn bad_request_field(field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation_error", "user", message)
            .with_detail("field", field)
    }

    /// 422 with a code of its own: a rule of one operation, naming the field.
    pub fn validation_code(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, "user", message)
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

    /// 409 with a code of its own, for a state a client may match on (e.g.
    /// `deployment_not_active`).
    pub fn conflict_code(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, "conflict", message)
    }

    /// 409: runtime control of a resource whose project or environment is archived (spec §7
    /// blocked reason `resource-archived`).
    pub fn resource_archived(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "resource_archived",
            "conflict",
            message,
        )
        .with_detail("blockedReason", "resource-archived")
    }

    /// 409: a change in (or of) a locked environment; `advice` says what unlocking allows.
    pub fn environment_locked(
        environment_id: &str,
        lock_reason: Option<&str>,
        advice: &str,
    ) -> Self {
        let why = lock_reason.map(|r| format!(": {r}")).unwrap_or_default();
        let error = Self::conflict_code(
            "environment_locked",
            format!("environment {environment_id} is locked{why}; {advice}"),
        )
        .with_detail("blockedReason", "environment-locked")
        .with_detail("environmentId", environment_id);
        match lock_reason {
            Some(reason) => error.with_detail("lockReason", reason),
            None => error,
        }
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

/// A field check of `berth-api` (the CLI runs the same one): a 422 naming the field, with
/// its bounds when it has them.
impl From<berth_api::validate::FieldError> for ApiError {
    fn from(error: berth_api::validate::FieldError) -> Self {
        let mut api = ApiError::validation(&error.field, error.message);
        if let Some(min) = error.min {
            api = api.with_detail("min", min);
        }
        if let Some(max) = error.max {
            api = api.with_detail("max", max);
        }
        if !error.allowed.is_empty() {
            api = api.with_detail("allowed", error.allowed);
        }
        api
    }
}

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if (400..500).contains(&status.code) => {
                Self::from_api_status(status)
            }
            _ => {
                tracing::warn!(%error, "Kubernetes API request failed");
                Self::unavailable("the Kubernetes API server did not answer; retry shortly")
            }
        }
    }
}

impl ApiError {
    /// 404: nothing matches, with a message of our own rather than a kind and id.
    pub fn not_found_message(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "user", message)
    }

    /// A 4xx answer of the API server: the request, not the API server, was at fault, so it
    /// stays a 4xx, naming the field when the API server did.
    fn from_api_status(status: &kube::core::Status) -> Self {
        let cause = status
            .details
            .as_ref()
            .and_then(|details| details.causes.iter().find(|c| !c.field.is_empty()));
        let error = match status.code {
            404 => Self::not_found_message("not found"),
            409 if status.reason == "AlreadyExists" => Self::conflict("the object already exists"),
            // Another writer changed the object first: the same request may well succeed now.
            409 | 410 => {
                Self::conflict("the object changed meanwhile; retry the request").retriable()
            }
            // A namespace being deleted refuses new objects with 403: the organization is going.
            403 if status.message.contains("being terminated") => {
                Self::conflict("the organization is being deleted")
            }
            403 => {
                tracing::warn!(message = %status.message, "the API server refused berth-shim");
                Self::forbidden("berth-shim may not make this change in Kubernetes")
            }
            429 => Self::rate_limited("the Kubernetes API server is busy; retry shortly", 1),
            // 400 (bad names, bad patches), 422 (schema) and the rest: the input broke a rule.
            _ => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_error",
                "user",
                status.message.clone(),
            ),
        };
        match cause {
            Some(cause) if error.status == StatusCode::UNPROCESSABLE_ENTITY => {
                error.with_detail("field", cause.field.clone())
            }
            _ => error,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.body }))).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, message: &str, field: &str) -> ApiError {
        let mut status = Status::failure(message, "Invalid").with_code(code);
        if !field.is_empty() {
            let details = json!({"causes": [{"field": field, "message": message}]});
            status = status.with_details(serde_json::from_value(details).unwrap());
        }
        kube::Error::Api(status.boxed()).into()
    }

    #[test]
    fn api_server_refusals_stay_4xx_and_name_the_field() {
        let bad_name = api_error(400, "metadata.name: Invalid value", "metadata.name");
        assert_eq!(bad_name.status, 422);
        assert_eq!(bad_name.body.details["field"], "metadata.name");
        let schema = api_error(422, "spec.kind: Unsupported value", "spec.kind");
        assert_eq!(schema.body.details["field"], "spec.kind");
        assert_eq!(api_error(404, "not found", "").status, 404);
        assert_eq!(api_error(409, "conflict", "").status, 409);
        let terminating = api_error(403, "namespace org-x is being terminated", "");
        assert_eq!(terminating.status, 409);
        assert_eq!(api_error(413, "too large", "").status, 422);
    }

    #[test]
    fn a_changed_object_is_worth_a_retry_an_existing_name_is_not() {
        let refusal = |reason: &str| -> ApiError {
            let status = Status::failure("refused", reason).with_code(409);
            kube::Error::Api(status.boxed()).into()
        };
        let changed = refusal("Conflict");
        assert_eq!(
            (changed.status.as_u16(), changed.body.retriable),
            (409, true)
        );
        let exists = refusal("AlreadyExists");
        assert_eq!(
            (exists.status.as_u16(), exists.body.retriable),
            (409, false)
        );
        assert_eq!(exists.body.message, "the object already exists");
    }

    #[test]
    fn only_server_errors_of_the_api_server_are_unavailable() {
        let error = api_error(500, "etcd timeout", "");
        assert_eq!(error.status, 503);
        assert!(error.body.retriable);
    }
}
