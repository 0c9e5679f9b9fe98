//! What monitoring costs the observation store (SQLite, the default), in one run: `--days` of
//! minute samples for `--resources` containers (and their server's host) recorded as the
//! collector records them, one call per tick; then, alternating, the rollup of the whole
//! window in hour buckets (what `GET /runtime-monitoring/rollup` reads for a user), against the
//! samples query of the last hour (p99 of `--runs` each, both for the whole namespace and for
//! one resource; goal ≤ 3× for the namespace), and the resources' usage read that ranks
//! `topContributors` when asked for (reported); store
//! bytes per container-day; and whether the file stops growing once pruned to one day:
//! another day recorded after the prune must fit in the pages the prune freed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_crds::monitoring::{
    MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};
use berth_observations::{
    Detail, ObservationStore, RollupQuery, SampleQuery, SampleRecord, StoreLocation, Tier,
};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "Benchmark monitoring rollups, samples and their storage on SQLite")]
struct Options {
    /// Days of minute samples recorded before measuring.
    #[arg(long, default_value_t = 7)]
    days: i64,
    /// Containers sampled every minute.
    #[arg(long, default_value_t = 100)]
    resources: usize,
    /// Queries of each kind measured.
    #[arg(long, default_value_t = 60)]
    runs: usize,
    /// Goal: rollup p99 at most this many times the samples p99 (namespace-wide).
    #[arg(long, default_value_t = 3.0)]
    goal: f64,
    /// Keep the store in this file (default: a temporary one), recorded but not pruned; a file
    /// recorded by an earlier run is only read again, to iterate on reads.
    #[arg(long)]
    store: Option<std::path::PathBuf>,
}

const NAMESPACE: &str = "org-bench";
const MINUTE: i64 = 60_000;
const DAY: i64 = 1440 * MINUTE;
/// Recorded samples end here (a fixed, minute-aligned instant).
const END: i64 = 1_900_000_020_000 - 1_900_000_020_000 % MINUTE;

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let dir = tempfile::tempdir()?;
    let file = options
        .store
        .clone()
        .unwrap_or_else(|| dir.path().join("bench.sqlite"));
    let reused = file.exists();
    let store = berth_observations::open(&StoreLocation::Sqlite(file.clone()))?;
    if reused {
        println!("reading {} as recorded by an earlier run", file.display());
        return if measure_reads(&store, &options) {
            Ok(())
        } else {
            anyhow::bail!("a goal was missed")
        };
    }
    record_all(&store, &options)?;
    let container_days = options.resources as f64 * options.days as f64;
    let bytes = store_bytes(&file);
    println!(
        "store: {:.1} MiB, {:.0} KiB per container-day",
        bytes as f64 / 1_048_576.0,
        bytes as f64 / 1024.0 / container_days
    );
    let passed = measure_reads(&store, &options);
    if options.store.is_some() {
        println!("kept {} unpruned", file.display());
        return if passed {
            Ok(())
        } else {
            anyhow::bail!("a goal was missed")
        };
    }
    let stops_growing = prune_and_grow(&store, &file, &options)?;
    if passed && stops_growing {
        Ok(())
    } else {
        anyhow::bail!("a goal was missed")
    }
}

