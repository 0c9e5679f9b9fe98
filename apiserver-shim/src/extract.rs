//! Request extractors that fail with the error envelope: malformed JSON is a 400, a wrong or
//! unknown field is a 422 naming the field, and query parameters are checked one by one.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::validate::{self, Lines};

/// The largest request body accepted (env files and keys fit easily).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON request body. Request types use `deny_unknown_fields`, so typos are caught.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v.starts_with("application/json"));
        if !is_json {
            return Err(ApiError::malformed(
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::malformed(format!("could not read the body: {e}")))?;
        if bytes.len() > MAX_BODY_BYTES {
            return Err(ApiError::malformed(format!(
                "the body is larger than {MAX_BODY_BYTES} bytes"
            )));
        }
        // An empty body counts as `{}`, so endpoints whose fields are all optional accept it.
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        parse_json(text).map(JsonBody)
    }
}

/// Parses JSON, reporting the path of the field that failed. Every string passes
/// [`validate::json_strings`] first.
pub fn parse_json<T: DeserializeOwned>(text: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(text)
        .map_err(|e| ApiError::malformed(format!("the body is not valid JSON: {e}")))?;
    validate::json_strings(&value)?;
    match serde_path_to_error::deserialize(value) {
        Ok(value) => Ok(value),
        Err(error) => {
            let path = error.path().to_string();
            let message = error.into_inner().to_string();
            // A missing field is reported at its parent's path; name the field itself.
            let field = match (missing_field(&message), path.as_str()) {
                (Some(name), ".") => name,
                (Some(name), parent) => format!("{parent}.{name}"),
                (None, ".") => unknown_field(&message).unwrap_or(path),
                (None, _) => path,
            };
            Err(ApiError::validation(&field, describe(&field, &message)))
        }
    }
}

/// serde names an unknown field only inside its message: "unknown field `x`, expected …".
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// serde names a missing required field only inside its message: "missing field `x`".
fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

fn describe(field: &str, serde_message: &str) -> String {
    // serde's message ends with " at line L column C", which means nothing to an API caller.
    let message = serde_message
        .split(" at line ")
        .next()
        .unwrap_or(serde_message);
    format!("{field}: {message}")
}

/// Query parameters, checked individually so each error names its parameter.
pub struct QueryParams(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let pairs = form_pairs(query)?;
        Ok(Self(pairs))
    }
}

fn form_pairs(query: &str) -> Result<HashMap<String, String>, ApiError> {
    let mut pairs = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = form_decode(key)?;
        let value = form_decode(value)?;
        validate::text("query parameter", &key, Lines::Single)?;
        validate::text(&key, &value, Lines::Single)?;
        pairs.insert(key, value);
    }
    Ok(pairs)
}

/// Form encoding: `+` is a space, then percent-decoding.
fn form_decode(text: &str) -> Result<String, ApiError> {
    validate::percent_decode(&text.replace('+', " "))
        .ok_or_else(|| ApiError::malformed("the query has a broken percent-escape or is not UTF-8"))
}

impl QueryParams {
    /// A query from `(name, value)` pairs, as unit tests build them.
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Self(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// An optional filter string; present means non-empty (spec §8).
    pub fn string(&self, name: &str) -> Result<Option<&str>, ApiError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(value) if value.is_empty() => Err(ApiError::validation(
                name,
                format!("{name} must be at least 1 character"),
            )),
            Some(value) => Ok(Some(value.as_str())),
        }
    }

    /// A required filter string.
    pub fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.string(name)?
            .ok_or_else(|| ApiError::validation(name, format!("{name} is required")))
    }

    /// An integer within `min..=max`, or `default` when absent.
    pub fn integer(&self, name: &str, min: u64, max: u64, default: u64) -> Result<u64, ApiError> {
        let Some(raw) = self.0.get(name) else {
            return Ok(default);
        };
        raw.parse::<u64>()
            .ok()
            .filter(|value| (min..=max).contains(value))
            .ok_or_else(|| {
                ApiError::validation(
                    name,
                    format!("{name} must be an integer from {min} to {max}"),
                )
                .with_detail("min", min)
                .with_detail("max", max)
            })
    }

    /// One of `allowed`, or `default` when absent.
    pub fn one_of<'a>(
        &'a self,
        name: &str,
        allowed: &[&'a str],
        default: Option<&'a str>,
    ) -> Result<Option<&'a str>, ApiError> {
        match self.0.get(name) {
            None => Ok(default),
            Some(value) if allowed.contains(&value.as_str()) => Ok(Some(value.as_str())),
            Some(_) => Err(ApiError::validation(
                name,
                format!("{name} must be one of: {}", allowed.join(", ")),
            )
            .with_detail("allowed", allowed.to_vec())),
        }
    }

    /// A boolean given as `true`/`false` (or `1`/`0`); false when absent.
    pub fn boolean(&self, name: &str) -> Result<bool, ApiError> {
        self.boolean_or(name, false)
    }

    /// A boolean given as `true`/`false` (or `1`/`0`), or `default` when absent.
    pub fn boolean_or(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        match self.0.get(name).map(String::as_str) {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(_) => Err(ApiError::validation(
                name,
                format!("{name} must be true or false"),
            )),
        }
    }
}

