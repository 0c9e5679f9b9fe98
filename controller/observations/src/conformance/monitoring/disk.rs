//! Servers' disk artifacts: one read per server kept, the newer replacing the older.

use super::{Fixture, T0};
use crate::DiskRecord;

fn disk(namespace: &str, server: &str, at: i64, bytes: &[u64]) -> DiskRecord {
    let artifacts = bytes
        .iter()
        .enumerate()
        .map(|(n, bytes)| berth_crds::monitoring::DiskArtifact {
            kind: "image".into(),
            id: format!("sha256:{n}"),
            references: vec![format!("registry/app:{n}")],
            bytes: Some(*bytes),
            in_use_by: Some(n as u64),
            inode_count: Some(n as u64 + 1),
            mountpoint: None,
        })
        .collect();
    DiskRecord {
        namespace: namespace.into(),
        server: server.into(),
        observed_ms: at,
        artifacts,
    }
}

pub(super) fn a_servers_disk_artifacts_are_replaced_by_its_next_read(fixture: &Fixture) {
    let store = fixture.open();
    let first = disk("org-a", "edge", T0, &[10, 20]);
    store.record_disk(&first).unwrap();
    store.record_disk(&disk("org-a", "db", T0, &[5])).unwrap();
    store.record_disk(&disk("org-b", "edge", T0, &[7])).unwrap();
    assert_eq!(store.disk("org-a").unwrap()[1], first);
    let next = disk("org-a", "edge", T0 + 60_000, &[30]);
    store.record_disk(&next).unwrap();
    let kept = store.disk("org-a").unwrap();
    let servers: Vec<&str> = kept.iter().map(|r| r.server.as_str()).collect();
    assert_eq!(servers, ["db", "edge"], "one row per server, by name");
    assert_eq!(kept[1], next, "the newer read replaces the older");
    assert_eq!(store.disk("org-b").unwrap().len(), 1);
    assert!(store.disk("org-c").unwrap().is_empty());
}
