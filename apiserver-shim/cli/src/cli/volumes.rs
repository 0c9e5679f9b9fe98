//! `berth volumes`: storage volumes a resource mounts (attach one with `berth config
//! attach-storage`).

use clap::Subcommand;

use super::backups::PolicyRulesArgs;

#[derive(Subcommand, Debug)]
pub enum Volumes {
    /// List storage volumes with the resources they are attached to.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth volumes list\n  berth volumes list --project Shop --environment prod"
    )]
    List {
        /// Only this project's volumes (id, slug or name).
        #[arg(long)]
        project: Option<String>,
        /// Only this environment's volumes (id or name).
        #[arg(long)]
        environment: Option<String>,
    },
    /// Show a storage volume and where it is attached.
    #[command(after_help = "Example:\n  berth volumes show uploads")]
    Show {
        /// Volume id, slug or name.
        volume: String,
    },
    /// Create a storage volume in an environment: a Docker volume Berth names (named-volume,
    /// the default), or a directory of the server mounted as it is (bind-mount, with
    /// --source-path).
    #[command(
        after_help = "Examples:\n  berth volumes create uploads --project Shop --environment prod\n  berth volumes create media --project Shop --environment prod --source-path /srv/media\n  berth config attach-storage --resource web uploads /var/lib/app/uploads"
    )]
    Create(CreateVolumeArgs),
    /// Delete a storage volume no resource attaches (detach it first). Its data on servers
    /// (the Docker volume or the directory) is kept. One a backup policy covers is backed up
    /// once more first.
    #[command(
        visible_alias = "rm",
        after_help = "Examples:\n  berth volumes delete uploads\n  berth volumes delete uploads --skip-final-backup Uploads"
    )]
    Delete {
        /// Volume id, slug or name.
        volume: String,
        /// Delete a volume a backup policy covers without the final backup it otherwise gets
        /// first: repeat the volume's name.
        #[arg(long, value_name = "NAME")]
        skip_final_backup: Option<String>,
    },
    /// Back up a storage volume's files now: read on the server as a tar archive, sealed to a
    /// backup target and proven by extracting it into a throwaway volume (`berth volumes
    /// backups` follows it).
    #[command(
        after_help = "Examples:\n  berth volumes backup uploads\n  berth volumes backup uploads --server srv-abc --target bkt-abc\n  berth volumes backup uploads --quiesced"
    )]
    Backup(BackupVolumeArgs),
    /// Set a storage volume's backup policy (created on first use, then changed in the options
    /// given): backups of its files on a schedule, each proven by extracting it, kept by rules
    /// (no rule: the newest 7), the rest pruned at the target.
    #[command(
        after_help = "Examples:\n  berth volumes policy uploads --every-hours 6 --keep-last 8\n  berth volumes policy uploads --schedule '15 3 * * *' --keep-daily 7 --keep-weekly 4 --quiesced\n  berth volumes policy uploads --disable"
    )]
    Policy {
        /// Volume id, slug or name.
        volume: String,
        /// The server whose copy is read (id, name or host); the server of a resource
        /// attaching the volume when left out.
        #[arg(long)]
        server: Option<String>,
        /// Stop the containers using the volume while its files are copied (each backup).
        #[arg(long)]
        quiesced: bool,
        #[command(flatten)]
        rules: PolicyRulesArgs,
    },
    /// List storage volume backup policies: schedule, next run, backups kept and the newest
    /// proven restore point.
    #[command(
        after_help = "Examples:\n  berth volumes policies\n  berth volumes policies --volume uploads"
    )]
    Policies {
        /// Only this volume's (id, slug or name).
        #[arg(long)]
        volume: Option<String>,
    },
    /// List a storage volume's backups, newest first, with the tree each proof read back.
    #[command(after_help = "Example:\n  berth volumes backups uploads")]
    Backups {
        /// Volume id, slug or name.
        volume: String,
    },
    /// Restore a ready volume backup on the server it was taken on: into a new volume of its
    /// environment (the default), or over its own volume with --in-place --yes (the
    /// containers using it are stopped meanwhile).
    #[command(
        after_help = "Examples:\n  berth volumes restore vol-abc-bk-xyz --name 'uploads copy'\n  berth volumes restore vol-abc-bk-xyz --in-place --yes"
    )]
    Restore {
        /// Backup id.
        backup: String,
        /// The new volume's name (new-volume restores).
        #[arg(long, conflicts_with = "in_place")]
        name: Option<String>,
        /// Write over the backup's own volume.
        #[arg(long)]
        in_place: bool,
        /// Acknowledge that an in-place restore replaces the volume's files.
        #[arg(long)]
        yes: bool,
    },
}

// What `berth volumes create` makes, and where. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct CreateVolumeArgs {
    /// Display name; its slug must be free in the environment.
    pub name: String,
    /// Project id, slug or name.
    #[arg(long)]
    pub project: String,
    /// Environment id or name (of that project).
    #[arg(long)]
    pub environment: String,
    /// named-volume or bind-mount (default: bind-mount with --source-path, else
    /// named-volume).
    #[arg(long)]
    pub kind: Option<String>,
    /// Absolute path of a directory on the server (bind-mount only).
    #[arg(long)]
    pub source_path: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
}

// What `berth volumes backup` backs up, where to, and how. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct BackupVolumeArgs {
    /// Volume id, slug or name.
    pub volume: String,
    /// The server whose copy is read (id, name or host); the server of a resource
    /// attaching the volume when left out.
    #[arg(long)]
    pub server: Option<String>,
    /// Backup target id; the organization's only one when left out.
    #[arg(long)]
    pub target: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    /// Stop the containers using the volume while its files are copied on the server
    /// (seconds, for most volumes), then read the copy: files an application writes
    /// together are backed up together.
    #[arg(long)]
    pub quiesced: bool,
    /// Only say what the backup would do and what would stop it; take nothing.
    #[arg(long)]
    pub plan: bool,
}
