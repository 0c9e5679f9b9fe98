//! The pure half of a backup: where its artifact goes, the commands that dump, store, fetch
//! and restore it, the throwaway container's name, and the status each outcome writes.

use berth_crds::backup::{
    BackupArtifact, BackupStatus, BackupVerification, DependencyResourceBackupStatus, UploadedDump,
    VolumeTree, counted_contents,
};
use berth_crds::condition::{self, READY};
use berth_crds::dependency_resource::{POSTGRES_DATABASE, POSTGRES_USER};
use berth_remote::shell_quote;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::conditions::Stamp;

/// The steps a pending backup goes through.
pub const DUMPING: &str = "dumping";
/// The step of a backup of an uploaded dump while the dump is stored (`UploadedDump`).
pub const STORING_UPLOAD: &str = "storing-upload";
pub const VERIFYING: &str = "verifying";

/// `Ready` reasons.
pub mod reason {
    pub const VERIFIED: &str = "Verified";
    pub const IN_PROGRESS: &str = "InProgress";
    pub const FAILED: &str = "BackupFailed";
}

/// Why a backup failed, as `failureCode` names it, with the line for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Failure codes.
pub mod code {
    /// The dependency, target or a server named does not exist or cannot be backed up.
    pub const NOT_BACKED_UP: &str = "dependency-resource-backup-blocked";
    pub const DUMP_FAILED: &str = "dump-failed";
    pub const UPLOAD_FAILED: &str = "upload-failed";
    pub const VERIFICATION_FAILED: &str = "verification-failed";
    pub const UNREACHABLE: &str = "server-unreachable";
    pub const RESTORE_FAILED: &str = "restore-failed";
    /// A restore that failed after the target began to take the backup's data (a Redis's
    /// sync): the target may hold part of it.
    pub const RESTORE_INCOMPLETE: &str = "restore-incomplete";
}

/// Where one backup's artifact is on a server-directory target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactPath {
    pub directory: String,
    pub file: String,
}

impl ArtifactPath {
    /// `<root>/<namespace>/<dependency>/<backup>.berth-backup`.
    pub fn of(root: &str, namespace: &str, dependency: &str, backup: &str) -> Self {
        let directory = format!("{}/{namespace}/{dependency}", root.trim_end_matches('/'));
        let file = format!("{directory}/{backup}.berth-backup");
        Self { directory, file }
    }

    fn partial(&self) -> String {
        format!("{}.partial", self.file)
    }

    /// Receives the artifact on standard input, under a name that says it is not whole yet.
    pub fn upload_command(&self) -> String {
        format!(
            "mkdir -p {} && cat > {}",
            shell_quote(&self.directory),
            shell_quote(&self.partial())
        )
    }

    /// Gives the whole artifact its name (after its upload ended well).
    pub fn commit_command(&self) -> String {
        format!(
            "mv -f {} {}",
            shell_quote(&self.partial()),
            shell_quote(&self.file)
        )
    }

    /// Removes what an upload that failed left.
    pub fn discard_command(&self) -> String {
        format!("rm -f {}", shell_quote(&self.partial()))
    }

    /// Removes the artifact and what a partial upload of it left.
    pub fn remove_command(&self) -> String {
        format!(
            "rm -f {} {}",
            shell_quote(&self.file),
            shell_quote(&self.partial())
        )
    }

    /// Sends the artifact to standard output.
    pub fn download_command(&self) -> String {
        format!("cat {}", shell_quote(&self.file))
    }

    pub fn location(&self, server: &str) -> String {
        format!("server-directory://{server}{}", self.file)
    }

    /// The server and path a [`ArtifactPath::location`] names.
    pub fn from_location(location: &str) -> Option<(String, Self)> {
        let rest = location.strip_prefix("server-directory://")?;
        let slash = rest.find('/')?;
        let (server, file) = rest.split_at(slash);
        let (directory, _) = file.rsplit_once('/')?;
        let path = Self {
            directory: directory.to_string(),
            file: file.to_string(),
        };
        (!server.is_empty()).then(|| (server.to_string(), path))
    }
}

pub use crate::reconcilers::postgres_shell::{count_command, docker, parse_counts, ready_command};

/// The programs a PostgreSQL's dump is taken and restored with, as failures name them.
pub const PG_DUMP: &str = "pg_dump";
pub const PG_RESTORE: &str = "pg_restore";

/// A custom-format dump of the database, to standard output, taken in its own container.
pub fn dump_command(socket: &str, container: &str) -> String {
    format!(
        "{} exec {} pg_dump -Fc -U {POSTGRES_USER} -d {POSTGRES_DATABASE}",
        docker(socket),
        shell_quote(container)
    )
}

/// Restores a dump read from standard input into the throwaway database. The dump's own
/// database name is ignored (`-d` names the target), so a dump naming another database
/// restores here and nowhere else.
pub fn restore_command(socket: &str, scratch: &str) -> String {
    format!(
        "{} exec -i {} pg_restore -U {POSTGRES_USER} -d {POSTGRES_DATABASE} --no-owner \
         --no-privileges --exit-on-error",
        docker(socket),
        shell_quote(scratch)
    )
}

