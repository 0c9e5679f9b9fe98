//! The pure half of a storage volume's backups and restores: what is mounted, and the Docker
//! commands run on its server. Files are read and written by `docker cp` through a container
//! that is created (never started) with the volume mounted at [`MOUNT`], so the helper image
//! needs no tools of its own; only a restore in place runs one (`sh` and `find`) to empty the
//! volume first. Every helper container carries Berth's label and is removed when its command
//! ends, however it ends.

use berth_crds::MANAGED_LABEL;
use berth_crds::resource::volume_name;
use berth_crds::storage_volume::{StorageVolume, StorageVolumeKind};
use berth_remote::shell_quote;
use kube::ResourceExt;

use super::plan::docker;

/// Where a helper container mounts the volume.
const MOUNT: &str = "/volume";
/// The program that reads or writes files, as a failure names it.
pub const DOCKER_CP: &str = "docker cp";

/// What a container mounts for `volume`: a Docker volume's name, or a server directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeSource {
    pub kind: StorageVolumeKind,
    pub source: String,
}

impl VolumeSource {
    pub fn of(volume: &StorageVolume) -> Self {
        let namespace = volume.namespace().unwrap_or_default();
        let source = match volume.spec.kind {
            StorageVolumeKind::NamedVolume => volume_name(&namespace, &volume.name_any()),
            StorageVolumeKind::BindMount => volume.spec.source_path.clone().unwrap_or_default(),
        };
        Self {
            kind: volume.spec.kind,
            source,
        }
    }

    /// The Docker volume `name` as it is (a throwaway one).
    pub fn named_as(name: &str) -> Self {
        Self {
            kind: StorageVolumeKind::NamedVolume,
            source: name.to_string(),
        }
    }

    /// Exits 0 when the files are there: the Docker volume exists, or the directory does.
    pub fn exists_command(&self, socket: &str) -> String {
        match self.kind {
            StorageVolumeKind::NamedVolume => format!(
                "{} volume inspect {} >/dev/null",
                docker(socket),
                shell_quote(&self.source)
            ),
            StorageVolumeKind::BindMount => format!("test -d {}", shell_quote(&self.source)),
        }
    }

    /// What the volume's absence is called in a failure.
    pub fn absent(&self, server: &str) -> String {
        match self.kind {
            StorageVolumeKind::NamedVolume => format!(
                "server {server} has no Docker volume {} (no resource using it has run there)",
                self.source
            ),
            StorageVolumeKind::BindMount => {
                format!("server {server} has no directory {}", self.source)
            }
        }
    }

    /// Runs `then` with `$c` a created helper container mounting the volume (read-only when
    /// `read_only`), removing the container when it ends; the exit status is `then`'s.
    fn through_helper(&self, socket: &str, image: &str, read_only: bool, then: &str) -> String {
        let docker = docker(socket);
        let mode = if read_only { ":ro" } else { "" };
        let mount = format!("{}:{MOUNT}{mode}", self.source);
        format!(
            "c=$({docker} create --label {MANAGED_LABEL}=true -v {} {}) || exit 1; \
             trap \"{docker} rm -f $c >/dev/null\" EXIT; {then}",
            shell_quote(&mount),
            shell_quote(image),
        )
    }

    /// Writes the volume's files as a tar archive to standard output.
    pub fn read_command(&self, socket: &str, image: &str) -> String {
        let copy = format!("{} cp \"$c\":{MOUNT}/. -", docker(socket));
        self.through_helper(socket, image, true, &copy)
    }

    /// Extracts the tar archive on standard input into the volume, owners kept.
    pub fn extract_command(&self, socket: &str, image: &str) -> String {
        let copy = format!("{} cp -a - \"$c\":{MOUNT}", docker(socket));
        self.through_helper(socket, image, false, &copy)
    }

