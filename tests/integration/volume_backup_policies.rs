//! Storage volume backup policies over REST (Appaloft's `/storage-volumes/backup-policies`) and
//! the backup plan (`POST /storage-volumes/{id}/backups/plan`): bad input is refused by field and
//! creates nothing; the plan names what would stop a backup and then what a backup would do; a
//! policy on every minute keeping 2 takes a proven backup at each slot, keeps the newest two
//! (objects and files at the target agree) and shows its restore point; a change keeps the
//! policy's id and what it does not name.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use berth_crds::backup::BackupStatus;
use berth_crds::volume_backup::StorageVolumeBackup;
use berth_tests::{client, eventually};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::dependency_resources::docker;
use crate::shim_dependency_resources::{Setup, setup};
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(300);
const POLICIES: &str = "/storage-volumes/backup-policies";

#[tokio::test]
async fn a_volume_policy_backs_up_each_minute_keeps_two_and_its_plan_says_what_blocks() {
    let s = setup().await;
    let created = s
        .member
        .post(
            "/storage-volumes",
            json!({"projectId": s.shop, "environmentId": s.prod, "name": "Media", "kind": "named-volume"}),
        )
        .await
        .expect(201);
    let volume = created["id"].as_str().unwrap().to_string();
    let docker_volume = format!("berth-{}-{volume}", s.org.namespace);
    docker(&["volume", "create", &docker_volume]);
    let (ok, out) = docker(&[
        "run",
        "--rm",
        "-v",
        &format!("{docker_volume}:/v"),
        "berth/busybox:1",
        "sh",
        "-c",
        "mkdir -p /v/img && echo one > /v/img/a && echo two > /v/img/b && echo three > /v/c",
    ]);
    assert!(ok, "{out}");

    let plan = planned(
        &s,
        &volume,
        json!({"serverId": s.server, "requestedConsistency": "quiesced"}),
    )
    .await;
    assert_eq!(plan["schemaVersion"], "storage-volumes.backup-plan/v1");
    assert_eq!(blocker_codes(&plan), ["target-unresolved"], "{plan}");
    assert_eq!(plan["serverId"], s.server.as_str());
    assert_eq!(plan["consistency"], "quiesced");
    invalid(
        s.member
            .post(
                &format!("/storage-volumes/{volume}/backups/plan"),
                json!({"requestedConsistency": "frozen"}),
            )
            .await,
        "requestedConsistency",
    );

    let directory = format!("/tmp/berth-test-volume-policies/{}", s.org.namespace);
    let target = json!({"name": "Offsite", "kind": "server-directory", "serverId": s.server, "path": directory});
    s.admin.post("/backup-targets", target).await.expect(201);
    refusals(&s, &volume).await;

    let plan = eventually(WAIT, "a plan with no blocker", || async {
        let plan = planned(&s, &volume, json!({"serverId": s.server})).await;
        plan["blockers"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(plan)
    })
    .await;
    assert_eq!(plan["targetProviderKey"], "server-directory", "{plan}");
    assert_eq!(
        plan["localOnly"], true,
        "the target is on the volume's own server: {plan}"
    );
    assert_eq!(plan["sourceAdapterKey"], "tar-volume");
    assert_eq!(
        s.member
            .get(&format!("/storage-volumes/{volume}/backups"))
            .await
            .ok()["items"],
        json!([]),
        "a plan takes no backup"
    );

    let body = json!({"storageVolumeId": volume, "serverId": s.server, "schedule": "* * * * *", "keepLast": 2});
    let answer = s.member.post(POLICIES, body).await.expect(201);
    let policy = answer["id"].as_str().unwrap().to_string();
    let shown = s.member.get(&format!("{POLICIES}/{policy}")).await.ok();
    assert_eq!(
        shown["schemaVersion"],
        "storage-volume-backup-policies.show/v1"
    );
    assert_eq!(shown["policy"]["scheduledEnabled"], true);
    assert_eq!(shown["policy"]["keepLast"], 2);

    let slots = Mutex::new(BTreeSet::new());
    let (kept, shown) = eventually(WAIT, "three slots taken, the newest two kept", || async {
        let listed = s
            .member
            .get(&format!("/storage-volumes/{volume}/backups"))
            .await
            .ok();
        let items = listed["items"].as_array().cloned().unwrap_or_default();
        let seen = {
            let mut slots = slots.lock().unwrap();
            slots.extend(
                items
                    .iter()
                    .filter_map(|b| b["scheduledFor"].as_str().map(String::from)),
            );
            slots.len()
        };
        let ready = items.iter().filter(|b| b["status"] == "ready").count();
        let shown = s.member.get(&format!("{POLICIES}/{policy}")).await.ok();
        let settled = items.len() == 2 && ready == 2 && shown["policy"]["backupsKept"] == 2;
        (seen >= 3 && settled).then_some((items, shown))
    })
    .await;
    let slots = slots.into_inner().unwrap();
    let newest: Vec<&String> = slots.iter().rev().take(2).collect();
    for backup in &kept {
        assert_eq!(backup["policyId"], policy.as_str(), "{backup}");
        assert_eq!(backup["retentionStatus"], "retained", "{backup}");
        assert_eq!(backup["tree"]["files"], 3, "{backup}");
        let slot = backup["scheduledFor"].as_str().unwrap().to_string();
        assert!(
            newest.contains(&&slot),
            "the newest two slots are kept: {backup}"
        );
    }
    let record = &shown["policy"];
    assert_eq!(record["lastStatus"], "succeeded", "{record}");
    assert_eq!(record["lastVerifiedBackup"]["files"], 3, "{record}");
    assert!(record["nextRunAt"].is_string(), "{record}");
    assert_eq!(record["ready"], true, "{record}");
    eventually(WAIT, "the files at the target are the two kept", || async {
        let listed = s
            .member
            .get(&format!("/storage-volumes/{volume}/backups"))
            .await
            .ok();
        let mut expected: Vec<String> = listed["items"]
            .as_array()?
            .iter()
            .map(|b| format!("{}.berth-backup", b["id"].as_str().unwrap()))
            .collect();
        expected.sort();
        (artifacts(&directory, &s, &volume) == expected && expected.len() == 2).then_some(())
    })
    .await;

    // A change keeps the id and what it does not name; disabled, no next run.
    let change = json!({"storageVolumeId": volume, "scheduledEnabled": false});
    let answer = s.member.post(POLICIES, change).await.expect(200);
    assert_eq!(answer["id"], policy.as_str());
    let record = eventually(WAIT, "the policy disabled", || async {
        let shown = s.member.get(&format!("{POLICIES}/{policy}")).await.ok();
        let record = shown["policy"].clone();
        (record["scheduledEnabled"] == false && record["nextRunAt"].is_null()).then_some(record)
    })
    .await;
    assert_eq!(record["keepLast"], 2, "{record}");
    assert_eq!(record["schedule"], "* * * * *", "{record}");
    let listed = s
        .member
        .get(&format!("{POLICIES}?storageVolumeId={volume}"))
        .await
        .ok();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    seen_by_the_cli(&s, &volume, &policy).await;
    deleted_after_a_final_backup(&s, &volume).await;

    docker(&["volume", "rm", "-f", &docker_volume]);
    let _ = std::fs::remove_dir_all(&directory);
}

/// `berth volumes policies` lists the policy with its schedule and proven files; `berth volumes
/// backup --plan` prints the plan and takes nothing; `berth volumes policy` changes it.
async fn seen_by_the_cli(s: &Setup, volume: &str, policy: &str) {
    let berth = Berth::new();
    let token = s.member.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let run = |args: Vec<String>| {
        let berth = &berth;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            berth.run_with(&binary(), &args, None, &env).await.ok()
        }
    };
    let table = run(vec![
        "volumes".into(),
        "policies".into(),
        "--volume".into(),
        volume.into(),
    ])
    .await;
    let line = table
        .lines()
        .find(|l| l.contains(policy))
        .unwrap_or_default();
    assert!(
        line.contains("* * * * * (UTC)") && line.contains(&s.server),
        "{table}"
    );
    let before = s
        .member
        .get(&format!("/storage-volumes/{volume}/backups"))
        .await
        .ok();
    let plan = run(vec![
        "volumes".into(),
        "backup".into(),
        volume.into(),
        "--server".into(),
        s.server.clone(),
        "--plan".into(),
        "--quiesced".into(),
    ])
    .await;
    assert!(
        plan.contains("server-directory") && plan.contains("quiesced"),
        "{plan}"
    );
    let after = s
        .member
        .get(&format!("/storage-volumes/{volume}/backups"))
        .await
        .ok();
    assert_eq!(before["items"], after["items"], "a plan takes no backup");
    let saved = run(vec![
        "volumes".into(),
        "policy".into(),
        volume.into(),
        "--keep-last".into(),
        "4".into(),
    ])
    .await;
    assert!(saved.contains(policy), "{saved}");
    let shown = s.member.get(&format!("{POLICIES}/{policy}")).await.ok();
    assert_eq!(shown["policy"]["keepLast"], 4, "{shown}");
}

