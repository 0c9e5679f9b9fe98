//! A sample's figures as the observation store keeps them, and where each goes on the wire.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::ResourceMetrics;
use super::Signal;

/// A sample's figures as the store keeps them: flat, as measured. A total not measured
/// (another kind of sample, a first tick with no earlier counters) is left out. Not a wire
/// record: answers nest them as [`ResourceMetrics`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Host: logical cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_cores: Option<f64>,
    /// Host: share of all cores busy since the previous tick, 0..100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpu_percent: Option<f64>,
    /// Container: its CPU time since the previous tick as a share of the host (100 = every
    /// core busy), like `docker stats` divided by the core count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_cpu_percent: Option<f64>,
    /// Container: the same in cores (1.0 = one core busy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_cpu_cores: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_available_bytes: Option<f64>,
    /// Host: total less available. Container: its usage less inactive page cache, as
    /// `docker stats` counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load5: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load15: Option<f64>,
    /// The filesystem holding Docker's data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_total_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<f64>,
    /// Container: counters since it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_rx_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_tx_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_image_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_build_cache_bytes: Option<f64>,
    /// Container: its writable layer on disk (Docker's `SizeRw`), read every 10th tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_writable_bytes: Option<f64>,
}

/// Reads one stored figure.
pub type ReadMetric = fn(&Totals) -> Option<f64>;

/// Where a stored figure goes on the wire: a group and a field of [`ResourceMetrics`].
pub type WireMetric = Option<(Signal, &'static str)>;

/// One stored figure: its name in the store (a [`Totals`] field's JSON name, also the rollup
/// rows' `metric`), how to read it, and where it goes in a host's and in a container's
/// `resourceMetrics` (`None`: the spec has no field for it, so only the store keeps it).
pub struct StoredMetric {
    pub name: &'static str,
    pub read: ReadMetric,
    pub host: WireMetric,
    pub container: WireMetric,
}

const fn stored(
    name: &'static str,
    read: ReadMetric,
    host: WireMetric,
    container: WireMetric,
) -> StoredMetric {
    StoredMetric {
        name,
        read,
        host,
        container,
    }
}

use Signal::{Cpu, Disk, Docker, Inode, Memory, Network};

/// Every stored figure.
pub const STORED_METRICS: [StoredMetric; 19] = [
    stored(
        "logicalCores",
        |t| t.logical_cores,
        Some((Cpu, "logicalCores")),
        Some((Cpu, "logicalCores")),
    ),
    stored("hostCpuPercent", |t| t.host_cpu_percent, None, None),
    stored(
        "containerCpuPercent",
        |t| t.container_cpu_percent,
        None,
        Some((Cpu, "containerCpuPercent")),
    ),
    stored("containerCpuCores", |t| t.container_cpu_cores, None, None),
    stored(
        "memoryTotalBytes",
        |t| t.memory_total_bytes,
        Some((Memory, "totalBytes")),
        None,
    ),
    stored(
        "memoryAvailableBytes",
        |t| t.memory_available_bytes,
        Some((Memory, "availableBytes")),
        None,
    ),
    stored(
        "memoryUsedBytes",
        |t| t.memory_used_bytes,
        Some((Memory, "usedBytes")),
        Some((Memory, "containerUsedBytes")),
    ),
    stored("load1", |t| t.load1, Some((Cpu, "loadAverage1m")), None),
    stored("load5", |t| t.load5, Some((Cpu, "loadAverage5m")), None),
    stored("load15", |t| t.load15, Some((Cpu, "loadAverage15m")), None),
    stored(
        "diskTotalBytes",
        |t| t.disk_total_bytes,
        Some((Disk, "totalBytes")),
        None,
    ),
    stored(
        "diskUsedBytes",
        |t| t.disk_used_bytes,
        Some((Disk, "usedBytes")),
        None,
    ),
    stored(
        "inodesTotal",
        |t| t.inodes_total,
        Some((Inode, "total")),
        None,
    ),
    stored("inodesUsed", |t| t.inodes_used, Some((Inode, "used")), None),
    stored(
        "networkRxBytes",
        |t| t.network_rx_bytes,
        None,
        Some((Network, "rxBytes")),
    ),
    stored(
        "networkTxBytes",
        |t| t.network_tx_bytes,
        None,
        Some((Network, "txBytes")),
    ),
    stored(
        "dockerImageBytes",
        |t| t.docker_image_bytes,
        Some((Docker, "imageBytes")),
        None,
    ),
    stored(
        "dockerBuildCacheBytes",
        |t| t.docker_build_cache_bytes,
        Some((Docker, "buildCacheBytes")),
        None,
    ),
    stored(
        "containerWritableBytes",
        |t| t.container_writable_bytes,
        None,
        Some((Docker, "containerWritableBytes")),
    ),
];

/// Where stored figure `name` goes on the wire, for a host's sample or a container's.
pub fn wire_metric(name: &str, host: bool) -> WireMetric {
    let stored = STORED_METRICS.iter().find(|m| m.name == name)?;
    if host { stored.host } else { stored.container }
}

/// The metrics a threshold rule may name, per signal: Appaloft's closed set (the spec shows
/// `cpu` / `containerCpuPercent`). Berth does not measure `disk` / `attributedBytes`, so a
/// rule on it is never crossed.
pub const RULE_METRICS: [(Signal, &str); 12] = [
    (Cpu, "containerCpuPercent"),
    (Cpu, "loadAverage1m"),
    (Memory, "containerUsedBytes"),
    (Memory, "usedBytes"),
    (Disk, "usedBytes"),
    (Disk, "attributedBytes"),
    (Inode, "used"),
    (Docker, "imageBytes"),
    (Docker, "buildCacheBytes"),
    (Docker, "containerWritableBytes"),
    (Network, "rxBytes"),
    (Network, "txBytes"),
];

/// The metrics a rule of `signal` may name.
pub fn rule_metrics(signal: Signal) -> Vec<&'static str> {
    RULE_METRICS
        .iter()
        .filter(|(of, _)| *of == signal)
        .map(|(_, name)| *name)
        .collect()
}
