//! Date-times as the REST API prints and reads them (ISO 8601, UTC windows in queries).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use crate::error::ApiError;

/// An ISO 8601 timestamp as the REST API prints it.
pub fn timestamp(time: &Time) -> String {
    time.0.to_string()
}

/// When an object was created, from its metadata.
pub fn created_at(meta: &ObjectMeta) -> String {
    meta.creation_timestamp
        .as_ref()
        .map(timestamp)
        .unwrap_or_default()
}

/// An ISO 8601 / RFC 3339 date-time with an offset, e.g. `2030-01-01T00:00:00Z`.
pub fn parse_timestamp(field: &str, value: &str) -> Result<Time, ApiError> {
    value
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(Time)
        .map_err(|_| {
            ApiError::validation(
                field,
                format!("{field} must be an ISO 8601 date-time such as 2030-01-01T00:00:00Z"),
            )
        })
}

/// A query date-time in UTC (`Z`), as the spec's conventions ask for windows and cursors.
pub fn parse_utc(field: &str, value: &str) -> Result<k8s_openapi::jiff::Timestamp, ApiError> {
    let parsed = parse_timestamp(field, value)?;
    if !value.ends_with(['Z', 'z']) {
        return Err(ApiError::validation(
            field,
            format!("{field} must be a UTC date-time ending in Z, such as 2030-01-01T00:00:00Z"),
        ));
    }
    Ok(parsed.0)
}

/// The optional UTC bounds named `from` and `to` in the query, in order when both are given.
pub fn utc_range(
    query: &crate::extract::QueryParams,
    from: &str,
    to: &str,
) -> Result<(Option<Timestamp>, Option<Timestamp>), ApiError> {
    let utc = |field: &str| {
        query
            .string(field)?
            .map(|value| parse_utc(field, value))
            .transpose()
    };
    let (start, end) = (utc(from)?, utc(to)?);
    if let (Some(start), Some(end)) = (start, end) {
        in_order(from, to, start, end)?;
    }
    Ok((start, end))
}

/// A UTC window from the query: `to` defaults to `now`, `from` to `span` before `to`.
pub fn utc_window(
    query: &crate::extract::QueryParams,
    from: &str,
    to: &str,
    now: Timestamp,
    span: k8s_openapi::jiff::SignedDuration,
) -> Result<(Timestamp, Timestamp), ApiError> {
    let (start, end) = utc_range(query, from, to)?;
    let end = end.unwrap_or(now);
    let start = start.unwrap_or_else(|| end.checked_sub(span).unwrap_or(Timestamp::MIN));
    in_order(from, to, start, end)?;
    Ok((start, end))
}

fn in_order(from: &str, to: &str, start: Timestamp, end: Timestamp) -> Result<(), ApiError> {
    if start > end {
        return Err(ApiError::validation(
            from,
            format!("{from} must not be after {to}"),
        ));
    }
    Ok(())
}
