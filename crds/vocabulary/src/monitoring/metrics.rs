//! The spec's `resourceMetrics`: the nested wire form of a sample's figures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Signal::{self, Cpu, Disk, Docker, Inode, Memory, Network};
use super::{STORED_METRICS, Totals};

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
