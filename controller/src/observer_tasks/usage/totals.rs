//! Totals from readings: gauges as read, CPU shares from the change of counters since the
//! previous reading (none on the first tick, or after a container restarted).

use std::collections::HashMap;

use berth_crds::monitoring::{DiskArtifact, Totals};
use serde_json::Value;

use super::probe::Reading;

/// What Docker's images, build cache and containers' writable layers take on disk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DockerStorage {
    pub image_bytes: Option<f64>,
    pub build_cache_bytes: Option<f64>,
    /// Container id → its writable layer (`SizeRw`).
    pub writable_bytes: HashMap<String, f64>,
    /// Every image and volume, and the build cache as one.
    pub artifacts: Vec<DiskArtifact>,
}

impl DockerStorage {
    /// From `GET /system/df` in either shape: Docker before API 1.52 (`LayersSize`,
    /// `BuildCache[]`) or after (`ImageUsage`, `BuildCacheUsage`).
    pub fn from_df(df: &Value) -> Self {
        let number = |value: &Value| value.as_f64();
        let image_bytes =
            number(&df["LayersSize"]).or_else(|| number(&df["ImageUsage"]["TotalSize"]));
        // An empty build cache is `null` before API 1.52, beside the classic builder's size.
        let build_cache_bytes = match df["BuildCache"].as_array() {
            Some(records) => Some(records.iter().filter_map(|r| number(&r["Size"])).sum()),
            None => number(&df["BuildCacheUsage"]["TotalSize"]).or(number(&df["BuilderSize"])),
        };
        // Before API 1.52 `Containers[]`; after, `ContainerUsage.Items[]`.
        let containers = df["Containers"]
            .as_array()
            .or_else(|| df["ContainerUsage"]["Items"].as_array());
        let writable_bytes = containers
            .into_iter()
            .flatten()
            // Docker leaves out a `SizeRw` of 0 (a container that wrote nothing).
            .filter_map(|c| {
                let written = number(&c["SizeRw"]).unwrap_or(0.0);
                Some((c["Id"].as_str()?.to_string(), written))
            })
            .collect();
        let mut artifacts = images(df);
        artifacts.extend(volumes(df));
        artifacts.extend(build_cache(df, build_cache_bytes));
        Self {
            image_bytes,
            build_cache_bytes,
            writable_bytes,
            artifacts,
        }
    }
}

/// The items of a `/system/df` list: `Images` before API 1.52, `ImageUsage.Items` after.
fn items<'a>(df: &'a Value, legacy: &str, current: &str) -> &'a [Value] {
    df[legacy]
        .as_array()
        .or_else(|| df[current]["Items"].as_array())
        .map_or(&[], Vec::as_slice)
}

fn count(value: &Value) -> Option<u64> {
    value.as_i64().and_then(|n| u64::try_from(n).ok())
}

