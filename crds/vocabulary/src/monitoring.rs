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

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The groups of `resourceMetrics`: what a query's `signals` and a rule's `signal` name
/// (Appaloft's closed set; the spec shows `cpu`).
#[derive(
    Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    Cpu,
    Memory,
    Disk,
    Inode,
    Docker,
    Network,
}

impl Signal {
    pub const ALL: [Signal; 6] = [
        Self::Cpu,
        Self::Memory,
        Self::Disk,
        Self::Inode,
        Self::Docker,
        Self::Network,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Memory => "memory",
            Self::Disk => "disk",
            Self::Inode => "inode",
            Self::Docker => "docker",
            Self::Network => "network",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// What a monitoring scope is about (spec §2.1 `scope`; Appaloft's five kinds).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// A server: its host, and the containers running on it.
    Server,
    Project,
    Environment,
    /// One resource's containers.
    Resource,
    Deployment,
}

impl ScopeKind {
    pub const ALL: [ScopeKind; 5] = [
        Self::Server,
        Self::Project,
        Self::Environment,
        Self::Resource,
        Self::Deployment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Project => "project",
            Self::Environment => "environment",
            Self::Resource => "resource",
            Self::Deployment => "deployment",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

/// A monitoring scope (spec §2.1): its kind and the kind's id; in the filter form of a query's
/// answer, every filter it was given. A query that names no scope (the whole organization)
/// answers with no `kind`: there is none to name.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    pub kind: Option<ScopeKind>,
    pub server_id: Option<String>,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
}

impl Scope {
    /// A scope of `kind` naming `id`.
    pub fn of(kind: ScopeKind, id: &str) -> Self {
        let id = Some(id.to_string());
        let mut scope = Scope {
            kind: Some(kind),
            ..Scope::default()
        };
        match kind {
            ScopeKind::Server => scope.server_id = id,
            ScopeKind::Project => scope.project_id = id,
            ScopeKind::Environment => scope.environment_id = id,
            ScopeKind::Resource => scope.resource_id = id,
            ScopeKind::Deployment => scope.deployment_id = id,
        }
        scope
    }
}

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

/// The spec's `resourceMetrics` (§2.1, called `totals`): every figure a number, each group and
/// field present only when measured.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMetrics {
    pub cpu: Option<CpuMetrics>,
    pub memory: Option<MemoryMetrics>,
    pub disk: Option<DiskMetrics>,
    pub inode: Option<InodeMetrics>,
    pub docker: Option<DockerMetrics>,
    pub network: Option<NetworkMetrics>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CpuMetrics {
    /// The host's logical cores.
    pub logical_cores: Option<f64>,
    #[serde(rename = "loadAverage1m")]
    pub load_average_1m: Option<f64>,
    #[serde(rename = "loadAverage5m")]
    pub load_average_5m: Option<f64>,
    #[serde(rename = "loadAverage15m")]
    pub load_average_15m: Option<f64>,
    /// A container's CPU time since the previous tick as a share of the host (100 = every
    /// core busy); in a sum over containers, theirs added up.
    pub container_cpu_percent: Option<f64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MemoryMetrics {
    /// The host's.
    pub total_bytes: Option<f64>,
    /// The host's: total less available.
    pub used_bytes: Option<f64>,
    pub available_bytes: Option<f64>,
    /// A container's, as `docker stats` counts it.
    pub container_used_bytes: Option<f64>,
}

/// The filesystem holding Docker's data.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DiskMetrics {
    pub total_bytes: Option<f64>,
    pub used_bytes: Option<f64>,
    /// Total less used.
    pub available_bytes: Option<f64>,
    /// Not measured by Berth.
    pub attributed_bytes: Option<f64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InodeMetrics {
    pub total: Option<f64>,
    pub used: Option<f64>,
    /// Total less used.
    pub available: Option<f64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DockerMetrics {
    /// The server's images (read every 10th tick).
    pub image_bytes: Option<f64>,
    pub build_cache_bytes: Option<f64>,
    /// A container's writable layer (Docker's `SizeRw`, read every 10th tick).
    pub container_writable_bytes: Option<f64>,
}

/// A container's counters since it started.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkMetrics {
    pub rx_bytes: Option<f64>,
    pub tx_bytes: Option<f64>,
}

impl ResourceMetrics {
    /// The wire form of one stored sample's figures: a host's or a container's.
    pub fn of_sample(totals: &Totals, host: bool) -> Self {
        let mut metrics = Self::default();
        for stored in &STORED_METRICS {
            let target = if host { stored.host } else { stored.container };
            if let (Some((signal, name)), Some(value)) = (target, (stored.read)(totals)) {
                metrics.set(signal, name, value);
            }
        }
        metrics.derive_available();
        metrics
    }

    /// Fills `available` from `total` and `used` where the store keeps only those two.
    pub fn derive_available(&mut self) {
        if let Some(disk) = &mut self.disk
            && disk.available_bytes.is_none()
            && let (Some(total), Some(used)) = (disk.total_bytes, disk.used_bytes)
        {
            disk.available_bytes = Some((total - used).max(0.0));
        }
        if let Some(inode) = &mut self.inode
            && inode.available.is_none()
            && let (Some(total), Some(used)) = (inode.total, inode.used)
        {
            inode.available = Some((total - used).max(0.0));
        }
    }

    /// The groups of `signals` only.
    pub fn only(mut self, signals: &[Signal]) -> Self {
        let keep = |signal: Signal| signals.contains(&signal);
        if !keep(Cpu) {
            self.cpu = None;
        }
        if !keep(Memory) {
            self.memory = None;
        }
        if !keep(Disk) {
            self.disk = None;
        }
        if !keep(Inode) {
            self.inode = None;
        }
        if !keep(Docker) {
            self.docker = None;
        }
        if !keep(Network) {
            self.network = None;
        }
        self
    }

    /// Field `name` of group `signal`, when measured.
    pub fn get(&self, signal: Signal, name: &str) -> Option<f64> {
        self.slot(signal, name).and_then(|slot| *slot)
    }

    /// Sets field `name` of group `signal`; an unknown field is ignored.
    pub fn set(&mut self, signal: Signal, name: &str, value: f64) {
        if let Some(slot) = self.slot_mut(signal, name) {
            *slot = Some(value);
        }
    }

    /// Adds `value` to field `name` of group `signal`.
    pub fn add(&mut self, signal: Signal, name: &str, value: f64) {
        if let Some(slot) = self.slot_mut(signal, name) {
            *slot = Some(slot.unwrap_or(0.0) + value);
        }
    }

    /// Every figure measured, group by group.
    pub fn figures(&self) -> Vec<(Signal, &'static str, f64)> {
        Signal::ALL
            .into_iter()
            .flat_map(|signal| fields(signal).iter().map(move |name| (signal, *name)))
            .filter_map(|(signal, name)| Some((signal, name, self.get(signal, name)?)))
            .collect()
    }

    /// Adds every figure of `other` to this one's.
    pub fn add_all(&mut self, other: &ResourceMetrics) {
        for (signal, name, value) in other.figures() {
            self.add(signal, name, value);
        }
    }

    fn slot(&self, signal: Signal, name: &str) -> Option<&Option<f64>> {
        match signal {
            Cpu => cpu_slot(self.cpu.as_ref()?, name),
            Memory => memory_slot(self.memory.as_ref()?, name),
            Disk => disk_slot(self.disk.as_ref()?, name),
            Inode => inode_slot(self.inode.as_ref()?, name),
            Docker => docker_slot(self.docker.as_ref()?, name),
            Network => network_slot(self.network.as_ref()?, name),
        }
    }

    /// The field's place, creating its group; `None` for an unknown field.
    fn slot_mut(&mut self, signal: Signal, name: &str) -> Option<&mut Option<f64>> {
        // An unknown field must not leave an empty group behind.
        self.slot_known(signal, name)?;
        match signal {
            Cpu => cpu_slot_mut(self.cpu.get_or_insert_default(), name),
            Memory => memory_slot_mut(self.memory.get_or_insert_default(), name),
            Disk => disk_slot_mut(self.disk.get_or_insert_default(), name),
            Inode => inode_slot_mut(self.inode.get_or_insert_default(), name),
            Docker => docker_slot_mut(self.docker.get_or_insert_default(), name),
            Network => network_slot_mut(self.network.get_or_insert_default(), name),
        }
    }

    fn slot_known(&self, signal: Signal, name: &str) -> Option<()> {
        fields(signal).contains(&name).then_some(())
    }
}

/// The fields of each group, in the spec's order.
pub fn fields(signal: Signal) -> &'static [&'static str] {
    match signal {
        Cpu => &[
            "logicalCores",
            "loadAverage1m",
            "loadAverage5m",
            "loadAverage15m",
            "containerCpuPercent",
        ],
        Memory => &[
            "totalBytes",
            "usedBytes",
            "availableBytes",
            "containerUsedBytes",
        ],
        Disk => &[
            "totalBytes",
            "usedBytes",
            "availableBytes",
            "attributedBytes",
        ],
        Inode => &["total", "used", "available"],
        Docker => &["imageBytes", "buildCacheBytes", "containerWritableBytes"],
        Network => &["rxBytes", "txBytes"],
    }
}

/// One accessor pair per group: the field named `name`.
macro_rules! slots {
    ($get:ident, $get_mut:ident, $group:ty { $($name:literal => $field:ident),* }) => {
        fn $get<'a>(group: &'a $group, name: &str) -> Option<&'a Option<f64>> {
            match name {
                $($name => Some(&group.$field),)*
                _ => None,
            }
        }