/// Deleting the volume its policy covers takes a last proven backup first; the volume goes
/// after it, the backup stays.
async fn deleted_after_a_final_backup(s: &Setup, volume: &str) {
    let path = format!("/storage-volumes/{volume}");
    invalid(
        s.member
            .delete(&path, json!({"skipFinalBackupConfirmation": "Photos"}))
            .await,
        "skipFinalBackupConfirmation",
    );
    s.member.delete(&path, json!({})).await.expect(200);
    eventually(WAIT, "the volume gone after its final backup", || async {
        let reply = s.member.get(&path).await;
        (reply.status == 404).then_some(())
    })
    .await;
    let backups = Api::<StorageVolumeBackup>::namespaced(client().await, &s.org.namespace);
    let all = backups.list(&ListParams::default()).await.unwrap().items;
    let last = all
        .iter()
        .find(|b| b.name_any().starts_with(&format!("{volume}-final-")))
        .expect("a final backup");
    let status = last.status.as_ref().expect("its status");
    assert_eq!(status.status, BackupStatus::Ready, "{last:?}");
    let tree = status.verification.as_ref().and_then(|v| v.tree.as_ref());
    assert_eq!(tree.map(|t| t.files), Some(3), "{last:?}");
    assert!(
        last.spec.slot.policy_id.is_none(),
        "not the policy's: its pruning keeps it"
    );
}

