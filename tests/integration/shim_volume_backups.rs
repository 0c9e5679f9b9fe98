//! Storage volume backups over REST (Appaloft's `/storage-volumes/{id}/backups` and
//! `/storage-volume-backups/{backupId}` routes): bad input is refused by field and creates
//! nothing; a volume whose files are not on the server fails saying so; a named volume with
//! nested directories, a symlink, modes, owners and a binary file is backed up sealed (no tar
//! header at the target) and proven, then restored into a new volume and in place (its
//! running user stopped and started again) — each time the files, as `find` and `sha256sum`
//! see them in a container, are exactly the backed-up ones.

use std::time::Duration;

use berth_tests::eventually;
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::dependency_resources::docker;
use crate::shim_dependency_resources::{Setup, setup};
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(180);
const BUSYBOX: &str = "berth/busybox:1";

/// Runs `script` in busybox with the Docker volume `volume` at /v.
fn in_volume(volume: &str, script: &str) -> String {
    let mount = format!("{volume}:/v");
    let (ok, out) = docker(&["run", "--rm", "-v", &mount, BUSYBOX, "sh", "-c", script]);
    assert!(ok, "{script}: {out}");
    out
}

/// The files of `volume` as a person would compare them: every path with its type, mode,
/// owner and size, every file's hash, every link's target.
fn fingerprint(volume: &str) -> String {
    in_volume(
        volume,
        "cd /v && find . -mindepth 1 -exec stat -c '%n %F %a %u:%g %s' {} + | sort && \
         find . -type f -exec sha256sum {} + | sort && \
         find . -type l -exec readlink {} + | sort",
    )
}

async fn ended_backup(s: &Setup, id: &str) -> Value {
    eventually(WAIT, "the volume backup ended", || async {
        let shown = s
            .member
            .get(&format!("/storage-volume-backups/{id}"))
            .await
            .ok();
        (shown["backup"]["status"] != "pending").then_some(shown)
    })
    .await
}

async fn ended_restore(s: &Setup, backup: &str, attempt: &str) -> Value {
    eventually(WAIT, "the volume restore ended", || async {
        let shown = s
            .member
            .get(&format!("/storage-volume-backups/{backup}"))
            .await
            .ok();
        let latest = shown["backup"]["latestRestoreAttempt"].clone();
        (latest["attemptId"] == attempt && latest["status"] != "pending").then_some(latest)
    })
    .await
}