        fn $get_mut<'a>(group: &'a mut $group, name: &str) -> Option<&'a mut Option<f64>> {
            match name {
                $($name => Some(&mut group.$field),)*
                _ => None,
            }
        }
    };
}

slots!(cpu_slot, cpu_slot_mut, CpuMetrics {
    "logicalCores" => logical_cores,
    "loadAverage1m" => load_average_1m,
    "loadAverage5m" => load_average_5m,
    "loadAverage15m" => load_average_15m,
    "containerCpuPercent" => container_cpu_percent
});
slots!(memory_slot, memory_slot_mut, MemoryMetrics {
    "totalBytes" => total_bytes,
    "usedBytes" => used_bytes,
    "availableBytes" => available_bytes,
    "containerUsedBytes" => container_used_bytes
});
slots!(disk_slot, disk_slot_mut, DiskMetrics {
    "totalBytes" => total_bytes,
    "usedBytes" => used_bytes,
    "availableBytes" => available_bytes,
    "attributedBytes" => attributed_bytes
});
slots!(inode_slot, inode_slot_mut, InodeMetrics {
    "total" => total,
    "used" => used,
    "available" => available
});
slots!(docker_slot, docker_slot_mut, DockerMetrics {
    "imageBytes" => image_bytes,
    "buildCacheBytes" => build_cache_bytes,
    "containerWritableBytes" => container_writable_bytes
});
slots!(network_slot, network_slot_mut, NetworkMetrics {
    "rxBytes" => rx_bytes,
    "txBytes" => tx_bytes
});