async fn planned(s: &Setup, volume: &str, body: Value) -> Value {
    s.member
        .post(&format!("/storage-volumes/{volume}/backups/plan"), body)
        .await
        .expect(200)
}

fn blocker_codes(plan: &Value) -> Vec<String> {
    plan["blockers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["code"].as_str().unwrap().to_string())
        .collect()
}

/// Bad policies are refused by field and make nothing.
async fn refusals(s: &Setup, volume: &str) {
    let with = |extra: Value| {
        let mut body = json!({"storageVolumeId": volume, "serverId": s.server});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    invalid(
        s.member.post(POLICIES, with(json!({}))).await,
        "scheduleIntervalHours",
    );
    invalid(
        s.member
            .post(POLICIES, with(json!({"schedule": "every day"})))
            .await,
        "schedule",
    );
    invalid(
        s.member
            .post(
                POLICIES,
                with(json!({"scheduleIntervalHours": 6, "requestedConsistency": "frozen"})),
            )
            .await,
        "requestedConsistency",
    );
    invalid(
        s.member
            .post(
                POLICIES,
                with(json!({"scheduleIntervalHours": 6, "targetId": "nowhere"})),
            )
            .await,
        "targetId",
    );
    let unknown = json!({"storageVolumeId": "vol-missing", "scheduleIntervalHours": 6});
    let refused = s
        .member
        .post(POLICIES, unknown)
        .await
        .error(404, "not_found");
    assert_eq!(refused["details"]["field"], "storageVolumeId", "{refused}");
    assert_eq!(
        s.member.get(POLICIES).await.ok()["items"],
        json!([]),
        "nothing was made"
    );
}

/// The artifacts in the target directory's folder for `volume`.
fn artifacts(directory: &str, s: &Setup, volume: &str) -> Vec<String> {
    let folder = format!("{directory}/{}/{volume}", s.org.namespace);
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".berth-backup"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
