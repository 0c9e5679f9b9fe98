//! Observation store inserts per second, on SQLite and (given a database) PostgreSQL, in one
//! run: timeline entries appended (`TimelineStore::append`) as the controller's writer does, one
//! entry per transaction (a quiet attempt) and in batches (build output); and health-history
//! observations (`record_health`, a health record of about 1.5 KB each) one at a time (a
//! resource whose state changed) and in batches (the controller's periodic sweep, every
//! resource due at once).
//!
//! `berth-bench-store [--postgres URL]`; the URL defaults to `BERTH_TEST_POSTGRES_URL`
//! (`hack/stack.sh env`). PostgreSQL runs in a schema of its own, dropped afterwards.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
use berth_crds::progress::{Level, ProgressEvent, Source, StreamStatus};
use berth_observations::{HealthObservation, ObservationStore, StoreLocation, TimelineKey};
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
    /// Health observations recorded per measurement.
    #[arg(long, default_value_t = 2_000)]
    observations: usize,
    /// Observations per `record_health` call in the batched measurement (one sweep's resources).
    #[arg(long, default_value_t = 200)]
    sweep: usize,
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    println!(
        "store       kind                   rows/call  inserts/s   (health record {} bytes)",
        serde_json::to_string(&health_record("res-bench-0000"))?.len()
    );
    let dir = tempfile::tempdir()?;
    let sqlite = StoreLocation::Sqlite(dir.path().join("bench.sqlite"));
    measure("sqlite", &berth_observations::open(&sqlite)?, &options)?;
    if let Some(url) = &options.postgres {
        let schema = format!("berth_bench_{}", std::process::id());
        admin(url, &format!("CREATE SCHEMA {schema}"))?;
        let separator = if url.contains('?') { '&' } else { '?' };
        let location: StoreLocation = format!("{url}{separator}options=-csearch_path%3D{schema}")
            .parse()
            .expect("parsing a location never fails");
        let outcome = berth_observations::open(&location)
            .map_err(anyhow::Error::from)
            .and_then(|store| measure("postgres", &store, &options));
        admin(url, &format!("DROP SCHEMA {schema} CASCADE"))?;
        outcome?;
    } else {
        println!("postgres    (skipped: no --postgres URL or BERTH_TEST_POSTGRES_URL)");
    }
    Ok(())
}

fn measure(name: &str, store: &Arc<dyn ObservationStore>, options: &Options) -> anyhow::Result<()> {
    measure_timeline(name, store, options)?;
    measure_health(name, store, options)
}

fn measure_timeline(
    name: &str,
    store: &Arc<dyn ObservationStore>,
    options: &Options,
) -> anyhow::Result<()> {
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
        println!(
            "{name:<11} {:<22} {per_append:>9}  {rate:>9.0}",
            "timeline entries"
        );
    }
    Ok(())
}

/// `record_health` as the controller calls it: one observation when a record changes, a
/// sweep's worth when the periodic pass finds every resource due.
fn measure_health(
    name: &str,
    store: &Arc<dyn ObservationStore>,
    options: &Options,
) -> anyhow::Result<()> {
    for per_call in [1, options.sweep.max(1)] {
        let batch: Vec<_> = (0..per_call)
            .map(|n| health_observation(&format!("res-bench-{n:04}")))
            .collect();
        let calls = options.observations.div_ceil(per_call);
        let started = Instant::now();
        for _ in 0..calls {
            store.record_health(&batch)?;
        }
        let rate = (calls * per_call) as f64 / started.elapsed().as_secs_f64();
        println!(
            "{name:<11} {:<22} {per_call:>9}  {rate:>9.0}",
            "health observations"
        );
    }
    Ok(())
}

fn health_observation(resource: &str) -> HealthObservation {
    let observed_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    HealthObservation {
        id: 0,
        namespace: "org-bench".into(),
        resource: resource.into(),
        observed_ms,
        overall: "healthy".into(),
        summary: health_record(resource),
    }
}

/// A healthy app's `resources.health/v1` record as `mode=cached` serves it (about 1.5 KB).
fn health_record(resource: &str) -> serde_json::Value {
    let deployment = format!("dep-{resource}-3");
    serde_json::json!({
        "schemaVersion": "resources.health/v1",
        "resourceId": resource,
        "generatedAt": "2026-11-22T06:00:00Z",
        "observedAt": "2026-11-22T05:59:58Z",
        "overall": "healthy",
        "partial": false,
        "latestDeployment": {
            "id": deployment, "status": "succeeded",
            "createdAt": "2026-11-22T05:40:00Z", "startedAt": "2026-11-22T05:40:01Z",
            "finishedAt": "2026-11-22T05:40:31Z", "serverId": "srv-bench-edge",
            "destinationId": null, "lastError": null,
        },
        "runtime": {
            "lifecycle": "running", "health": "healthy", "observedAt": "2026-11-22T05:59:58Z",
            "runtimeKind": "docker-container", "reasonCode": null,
            "message": "the container is running and its health check passes",
        },
        "latestRuntimeControl": null,
        "healthPolicy": {
            "status": "configured", "enabled": true, "type": "http", "path": "/healthz",
            "port": 8080, "intervalSeconds": 10, "timeoutSeconds": 5, "retries": 3,
            "startPeriodSeconds": 0,
        },
        "publicAccess": {
            "status": "ready", "url": format!("http://{resource}.apps.example.test/"),
            "hostname": format!("{resource}.apps.example.test"), "pathPrefix": "/",
            "routeIntentStatus": {
                "schemaVersion": "route-intent-status/v1",
                "status": "applied", "recommendedAction": "none",
                "context": {"resourceId": resource, "deploymentId": deployment,
                            "serverId": "srv-bench-edge", "proxyKind": "caddy"},
                "message": "the edge proxy routes the hostname to the serving container",
            },
        },
        "proxy": {"status": "ready", "kind": "caddy", "serverId": "srv-bench-edge",
                  "message": "the edge proxy runs and holds the route"},
        "checks": [],
        "sourceErrors": [],
    })
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
            .with_context(|| format!("connecting to {}", berth_observations::mask_url(url)))?;
        let connection = tokio::spawn(connection);
        client.batch_execute(sql).await.context(sql.to_string())?;
        drop(client);
        let _ = connection.await;
        Ok(())
    })
}