#[tokio::test]
async fn shim_volume_backup_is_proven_and_restored_into_a_new_volume_and_in_place() {
    let s = setup().await;
    let created = s
        .member
        .post(
            "/storage-volumes",
            json!({"projectId": s.shop, "environmentId": s.prod, "name": "Uploads", "kind": "named-volume"}),
        )
        .await
        .expect(201);
    let volume = created["id"].as_str().unwrap().to_string();
    let docker_volume = format!("berth-{}-{volume}", s.org.namespace);
    let backups = format!("/storage-volumes/{volume}/backups");

    // Bad input names its field and creates nothing.
    invalid(s.member.post(&backups, json!({})).await, "serverId");
    let with = |extra: Value| {
        let mut body = json!({"serverId": s.server});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    invalid(
        s.member
            .post(&backups, with(json!({"requestedConsistency": "frozen"})))
            .await,
        "requestedConsistency",
    );
    invalid(
        s.member.post(&backups, with(json!({"when": "now"}))).await,
        "when",
    );
    s.member
        .post(&backups, with(json!({})))
        .await
        .error(409, "dependency_resource_backup_blocked");
    let directory = format!("/tmp/berth-test-volume-backups/{}", s.org.namespace);
    let target = json!({"name": "Offsite", "kind": "server-directory", "serverId": s.server, "path": directory});
    s.admin.post("/backup-targets", target).await.expect(201);
    assert_eq!(s.member.get(&backups).await.ok()["items"], json!([]));

    // The files are not on the server yet: failed, saying so, nothing stored.
    let early = s.member.post(&backups, with(json!({}))).await.expect(201);
    let early = ended_backup(&s, early["id"].as_str().unwrap()).await;
    assert_eq!(early["backup"]["status"], "failed", "{early}");
    let message = early["backup"]["failureMessage"].as_str().unwrap();
    assert!(
        message.contains(&format!("no Docker volume {docker_volume}")),
        "{message}"
    );

    // Files with depth, a link, modes, owners and binary content.
    docker(&["volume", "create", &docker_volume]);
    in_volume(
        &docker_volume,
        "mkdir -p /v/a/b /v/empty && echo hello > /v/a/b/note.txt && \
         head -c 300000 /dev/urandom > /v/blob.bin && chmod 600 /v/blob.bin && \
         chown 1000:1001 /v/a/b/note.txt && ln -s a/b/note.txt /v/link && chmod 750 /v/a",
    );
    let original = fingerprint(&docker_volume);

    let created = s
        .member
        .post(&backups, with(json!({"description": "before the upgrade"})))
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let shown = ended_backup(&s, &id).await;
    assert_eq!(shown["schemaVersion"], "storage-volumes.backups.show/v1");
    let backup = &shown["backup"];
    assert_eq!(backup["status"], "ready", "{shown}");
    assert_eq!(backup["sourceAdapterKey"], "tar-volume");
    assert_eq!(backup["consistency"], "crash-consistent");
    assert_eq!(backup["storageVolumeKind"], "named-volume");
    let tree = &backup["tree"];
    assert_eq!(
        (
            &tree["files"],
            &tree["directories"],
            &tree["links"],
            &tree["fileBytes"]
        ),
        (&json!(2), &json!(3), &json!(1), &json!(300_006)),
        "{shown}"
    );
    let file = format!("{directory}/{}/{volume}/{id}.berth-backup", s.org.namespace);
    let stored = std::fs::read(&file).expect("the artifact at the target");
    assert_eq!(stored.len() as i64, backup["sizeBytes"]);
    assert!(stored.starts_with(b"BERTHBK1"), "sealed");
    assert!(
        !stored.windows(5).any(|w| w == b"ustar") && !stored.windows(5).any(|w| w == b"hello"),
        "no tar header nor file content in clear at the target"
    );
    let scratch = format!("berth-verify-{}-{id}", s.org.namespace);
    assert!(
        !docker(&["volume", "inspect", &scratch]).0,
        "the proof's volume is gone"
    );
    let listed = s.member.get(&backups).await.ok();
    assert_eq!(listed["schemaVersion"], "storage-volumes.backups.list/v1");
    assert_eq!(listed["items"][0]["id"], id.as_str(), "newest first");

    listed_by_the_cli(&s, &volume, &id).await;

    // Into a new volume: the source untouched, the copy identical.
    let restore = format!("/storage-volume-backups/{id}/restore");
    invalid(
        s.member
            .post(&restore, json!({"targetMode": "in-place"}))
            .await,
        "acknowledgeDestructiveRestore",
    );
    invalid(
        s.member
            .post(&restore, json!({"targetMode": "sideways"}))
            .await,
        "targetMode",
    );
    let answer = s
        .member
        .post(&restore, json!({"restoredVolumeName": "Uploads copy"}))
        .await
        .expect(202);
    let restored_volume = answer["restoredStorageVolumeId"]
        .as_str()
        .unwrap()
        .to_string();
    let attempt = ended_restore(&s, &id, answer["id"].as_str().unwrap()).await;
    assert_eq!(attempt["status"], "completed", "{attempt}");
    assert_eq!(
        attempt["target"]["restoredVolumeId"],
        restored_volume.as_str()
    );
    assert_eq!(attempt["tree"], backup["tree"], "{attempt}");
    let copy = format!("berth-{}-{restored_volume}", s.org.namespace);
    assert_eq!(
        fingerprint(&copy),
        original,
        "the new volume holds the backed-up files"
    );
    let new_volume = s
        .member
        .get(&format!("/storage-volumes/{restored_volume}"))
        .await
        .ok();
    assert_eq!(
        new_volume["storageVolume"]["environmentId"],
        s.prod.as_str(),
        "{new_volume}"
    );

    // In place, while a container uses the volume: it is stopped meanwhile and runs again.
    in_volume(
        &docker_volume,
        "rm /v/blob.bin && echo changed > /v/a/b/note.txt && touch /v/new",
    );
    assert_ne!(fingerprint(&docker_volume), original);
    let user = format!("berth-test-volume-user-{}", s.org.namespace);
    let mount = format!("{docker_volume}:/data");
    let (ran, out) = docker(&[
        "run", "-d", "--name", &user, "-v", &mount, BUSYBOX, "sleep", "600",
    ]);
    assert!(ran, "{out}");
    let answer = s
        .member
        .post(
            &restore,
            json!({"targetMode": "in-place", "acknowledgeDestructiveRestore": true}),
        )
        .await
        .expect(202);
    assert!(answer["restoredStorageVolumeId"].is_null(), "{answer}");
    let attempt = ended_restore(&s, &id, answer["id"].as_str().unwrap()).await;
    assert_eq!(attempt["status"], "completed", "{attempt}");
    assert_eq!(attempt["target"]["destructiveInPlace"], true);
    assert_eq!(
        fingerprint(&docker_volume),
        original,
        "the volume holds the backed-up files"
    );
    let (_, running) = docker(&["inspect", "-f", "{{.State.Running}}", &user]);
    assert_eq!(running, "true", "the volume's user runs again");

    docker(&["rm", "-fv", &user]);
    docker(&["volume", "rm", "-f", &docker_volume, &copy]);
    let _ = std::fs::remove_dir_all(&directory);
}

/// `berth volumes backups` shows the backup ready with its tree; an in-place restore without
/// `--yes` is refused before anything is sent.
async fn listed_by_the_cli(s: &Setup, volume: &str, backup: &str) {
    let berth = Berth::new();
    let token = s.member.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let table = berth
        .run_with(&binary(), &["volumes", "backups", volume], None, &env)
        .await
        .ok();
    let line = table
        .lines()
        .find(|l| l.contains(backup))
        .unwrap_or_default();
    assert!(
        line.contains("ready") && line.contains("2 files (300006 bytes), 3 dirs, 1 links"),
        "{table}"
    );
    let refused = berth
        .run_with(
            &binary(),
            &["volumes", "restore", backup, "--in-place"],
            None,
            &env,
        )
        .await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("--yes"), "{refused:?}");
}
