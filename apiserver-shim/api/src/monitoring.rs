//! The signals and metrics of a runtime-monitoring sample (spec §2.2 "Monitoring sample"): the
//! totals a sample holds, each a metric of one signal. A query asks for signals; a threshold
//! rule names a signal and one of its metrics ([`crate::thresholds`] checks the pair).
//! `berth-crds` re-exports these beside the sample types that hold them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Groups of totals a query can ask for (`signals`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    Cpu,
    Memory,
    Load,
    Disk,
    Network,
    DockerStorage,
}

impl Signal {
    pub const ALL: [Signal; 6] = [
        Self::Cpu,
        Self::Memory,
        Self::Load,
        Self::Disk,
        Self::Network,
        Self::DockerStorage,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Memory => "memory",
            Self::Load => "load",
            Self::Disk => "disk",
            Self::Network => "network",
            Self::DockerStorage => "docker-storage",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// A sample's figures; a total not measured (another kind of sample, a first tick with no
/// earlier counters, a signal not asked for) is left out.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    // cpu
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
    // memory
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_available_bytes: Option<f64>,
    /// Host: total less available. Container: its usage less inactive page cache, as
    /// `docker stats` counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<f64>,
    // load
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load5: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load15: Option<f64>,
    // disk (the filesystem holding Docker's data)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_total_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<f64>,
    // network (container: counters since it started)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_rx_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_tx_bytes: Option<f64>,
    // docker-storage
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_image_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_build_cache_bytes: Option<f64>,
    /// Container: its writable layer on disk (Docker's `SizeRw`), read every 10th tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_writable_bytes: Option<f64>,
}

impl Totals {
    /// The totals of `signals` only.
    pub fn only(&self, signals: &[Signal]) -> Totals {
        let has = |signal| signals.contains(&signal);
        let keep = |signal, value: Option<f64>| value.filter(|_| has(signal));
        Totals {
            logical_cores: keep(Signal::Cpu, self.logical_cores),
            host_cpu_percent: keep(Signal::Cpu, self.host_cpu_percent),
            container_cpu_percent: keep(Signal::Cpu, self.container_cpu_percent),
            container_cpu_cores: keep(Signal::Cpu, self.container_cpu_cores),
            memory_total_bytes: keep(Signal::Memory, self.memory_total_bytes),
            memory_available_bytes: keep(Signal::Memory, self.memory_available_bytes),
            memory_used_bytes: keep(Signal::Memory, self.memory_used_bytes),
            load1: keep(Signal::Load, self.load1),
            load5: keep(Signal::Load, self.load5),
            load15: keep(Signal::Load, self.load15),
            disk_total_bytes: keep(Signal::Disk, self.disk_total_bytes),
            disk_used_bytes: keep(Signal::Disk, self.disk_used_bytes),
            inodes_total: keep(Signal::Disk, self.inodes_total),
            inodes_used: keep(Signal::Disk, self.inodes_used),
            network_rx_bytes: keep(Signal::Network, self.network_rx_bytes),
            network_tx_bytes: keep(Signal::Network, self.network_tx_bytes),
            docker_image_bytes: keep(Signal::DockerStorage, self.docker_image_bytes),
            docker_build_cache_bytes: keep(Signal::DockerStorage, self.docker_build_cache_bytes),
            container_writable_bytes: keep(Signal::DockerStorage, self.container_writable_bytes),
        }
    }
}

/// Reads one metric from a sample's totals.
pub type ReadMetric = fn(&Totals) -> Option<f64>;

/// Every metric: the camelCase name of a [`Totals`] field, its signal, and how to read it.
/// Threshold rules and rollups name metrics by these names.
pub const METRICS: [(&str, Signal, ReadMetric); 19] = [
    ("logicalCores", Signal::Cpu, |t| t.logical_cores),
    ("hostCpuPercent", Signal::Cpu, |t| t.host_cpu_percent),
    ("containerCpuPercent", Signal::Cpu, |t| {
        t.container_cpu_percent
    }),
    ("containerCpuCores", Signal::Cpu, |t| t.container_cpu_cores),
    ("memoryTotalBytes", Signal::Memory, |t| t.memory_total_bytes),
    ("memoryAvailableBytes", Signal::Memory, |t| {
        t.memory_available_bytes
    }),
    ("memoryUsedBytes", Signal::Memory, |t| t.memory_used_bytes),
    ("load1", Signal::Load, |t| t.load1),
    ("load5", Signal::Load, |t| t.load5),
    ("load15", Signal::Load, |t| t.load15),
    ("diskTotalBytes", Signal::Disk, |t| t.disk_total_bytes),
    ("diskUsedBytes", Signal::Disk, |t| t.disk_used_bytes),
    ("inodesTotal", Signal::Disk, |t| t.inodes_total),
    ("inodesUsed", Signal::Disk, |t| t.inodes_used),
    ("networkRxBytes", Signal::Network, |t| t.network_rx_bytes),
    ("networkTxBytes", Signal::Network, |t| t.network_tx_bytes),
    ("dockerImageBytes", Signal::DockerStorage, |t| {
        t.docker_image_bytes
    }),
    ("dockerBuildCacheBytes", Signal::DockerStorage, |t| {
        t.docker_build_cache_bytes
    }),
    ("containerWritableBytes", Signal::DockerStorage, |t| {
        t.container_writable_bytes
    }),
];

/// The signal of `metric`, if it names a [`Totals`] field.
pub fn metric_signal(metric: &str) -> Option<Signal> {
    METRICS
        .iter()
        .find(|(name, _, _)| *name == metric)
        .map(|(_, signal, _)| *signal)
}

/// The value of `metric` in `totals`, when measured.
pub fn metric_value(totals: &Totals, metric: &str) -> Option<f64> {
    METRICS
        .iter()
        .find(|(name, _, _)| *name == metric)
        .and_then(|(_, _, read)| read(totals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keeps_the_signals_asked_for_and_json_leaves_out_the_rest() {
        let totals = Totals {
            container_cpu_percent: Some(12.5),
            memory_used_bytes: Some(1024.0),
            network_rx_bytes: Some(10.0),
            ..Totals::default()
        };
        let only = totals.only(&[Signal::Cpu, Signal::Network]);
        let json = serde_json::to_value(&only).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"containerCpuPercent": 12.5, "networkRxBytes": 10.0})
        );
        assert_eq!(Signal::parse("docker-storage"), Some(Signal::DockerStorage));
        assert_eq!(Signal::parse("gpu"), None);
    }

