//! Samples as recorded: read back whole or through the scope filters, bounded by the window
//! and a limit, recorded once per id, pruned and deleted by retention.

use berth_crds::monitoring::{ScopeEvidence, ScopeKind};

use super::{Fixture, T0, container, host, ids, query, scoped, two_ticks};
use crate::{History, ObservationStore, SampleQuery, SampleRecord};

pub(super) fn samples_come_back_as_recorded_oldest_first_and_filtered(fixture: &Fixture) {
    let store = fixture.open();
    let records = two_ticks();
    store.record_samples(&records[..4]).unwrap();
    store.record_samples(&records[4..]).unwrap();
    store.record_samples(&[]).unwrap();
    let mut other = host("edge", T0 + 1);
    other.namespace = "org-b".into();
    store.record_samples(&[other]).unwrap();

    let reader = fixture.open();
    let all = reader.samples(&query()).unwrap();
    assert_eq!(all.len(), records.len(), "org-b's sample is not org-a's");
    assert!(
        all.windows(2).all(|w| w[0].observed_at <= w[1].observed_at),
        "oldest first: {:?}",
        ids(&all)
    );
    let web = all
        .iter()
        .find(|s| s.sample_id == records[2].sample.sample_id)
        .unwrap();
    assert_eq!(*web, records[2].sample, "a sample comes back as recorded");

    let filtered = Filtered {
        reader: reader.as_ref(),
        records: &records,
    };
    filtered.by_kind_and_server();
    filtered.by_resource_project_environment_and_deployment();
}

/// The samples of [`two_ticks`], read back through the filters of a [`SampleQuery`].
struct Filtered<'a> {
    reader: &'a dyn ObservationStore,
    records: &'a [SampleRecord],
}

impl Filtered<'_> {
    /// The ids the store returns for [`query`] as `change` narrows it, in its order.
    fn select(&self, change: &dyn Fn(&mut SampleQuery)) -> Vec<String> {
        ids(&self.reader.samples(&scoped(change)).unwrap())
    }

    /// The ids of the recorded samples `pick` selects, sorted.
    fn expected(&self, pick: &dyn Fn(&SampleRecord) -> bool) -> Vec<String> {
        let mut ids: Vec<_> = self
            .records
            .iter()
            .filter(|r| pick(r))
            .map(|r| r.sample.sample_id.clone())
            .collect();
        ids.sort();
        ids
    }

    fn by_kind_and_server(&self) {
        let hosts = self.select(&|q| q.kind = Some(ScopeKind::Server));
        assert_eq!(sorted(hosts), self.expected(&is_host));
        for kind in [
            ScopeKind::Project,
            ScopeKind::Environment,
            ScopeKind::Resource,
            ScopeKind::Deployment,
        ] {
            let containers = self.select(&|q| q.kind = Some(kind));
            assert_eq!(sorted(containers), self.expected(&|r| !is_host(r)));
        }
        let edge = self.select(&|q| q.server = Some("edge".into()));
        assert_eq!(
            sorted(edge),
            self.expected(&|r| evidence(r).server_id == "edge")
        );
        let edge_host = self.select(&|q| {
            q.server = Some("edge".into());
            q.kind = Some(ScopeKind::Server);
        });
        assert_eq!(
            sorted(edge_host),
            self.expected(&|r| is_host(r) && evidence(r).server_id == "edge")
        );
    }

    fn by_resource_project_environment_and_deployment(&self) {
        let web = self.select(&|q| q.resource = Some("web".into()));
        assert_eq!(
            sorted(web),
            self.expected(&|r| evidence(r).resource_id.as_deref() == Some("web"))
        );
        let web_on_db = self.select(&|q| {
            q.resource = Some("web".into());
            q.server = Some("db".into());
        });
        assert!(web_on_db.is_empty(), "{web_on_db:?}");
        let shop = self.select(&|q| q.project = Some("shop".into()));
        assert_eq!(sorted(shop), self.expected(&|r| !is_host(r)));
        let staging = self.select(&|q| q.environment = Some("staging".into()));
        assert_eq!(
            sorted(staging),
            self.expected(&|r| evidence(r).resource_id.as_deref() == Some("api"))
        );
        let deployment = self.select(&|q| q.deployment = Some("dep-web-1".into()));
        assert_eq!(
            sorted(deployment),
            self.expected(&|r| { evidence(r).deployment_id.as_deref() == Some("dep-web-1") })
        );
        let nothing = self.select(&|q| q.namespace = "org-c".into());
        assert!(nothing.is_empty());
    }
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

fn is_host(record: &SampleRecord) -> bool {
    record.sample.labels.artifact_kind == "host"
}

fn evidence(record: &SampleRecord) -> ScopeEvidence {
    record.sample.scope_evidence.clone()
}