/// Whose a sample is (spec §2.2 "Monitoring sample" `scopeEvidence`): the scope it measured
/// (a server's host, or a resource's container) and every id its attribution names.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScopeEvidence {
    pub scope: Scope,
    pub server_id: Option<String>,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
}

/// `labels` of a sample: what measured it and, for a container, its kind and id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SampleLabels {
    /// `docker`.
    pub provider_key: Option<String>,
    /// `active-runtime` for a running container; a host sample has none.
    pub artifact_kind: Option<String>,
    /// The container's id.
    pub runtime_id: Option<String>,
}

/// A `warnings[]` entry of a monitoring answer, e.g. `missing-samples` for a gap.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringWarning {
    /// `missing-samples`, `partial-window`, `stale-samples`, `missing-metric-source` or
    /// `outside-retention`.
    pub code: String,
    pub message: String,
    pub signal: Option<Signal>,
    /// The series it is about.
    pub scope: Option<Scope>,
}

/// A part of a monitoring answer that could not be read (spec §2.1 `sourceErrors`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    /// `monitoring-store`, `collector`, `read-model` or `unknown` (monitoring);
    /// `runtime-target`, `docker`, `read-model`, … (usage).
    pub source: String,
    pub code: String,
    pub message: String,
    pub retriable: bool,
}