/// The whole window, reporting how fast it was recorded.
fn record_all(store: &Arc<dyn ObservationStore>, options: &Options) -> anyhow::Result<()> {
    println!(
        "recording {} days of minute samples for {} containers and their host",
        options.days, options.resources
    );
    let recorded = Instant::now();
    record(store, options, END - options.days * DAY, END)?;
    let rows = options.days * 1440 * (options.resources as i64 + 1);
    let elapsed = recorded.elapsed();
    println!(
        "recorded {rows} samples in {:.0} s ({:.0} samples/s with their rollups)",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

/// One collector tick per minute from `from` to `to`: the host and every container.
fn record(
    store: &Arc<dyn ObservationStore>,
    options: &Options,
    from: i64,
    to: i64,
) -> anyhow::Result<()> {
    let mut at = from;
    while at < to {
        let mut tick = vec![host(at)];
        tick.extend((0..options.resources).map(|n| container(n, at)));
        store.record_samples(&tick)?;
        at += MINUTE;
    }
    Ok(())
}

fn labels(kind: &str, runtime: Option<String>) -> SampleLabels {
    SampleLabels {
        provider_key: PROVIDER_KEY.into(),
        artifact_kind: kind.into(),
        runtime_id: runtime,
    }
}

fn sample(
    id: String,
    at: i64,
    scope: ScopeEvidence,
    totals: Totals,
    labels: SampleLabels,
) -> SampleRecord {
    let stamp = jiff_time(at);
    SampleRecord {
        namespace: NAMESPACE.into(),
        observed_ms: at,
        sample: MonitoringSample {
            sample_id: id,
            observed_at: stamp.clone(),
            collected_at: stamp,
            scope_evidence: scope,
            totals,
            freshness: "live".into(),
            partial: false,
            labels,
            warnings: Vec::new(),
            source_errors: Vec::new(),
        },
    }
}

fn jiff_time(ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn host(at: i64) -> SampleRecord {
    let scope = ScopeEvidence {
        scope: Some(ScopeKind::Server),
        server_id: "edge".into(),
        ..ScopeEvidence::default()
    };
    let totals = Totals {
        logical_cores: Some(8.0),
        host_cpu_percent: Some((at / MINUTE % 100) as f64),
        memory_total_bytes: Some(32e9),
        memory_available_bytes: Some(20e9),
        memory_used_bytes: Some(12e9),
        load1: Some(1.5),
        load5: Some(1.2),
        load15: Some(1.0),
        disk_total_bytes: Some(500e9),
        disk_used_bytes: Some(200e9),
        inodes_total: Some(3e7),
        inodes_used: Some(1e6),
        ..Totals::default()
    };
    sample(
        format!("{NAMESPACE}/edge:host:{at}"),
        at,
        scope,
        totals,
        labels("host", None),
    )
}

fn container(n: usize, at: i64) -> SampleRecord {
    let runtime = format!("{n:012x}{:052x}", 0);
    let scope = ScopeEvidence {
        scope: Some(ScopeKind::Resource),
        server_id: "edge".into(),
        project_id: Some(format!("prj-{}", n % 10)),
        environment_id: Some(format!("env-{}", n % 20)),
        resource_id: Some(format!("res-{n:03}")),
        deployment_id: Some(format!("dep-res-{n:03}-1")),
    };
    let totals = Totals {
        container_cpu_percent: Some((n % 7) as f64 + 0.5),
        container_cpu_cores: Some(((n % 7) as f64 + 0.5) * 0.08),
        memory_used_bytes: Some(64e6 + n as f64 * 1e6),
        network_rx_bytes: Some((at / MINUTE) as f64 * 1000.0),
        network_tx_bytes: Some((at / MINUTE) as f64 * 800.0),
        ..Totals::default()
    };
    let id = format!("{NAMESPACE}/edge:{}:{at}", &runtime[..12]);
    sample(id, at, scope, totals, labels("container", Some(runtime)))
}

fn p99(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[(times.len() * 99 / 100).min(times.len() - 1)]
}

/// Rollup of the whole window (hour buckets) against the samples of the last hour, alternating;
/// for the namespace and for one resource. Returns whether the namespace goal was met.
fn measure_reads(store: &Arc<dyn ObservationStore>, options: &Options) -> bool {
    let window = |from_ms: i64, resource: Option<&str>| SampleQuery {
        namespace: NAMESPACE.into(),
        resource: resource.map(str::to_string),
        from_ms,
        to_ms: END,
        limit: 300,
        ..SampleQuery::default()
    };
    let mut passed = true;
    for resource in [None, Some("res-042")] {
        let rollup = RollupQuery {
            filters: window(END - options.days * DAY, resource),
            tier: Tier::Hour,
            detail: Detail::Totals,
        };
        let samples = window(END - 60 * MINUTE, resource);
        let (mut rollups, mut usages, mut reads, mut rows) =
            (Vec::new(), Vec::new(), Vec::new(), 0);
        for _ in 0..options.runs {
            let started = Instant::now();
            rows = store.rollup(&rollup).expect("rollup").len();
            rollups.push(started.elapsed());
            let started = Instant::now();
            store.resource_usage(&rollup).expect("usage");
            usages.push(started.elapsed());
            let started = Instant::now();
            store.samples(&samples).expect("samples");
            reads.push(started.elapsed());
        }
        let (rollup_p99, usage_p99, samples_p99) = (p99(rollups), p99(usages), p99(reads));
        let ratio = rollup_p99.as_secs_f64() / samples_p99.as_secs_f64();
        let scope = resource.unwrap_or("the namespace");
        println!(
            "{scope}: rollup of {} days in hours ({rows} rows) p99 {:.2} ms, samples of the last \
             hour p99 {:.2} ms: {ratio:.2}x; topContributors' usage read p99 {:.2} ms ({:.2}x)",
            options.days,
            rollup_p99.as_secs_f64() * 1e3,
            samples_p99.as_secs_f64() * 1e3,
            usage_p99.as_secs_f64() * 1e3,
            usage_p99.as_secs_f64() / samples_p99.as_secs_f64(),
        );
        if resource.is_none() {
            let verdict = if ratio <= options.goal {
                "PASS"
            } else {
                "FAIL"
            };
            println!(
                "{verdict}: namespace rollup/samples p99 {ratio:.2}x (goal <= {}x)",
                options.goal
            );
            passed = ratio <= options.goal;
        }
    }
    passed
}

/// Prunes to the last day, records one more day, prunes again: the file must not grow.
fn prune_and_grow(
    store: &Arc<dyn ObservationStore>,
    file: &Path,
    options: &Options,
) -> anyhow::Result<bool> {
    store.prune_samples(END - DAY)?;
    let pruned = store_bytes(file);
    record(store, options, END, END + DAY)?;
    store.prune_samples(END)?;
    let again = store_bytes(file);
    let grew = again as f64 / pruned as f64;
    println!(
        "pruned to one day: {:.1} MiB; one more day recorded and pruned: {:.1} MiB ({grew:.2}x)",
        pruned as f64 / 1_048_576.0,
        again as f64 / 1_048_576.0
    );
    let verdict = if grew <= 1.05 { "PASS" } else { "FAIL" };
    println!("{verdict}: the store stops growing once pruned (goal <= 1.05x)");
    Ok(grew <= 1.05)
}

/// The database file and its write-ahead log.
fn store_bytes(file: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    size(file) + size(&file.with_extension("sqlite-wal"))
}