    #[test]
    fn every_total_is_a_metric_of_the_signal_that_keeps_it() {
        let every = Totals {
            logical_cores: Some(1.0),
            host_cpu_percent: Some(1.0),
            container_cpu_percent: Some(1.0),
            container_cpu_cores: Some(1.0),
            memory_total_bytes: Some(1.0),
            memory_available_bytes: Some(1.0),
            memory_used_bytes: Some(1.0),
            load1: Some(1.0),
            load5: Some(1.0),
            load15: Some(1.0),
            disk_total_bytes: Some(1.0),
            disk_used_bytes: Some(1.0),
            inodes_total: Some(1.0),
            inodes_used: Some(1.0),
            network_rx_bytes: Some(1.0),
            network_tx_bytes: Some(1.0),
            docker_image_bytes: Some(1.0),
            docker_build_cache_bytes: Some(1.0),
            container_writable_bytes: Some(1.0),
        };
        let json = serde_json::to_value(&every).unwrap();
        assert_eq!(json.as_object().unwrap().len(), METRICS.len());
        for (name, signal, read) in METRICS {
            assert_eq!(read(&every), Some(1.0), "{name}");
            let kept = serde_json::to_value(every.only(&[signal])).unwrap();
            assert!(kept.get(name).is_some(), "{name} is not kept by {signal:?}");
            assert_eq!(metric_signal(name), Some(signal));
        }
    }
}
