//! Appaloft's terminal-session lifecycle routes (`terminal-sessions.list`, `.show`, `.close`):
//! each parses its request, calls one operation of
//! [`lifecycle`](crate::services::terminals::lifecycle) and answers. Bad input is a 400
//! `validation_error` naming its field, as Appaloft answers it.

use axum::extract::{Path, State};
use berth_api::terminal::{TerminalClosedStatus, TerminalScopeKind};

use super::{
    CloseTerminalSession, LIST_SCHEMA, SHOW_SCHEMA, SessionList, TerminalSessionClosed,
    TerminalSessionDetail, TerminalSessionFilters,
};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::json::Json;
use crate::services::terminals::lifecycle::{self, Owner};
use crate::state::AppState;

/// The list's query parameters.
const PARAMS: [&str; 6] = [
    "scope",
    "serverId",
    "resourceId",
    "deploymentId",
    "sandboxId",
    "limit",
];
/// `limit`'s bounds (Appaloft's).
const LIMIT: (u32, u32) = (1, 200);

/// The caller as the owner of sessions: a user (deploy tokens open no terminals), in the
/// organization they act in.
fn owner(caller: &Caller) -> ApiResult<Owner<'_>> {
    let (user_id, _, _) = caller.require_user()?;
    let namespace = caller.organization.as_ref().map(|o| o.namespace.as_str());
    Ok(Owner { user_id, namespace })
}

/// A 400 naming `field`.
fn refused(field: &str, message: String) -> ApiError {
    ApiError::bad_request_field(field, message)
}

/// The list's filters from its query, as Appaloft reads them: ids trimmed and non-empty,
/// `scope` one of its values, `limit` a whole number within [`LIMIT`].
pub fn filters(query: &QueryParams) -> ApiResult<TerminalSessionFilters> {
    let mut unknown: Vec<&String> = query
        .0
        .keys()
        .filter(|k| !PARAMS.contains(&k.as_str()))
        .collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        let message = format!(
            "unknown query parameter {name}; GET /terminal-sessions accepts: {}",
            PARAMS.join(", ")
        );
        return Err(refused(name, message).with_detail("allowed", PARAMS.to_vec()));
    }
    let id = |name: &str| -> ApiResult<Option<String>> {
        match query.0.get(name).map(|value| value.trim()) {
            None => Ok(None),
            Some("") => Err(refused(name, format!("{name} must not be empty"))),
            Some(value) => Ok(Some(value.to_string())),
        }
    };
    Ok(TerminalSessionFilters {
        scope: query.0.get("scope").map(|value| scope(value)).transpose()?,
        server_id: id("serverId")?,
        resource_id: id("resourceId")?,
        deployment_id: id("deploymentId")?,
        sandbox_id: id("sandboxId")?,
        limit: query.0.get("limit").map(|value| limit(value)).transpose()?,
    })
}

fn scope(value: &str) -> ApiResult<TerminalScopeKind> {
    let allowed = TerminalScopeKind::ALL.map(TerminalScopeKind::as_str);
    TerminalScopeKind::ALL
        .into_iter()
        .find(|kind| kind.as_str() == value)
        .ok_or_else(|| {
            let message = format!("scope must be one of: {}", allowed.join(", "));
            refused("scope", message).with_detail("allowed", allowed.to_vec())
        })
}

fn limit(value: &str) -> ApiResult<u32> {
    let value = value.trim();
    value
        .parse::<u32>()
        .ok()
        .filter(|limit| {
            value.bytes().all(|b| b.is_ascii_digit()) && (LIMIT.0..=LIMIT.1).contains(limit)
        })
        .ok_or_else(|| {
            let message = format!(
                "limit must be a whole number from {} to {}",
                LIMIT.0, LIMIT.1
            );
            refused("limit", message)
                .with_detail("min", LIMIT.0)
                .with_detail("max", LIMIT.1)
        })
}

/// A close's body may repeat the path's session id (Appaloft's input is `{sessionId}`), but
/// not name another.
pub fn same_session(path_id: &str, body: &CloseTerminalSession) -> ApiResult<()> {
    match body.session_id.as_deref() {
        Some(id) if id != path_id => Err(refused(
            "sessionId",
            format!("sessionId in the body must be the path's, {path_id}, or left out"),
        )),
        _ => Ok(()),
    }
}

/// The 400 Appaloft answers for a body that breaks its input schema, where the body extractor
/// answers 422.
fn as_bad_request(mut error: ApiError) -> ApiError {
    if error.status == axum::http::StatusCode::UNPROCESSABLE_ENTITY {
        error.status = axum::http::StatusCode::BAD_REQUEST;
    }
    error
}

/// `GET /terminal-sessions`.
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<SessionList>> {
    let filters = filters(&query)?;
    let owner = owner(&caller)?;
    let items = lifecycle::list(&state.observations, &owner, &filters).await?;
    Ok(Json(SessionList {
        schema_version: LIST_SCHEMA.into(),
        items,
    }))
}

/// `GET /terminal-sessions/{sessionId}`.
pub async fn show(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    caller: Caller,
) -> ApiResult<Json<TerminalSessionDetail>> {
    let owner = owner(&caller)?;
    let item = lifecycle::show(&state.observations, &owner, &session_id).await?;
    Ok(Json(TerminalSessionDetail {
        schema_version: SHOW_SCHEMA.into(),
        item,
    }))
}

