//! Access-failure evidence on both backends.

use berth_crds::access_failure::{
    AccessFailureEvidence, AccessRoute, AffectedRequest, ROUTE_NOT_FOUND, SCHEMA_VERSION,
    UPSTREAM_UNAVAILABLE,
};

use super::Fixture;
use crate::{ACCESS_FAILURE_RETENTION, AccessFailureRecord, now_ms};

on_both_backends!(
    evidence_is_found_by_request_id_once_and_comes_back_as_recorded,
    the_latest_evidence_of_a_resource_is_the_last_captured,
    expired_evidence_is_not_read_and_pruning_removes_it,
);

fn evidence(request_id: &str, code: &str, resource: Option<&str>) -> AccessFailureEvidence {
    AccessFailureEvidence {
        schema_version: SCHEMA_VERSION.into(),
        request_id: request_id.into(),
        generated_at: "2030-01-01T00:00:00Z".into(),
        code: code.into(),
        category: "infra".into(),
        phase: "edge-request-routing".into(),
        http_status: 404,
        retriable: false,
        owner_hint: "platform".into(),
        next_action: "check-health".into(),
        affected: AffectedRequest {
            url: "http://web.localhost/app".into(),
            hostname: "web.localhost".into(),
            path: "/app".into(),
            method: "GET".into(),
        },
        route: resource.map(|r| AccessRoute {
            resource_id: Some(r.into()),
            ..AccessRoute::default()
        }),
        cause_code: None,
        correlation_id: Some(request_id.into()),
        causation_id: None,
    }
}

fn record(request_id: &str, resource: Option<&str>, captured_at_ms: i64) -> AccessFailureRecord {
    let code = if resource.is_some() {
        UPSTREAM_UNAVAILABLE
    } else {
        ROUTE_NOT_FOUND
    };
    AccessFailureRecord::captured(
        "org-a",
        "edge",
        resource.map(str::to_string),
        captured_at_ms,
        evidence(request_id, code, resource),
    )
}

fn evidence_is_found_by_request_id_once_and_comes_back_as_recorded(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let unknown_host = record("req-1", None, now);
    assert!(store.record_access_failure(&unknown_host).unwrap());
    // The same line read again after a reconnect changes nothing.
    let mut again = unknown_host.clone();
    again.namespace = "org-b".into();
    assert!(!store.record_access_failure(&again).unwrap());
    let reader = fixture.open();
    assert_eq!(reader.access_failure("req-1").unwrap(), Some(unknown_host));
    assert_eq!(reader.access_failure("req-2").unwrap(), None);
    let stored = reader.access_failure("req-1").unwrap().unwrap();
    let retention = i64::try_from(ACCESS_FAILURE_RETENTION.as_millis()).unwrap();
    assert_eq!(stored.expires_at_ms - stored.captured_at_ms, retention);
}

fn the_latest_evidence_of_a_resource_is_the_last_captured(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    for (id, resource, at) in [
        ("req-old", Some("web"), now - 2_000),
        ("req-new", Some("web"), now - 1_000),
        ("req-api", Some("api"), now),
        ("req-host", None, now),
    ] {
        store
            .record_access_failure(&record(id, resource, at))
            .unwrap();
    }
    let latest = store
        .latest_access_failure("org-a", "web")
        .unwrap()
        .unwrap();
    assert_eq!(latest.evidence.request_id, "req-new");
    assert_eq!(latest.resource.as_deref(), Some("web"));
    assert_eq!(store.latest_access_failure("org-b", "web").unwrap(), None);
    assert_eq!(store.latest_access_failure("org-a", "db").unwrap(), None);
}

fn expired_evidence_is_not_read_and_pruning_removes_it(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let retention = i64::try_from(ACCESS_FAILURE_RETENTION.as_millis()).unwrap();
    let expired = record("req-expired", Some("web"), now - retention - 1_000);
    let current = record("req-current", Some("web"), now);
    store.record_access_failure(&expired).unwrap();
    store.record_access_failure(&current).unwrap();
    assert_eq!(store.access_failure("req-expired").unwrap(), None);
    let latest = store
        .latest_access_failure("org-a", "web")
        .unwrap()
        .unwrap();
    assert_eq!(latest.evidence.request_id, "req-current");
    assert_eq!(store.prune_access_failures(now).unwrap(), 1);
    assert_eq!(store.prune_access_failures(now).unwrap(), 0);
    assert!(store.access_failure("req-current").unwrap().is_some());
    assert_eq!(
        store.prune_access_failures(current.expires_at_ms).unwrap(),
        1
    );
    assert_eq!(store.access_failure("req-current").unwrap(), None);
}
