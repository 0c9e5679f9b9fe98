//! Monitoring samples on both backends.

use berth_crds::monitoring::{
    MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};

use super::Fixture;
use std::collections::BTreeMap;

use crate::{Detail, DiskRecord, History, RollupQuery, RollupRow, SampleQuery, SampleRecord, Tier};

on_both_backends!(
    samples_come_back_as_recorded_oldest_first_and_filtered,
    the_window_bounds_both_ends_and_a_limit_keeps_the_latest,
    stored_ids_are_skipped_and_a_tick_goes_in_one_call,
    pruning_deletes_samples_observed_before_the_cutoff,
    rollups_aggregate_each_series_per_bucket_and_count_a_sample_once,
    forgetting_a_resource_removes_its_samples_and_rollups,
    a_scopes_totals_sum_up_its_series,
    resource_usage_sums_each_resources_window,
    retention_counts_and_deletes_one_namespaces_old_samples,
    a_servers_disk_artifacts_are_replaced_by_its_next_read,
);

const T0: i64 = 1_900_000_000_000;

fn host(server: &str, at: i64) -> SampleRecord {
    let sample = MonitoringSample {
        sample_id: format!("{server}:host:{at}"),
        observed_at: format!("@{at}"),
        collected_at: format!("@{at}"),
        scope_evidence: ScopeEvidence {
            scope: Some(ScopeKind::Server),
            server_id: server.into(),
            ..ScopeEvidence::default()
        },
        totals: Totals {
            logical_cores: Some(4.0),
            host_cpu_percent: Some(12.5),
            load1: Some(0.5),
            ..Totals::default()
        },
        freshness: "live".into(),
        partial: false,
        labels: SampleLabels {
            provider_key: PROVIDER_KEY.into(),
            artifact_kind: "host".into(),
            runtime_id: None,
        },
        warnings: Vec::new(),
        source_errors: Vec::new(),
    };
    SampleRecord {
        namespace: "org-a".into(),
        observed_ms: at,
        sample,
    }
}

/// A container of `resource` (in project `shop`, environment `production` or `staging` for
/// resource `api`) on `server`.
fn container(server: &str, resource: &str, deployment: Option<&str>, at: i64) -> SampleRecord {
    let mut record = host(server, at);
    let runtime = format!("{resource}-container");
    record.sample.sample_id = format!("{server}:{runtime}:{at}");
    record.sample.scope_evidence = ScopeEvidence {
        scope: Some(ScopeKind::Resource),
        server_id: server.into(),
        project_id: Some("shop".into()),
        environment_id: Some(
            if resource == "api" {
                "staging"
            } else {
                "production"
            }
            .into(),
        ),
        resource_id: Some(resource.into()),
        deployment_id: deployment.map(str::to_string),
    };
    record.sample.totals = Totals {
        container_cpu_percent: Some(3.0),
        memory_used_bytes: Some(1_048_576.0),
        ..Totals::default()
    };
    record.sample.labels.artifact_kind = "container".into();
    record.sample.labels.runtime_id = Some(runtime);
    record
}

fn query() -> SampleQuery {
    SampleQuery {
        namespace: "org-a".into(),
        from_ms: T0 - 3_600_000,
        to_ms: T0 + 3_600_000,
        limit: 720,
        ..SampleQuery::default()
    }
}

fn ids(samples: &[MonitoringSample]) -> Vec<String> {
    samples.iter().map(|s| s.sample_id.clone()).collect()
}

/// One tick of two servers: `edge` runs `web` (two deployments' containers at once, mid
/// switch) and `api`; `db` runs nothing.
fn two_ticks() -> Vec<SampleRecord> {
    let mut records = Vec::new();
    for at in [T0, T0 + 30_000] {
        records.push(host("edge", at));
        records.push(host("db", at));
        records.push(container("edge", "web", Some("dep-web-1"), at));
        records.push(container("edge", "api", None, at));
    }
    records
}

