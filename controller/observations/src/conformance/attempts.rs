//! Removed deployment attempts on both backends.

use super::Fixture;
use crate::{AttemptQuery, AttemptRecord, TimelineKey};

on_both_backends!(
    removed_attempts_page_newest_first_within_filters_and_scope,
    attempts_are_replaced_forgotten_and_counted_per_timeline,
);

fn attempt(deployment: &str, resource: &str, created_ms: i64, status: &str) -> AttemptRecord {
    AttemptRecord {
        namespace: "org-a".into(),
        deployment: deployment.into(),
        resource: resource.into(),
        project: "prj-1".into(),
        environment: "env-1".into(),
        server: "srv-1".into(),
        status: status.into(),
        created_ms,
        removed: true,
        object: format!("{{\"name\":\"{deployment}\"}}"),
    }
}

fn names(records: &[AttemptRecord]) -> Vec<&str> {
    records.iter().map(|r| r.deployment.as_str()).collect()
}

fn removed_attempts_page_newest_first_within_filters_and_scope(fixture: &Fixture) {
    let store = fixture.open();
    let mut records: Vec<AttemptRecord> = (1..=5)
        .map(|n| attempt(&format!("dep-web-{n}"), "web", n * 10, "succeeded"))
        .collect();
    records[1].status = "failed".into();
    records.push(attempt("dep-api-1", "api", 25, "succeeded"));
    let mut live = attempt("dep-web-6", "web", 60, "running");
    live.removed = false;
    records.push(live);
    store.record_attempts(&records).unwrap();

    let web = AttemptQuery {
        namespace: "org-a".into(),
        resource: Some("web".into()),
        limit: 2,
        ..AttemptQuery::default()
    };
    let first = store.removed_attempts(&web).unwrap();
    assert_eq!(
        names(&first),
        ["dep-web-5", "dep-web-4"],
        "live ones are not listed"
    );
    let last = &first[1];
    let next = AttemptQuery {
        before: Some((last.created_ms, last.deployment.clone())),
        ..web.clone()
    };
    assert_eq!(
        names(&store.removed_attempts(&next).unwrap()),
        ["dep-web-3", "dep-web-2"]
    );
    assert_eq!(
        store.count_removed(&next).unwrap(),
        5,
        "the cursor does not count"
    );
    let failed = AttemptQuery {
        resource: None,
        status: Some("failed".into()),
        limit: 10,
        ..web.clone()
    };
    assert_eq!(
        names(&store.removed_attempts(&failed).unwrap()),
        ["dep-web-2"]
    );
    let scoped = AttemptQuery {
        resource: None,
        within_resources: vec!["api".into()],
        limit: 10,
        ..web.clone()
    };
    assert_eq!(
        names(&store.removed_attempts(&scoped).unwrap()),
        ["dep-api-1"]
    );
    let other = AttemptQuery {
        namespace: "org-b".into(),
        ..web
    };
    assert!(store.removed_attempts(&other).unwrap().is_empty());
    assert_eq!(
        store.unremoved_attempts().unwrap(),
        vec![("org-a".to_string(), "dep-web-6".to_string())]
    );
}

fn attempts_are_replaced_forgotten_and_counted_per_timeline(fixture: &Fixture) {
    let store = fixture.open();
    let mut running = attempt("dep-web-1", "web", 10, "running");
    running.removed = false;
    store.record_attempts(&[running.clone()]).unwrap();
    let mut done = running.clone();
    done.status = "succeeded".into();
    store.record_attempts(&[done]).unwrap();
    store
        .mark_removed(
            "org-a",
            &["dep-web-1".to_string(), "dep-unknown".to_string()],
        )
        .unwrap();
    let stored = store.attempt("org-a", "dep-web-1").unwrap().unwrap();
    assert_eq!(
        (stored.status.as_str(), stored.removed),
        ("succeeded", true)
    );
    assert!(store.attempt("org-a", "dep-unknown").unwrap().is_none());

    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    let events = [super::event("one"), super::event("two")];
    store.append(&key, &events).unwrap();
    let counts = store
        .timeline_counts("org-a", "web", &["dep-web-1".into(), "dep-web-9".into()])
        .unwrap();
    assert_eq!(counts, vec![("dep-web-1".to_string(), 2)]);

    store
        .record_attempts(&[attempt("dep-api-1", "api", 5, "failed")])
        .unwrap();
    store.forget_resource("org-a", "web").unwrap();
    assert!(store.attempt("org-a", "dep-web-1").unwrap().is_none());
    assert!(store.attempt("org-a", "dep-api-1").unwrap().is_some());
}