/// Rejects query parameters an endpoint does not know, so a misspelt filter is a 422 rather
/// than a silently unfiltered list.
pub fn known_params(query: &QueryParams, allowed: &[&str]) -> Result<(), ApiError> {
    let mut unknown: Vec<&String> = query
        .0
        .keys()
        .filter(|key| !allowed.contains(&key.as_str()))
        .collect();
    unknown.sort();
    match unknown.first() {
        None => Ok(()),
        Some(name) => Err(ApiError::validation(
            name,
            format!(
                "unknown query parameter {name}; this endpoint accepts: {}",
                allowed.join(", ")
            ),
        )),
    }
}

/// Cursor pagination: the cursor is the offset of the next item, as a decimal string.
pub fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let start = match cursor {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|offset| *offset <= items.len())
            .ok_or_else(|| ApiError::validation("cursor", "cursor is not one this API returned"))?,
    };
    let end = (start + limit).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

/// A JSON body whose error messages never repeat a string value: a key pasted into the wrong
/// field would otherwise come back in serde's "invalid type: string …" message.
pub struct KeyBody<T>(pub T);

pub fn without_values(error: ApiError) -> ApiError {
    let message = &error.body.message;
    if !message.contains("string \"") && !message.contains("unknown variant") {
        return error;
    }
    let field = error.body.details.get("field").and_then(|f| f.as_str());
    match field {
        Some(field) => ApiError::validation(field, format!("{field}: invalid value")),
        None => ApiError::malformed("the body is not valid"),
    }
}

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for KeyBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match JsonBody::<T>::from_request(request, state).await {
            Ok(JsonBody(body)) => Ok(Self(body)),
            Err(error) => Err(without_values(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        name: String,
        display_order: Option<u32>,
    }

    #[test]
    fn unknown_field_is_named() {
        let error = parse_json::<Body>(br#"{"name":"a","nmae":"b"}"#).unwrap_err();
        assert_eq!(error.status, 422);
        assert_eq!(error.body.details["field"], "nmae");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let error = parse_json::<Body>(br#"{"name":"a","displayOrder":"x"}"#).unwrap_err();
        assert_eq!(error.body.details["field"], "displayOrder");
        assert!(!error.body.message.contains("line"));
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Outer {
        inner: Body,
    }

    #[test]
    fn missing_field_is_named_with_its_path() {
        let error = parse_json::<Body>(br#"{}"#).unwrap_err();
        assert_eq!(error.body.details["field"], "name");
        let error = parse_json::<Outer>(br#"{"inner":{}}"#).unwrap_err();
        assert_eq!(error.body.details["field"], "inner.name");
        let error = parse_json::<Outer>(br#"{"inner":{"name":"a","x":1}}"#).unwrap_err();
        assert_eq!(error.body.details["field"], "inner.x");
    }

    #[test]
    fn broken_json_is_malformed() {
        assert_eq!(parse_json::<Body>(b"{\"name\":").unwrap_err().status, 400);
    }

    #[test]
    fn query_limits_are_enforced_with_the_parameter_named() {
        let query = QueryParams(form_pairs("limit=501&name=a%20b").unwrap());
        let error = query.integer("limit", 1, 500, 50).unwrap_err();
        assert_eq!(error.body.details["field"], "limit");
        assert_eq!(query.string("name").unwrap(), Some("a b"));
        let empty = QueryParams(form_pairs("name=").unwrap());
        assert!(empty.string("name").is_err());
    }

    #[test]
    fn cursor_pages_reach_the_end() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = paginate(&items, None, 2).unwrap();
        assert_eq!(first, vec![0, 1]);
        let (second, next) = paginate(&items, next.as_deref(), 2).unwrap();
        assert_eq!(second, vec![2, 3]);
        let (last, next) = paginate(&items, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (vec![4], None));
        assert!(paginate(&items, Some("x"), 2).is_err());
    }

    #[test]
    fn string_values_are_dropped_from_body_errors() {
        let error = parse_json::<berth_api::credentials::RotateCredential>(
            br#"{"privateKey":"k","confirmation":"-----BEGIN secret-text"}"#,
        )
        .err()
        .unwrap();
        assert!(error.body.message.contains("secret-text"));
        let error = without_values(error);
        assert!(!error.body.message.contains("secret-text"));
        assert_eq!(error.body.details["field"], "confirmation");
    }
}