fn samples_come_back_as_recorded_oldest_first_and_filtered(fixture: &Fixture) {
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

    let select = |change: &dyn Fn(&mut SampleQuery)| {
        let mut query = query();
        change(&mut query);
        ids(&reader.samples(&query).unwrap())
    };
    let expected = |pick: &dyn Fn(&SampleRecord) -> bool| {
        let mut ids: Vec<_> = records
            .iter()
            .filter(|r| pick(r))
            .map(|r| r.sample.sample_id.clone())
            .collect();
        ids.sort();
        ids
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let is_host = |r: &SampleRecord| r.sample.labels.artifact_kind == "host";
    let evidence = |r: &SampleRecord| r.sample.scope_evidence.clone();

    let hosts = select(&|q| q.kind = Some(ScopeKind::Server));
    assert_eq!(sorted(hosts), expected(&is_host));
    for kind in [
        ScopeKind::Project,
        ScopeKind::Environment,
        ScopeKind::Resource,
        ScopeKind::Deployment,
    ] {
        let containers = select(&|q| q.kind = Some(kind));
        assert_eq!(sorted(containers), expected(&|r| !is_host(r)));
    }
    let edge = select(&|q| q.server = Some("edge".into()));
    assert_eq!(sorted(edge), expected(&|r| evidence(r).server_id == "edge"));
    let edge_host = select(&|q| {
        q.server = Some("edge".into());
        q.kind = Some(ScopeKind::Server);
    });
    assert_eq!(
        sorted(edge_host),
        expected(&|r| is_host(r) && evidence(r).server_id == "edge")
    );
    let web = select(&|q| q.resource = Some("web".into()));
    assert_eq!(
        sorted(web),
        expected(&|r| evidence(r).resource_id.as_deref() == Some("web"))
    );
    let web_on_db = select(&|q| {
        q.resource = Some("web".into());
        q.server = Some("db".into());
    });
    assert!(web_on_db.is_empty(), "{web_on_db:?}");
    let shop = select(&|q| q.project = Some("shop".into()));
    assert_eq!(sorted(shop), expected(&|r| !is_host(r)));
    let staging = select(&|q| q.environment = Some("staging".into()));
    assert_eq!(
        sorted(staging),
        expected(&|r| evidence(r).resource_id.as_deref() == Some("api"))
    );
    let deployment = select(&|q| q.deployment = Some("dep-web-1".into()));
    assert_eq!(
        sorted(deployment),
        expected(&|r| { evidence(r).deployment_id.as_deref() == Some("dep-web-1") })
    );
    let nothing = select(&|q| q.namespace = "org-c".into());
    assert!(nothing.is_empty());
}

fn the_window_bounds_both_ends_and_a_limit_keeps_the_latest(fixture: &Fixture) {
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

fn stored_ids_are_skipped_and_a_tick_goes_in_one_call(fixture: &Fixture) {
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

fn pruning_deletes_samples_observed_before_the_cutoff(fixture: &Fixture) {
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

fn rollups_aggregate_each_series_per_bucket_and_count_a_sample_once(fixture: &Fixture) {
    let store = fixture.open();
    let mut records = two_ticks();
    // The second tick (30 s later, the same five minutes but the next minute): web works harder.
    records[6].sample.totals.container_cpu_percent = Some(5.0);
    store.record_samples(&records).unwrap();
    store.record_samples(&records).unwrap();
    let mut web = query();
    web.resource = Some("web".into());
    let rollup = |filters: &SampleQuery, tier| {
        let query = RollupQuery {
            filters: filters.clone(),
            tier,
            detail: Detail::Series,
        };
        store.rollup(&query).unwrap()
    };
    let rows = rollup(&web, Tier::FiveMinute);
    let cpu: Vec<_> = rows
        .iter()
        .filter(|r| r.metric == "containerCpuPercent")
        .collect();
    assert_eq!(cpu.len(), 1, "{rows:?}");
    let row = cpu[0];
    assert_eq!((row.count, row.total, row.min, row.max), (2, 8.0, 3.0, 5.0));
    assert_eq!(row.bucket_ms, Tier::FiveMinute.bucket(T0));
    assert_eq!(row.project.as_deref(), Some("shop"));
    assert_eq!(row.deployment.as_deref(), Some("dep-web-1"));
    let minutes: Vec<i64> = rollup(&web, Tier::Minute)
        .iter()
        .filter(|r| r.metric == "containerCpuPercent")
        .map(|r| r.bucket_ms)
        .collect();
    assert_eq!(
        minutes,
        [Tier::Minute.bucket(T0), Tier::Minute.bucket(T0 + 30_000)]
    );
    let mut db = query();
    db.kind = Some(ScopeKind::Server);
    db.server = Some("db".into());
    let hosts = rollup(&db, Tier::Hour);
    assert!(!hosts.is_empty());
    assert!(
        hosts
            .iter()
            .all(|r| r.series == "host:db" && r.scope == "server"),
        "{hosts:?}"
    );
    let cores = hosts.iter().find(|r| r.metric == "logicalCores").unwrap();
    assert_eq!((cores.count, cores.max), (2, 4.0));
    // Pruning takes the buckets that start before the cutoff.
    store.prune_samples(T0 + 3_600_000).unwrap();
    assert!(rollup(&query(), Tier::Hour).is_empty());
}

fn forgetting_a_resource_removes_its_samples_and_rollups(fixture: &Fixture) {
    let store = fixture.open();
    store.record_samples(&two_ticks()).unwrap();
    assert!(store.forget_resource("org-a", "web").unwrap() > 0);
    let left: Vec<Option<String>> = store
        .samples(&query())
        .unwrap()
        .into_iter()
        .map(|s| s.scope_evidence.resource_id)
        .collect();
    assert!(!left.contains(&Some("web".into())), "{left:?}");
    assert!(left.contains(&Some("api".into())), "{left:?}");
    let rollup = RollupQuery {
        filters: query(),
        tier: Tier::Hour,
        detail: Detail::Series,
    };
    let rows = store.rollup(&rollup).unwrap();
    assert!(rows.iter().all(|r| r.resource.as_deref() != Some("web")));
    assert!(rows.iter().any(|r| r.resource.as_deref() == Some("api")));
}

/// Count, sum, min and max per bucket and metric, however the rows split them.
fn per_bucket(rows: &[RollupRow]) -> BTreeMap<(i64, String), (i64, f64, f64, f64)> {
    let mut sums = BTreeMap::new();
    for row in rows {
        let key = (row.bucket_ms, row.metric.clone());
        let sum = sums
            .entry(key)
            .or_insert((0, 0.0, f64::INFINITY, f64::NEG_INFINITY));
        sum.0 += row.count;
        sum.1 += row.total;
        sum.2 = sum.2.min(row.min);
        sum.3 = sum.3.max(row.max);
    }
    sums
}

fn a_scopes_totals_sum_up_its_series(fixture: &Fixture) {
    let store = fixture.open();
    let mut records = two_ticks();
    records[6].sample.totals.container_cpu_percent = Some(5.0);
    store.record_samples(&records[..4]).unwrap();
    store.record_samples(&records[4..]).unwrap();
    let scopes: Vec<(&str, SampleQuery)> = vec![
        ("the namespace", query()),
        (
            "hosts",
            SampleQuery {
                kind: Some(ScopeKind::Server),
                ..query()
            },
        ),
        (
            "containers",
            SampleQuery {
                kind: Some(ScopeKind::Resource),
                ..query()
            },
        ),
        (
            "a project",
            SampleQuery {
                project: Some("shop".into()),
                ..query()
            },
        ),
        (
            "an environment",
            SampleQuery {
                environment: Some("staging".into()),
                ..query()
            },
        ),
        (
            "a project's environment",
            SampleQuery {
                project: Some("shop".into()),
                environment: Some("production".into()),
                ..query()
            },
        ),
        (
            "a server",
            SampleQuery {
                server: Some("edge".into()),
                ..query()
            },
        ),
        (
            "a server's containers",
            SampleQuery {
                server: Some("edge".into()),
                kind: Some(ScopeKind::Resource),
                ..query()
            },
        ),
        (
            "an idle server",
            SampleQuery {
                server: Some("db".into()),
                ..query()
            },
        ),
        (
            "another project",
            SampleQuery {
                project: Some("blog".into()),
                ..query()
            },
        ),
    ];
    for (name, filters) in scopes {
        for tier in Tier::ALL {
            let read = |detail| {
                let query = RollupQuery {
                    filters: filters.clone(),
                    tier,
                    detail,
                };
                store.rollup(&query).unwrap()
            };
            let (totals, series) = (read(Detail::Totals), read(Detail::Series));
            assert_eq!(per_bucket(&totals), per_bucket(&series), "{name}, {tier:?}");
        }
    }
    let whole = RollupQuery {
        filters: query(),
        tier: Tier::Hour,
        detail: Detail::Totals,
    };
    let rows = store.rollup(&whole).unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|r| r.series == "containers" || r.series == "hosts"),
        "a namespace reads its totals, not every series: {rows:?}"
    );
}

fn resource_usage_sums_each_resources_window(fixture: &Fixture) {
    let store = fixture.open();
    let mut records = two_ticks();
    records[6].sample.totals.container_cpu_percent = Some(5.0);
    store.record_samples(&records).unwrap();
    let usage = |filters: SampleQuery| {
        let query = RollupQuery {
            filters,
            tier: Tier::Minute,
            detail: Detail::Totals,
        };
        let mut rows: Vec<(String, String, i64, f64)> = store
            .resource_usage(&query)
            .unwrap()
            .into_iter()
            .map(|r| (r.resource.unwrap(), r.metric, r.count, r.total))
            .collect();
        rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        rows
    };
    let cores = |r: &(String, String, i64, f64)| r.1 == "containerCpuPercent";
    let all: Vec<_> = usage(query()).into_iter().filter(cores).collect();
    assert_eq!(
        all,
        [
            ("api".to_string(), "containerCpuPercent".to_string(), 2, 6.0),
            ("web".to_string(), "containerCpuPercent".to_string(), 2, 8.0),
        ]
    );
    let staging = SampleQuery {
        environment: Some("staging".into()),
        ..query()
    };
    let resources: Vec<String> = usage(staging).into_iter().map(|r| r.0).collect();
    assert_eq!(resources, ["api", "api"], "cores and memory of api only");
}

fn retention_counts_and_deletes_one_namespaces_old_samples(fixture: &Fixture) {
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

fn a_servers_disk_artifacts_are_replaced_by_its_next_read(fixture: &Fixture) {
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
