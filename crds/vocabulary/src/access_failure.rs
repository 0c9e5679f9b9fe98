//! Access-failure evidence (spec §2.2 `resource-access-failure/v1`): what the edge proxy answers
//! for a request it cannot serve, what the observation store keeps, and what
//! `GET /resource-access-failures/{requestId}` returns. The codes and their reasons live in
//! `berth-crds`, which re-exports these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Spec §2.2 "Access failure evidence".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AccessFailureEvidence {
    /// Always `resource-access-failure/v1`.
    pub schema_version: String,
    /// The id the edge proxy answered with (its `X-Request-Id` header).
    pub request_id: String,
    /// When the edge proxy answered (RFC 3339, UTC).
    pub generated_at: String,
    pub code: String,
    pub category: String,
    pub phase: String,
    pub http_status: u16,
    pub retriable: bool,
    pub owner_hint: String,
    pub next_action: String,
    pub affected: AffectedRequest,
    /// The route that took the request; absent when no route did (an unknown host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<AccessRoute>,
    /// What went wrong underneath, e.g. `upstream_connection_failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause_code: Option<String>,
    /// The request id again: what ties the answer, the log line and this record together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
}

/// The request that failed. The query string is never kept: it may carry tokens.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AffectedRequest {
    pub url: String,
    pub hostname: String,
    pub path: String,
    pub method: String,
}

/// The route of spec §2.2 `route{…}`; fields Berth cannot tell are absent.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessRoute {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_binding_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_status: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_reads_with_the_spec_field_names() {
        let evidence: AccessFailureEvidence = serde_json::from_value(serde_json::json!({
            "schemaVersion": "resource-access-failure/v1", "requestId": "r-1",
            "generatedAt": "2030-01-01T00:00:00Z", "code": "resource_access_route_not_found",
            "category": "infra", "phase": "edge-request-routing", "httpStatus": 404,
            "retriable": false, "ownerHint": "platform", "nextAction": "check-health",
            "affected": {"url": "http://a/b", "hostname": "a", "path": "/b", "method": "GET"},
        }))
        .unwrap();
        assert_eq!(evidence.route, None);
        let back = serde_json::to_value(&evidence).unwrap();
        assert_eq!(back["affected"]["hostname"], "a");
        assert!(back.get("route").is_none());
    }
}
