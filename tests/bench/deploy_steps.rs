//! Where a deploy's time goes: each run's attempt timeline, read from the observation store the
//! controller records it in, cut into the segments between its steps, and the p50 of each
//! segment over the runs. Printed beside the total, so a regression names its step.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::progress::{ProgressEvent, StreamStatus};
use berth_observations::{ObservationStore, StoreOptions, TimelineKey};
use k8s_openapi::jiff::Timestamp;

/// The segments, in order: from the mark named by the previous segment to this one's.
pub const SEGMENTS: [&str; 7] = [
    "queued (Resource created → attempt running)",
    "detect",
    "plan",
    "package (image on the server)",
    "start (container created and started)",
    "verify (health check, restart policy, route)",
    "proxy (attempt succeeded → first 200)",
];

/// Milliseconds spent in each of [`SEGMENTS`] by one run.
pub type Breakdown = [i64; SEGMENTS.len()];

/// The store the controller writes timelines to (`BERTH_DATA_DIR` / `BERTH_OBSERVATION_STORE`,
/// as the controller reads them).
pub fn open_store() -> anyhow::Result<Arc<dyn ObservationStore>> {
    let options = <StoreOptionsFlags as clap::Parser>::parse_from(["deploy-steps"]);
    Ok(berth_observations::open(&options.store.location())?)
}

#[derive(clap::Parser)]
struct StoreOptionsFlags {
    #[command(flatten)]
    store: StoreOptions,
}

/// The breakdown of one run: `created_ms` when the Resource was created, `served_ms` when the
/// proxy first answered 200 (both milliseconds since the epoch). Waits up to two seconds for
/// the timeline's last entry (the controller records without blocking the attempt).
pub async fn breakdown(
    store: &Arc<dyn ObservationStore>,
    key: TimelineKey,
    created_ms: i64,
    served_ms: i64,
) -> anyhow::Result<Breakdown> {
    for _ in 0..100 {
        let store = Arc::clone(store);
        let key = key.clone();
        let entries = tokio::task::spawn_blocking(move || store.read(&key, 0, 200)).await??;
        let events: Vec<_> = entries.into_iter().map(|e| e.event).collect();
        if let Some(marks) = step_marks(&events) {
            return Ok(segments(created_ms, marks, served_ms));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::bail!(
        "the timeline of {} never recorded its success",
        key.deployment
    )
}

/// When each of the five steps started and when the attempt succeeded (ms since the epoch);
/// `None` until the success is recorded.
fn step_marks(events: &[ProgressEvent]) -> Option<[i64; 6]> {
    let millis = |event: &ProgressEvent| {
        let at: Timestamp = event.timestamp.parse().ok()?;
        Some(at.as_millisecond())
    };
    let mut marks = [0i64; 6];
    for (index, mark) in marks.iter_mut().take(5).enumerate() {
        let step = i64::try_from(index + 1).ok()?;
        // A step's start is its first entry; "waiting for the server" notes come before step 1's.
        let first = events
            .iter()
            .filter(|e| e.step.current == step && !e.message.starts_with("waiting for"))
            .find(|e| e.status == StreamStatus::Running)?;
        *mark = millis(first)?;
    }
    let succeeded = events
        .iter()
        .find(|e| e.status == StreamStatus::Succeeded)?;
    marks[5] = millis(succeeded)?;
    Some(marks)
}

fn segments(created_ms: i64, marks: [i64; 6], served_ms: i64) -> Breakdown {
    let mut bounds = vec![created_ms];
    bounds.extend(marks);
    bounds.push(served_ms);
    let mut out = [0i64; SEGMENTS.len()];
    for (index, segment) in out.iter_mut().enumerate() {
        *segment = bounds[index + 1] - bounds[index];
    }
    out
}

/// One line per segment: its p50 and p90 over `runs`.
pub fn print(runs: &[Breakdown]) {
    if runs.is_empty() {
        return;
    }
    println!(
        "where Berth's time goes (p50 / p90 over {} runs, ms):",
        runs.len()
    );
    for (index, name) in SEGMENTS.iter().enumerate() {
        let mut values: Vec<i64> = runs.iter().map(|run| run[index]).collect();
        values.sort_unstable();
        let p50 = values[values.len() / 2];
        let p90 = values[(values.len() * 9 / 10).min(values.len() - 1)];
        println!("  {name:<46} {p50:>5} / {p90:>5}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_run_from_creation_to_the_first_200() {
        let split = segments(1_000, [1_100, 1_105, 1_120, 1_150, 1_450, 1_500], 1_530);
        assert_eq!(split, [100, 5, 15, 30, 300, 50, 30]);
        assert_eq!(split.iter().sum::<i64>(), 530);
    }
}