pub(super) fn the_window_bounds_both_ends_and_a_limit_keeps_the_latest(fixture: &Fixture) {
    let store = fixture.open();
    let records: Vec<_> = (0..10)
        .map(|n| container("edge", "web", Some("dep-web-1"), T0 + n * 30_000))
        .collect();
    // Recorded out of order: the store orders by when they were observed.
    store.record_samples(&records[5..]).unwrap();
    store.record_samples(&records[..5]).unwrap();
    let read = |from: i64, to: i64, limit: usize| {
        let query = SampleQuery {
            resource: Some("web".into()),
            from_ms: T0 + from * 30_000,
            to_ms: T0 + to * 30_000,
            limit,
            ..query()
        };
        ids(&store.samples(&query).unwrap())
    };
    let id = |n: usize| records[n].sample.sample_id.clone();
    let range = |from: usize, to: usize| (from..=to).map(id).collect::<Vec<_>>();
    assert_eq!(read(0, 9, 720), range(0, 9));
    assert_eq!(read(2, 4, 720), range(2, 4), "both ends are inclusive");
    assert_eq!(read(0, 9, 3), range(7, 9), "the latest 3, oldest first");
    assert_eq!(read(2, 6, 2), range(5, 6));
    assert_eq!(read(10, 20, 5), Vec::<String>::new());
    // The same through the server's and the namespace's statements.
    let by_server = SampleQuery {
        server: Some("edge".into()),
        limit: 4,
        ..query()
    };
    assert_eq!(ids(&store.samples(&by_server).unwrap()), range(6, 9));
    let by_namespace = SampleQuery {
        limit: 1,
        from_ms: T0,
        to_ms: T0 + 30_000,
        ..query()
    };
    assert_eq!(ids(&store.samples(&by_namespace).unwrap()), range(1, 1));
}

pub(super) fn stored_ids_are_skipped_and_a_tick_goes_in_one_call(fixture: &Fixture) {
    let store = fixture.open();
    let first = host("edge", T0);
    store.record_samples(std::slice::from_ref(&first)).unwrap();
    // The same tick written again (a retry after a lost reply), with a new sample beside it
    // and the new one twice in the batch: the stored one stays as it was.
    let mut again = first.clone();
    again.sample.totals.load1 = Some(9.0);
    let next = host("edge", T0 + 30_000);
    store
        .record_samples(&[again, next.clone(), next.clone()])
        .unwrap();
    let stored = store.samples(&query()).unwrap();
    assert_eq!(stored, vec![first.sample.clone(), next.sample.clone()]);

    // A tick of a few hundred containers goes in one call.
    let tick: Vec<_> = (0..300)
        .map(|n| container("edge", &format!("app-{n}"), None, T0 + 60_000))
        .collect();
    store.record_samples(&tick).unwrap();
    let query_tick = SampleQuery {
        kind: Some(ScopeKind::Resource),
        from_ms: T0 + 60_000,
        to_ms: T0 + 60_000,
        ..query()
    };
    assert_eq!(store.samples(&query_tick).unwrap().len(), 300);
}

pub(super) fn pruning_deletes_samples_observed_before_the_cutoff(fixture: &Fixture) {
    let store = fixture.open();
    let records: Vec<_> = (0..4).map(|n| host("edge", T0 + n * 30_000)).collect();
    store.record_samples(&records).unwrap();
    assert_eq!(
        store.prune_samples(T0).unwrap(),
        0,
        "the cutoff itself stays"
    );
    assert_eq!(store.prune_samples(T0 + 60_000).unwrap(), 2);
    assert_eq!(store.prune_samples(T0 + 60_000).unwrap(), 0);
    let left = ids(&store.samples(&query()).unwrap());
    assert_eq!(
        left,
        [&records[2], &records[3]]
            .map(|r| r.sample.sample_id.clone())
            .to_vec()
    );
}

pub(super) fn retention_counts_and_deletes_one_namespaces_old_samples(fixture: &Fixture) {
    let store = fixture.open();
    let records = two_ticks();
    store.record_samples(&records).unwrap();
    let mut other = host("other-edge", T0);
    other.namespace = "org-b".into();
    store.record_samples(&[other]).unwrap();
    let samples = History::MonitoringSamples;
    let cutoff = T0 + 1;
    assert_eq!(store.count_before("org-a", samples, cutoff).unwrap(), 4);
    assert_eq!(
        store.count_before("org-a", samples, T0).unwrap(),
        0,
        "the cutoff stays"
    );
    assert_eq!(
        store.samples(&query()).unwrap().len(),
        8,
        "counting deletes nothing"
    );
    assert_eq!(store.delete_before("org-a", samples, cutoff).unwrap(), 4);
    assert_eq!(store.count_before("org-a", samples, cutoff).unwrap(), 0);
    let left = store.samples(&query()).unwrap();
    assert!(
        left.iter()
            .all(|s| s.observed_at == format!("@{}", T0 + 30_000)),
        "{left:?}"
    );
    let org_b = SampleQuery {
        namespace: "org-b".into(),
        ..query()
    };
    assert_eq!(
        store.samples(&org_b).unwrap().len(),
        1,
        "another namespace keeps its own"
    );
    let timelines = History::DeploymentTimelines;
    assert_eq!(store.count_before("org-a", timelines, cutoff).unwrap(), 0);
}
