//! Observation store inserts per second, on SQLite and (given a database) PostgreSQL, in one
//! run: timeline entries appended through `TimelineStore` as the controller's writer does, one
//! entry per transaction (a quiet attempt) and in batches (build output).
//!
//! `berth-bench-store [--postgres URL]`; the URL defaults to `BERTH_TEST_POSTGRES_URL`
//! (`hack/stack.sh env`). PostgreSQL runs in a schema of its own, dropped afterwards.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
use berth_crds::progress::{Level, ProgressEvent, Source, StreamStatus};
use berth_timeline::{StoreLocation, TimelineKey, TimelineStore};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "Benchmark observation store inserts on SQLite and PostgreSQL")]
struct Options {
    /// PostgreSQL database to measure too (its password is never printed).
    #[arg(long, env = "BERTH_TEST_POSTGRES_URL", hide_env_values = true)]
    postgres: Option<String>,
    /// Entries appended per measurement.
    #[arg(long, default_value_t = 2_000)]
    entries: usize,
    /// Entries per transaction in the batched measurement.
    #[arg(long, default_value_t = 100)]
    batch: usize,
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    println!("store       entries/append  inserts/s");
    let dir = tempfile::tempdir()?;
    let sqlite = StoreLocation::Sqlite(dir.path().join("bench.sqlite"));
    measure("sqlite", &berth_timeline::open(&sqlite)?, &options)?;
    if let Some(url) = &options.postgres {
        let schema = format!("berth_bench_{}", std::process::id());
        admin(url, &format!("CREATE SCHEMA {schema}"))?;
        let separator = if url.contains('?') { '&' } else { '?' };
        let location: StoreLocation = format!("{url}{separator}options=-csearch_path%3D{schema}")
            .parse()
            .expect("parsing a location never fails");
        let outcome = berth_timeline::open(&location)
            .map_err(anyhow::Error::from)
            .and_then(|store| measure("postgres", &store, &options));
        admin(url, &format!("DROP SCHEMA {schema} CASCADE"))?;
        outcome?;
    } else {
        println!("postgres    (skipped: no --postgres URL or BERTH_TEST_POSTGRES_URL)");
    }
    Ok(())
}

fn measure(name: &str, store: &Arc<dyn TimelineStore>, options: &Options) -> anyhow::Result<()> {
    for per_append in [1, options.batch.max(1)] {
        let key = TimelineKey::new("bench", "web", format!("dep-{per_append}"));
        let events: Vec<_> = (0..per_append)
            .map(|n| event(&format!("line {n}")))
            .collect();
        let appends = options.entries.div_ceil(per_append);
        let started = Instant::now();
        for _ in 0..appends {
            store.append(&key, &events)?;
        }
        let rate = (appends * per_append) as f64 / started.elapsed().as_secs_f64();
        println!("{name:<11} {per_append:>14}  {rate:>9.0}");
    }
    Ok(())
}

fn event(message: &str) -> ProgressEvent {
    ProgressEvent {
        timestamp: "2026-11-22T06:00:00.000Z".into(),
        source: Source::Application,
        phase: DeploymentPhase::Package,
        level: Level::Info,
        message: message.into(),
        deployment_id: "dep-web-1".into(),
        status: StreamStatus::Running,
        step: DeploymentStep {
            current: 3,
            total: 5,
            label: "Packaging".into(),
        },
        stream: None,
    }
}

/// Runs `sql` on a connection of its own.
fn admin(url: &str, sql: &str) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .with_context(|| format!("connecting to {}", berth_timeline::mask_url(url)))?;
        let connection = tokio::spawn(connection);
        client.batch_execute(sql).await.context(sql.to_string())?;
        drop(client);
        let _ = connection.await;
        Ok(())
    })
}
