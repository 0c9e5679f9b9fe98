//! Runtime monitoring samples (spec §2.1 `resourceMetrics`, `scope`; §2.2 "Monitoring
//! sample"): what the controller stores and the REST API serves.
//!
//! Two vocabularies meet here. The observation store keeps each sample's figures flat, as the
//! observer measured them ([`Totals`], named by [`STORED_METRICS`]); every answer nests them
//! as the spec's `resourceMetrics` ([`ResourceMetrics`]: `cpu`, `memory`, `disk`, `inode`,
//! `docker`, `network`), and queries and threshold rules name a group ([`Signal`]) and a field
//! of it (`cpu` / `containerCpuPercent`). The store keeps what it keeps; only the wire
//! changes. `berth-crds` re-exports these beside the sample types that hold them; the rollup
//! answers (series, points, contributors, markers) stay in `berth-api`.

mod metrics;
mod samples;
mod scope;
mod signal;
mod stored;
#[cfg(test)]
mod tests;

pub use metrics::{
    CpuMetrics, DiskMetrics, DockerMetrics, InodeMetrics, MemoryMetrics, NetworkMetrics,
    ResourceMetrics, fields,
};
pub use samples::{MonitoringWarning, Sample, SampleLabels, ScopeEvidence, SourceError};
pub use scope::{Scope, ScopeKind};
pub use signal::Signal;
pub use stored::{
    RULE_METRICS, ReadMetric, STORED_METRICS, StoredMetric, Totals, WireMetric, rule_metrics,
    wire_metric,
};