/// `POST /terminal-sessions/{sessionId}/close`.
pub async fn close(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    caller: Caller,
    body: Result<JsonBody<CloseTerminalSession>, ApiError>,
) -> ApiResult<Json<TerminalSessionClosed>> {
    let JsonBody(body) = body.map_err(as_bad_request)?;
    same_session(&session_id, &body)?;
    let owner = owner(&caller)?;
    lifecycle::close(&state.observations, &state.terminals, &owner, &session_id).await?;
    Ok(Json(TerminalSessionClosed {
        session_id,
        closed: true,
        status: TerminalClosedStatus::Closed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(pairs: &[(&str, &str)]) -> ApiResult<TerminalSessionFilters> {
        filters(&QueryParams::from_pairs(pairs))
    }

    /// The refused field and status.
    fn refusal(pairs: &[(&str, &str)]) -> (u16, String) {
        let error = parsed(pairs).unwrap_err();
        let field = error.body.details["field"].as_str().unwrap().to_string();
        assert_eq!(error.body.code, "validation_error");
        (error.status.as_u16(), field)
    }

    #[test]
    fn the_parameters_read_are_those_the_document_lists() {
        let schema = schemars::schema_for!(TerminalSessionFilters);
        let mut documented: Vec<&str> = schema.as_value()["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut read = PARAMS.to_vec();
        documented.sort();
        read.sort();
        assert_eq!(documented, read);
    }

    #[test]
    fn no_filter_lists_everything_of_the_default_length() {
        assert_eq!(parsed(&[]).unwrap(), TerminalSessionFilters::default());
    }

    #[test]
    fn filters_are_read_as_appaloft_reads_them() {
        let read = parsed(&[
            ("scope", "resource"),
            ("serverId", " srv-1 "),
            ("resourceId", "res-1"),
            ("deploymentId", "dep-1"),
            ("sandboxId", "sbx-1"),
            ("limit", " 200 "),
        ])
        .unwrap();
        assert_eq!(
            read,
            TerminalSessionFilters {
                scope: Some(TerminalScopeKind::Resource),
                server_id: Some("srv-1".into()),
                resource_id: Some("res-1".into()),
                deployment_id: Some("dep-1".into()),
                sandbox_id: Some("sbx-1".into()),
                limit: Some(200),
            }
        );
        for kind in ["server", "resource", "dependency", "sandbox"] {
            let scope = parsed(&[("scope", kind)]).unwrap().scope.unwrap();
            assert_eq!(scope.as_str(), kind);
        }
        assert_eq!(parsed(&[("limit", "1")]).unwrap().limit, Some(1));
    }

    #[test]
    fn bad_filters_are_400s_naming_their_field() {
        for (pairs, field) in [
            (&[("scope", "pod")][..], "scope"),
            (&[("scope", "")], "scope"),
            (&[("scope", " server")], "scope"),
            (&[("serverId", "")], "serverId"),
            (&[("resourceId", "  ")], "resourceId"),
            (&[("deploymentId", "")], "deploymentId"),
            (&[("sandboxId", "")], "sandboxId"),
            (&[("limit", "0")], "limit"),
            (&[("limit", "201")], "limit"),
            (&[("limit", "-1")], "limit"),
            (&[("limit", "+5")], "limit"),
            (&[("limit", "1.5")], "limit"),
            (&[("limit", "ten")], "limit"),
            (&[("limit", "")], "limit"),
            (&[("status", "active")], "status"),
            (&[("serverid", "srv-1")], "serverid"),
        ] {
            assert_eq!(refusal(pairs), (400, field.to_string()), "{pairs:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_allowed_values() {
        let error = parsed(&[("scope", "pod")]).unwrap_err();
        assert_eq!(
            error.body.message,
            "scope must be one of: server, resource, dependency, sandbox"
        );
        assert_eq!(
            error.body.details["allowed"],
            serde_json::json!(["server", "resource", "dependency", "sandbox"])
        );
        let error = parsed(&[("limit", "0")]).unwrap_err();
        assert_eq!(
            (&error.body.details["min"], &error.body.details["max"]),
            (&serde_json::json!(1), &serde_json::json!(200))
        );
        let error = parsed(&[("state", "x")]).unwrap_err();
        assert!(
            error.body.message.contains("scope, serverId"),
            "{}",
            error.body.message
        );
    }

    #[test]
    fn a_close_body_may_repeat_the_paths_session_only() {
        let body = |id: Option<&str>| CloseTerminalSession {
            session_id: id.map(str::to_string),
        };
        assert!(same_session("trm-1", &body(None)).is_ok());
        assert!(same_session("trm-1", &body(Some("trm-1"))).is_ok());
        let error = same_session("trm-1", &body(Some("trm-2"))).unwrap_err();
        assert_eq!(
            (error.status.as_u16(), &error.body.details["field"]),
            (400, &serde_json::json!("sessionId"))
        );
    }

    #[test]
    fn a_body_refused_by_the_extractor_is_a_400() {
        let refused = as_bad_request(ApiError::validation("sessionID", "unknown field"));
        assert_eq!(refused.status.as_u16(), 400);
        assert_eq!(refused.body.details["field"], "sessionID");
        let malformed = as_bad_request(ApiError::malformed("not JSON"));
        assert_eq!(malformed.status.as_u16(), 400);
    }
}
