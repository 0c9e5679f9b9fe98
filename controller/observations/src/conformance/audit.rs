//! Audit records on both backends.

use super::Fixture;
use crate::{AuditQuery, AuditRecord, History};

on_both_backends!(
    audit_records_page_newest_first_by_resource_and_object,
    audit_records_older_than_a_cutoff_are_counted_and_pruned_per_namespace,
);

fn record(id: &str, namespace: &str, resource: &str, occurred_ms: i64) -> AuditRecord {
    AuditRecord {
        id: id.into(),
        namespace: namespace.into(),
        occurred_ms,
        object_kind: "Resource".into(),
        object_id: resource.into(),
        resource: resource.into(),
        actor_kind: "user".into(),
        actor_id: "usr-1".into(),
        action: "POST /resources/{resourceId}/auto-deploy".into(),
        detail: "{}".into(),
    }
}

fn ids(records: &[AuditRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

fn audit_records_page_newest_first_by_resource_and_object(fixture: &Fixture) {
    let store = fixture.open();
    let records = [
        record("a1", "org-a", "web", 10),
        record("a2", "org-a", "web", 20),
        record("a3", "org-a", "api", 20),
        record("a4", "org-a", "web", 30),
        record("b1", "org-b", "web", 40),
    ];
    store.record_audit(&records).unwrap();
    // Recording again (a retried write) adds nothing.
    store.record_audit(&records[..1]).unwrap();
    let all = AuditQuery {
        namespace: "org-a".into(),
        limit: 10,
        ..AuditQuery::default()
    };
    assert_eq!(
        ids(&store.audit_records(&all).unwrap()),
        ["a4", "a3", "a2", "a1"]
    );
    let web = AuditQuery {
        resource: Some("web".into()),
        limit: 2,
        ..all.clone()
    };
    let first = store.audit_records(&web).unwrap();
    assert_eq!(ids(&first), ["a4", "a2"]);
    let last = &first[1];
    let next = AuditQuery {
        before: Some((last.occurred_ms, last.id.clone())),
        ..web
    };
    assert_eq!(ids(&store.audit_records(&next).unwrap()), ["a1"]);
    let api = AuditQuery {
        object: Some("api".into()),
        ..all
    };
    assert_eq!(ids(&store.audit_records(&api).unwrap()), ["a3"]);
}

fn audit_records_older_than_a_cutoff_are_counted_and_pruned_per_namespace(fixture: &Fixture) {
    let store = fixture.open();
    let records = [
        record("a1", "org-a", "web", 10),
        record("a2", "org-a", "web", 20),
        record("a3", "org-a", "web", 30),
        record("b1", "org-b", "web", 10),
    ];
    store.record_audit(&records).unwrap();
    let history = History::AuditRecords;
    assert_eq!(store.count_before("org-a", history, 25).unwrap(), 2);
    assert_eq!(store.delete_before("org-a", history, 25).unwrap(), 2);
    let all = |namespace: &str| AuditQuery {
        namespace: namespace.into(),
        limit: 10,
        ..AuditQuery::default()
    };
    assert_eq!(ids(&store.audit_records(&all("org-a")).unwrap()), ["a3"]);
    assert_eq!(ids(&store.audit_records(&all("org-b")).unwrap()), ["b1"]);
}
