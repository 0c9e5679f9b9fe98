//! Storage volumes: their kinds and the `sourcePath` rule, which the shim checks before
//! writing a StorageVolume and the controller before mounting one applied with kubectl.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::TEXT_MAX;
use crate::validate::{Checked, FieldError, bounded};

/// What a storage volume is on a server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum StorageVolumeKind {
    /// A Docker volume Berth names `berth-<namespace>-<id>`; it outlives containers.
    NamedVolume,
    /// A directory of the server (`sourcePath`) mounted into the container as it is.
    BindMount,
}

impl StorageVolumeKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NamedVolume => "named-volume",
            Self::BindMount => "bind-mount",
        }
    }
}

/// Shell metacharacters a bind source path may not hold (Appaloft's rule).
const UNSAFE_PATH_CHARACTERS: &[char] = &[';', '&', '|', '`', '$', '<', '>'];

/// The `sourcePath` rule of a storage volume: required and an absolute, normalized host path
/// (no `.` or `..` segments, not `/` itself, no shell metacharacters) for `bind-mount`;
/// forbidden for `named-volume`. The shim checks it before writing, the controller before
/// mounting a volume applied with kubectl.
pub fn check_source_path(kind: StorageVolumeKind, source_path: Option<&str>) -> Checked {
    match (kind, source_path) {
        (StorageVolumeKind::NamedVolume, None) => Ok(()),
        (StorageVolumeKind::NamedVolume, Some(_)) => Err(FieldError::new(
            "sourcePath",
            "sourcePath must be left out for a named-volume (Berth names its Docker volume)",
        )),
        (StorageVolumeKind::BindMount, None) => Err(FieldError::new(
            "sourcePath",
            "sourcePath is required for a bind-mount: the absolute path of a directory on the server",
        )),
        (StorageVolumeKind::BindMount, Some(path)) => check_host_path(path),
    }
}

fn check_host_path(path: &str) -> Checked {
    bounded("sourcePath", path, TEXT_MAX)?;
    let invalid = |why: &str| Err(FieldError::new("sourcePath", format!("sourcePath {why}")));
    if !path.starts_with('/') || path.starts_with("//") {
        return invalid("must be an absolute path on the server, such as /srv/app/data");
    }
    if path.contains(UNSAFE_PATH_CHARACTERS) || path.chars().any(char::is_whitespace) {
        return invalid("must not contain whitespace or any of ; & | ` $ < >");
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        return invalid("must not be / itself");
    }
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return invalid("must not contain . or .. segments");
    }
    if path.contains("//") {
        return invalid("must not contain empty segments (//)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use StorageVolumeKind::{BindMount, NamedVolume};

    #[test]
    fn a_bind_mount_needs_a_clean_absolute_path_and_a_named_volume_none() {
        assert!(check_source_path(NamedVolume, None).is_ok());
        assert!(check_source_path(BindMount, Some("/srv/app/data")).is_ok());
        assert!(check_source_path(BindMount, Some("/srv/data/")).is_ok());
        for bad in [
            None,
            Some(""),
            Some("srv/data"),
            Some("//srv"),
            Some("/"),
            Some("/srv/../etc"),
            Some("/srv/./x"),
            Some("/srv/$HOME"),
            Some("/srv/a b"),
            Some("/srv//a"),
            Some("https://example.com/x"),
        ] {
            let error = check_source_path(BindMount, bad).unwrap_err();
            assert_eq!(error.field, "sourcePath", "{bad:?}");
        }
        let error = check_source_path(NamedVolume, Some("/srv")).unwrap_err();
        assert_eq!(error.field, "sourcePath");
    }
}

/// How a storage volume backup reads the files (Appaloft's `requestedConsistency`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeConsistency {
    /// Read while the application runs: it may write meanwhile, as a crash would leave them.
    #[default]
    CrashConsistent,
    /// The containers using the volume are stopped only while its files are copied on the
    /// server, then started again; the copy is read, sealed and uploaded after.
    Quiesced,
}

impl VolumeConsistency {
    pub const ALL: [Self; 2] = [Self::CrashConsistent, Self::Quiesced];

    /// The consistency as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CrashConsistent => "crash-consistent",
            Self::Quiesced => "quiesced",
        }
    }

    /// The consistency a request names, if it names one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

/// What a quiesced backup cost the application: the containers stopped, and for how long.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QuiescedWindow {
    /// How many running containers were stopped (and started again).
    pub containers: i64,
    /// From their stop until they were asked to start again.
    pub seconds: f64,
}

/// Where a storage volume backup is restored (Appaloft's `targetMode`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeRestoreMode {
    /// Into a new storage volume; the backup's own is untouched.
    #[default]
    NewVolume,
    /// Over the backup's own volume, its files replaced.
    InPlace,
}

impl VolumeRestoreMode {
    pub const ALL: [Self; 2] = [Self::NewVolume, Self::InPlace];

    /// The mode as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NewVolume => "new-volume",
            Self::InPlace => "in-place",
        }
    }
}
