//! Rollups: each series summed up per bucket, a scope's totals agreeing with its series, each
//! resource's usage over a window, and what forgetting a resource takes with it.

use std::collections::BTreeMap;

use berth_crds::monitoring::ScopeKind;

use super::{Fixture, T0, query, scoped, two_ticks, two_ticks_web_busier};
use crate::{Detail, ObservationStore, RollupQuery, RollupRow, SampleQuery, Tier};

pub(super) fn rollups_aggregate_each_series_per_bucket_and_count_a_sample_once(fixture: &Fixture) {
    let store = fixture.open();
    let records = two_ticks_web_busier();
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

pub(super) fn forgetting_a_resource_removes_its_samples_and_rollups(fixture: &Fixture) {
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

pub(super) fn a_scopes_totals_sum_up_its_series(fixture: &Fixture) {
    let store = fixture.open();
    let records = two_ticks_web_busier();
    store.record_samples(&records[..4]).unwrap();
    store.record_samples(&records[4..]).unwrap();
    for (name, filters) in scopes() {
        for tier in Tier::ALL {
            totals_match_series(store.as_ref(), name, &filters, tier);
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

/// Scopes of [`two_ticks`] by name: the whole namespace, each kind of grouping, and groupings
/// with no samples.
fn scopes() -> Vec<(&'static str, SampleQuery)> {
    vec![
        ("the namespace", query()),
        ("hosts", scoped(|q| q.kind = Some(ScopeKind::Server))),
        ("containers", scoped(|q| q.kind = Some(ScopeKind::Resource))),
        ("a project", scoped(|q| q.project = Some("shop".into()))),
        (
            "an environment",
            scoped(|q| q.environment = Some("staging".into())),
        ),
        (
            "a project's environment",
            scoped(|q| {
                q.project = Some("shop".into());
                q.environment = Some("production".into());
            }),
        ),
        ("a server", scoped(|q| q.server = Some("edge".into()))),
        (
            "a server's containers",
            scoped(|q| {
                q.server = Some("edge".into());
                q.kind = Some(ScopeKind::Resource);
            }),
        ),
        ("an idle server", scoped(|q| q.server = Some("db".into()))),
        (
            "another project",
            scoped(|q| q.project = Some("blog".into())),
        ),
    ]
}

/// The scope's totals and its series, read at `tier`, sum up to the same per bucket.
fn totals_match_series(
    store: &dyn ObservationStore,
    name: &str,
    filters: &SampleQuery,
    tier: Tier,
) {
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

pub(super) fn resource_usage_sums_each_resources_window(fixture: &Fixture) {
    let store = fixture.open();
    let records = two_ticks_web_busier();
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
