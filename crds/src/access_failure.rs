//! Access-failure evidence (spec §2.2 `resource-access-failure/v1`): what the edge proxy answers
//! for a request it cannot serve, and what the controller records in the observation store for
//! the shim's `GET /resource-access-failures/{requestId}`. The codes and the reason each one
//! carries are shared, so the body a user sees and the evidence looked up later agree.

/// `schemaVersion` of the evidence.
pub const SCHEMA_VERSION: &str = "resource-access-failure/v1";
/// `route.routeSource` of the routes Berth generates.
pub const GENERATED_ROUTE_SOURCE: &str = "generated-default";

/// No route claims the request's host (spec §7).
pub const ROUTE_NOT_FOUND: &str = "resource_access_route_not_found";
/// The host is routed, but no route of it claims the request's path: the edge's own key (its
/// `X-Berth-Access-Failure` header). The evidence says `resource_access_route_not_found`, the
/// spec's code, with `causeCode: no_route_for_path`.
pub const PATH_NOT_FOUND: &str = "resource_access_path_not_found";
/// `causeCode` of a path no route of its host claims.
pub const NO_ROUTE_FOR_PATH: &str = "no_route_for_path";
/// The route's upstream (the resource's container) refused, vanished or is not ready.
pub const UPSTREAM_UNAVAILABLE: &str = "resource_access_upstream_unavailable";

/// The fixed part of the evidence for one code: the spec's value sets (Appaloft's closed ones,
/// where the spec shows a sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reason {
    pub code: &'static str,
    pub category: &'static str,
    pub phase: &'static str,
    pub retriable: bool,
    pub owner_hint: &'static str,
    pub next_action: &'static str,
}

/// The reason of `code`; `None` for a code Berth does not know.
pub fn reason(code: &str) -> Option<Reason> {
    let reason = match code {
        ROUTE_NOT_FOUND => Reason {
            code: ROUTE_NOT_FOUND,
            category: "infra",
            phase: "edge-request-routing",
            retriable: false,
            owner_hint: "platform",
            next_action: "check-health",
        },
        PATH_NOT_FOUND => Reason {
            code: ROUTE_NOT_FOUND,
            category: "not-found",
            phase: "edge-request-routing",
            retriable: false,
            owner_hint: "resource",
            next_action: "inspect-proxy-preview",
        },
        UPSTREAM_UNAVAILABLE => Reason {
            code: UPSTREAM_UNAVAILABLE,
            category: "infra",
            phase: "upstream-connection",
            retriable: true,
            owner_hint: "resource",
            next_action: "check-health",
        },
        _ => return None,
    };
    Some(reason)
}

pub use berth_vocabulary::access_failure::{AccessFailureEvidence, AccessRoute, AffectedRequest};

/// Evidence the store kept, with its code's reason as it is now: evidence recorded before
/// the spec's value sets named a path's 404 `resource_access_path_not_found` and the phase of
/// an unreachable upstream `edge-upstream-connect`.
pub fn with_current_reason(mut evidence: AccessFailureEvidence) -> AccessFailureEvidence {
    // A path's 404 shares its code with an unknown host's; its cause tells them apart.
    let key = match evidence.cause_code.as_deref() {
        Some(NO_ROUTE_FOR_PATH) => PATH_NOT_FOUND,
        _ => evidence.code.as_str(),
    };
    if let Some(reason) = reason(key) {
        evidence.code = reason.code.into();
        evidence.category = reason.category.into();
        evidence.phase = reason.phase.into();
        evidence.owner_hint = reason.owner_hint.into();
        evidence.next_action = reason.next_action.into();
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_reason_and_unknown_codes_none() {
        for code in [ROUTE_NOT_FOUND, UPSTREAM_UNAVAILABLE] {
            assert_eq!(reason(code).unwrap().code, code);
        }
        // A path no route claims is the spec's "no route", said apart by its cause.
        assert_eq!(reason(PATH_NOT_FOUND).unwrap().code, ROUTE_NOT_FOUND);
    }

    #[test]
    fn stored_evidence_is_served_with_its_current_reason() {
        let stored = |code: &str, cause: &str, phase: &str| AccessFailureEvidence {
            schema_version: SCHEMA_VERSION.into(),
            request_id: "r".into(),
            generated_at: "t".into(),
            code: code.into(),
            category: "user".into(),
            phase: phase.into(),
            http_status: 404,
            retriable: false,
            owner_hint: "resource".into(),
            next_action: "check-access-profile".into(),
            affected: AffectedRequest::default(),
            route: None,
            cause_code: Some(cause.into()),
            correlation_id: None,
            causation_id: None,
        };
        for code in [PATH_NOT_FOUND, ROUTE_NOT_FOUND] {
            let path = with_current_reason(stored(code, NO_ROUTE_FOR_PATH, "edge-request-routing"));
            assert_eq!(
                (
                    path.code.as_str(),
                    path.category.as_str(),
                    path.next_action.as_str()
                ),
                (ROUTE_NOT_FOUND, "not-found", "inspect-proxy-preview")
            );
        }
        let host = with_current_reason(stored(ROUTE_NOT_FOUND, "no_route_for_host", "x"));
        assert_eq!(
            (host.category.as_str(), host.phase.as_str()),
            ("infra", "edge-request-routing")
        );
        let down = with_current_reason(stored(
            UPSTREAM_UNAVAILABLE,
            "upstream_connection_failed",
            "edge-upstream-connect",
        ));
        assert_eq!(down.phase, "upstream-connection");
        assert_eq!(reason("resource_access_other"), None);
        // The spec's sample.
        let sample = reason(ROUTE_NOT_FOUND).unwrap();
        assert_eq!(
            (sample.category, sample.owner_hint, sample.next_action),
            ("infra", "platform", "check-health")
        );
    }
}