/// Spec §2.2 "Monitoring sample".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub sample_id: String,
    /// When the server read its counters.
    pub observed_at: String,
    /// When the controller received them.
    pub collected_at: String,
    pub scope_evidence: ScopeEvidence,
    pub totals: ResourceMetrics,
    /// `live`, `recent-sample`, `stale` or `unknown`.
    pub freshness: String,
    pub partial: bool,
    pub labels: SampleLabels,
    pub warnings: Vec<MonitoringWarning>,
    pub source_errors: Vec<SourceError>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    fn host() -> Totals {
        Totals {
            logical_cores: Some(4.0),
            host_cpu_percent: Some(12.0),
            memory_total_bytes: Some(100.0),
            memory_available_bytes: Some(60.0),
            memory_used_bytes: Some(40.0),
            load1: Some(0.5),
            disk_total_bytes: Some(1000.0),
            disk_used_bytes: Some(250.0),
            inodes_total: Some(10.0),
            inodes_used: Some(4.0),
            docker_image_bytes: Some(7.0),
            ..Totals::default()
        }
    }

    #[test]
    fn a_host_sample_nests_as_resource_metrics_with_what_is_derived() {
        let json = wire::to_value(&ResourceMetrics::of_sample(&host(), true)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "cpu": {"logicalCores": 4.0, "loadAverage1m": 0.5},
                "memory": {"totalBytes": 100.0, "usedBytes": 40.0, "availableBytes": 60.0},
                "disk": {"totalBytes": 1000.0, "usedBytes": 250.0, "availableBytes": 750.0},
                "inode": {"total": 10.0, "used": 4.0, "available": 6.0},
                "docker": {"imageBytes": 7.0},
            })
        );
    }

    #[test]
    fn a_container_sample_says_container_and_signals_keep_their_groups() {
        let container = Totals {
            container_cpu_percent: Some(2.5),
            container_cpu_cores: Some(0.1),
            memory_used_bytes: Some(1024.0),
            network_rx_bytes: Some(10.0),
            container_writable_bytes: Some(3.0),
            ..Totals::default()
        };
        let metrics = ResourceMetrics::of_sample(&container, false);
        assert_eq!(metrics.get(Cpu, "containerCpuPercent"), Some(2.5));
        assert_eq!(metrics.get(Memory, "containerUsedBytes"), Some(1024.0));
        assert_eq!(metrics.get(Memory, "usedBytes"), None);
        assert_eq!(metrics.get(Docker, "containerWritableBytes"), Some(3.0));
        let json = wire::to_value(&metrics.only(&[Cpu, Network])).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"cpu": {"containerCpuPercent": 2.5}, "network": {"rxBytes": 10.0}})
        );
    }

    #[test]
    fn every_stored_figure_is_named_once_and_lands_on_a_field_of_its_group() {
        for stored in &STORED_METRICS {
            assert_eq!(
                STORED_METRICS
                    .iter()
                    .filter(|m| m.name == stored.name)
                    .count(),
                1
            );
            for (signal, name) in [stored.host, stored.container].into_iter().flatten() {
                assert!(fields(signal).contains(&name), "{}", stored.name);
                let mut metrics = ResourceMetrics::default();
                metrics.set(signal, name, 1.0);
                assert_eq!(metrics.get(signal, name), Some(1.0), "{name}");
            }
        }
        for (signal, name) in RULE_METRICS {
            assert!(fields(signal).contains(&name), "{name}");
        }
        let mut metrics = ResourceMetrics::default();
        metrics.set(Cpu, "gpuPercent", 1.0);
        assert_eq!(metrics, ResourceMetrics::default(), "no empty group");
        assert_eq!(
            wire_metric("memoryUsedBytes", true),
            Some((Memory, "usedBytes"))
        );
        assert_eq!(wire_metric("hostCpuPercent", true), None);
        assert_eq!(Signal::parse("docker"), Some(Docker));
        assert_eq!(Signal::parse("docker-storage"), None);
    }
}