    /// Removes everything in the volume (a restore in place, once its users are stopped).
    pub fn empty_command(&self, socket: &str, image: &str) -> String {
        let mount = format!("{}:{MOUNT}", self.source);
        format!(
            "{} run --rm --label {MANAGED_LABEL}=true -v {} {} \
             find {MOUNT} -mindepth 1 -maxdepth 1 -exec rm -rf {{}} +",
            docker(socket),
            shell_quote(&mount),
            shell_quote(image)
        )
    }

    /// The names of the running containers that mount the volume, a line each (names, as
    /// the server's observer and drift repair know them).
    pub fn users_command(&self, socket: &str) -> String {
        format!(
            "{} ps --format '{{{{.Names}}}}' --filter {}",
            docker(socket),
            shell_quote(&format!("volume={}", self.source))
        )
    }
}

/// Makes the Docker volume `name`, refusing (exit 3) when it exists: a new-volume restore
/// writes only where nothing was.
pub fn create_new_volume_command(socket: &str, name: &str) -> String {
    let docker = docker(socket);
    let name = shell_quote(name);
    format!(
        "if {docker} volume inspect {name} >/dev/null 2>&1; then \
         echo 'the Docker volume exists already' >&2; exit 3; fi; \
         {docker} volume create --label {MANAGED_LABEL}=true {name} >/dev/null"
    )
}

/// Removes the Docker volume `name` if it is there.
pub fn remove_volume_command(socket: &str, name: &str) -> String {
    format!(
        "{} volume rm -f {} >/dev/null",
        docker(socket),
        shell_quote(name)
    )
}

/// Stops (`stop`) or starts (`start`) the containers `ids`.
pub fn containers_command(socket: &str, verb: &str, ids: &[String]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| shell_quote(id)).collect();
    format!("{} {verb} {} >/dev/null", docker(socket), ids.join(" "))
}

/// Copies the files of `from` into `to` (a new, empty Docker volume) with modes, owners and
/// links, in one helper container running the helper image's `cp`.
pub fn copy_command(socket: &str, image: &str, from: &VolumeSource, to: &str) -> String {
    let from = format!("{}:/from:ro", from.source);
    let to = format!("{to}:/to");
    format!(
        "{} run --rm --label {MANAGED_LABEL}=true -v {} -v {} {} cp -a /from/. /to/",
        docker(socket),
        shell_quote(&from),
        shell_quote(&to),
        shell_quote(image)
    )
}

/// The volume a quiesced backup's files are copied into while their users are stopped.
pub fn snapshot_volume(namespace: &str, backup: &str) -> String {
    let mut name = format!("berth-snapshot-{namespace}-{backup}");
    name.truncate(200);
    name
}

/// The throwaway volume a backup is proven in.
pub fn scratch_volume(namespace: &str, backup: &str) -> String {
    let mut name = format!("berth-verify-{namespace}-{backup}");
    name.truncate(200);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_through_a_created_container_that_goes_when_the_copy_ends() {
        let volume = VolumeSource::named_as(&volume_name("org-acme", "data"));
        let read = volume.read_command("/run/docker.sock", "busybox:1.37");
        let created = "create --label berth.dev/managed=true -v 'berth-org-acme-data:/volume:ro' \
                       'busybox:1.37'";
        assert!(read.contains(created), "{read}");
        assert!(
            read.contains("trap \"docker -H 'unix:///run/docker.sock' rm -f $c"),
            "{read}"
        );
        assert!(read.ends_with("cp \"$c\":/volume/. -"), "{read}");
        let write = volume.extract_command("/run/docker.sock", "busybox:1.37");
        assert!(
            write.contains("-v 'berth-org-acme-data:/volume' "),
            "{write}"
        );
        assert!(write.ends_with("cp -a - \"$c\":/volume"), "{write}");
    }

    #[test]
    fn a_bind_mounted_volume_is_its_directory() {
        let volume = VolumeSource {
            kind: StorageVolumeKind::BindMount,
            source: "/srv/data".into(),
        };
        assert_eq!(volume.exists_command("/s"), "test -d '/srv/data'");
        assert_eq!(volume.absent("s1"), "server s1 has no directory /srv/data");
    }
}