fn images(df: &Value) -> Vec<DiskArtifact> {
    items(df, "Images", "ImageUsage")
        .iter()
        .filter_map(|image| {
            let strings = |key: &str| {
                image[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            };
            let mut references = strings("RepoTags");
            references.extend(strings("RepoDigests"));
            Some(DiskArtifact {
                kind: "image".into(),
                id: image["Id"].as_str()?.to_string(),
                references,
                bytes: count(&image["Size"]),
                // -1 when Docker did not count.
                in_use_by: count(&image["Containers"]),
                ..DiskArtifact::default()
            })
        })
        .collect()
}

fn volumes(df: &Value) -> Vec<DiskArtifact> {
    items(df, "Volumes", "VolumeUsage")
        .iter()
        .filter_map(|volume| {
            let usage = &volume["UsageData"];
            let local = volume["Driver"].as_str().is_none_or(|d| d == "local");
            Some(DiskArtifact {
                kind: "volume".into(),
                id: volume["Name"].as_str()?.to_string(),
                bytes: count(&usage["Size"]),
                in_use_by: count(&usage["RefCount"]),
                mountpoint: volume["Mountpoint"]
                    .as_str()
                    .filter(|_| local)
                    .map(str::to_string),
                ..DiskArtifact::default()
            })
        })
        .collect()
}

/// The build cache as one artifact, with how many of its records a build is using.
fn build_cache(df: &Value, bytes: Option<f64>) -> Option<DiskArtifact> {
    let records = items(df, "BuildCache", "BuildCacheUsage");
    let in_use = records.iter().filter(|r| r["InUse"] == true).count();
    Some(DiskArtifact {
        kind: "build-cache".into(),
        id: "build-cache".into(),
        bytes: Some(bytes? as u64),
        in_use_by: Some(in_use as u64),
        ..DiskArtifact::default()
    })
}

/// The host's totals now; CPU busy share since `previous`.
pub fn host_totals(previous: Option<&Reading>, now: &Reading, storage: &DockerStorage) -> Totals {
    let host = &now.host;
    let cpu = previous
        .and_then(|p| p.host.cpu_jiffies)
        .zip(host.cpu_jiffies)
        .and_then(|((total0, idle0), (total1, idle1))| {
            let total = total1 - total0;
            (total > 0.0).then(|| round(100.0 * (total - (idle1 - idle0)) / total))
        });
    Totals {
        logical_cores: host.cores,
        host_cpu_percent: cpu,
        memory_total_bytes: host.memory.map(|(total, _)| total),
        memory_available_bytes: host.memory.map(|(_, available)| available),
        memory_used_bytes: host.memory.map(|(total, available)| total - available),
        load1: host.load.map(|l| l[0]),
        load5: host.load.map(|l| l[1]),
        load15: host.load.map(|l| l[2]),
        disk_total_bytes: host.disk.map(|(total, _)| total),
        disk_used_bytes: host.disk.map(|(_, used)| used),
        inodes_total: host.inodes.map(|(total, _)| total),
        inodes_used: host.inodes.map(|(_, used)| used),
        docker_image_bytes: storage.image_bytes,
        docker_build_cache_bytes: storage.build_cache_bytes,
        ..Totals::default()
    }
}

/// Container `id`'s totals now; its CPU share since `previous` (a share of every core, and
/// in cores).
pub fn container_totals(
    previous: Option<&Reading>,
    now: &Reading,
    id: &str,
    storage: &DockerStorage,
) -> Totals {
    let Some(container) = now.containers.get(id) else {
        return Totals::default();
    };
    let cores = cpu_cores(previous, now, id);
    let share = cores
        .zip(now.host.cores)
        .map(|(used, all)| round(100.0 * used / all));
    Totals {
        container_cpu_percent: share,
        container_cpu_cores: cores.map(|c| round(c * 1000.0) / 1000.0),
        memory_used_bytes: container.memory_bytes,
        network_rx_bytes: container.network.map(|(rx, _)| rx),
        network_tx_bytes: container.network.map(|(_, tx)| tx),
        container_writable_bytes: storage.writable_bytes.get(id).copied(),
        ..Totals::default()
    }
}

/// Cores the container kept busy between the two readings, on average.
fn cpu_cores(previous: Option<&Reading>, now: &Reading, id: &str) -> Option<f64> {
    let previous = previous?;
    let used_ns = now.containers.get(id)?.cpu_ns? - previous.containers.get(id)?.cpu_ns?;
    let elapsed = now.host.uptime_seconds? - previous.host.uptime_seconds?;
    // A counter that went back belongs to a restarted container: no share this tick.
    (elapsed > 0.0 && used_ns >= 0.0).then(|| used_ns / 1e9 / elapsed)
}

/// Two decimals: finer is noise.
fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::super::probe::parse;
    use super::*;

    fn reading(uptime: f64, cpu_ns: f64, jiffies: (f64, f64)) -> Reading {
        parse(&format!(
            "uptime {uptime}\ncores 4\nmeminfo 8000 6000\nstat {} {}\n\
             container abc {cpu_ns} 1000 10 20\n",
            jiffies.0, jiffies.1
        ))
    }

    #[test]
    fn cpu_shares_come_from_the_change_since_the_previous_reading() {
        let before = reading(100.0, 1e9, (1000.0, 800.0));
        // 2 s later the container used 1 s of CPU: half a core, 12.5 % of four.
        let now = reading(102.0, 2e9, (1800.0, 1200.0));
        let storage = DockerStorage {
            writable_bytes: [("abc".to_string(), 4096.0)].into(),
            ..DockerStorage::default()
        };
        let totals = container_totals(Some(&before), &now, "abc", &storage);
        assert_eq!(totals.container_writable_bytes, Some(4096.0));
        assert_eq!(totals.container_cpu_cores, Some(0.5));
        assert_eq!(totals.container_cpu_percent, Some(12.5));
        assert_eq!(totals.memory_used_bytes, Some(1000.0));
        assert_eq!(totals.network_tx_bytes, Some(20.0));
        let host = host_totals(Some(&before), &now, &DockerStorage::default());
        assert_eq!(host.host_cpu_percent, Some(50.0));
        assert_eq!(host.memory_used_bytes, Some(2000.0));
        // The first reading has nothing to compare with; a restarted counter neither.
        assert_eq!(
            container_totals(None, &now, "abc", &storage).container_cpu_percent,
            None
        );
        let restarted = reading(104.0, 1e8, (2000.0, 1300.0));
        let totals = container_totals(Some(&now), &restarted, "abc", &storage);
        assert_eq!(totals.container_cpu_percent, None);
    }

    #[test]
    fn docker_storage_reads_both_shapes_of_system_df() {
        let legacy = serde_json::json!({
            "LayersSize": 500, "BuildCache": [{"Size": 7, "InUse": true}, {"Size": 3}],
            "Containers": [{"Id": "abc", "SizeRw": 12}, {"Id": "def"}],
            "Images": [{"Id": "sha256:1", "RepoTags": ["app:1"], "RepoDigests": null,
                        "Size": 400, "Containers": 2}],
            "Volumes": [{"Name": "data", "Driver": "local", "Mountpoint": "/v/data/_data",
                         "UsageData": {"Size": 64, "RefCount": 1}},
                        {"Name": "uncounted", "UsageData": {"Size": -1, "RefCount": -1}}],
        });
        let current = serde_json::json!({
            "ImageUsage": {"TotalSize": 600}, "BuildCacheUsage": {"TotalSize": 9},
            "ContainerUsage": {"Items": [{"Id": "abc", "SizeRw": 13}]},
        });
        let artifact = |kind: &str, id: &str, bytes, in_use_by| DiskArtifact {
            kind: kind.into(),
            id: id.into(),
            bytes,
            in_use_by,
            ..DiskArtifact::default()
        };
        assert_eq!(
            DockerStorage::from_df(&legacy),
            DockerStorage {
                image_bytes: Some(500.0),
                build_cache_bytes: Some(10.0),
                writable_bytes: [("abc".to_string(), 12.0), ("def".to_string(), 0.0)].into(),
                artifacts: vec![
                    DiskArtifact {
                        references: vec!["app:1".into()],
                        ..artifact("image", "sha256:1", Some(400), Some(2))
                    },
                    DiskArtifact {
                        mountpoint: Some("/v/data/_data".into()),
                        ..artifact("volume", "data", Some(64), Some(1))
                    },
                    artifact("volume", "uncounted", None, None),
                    artifact("build-cache", "build-cache", Some(10), Some(1)),
                ],
            }
        );
        assert_eq!(
            DockerStorage::from_df(&current),
            DockerStorage {
                image_bytes: Some(600.0),
                build_cache_bytes: Some(9.0),
                writable_bytes: [("abc".to_string(), 13.0)].into(),
                artifacts: vec![artifact("build-cache", "build-cache", Some(9), Some(0))],
            }
        );
        let empty = serde_json::json!({"LayersSize": 0, "BuildCache": null, "BuilderSize": 0});
        assert_eq!(
            DockerStorage::from_df(&empty).artifacts,
            [artifact("build-cache", "build-cache", Some(0), Some(0))]
        );
    }
}
