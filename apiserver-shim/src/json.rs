//! The shim's JSON answers, written by `berth-api`'s one wire rule ([`berth_api::wire`]): no
//! record field is ever `null`. Every route answers through [`Json`], so no handler can forget.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;

/// A `200` JSON body (or the status a handler pairs it with).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match berth_api::wire::to_vec(&self.0) {
            Ok(bytes) => {
                let mut response = (StatusCode::OK, bytes).into_response();
                let json = HeaderValue::from_static("application/json");
                response.headers_mut().insert(CONTENT_TYPE, json);
                response
            }
            Err(error) => ApiError::internal(error).into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Record {
        id: &'static str,
        archived_at: Option<String>,
    }

    #[tokio::test]
    async fn an_answer_leaves_out_null_fields() {
        let response = Json(Record {
            id: "prj-1",
            archived_at: None,
        })
        .into_response();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], br#"{"id":"prj-1"}"#);
    }
}