/// Restores a dump read from standard input over the live database `container`: every
/// object the dump holds dropped and recreated, in one transaction (it lands whole or changes
/// nothing); the dump's own database name is ignored.
pub fn restore_over_command(socket: &str, container: &str) -> String {
    format!(
        "{} exec -i {} pg_restore -U {POSTGRES_USER} -d {POSTGRES_DATABASE} --clean --if-exists \
         --no-owner --no-privileges --single-transaction --exit-on-error",
        docker(socket),
        shell_quote(container)
    )
}

/// What reads an uploaded dump, as a failure names it.
pub const UPLOAD_READER: &str = "reading the uploaded dump on the database's server";

/// Writes the uploaded dump at `path` (an `upload_path`) to standard output.
pub fn read_upload_command(path: &str) -> String {
    format!("cat -- {}", shell_quote(path))
}

/// Removes the uploaded dump at `path` once its backup has ended.
pub fn remove_upload_command(path: &str) -> String {
    format!("rm -f -- {}", shell_quote(path))
}

/// Why a backup refuses the uploaded dump it read (SHA-256 `read`), if it does: the file on
/// the server is not the one uploaded.
pub fn upload_changed(uploaded: &UploadedDump, read: &str) -> Option<Failure> {
    (uploaded.sha256 != read).then(|| {
        Failure::new(
            code::DUMP_FAILED,
            format!(
                "the uploaded dump on the database's server changed after it was uploaded \
                 (SHA-256 {read}, uploaded as {}); upload it again",
                uploaded.sha256
            ),
        )
    })
}

/// The throwaway container a backup is restored into (a Docker name: at most 128 bytes).
pub fn scratch_name(namespace: &str, backup: &str) -> String {
    let mut name = format!("berth-verify-{namespace}-{backup}");
    name.truncate(128);
    name
}

/// The status while `step` runs.
pub fn in_progress(
    mut status: DependencyResourceBackupStatus,
    step: &str,
    stamp: Stamp,
) -> DependencyResourceBackupStatus {
    status.status = BackupStatus::Pending;
    status.step = Some(step.to_string());
    status.started_at.get_or_insert(Time(stamp.now));
    // A database backup records its kind before its first step; a volume backup has none.
    let volume = status.dependency_kind.is_none();
    let message = match (step, volume) {
        (STORING_UPLOAD, _) => "storing the uploaded dump sealed at its target",
        (DUMPING, false) => "dumping the database and storing it sealed at its target",
        (DUMPING, true) => "reading the volume's files and storing them sealed at the target",
        (_, false) => "restoring the stored artifact into a throwaway database",
        (_, true) => "extracting the stored artifact into a throwaway volume",
    };
    condition::merge(
        &mut status.conditions,
        stamp.fails(READY, reason::IN_PROGRESS, message),
    );
    status
}

/// The status of a backup taken, stored and restored once.
pub fn verified(
    mut status: DependencyResourceBackupStatus,
    artifact: BackupArtifact,
    verification: BackupVerification,
    stamp: Stamp,
) -> DependencyResourceBackupStatus {
    let into = match verification.tree {
        Some(_) => "extracted into a throwaway volume and read back",
        None => "restored into a throwaway database",
    };
    let message = format!("{into}: {}", what_was_counted(&verification));
    status.status = BackupStatus::Ready;
    status.step = None;
    status.completed_at = Some(Time(stamp.now));
    status.artifact = Some(artifact);
    status.verification = Some(verification);
    condition::merge(
        &mut status.conditions,
        stamp.holds(READY, reason::VERIFIED, message),
    );
    status
}

/// What a test restore counted, for people: "2 tables, 1002 rows" or "1000 keys".
pub fn what_was_counted(verification: &BackupVerification) -> String {
    let v = verification;
    if let Some(tree) = &v.tree {
        return tree_contents(tree);
    }
    counted_contents(v.tables, v.rows, v.keys).unwrap_or_else(|| "nothing counted".into())
}

/// A volume tree in words: `3 files (12 bytes), 2 directories, 1 link`.
pub fn tree_contents(tree: &VolumeTree) -> String {
    format!(
        "{} files ({} bytes), {} directories, {} links",
        tree.files, tree.file_bytes, tree.directories, tree.links
    )
}

