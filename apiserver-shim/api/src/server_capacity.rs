//! A server's disk use, memory and CPU, and the prune of its stopped containers: the answers of
//! `servers.capacity.inspect/v1` and `servers.capacity.prune/v1`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::OBJECT_NAME_MAX;
use crate::validate::{Checked, FieldError, optional_text};

/// The server as both answers name it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ServerRef {
    pub id: String,
    pub name: String,
    pub host: String,
    pub port: i32,
    pub provider_key: String,
    pub target_kind: String,
}

/// `servers.capacity.inspect/v1` (Appaloft's, with `platform…` where it says `appaloft…`).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    pub schema_version: String,
    pub server: ServerRef,
    pub inspected_at: String,
    /// The filesystems of `/` and of Docker's data root, as `df -P -k` reads them now; empty
    /// when the server could not be read (then `partial`).
    pub disk: Vec<DiskCapacity>,
    /// The same filesystems' inodes, as `df -P -i` reads them now; a filesystem that keeps no
    /// inode count (btrfs) is left out.
    pub inodes: Vec<InodeCapacity>,
    pub docker: DockerUsage,
    /// The host's memory from `/proc/meminfo`, read now.
    pub memory: MemoryCapacity,
    /// The host's logical cores and load averages, read now.
    pub cpu: CpuCapacity,
    pub platform_containers: Vec<PlatformContainer>,
    pub safe_reclaimable_estimate: Reclaimable,
    pub warnings: Vec<String>,
    pub partial: bool,
}

/// One filesystem's space (Appaloft's `runtimeTargetDiskCapacity`), in bytes.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DiskCapacity {
    /// The path measured (`/`, Docker's data root).
    pub path: String,
    /// Where the filesystem holding it is mounted.
    pub mount: String,
    pub size: i64,
    pub used: i64,
    /// What an unprivileged writer may still use (less than `size - used` by the blocks
    /// reserved for root).
    pub available: i64,
    /// `df`'s capacity: used of used and available, rounded up.
    pub use_percent: i64,
}

/// One filesystem's inodes (Appaloft's `runtimeTargetInodeCapacity`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InodeCapacity {
    /// The path measured (`/`, Docker's data root).
    pub path: String,
    /// Where the filesystem holding it is mounted.
    pub mount: String,
    pub used: i64,
    pub free: i64,
    /// `df -i`'s use, rounded up.
    pub use_percent: i64,
}

/// The host's memory in bytes (Appaloft's `runtimeTargetMemoryCapacity`); null what the
/// server did not say.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryCapacity {
    /// `MemTotal`.
    pub total: Option<i64>,
    /// `MemAvailable`: what can be given to new work without swapping.
    pub available: Option<i64>,
    /// `total - available`.
    pub used: Option<i64>,
    /// `used` of `total`, rounded.
    pub use_percent: Option<i64>,
}

/// The host's processors and their load (Appaloft's `runtimeTargetCpuCapacity`); null what the
/// server did not say.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuCapacity {
    /// Logical cores online (`getconf _NPROCESSORS_ONLN`, else `nproc`).
    pub logical_cores: Option<i64>,
    /// Runnable and waiting tasks averaged over one minute (`/proc/loadavg`), all cores
    /// together: `logicalCores` means every core busy.
    pub load_average_1m: Option<f64>,
    /// The same over five minutes.
    pub load_average_5m: Option<f64>,
    /// The same over fifteen minutes.
    pub load_average_15m: Option<f64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct DockerUsage {
    pub images_size: i64,
    pub reclaimable_images_size: i64,
    pub build_cache_size: i64,
    pub reclaimable_build_cache_size: i64,
    pub containers_size: i64,
    pub volumes_size: i64,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PlatformContainer {
    pub id: String,
    pub name: String,
    pub running: bool,
    pub status: String,
    pub writable_bytes: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Reclaimable {
    pub stopped_containers_size: i64,
    pub total: i64,
}

/// `servers.capacity.prune/v1`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    pub schema_version: String,
    pub server: ServerRef,
    pub before: String,
    pub categories: Vec<String>,
    pub dry_run: bool,
    pub pruned_at: String,
    pub summary: PruneSummary,
    pub candidates: Vec<PruneCandidate>,
    pub warnings: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct PruneSummary {
    pub inspected_count: usize,
    pub matched_count: usize,
    pub pruned_count: usize,
    pub skipped_count: usize,
    pub excluded_count: usize,
    pub reclaimed_bytes: i64,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PruneCandidate {
    pub id: String,
    pub category: String,
    /// The container's name.
    pub target: String,
    pub size: i64,
    /// `matched` (dry run), `pruned`, `skipped` (kept, with the reason) or `excluded`.
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PruneRequest {
    /// Only what stopped before this UTC time; now when omitted.
    #[serde(default)]
    pub before: Option<String>,
    /// `stopped-containers` (the default and the only category Berth prunes).
    #[serde(default)]
    pub categories: Option<Vec<String>>,
    /// One container id or name only.
    #[serde(default)]
    pub target: Option<String>,
    /// True unless `false` is given: nothing is removed, the candidates are listed.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// The one category Berth prunes.
pub const STOPPED_CONTAINERS: &str = "stopped-containers";

impl PruneRequest {
    /// The rules of `categories` and `target`. `before` is a time the shim parses (first).
    pub fn validate(&self) -> Checked {
        if let Some(categories) = &self.categories {
            check_categories(categories)?;
        }
        optional_text("target", self.target.as_ref(), OBJECT_NAME_MAX)
    }
}

/// Only stopped containers are offered: old built images go after each deploy already, and
/// volumes hold data.
fn check_categories(categories: &[String]) -> Checked {
    if categories.is_empty() {
        return Err(FieldError::new("categories", "categories may not be empty"));
    }
    if let Some(other) = categories.iter().find(|c| *c != STOPPED_CONTAINERS) {
        return Err(FieldError::new(
            "categories",
            format!(
                "categories: Berth prunes only stopped-containers ({other} is not offered: the \
                 controller removes old built images after each deploy, and volumes hold data)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prune_names_the_field_it_refuses() {
        let prune = |categories: Option<Vec<&str>>, target: Option<&str>| PruneRequest {
            categories: categories.map(|c| c.into_iter().map(str::to_string).collect()),
            target: target.map(str::to_string),
            ..Default::default()
        };
        assert!(prune(None, None).validate().is_ok());
        assert!(
            prune(Some(vec![STOPPED_CONTAINERS]), Some("web-1"))
                .validate()
                .is_ok()
        );
        let long = "t".repeat(OBJECT_NAME_MAX + 1);
        for (body, field) in [
            (prune(Some(vec![]), None), "categories"),
            (prune(Some(vec!["volumes"]), None), "categories"),
            (prune(None, Some("")), "target"),
            (prune(None, Some(&long)), "target"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }
}