/// The status of a backup that cannot be used; the artifact stays recorded when one was
/// stored (a verification failure says what is wrong with it).
pub fn failed(
    mut status: DependencyResourceBackupStatus,
    failure: &Failure,
    stamp: Stamp,
) -> DependencyResourceBackupStatus {
    status.status = BackupStatus::Failed;
    status.step = None;
    status.failed_at = Some(Time(stamp.now));
    status.failure_code = Some(failure.code.to_string());
    status.failure_message = Some(failure.message.clone());
    condition::merge(
        &mut status.conditions,
        stamp.fails(READY, reason::FAILED, failure.message.clone()),
    );
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::testing::stamp;
    use berth_crds::condition::ConditionStatus;

    #[test]
    fn an_artifact_lives_under_its_namespace_and_dependency_and_is_named_when_whole() {
        let path = ArtifactPath::of("/var/backups/", "org-acme", "db", "db-b1");
        assert_eq!(path.file, "/var/backups/org-acme/db/db-b1.berth-backup");
        assert_eq!(
            path.upload_command(),
            "mkdir -p '/var/backups/org-acme/db' && cat > '/var/backups/org-acme/db/db-b1.berth-backup.partial'"
        );
        assert_eq!(
            path.commit_command(),
            "mv -f '/var/backups/org-acme/db/db-b1.berth-backup.partial' '/var/backups/org-acme/db/db-b1.berth-backup'"
        );
        assert_eq!(
            path.location("store"),
            "server-directory://store/var/backups/org-acme/db/db-b1.berth-backup"
        );
    }

    #[test]
    fn an_uploaded_dump_is_read_from_its_own_path_and_refused_when_it_changed() {
        let path = berth_crds::backup::upload_path("org-acme", "db-up-1");
        assert_eq!(path, ".berth/uploads/org-acme.db-up-1.dump");
        assert_eq!(read_upload_command(&path), format!("cat -- '{path}'"));
        assert_eq!(remove_upload_command(&path), format!("rm -f -- '{path}'"));
        let uploaded = UploadedDump {
            bytes: 10,
            sha256: "a".repeat(64),
            file_name: None,
        };
        assert!(upload_changed(&uploaded, &"a".repeat(64)).is_none());
        let changed = upload_changed(&uploaded, &"b".repeat(64)).unwrap();
        assert_eq!(changed.code, code::DUMP_FAILED);
        assert!(
            changed.message.contains("upload it again"),
            "{}",
            changed.message
        );
    }

    #[test]
    fn a_location_names_its_server_and_file_again() {
        let path = ArtifactPath::of("/b", "ns", "db", "db-1");
        let (server, read) = ArtifactPath::from_location(&path.location("store")).unwrap();
        assert_eq!((server.as_str(), read), ("store", path));
        assert_eq!(ArtifactPath::from_location("s3://bucket/x"), None);
        assert_eq!(ArtifactPath::from_location("server-directory:///x/y"), None);
    }

    #[test]
    fn the_dump_and_restore_name_the_database_and_never_a_password() {
        let over = restore_over_command("/s", "db");
        assert!(over.contains("--clean --if-exists"), "{over}");
        assert!(
            over.contains("--single-transaction --exit-on-error"),
            "{over}"
        );
        let dump = dump_command("/run/docker.sock", "berth-dep-org-db");
        assert_eq!(
            dump,
            "docker -H 'unix:///run/docker.sock' exec 'berth-dep-org-db' pg_dump -Fc -U berth -d app"
        );
        let restore = restore_command("/run/docker.sock", "scratch");
        assert!(
            restore.contains("pg_restore -U berth -d app --no-owner"),
            "{restore}"
        );
        assert!(restore.contains("--exit-on-error"), "{restore}");
        assert!(count_command("/s", "scratch").contains("query_to_xml"));
    }

    #[test]
    fn counts_are_read_from_psql_and_anything_else_is_not() {
        assert_eq!(parse_counts("2|1002\n"), Some((2, 1002)));
        assert_eq!(parse_counts("ERROR"), None);
        assert_eq!(parse_counts("x|1"), None);
    }

    #[test]
    fn statuses_say_ready_only_once_verified() {
        let s = stamp();
        let dumping = in_progress(Default::default(), DUMPING, s);
        assert_eq!(dumping.status, BackupStatus::Pending);
        let ready = condition::find(&dumping.conditions, READY).unwrap();
        assert_eq!(ready.status, ConditionStatus::False);
        let failure = Failure::new(code::DUMP_FAILED, "pg_dump exited 1");
        let failed = failed(dumping, &failure, s);
        assert_eq!(failed.status, BackupStatus::Failed);
        assert_eq!(failed.failure_code.as_deref(), Some("dump-failed"));
        let ready = condition::find(&failed.conditions, READY).unwrap();
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::False, "BackupFailed")
        );
        assert!(scratch_name("org", &"b".repeat(200)).len() <= 128);
    }

    #[test]
    fn a_verification_says_what_its_kind_counts() {
        let mut counted = BackupVerification {
            tables: Some(2),
            rows: Some(1002),
            keys: None,
            tree: None,
            dump_bytes: 10,
            seconds: 0.1,
            verified_at: Time(stamp().now),
        };
        assert_eq!(what_was_counted(&counted), "2 tables, 1002 rows");
        (counted.tables, counted.rows, counted.keys) = (None, None, Some(1000));
        assert_eq!(what_was_counted(&counted), "1000 keys");
    }
}
