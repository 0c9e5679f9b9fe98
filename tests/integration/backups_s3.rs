//! Backups to a bucket of a real S3-compatible store (issue 42): the stack's Garage. A
//! PostgreSQL's backup larger than one upload part goes up sealed (the object read back
//! directly from the store holds no plaintext and matches the recorded checksum), is proven by
//! a test restore, restores into a second database with the same rows, and is removed from the
//! bucket with its backup object. A target whose keys the store refuses says so on the target,
//! and a backup to it fails with the store's answer, never `ready`, no key shown anywhere.
//! Over REST and the CLI an administrator adds a bucket target (bad fields refused by name,
//! nothing made); its keys go to a Secret the target owns and are never answered back.

use std::time::Duration;

use berth_crds::backup::{BackupStatus, DependencyResourceBackup, RestoreStatus};
use berth_crds::condition::ConditionStatus;
use berth_crds::dependency_resource::DependencyResource;
use berth_tests::{TestNamespace, client, eventually, stack_env};
use kube::api::DeleteParams;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use serde_json::json;
use sha2::{Digest, Sha256};

use berth_crds::member::OrganizationRole;
use berth_tests::rest::TestOrg;
use k8s_openapi::api::core::v1::Secret;

use crate::backups::{backup, ended, event_notes, restore_ended, target_ready};
use crate::cli::{Berth, binary};
use crate::dependency_resources::{
    assert_not_shown, create, local_server, psql, registry_image, wait_ready,
};
use crate::deployments::apply;
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(240);
/// Rows whose dump (compressed by pg_dump) is larger than one 8 MiB upload part.
const ROWS: i64 = 400_000;

/// The stack's bucket, as the test reads it directly.
fn stack_bucket() -> (Bucket, Credentials) {
    let endpoint = url::Url::parse(&stack_env("BERTH_S3_ENDPOINT")).unwrap();
    let bucket = Bucket::new(
        endpoint,
        UrlStyle::Path,
        stack_env("BERTH_S3_BUCKET"),
        stack_env("BERTH_S3_REGION"),
    )
    .unwrap();
    let credentials = Credentials::new(
        stack_env("BERTH_S3_ACCESS_KEY_ID"),
        stack_env("BERTH_S3_SECRET_ACCESS_KEY"),
    );
    (bucket, credentials)
}

/// The object under `key`: its status and bytes.
async fn object(key: &str) -> (u16, Vec<u8>) {
    let (bucket, credentials) = stack_bucket();
    let url = bucket
        .get_object(Some(&credentials), key)
        .sign(Duration::from_secs(300));
    let answer = reqwest::get(url).await.expect("the store answers");
    let status = answer.status().as_u16();
    (status, answer.bytes().await.unwrap().to_vec())
}

/// A Secret with keys to the stack's bucket (`secret` the secret key given).
pub(crate) fn keys(ns: &TestNamespace, name: &str, secret: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": name, "namespace": ns.name },
        "stringData": {
            "accessKeyId": stack_env("BERTH_S3_ACCESS_KEY_ID"),
            "secretAccessKey": secret,
        },
    })
    .to_string()
}

/// A target in the stack's bucket under the test namespace's prefix.
pub(crate) fn bucket_target(ns: &TestNamespace, name: &str, secret: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "BackupTarget",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": { "name": name, "kind": "s3",
                  "s3": { "endpoint": stack_env("BERTH_S3_ENDPOINT"),
                          "bucket": stack_env("BERTH_S3_BUCKET"),
                          "region": stack_env("BERTH_S3_REGION"),
                          "pathStyle": true, "prefix": ns.name,
                          "credentialsSecretRef": { "name": secret } } },
    })
    .to_string()
}

#[tokio::test]
async fn a_backup_in_a_bucket_is_sealed_proven_restored_into_another_database_and_removed() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup-s3").await;
    local_server(&ns).await;
    let image = registry_image("berth/postgres:15");
    create(&ns, "db", "postgres", &image).await;
    create(&ns, "copy", "postgres", &image).await;
    let dependencies = ns.api::<DependencyResource>();
    wait_ready(&dependencies, "db").await;
    wait_ready(&dependencies, "copy").await;
    let source = format!("berth-dep-{}-db", ns.name);
    let (written, out) = psql(
        &source,
        &format!(
            "create table events (id int primary key, digest text); \
             insert into events select g, md5(g::text) || md5(random()::text) \
             from generate_series(1, {ROWS}) g"
        ),
    );
    assert!(written, "{out}");
    let secret_key = stack_env("BERTH_S3_SECRET_ACCESS_KEY");
    apply(&keys(&ns, "bucket-keys", &secret_key));
    apply(&bucket_target(&ns, "bucket", "bucket-keys"));
    let writable = target_ready(&ns, "bucket", ConditionStatus::True).await;
    assert!(writable.contains("takes artifacts"), "{writable}");

    apply(&backup(&ns, "db-1", "bucket"));
    let status = ended(&ns, "db-1").await.status.unwrap();
    assert_eq!(status.status, BackupStatus::Ready, "{status:?}");
    let verification = status.verification.expect("a test restore");
    assert_eq!(
        (verification.tables, verification.rows),
        (Some(1), Some(ROWS))
    );
    let artifact = status.artifact.expect("an artifact");
    let key = format!("{0}/{0}/db/db-1.berth-backup", ns.name);
    let bucket = stack_env("BERTH_S3_BUCKET");
    assert_eq!(artifact.location, format!("s3://{bucket}/{key}"));

    // What the store holds: sealed, the recorded size and checksum, more than one part.
    let (found, stored) = object(&key).await;
    assert_eq!(found, 200);
    assert_eq!(stored.len() as i64, artifact.bytes);
    assert!(stored.len() > 8 * 1024 * 1024, "{} bytes", stored.len());
    assert_eq!(hex::encode(Sha256::digest(&stored)), artifact.sha256);
    assert!(stored.starts_with(b"BERTHBK1"), "sealed");
    assert!(!stored.windows(5).any(|w| w == b"PGDMP"), "no plaintext");
    let probe = format!("{0}/{0}/.berth-probe/probe.berth-backup", ns.name);
    assert_eq!(object(&probe).await.0, 404, "the target's probe is removed");

    // Restored into another database: the same rows.
    apply(
        &json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceRestore",
            "metadata": { "name": "into-copy", "namespace": ns.name },
            "spec": { "backupId": "db-1", "targetDependencyResourceId": "copy",
                      "acknowledgeDataOverwrite": true },
        })
        .to_string(),
    );
    let restored = restore_ended(&ns, "into-copy").await;
    assert_eq!(restored.status, RestoreStatus::Completed, "{restored:?}");
    let copy = format!("berth-dep-{}-copy", ns.name);
    let count = "select count(*), sum(length(digest)) from events";
    assert_eq!(psql(&copy, count).1, psql(&source, count).1);
    assert_not_shown(
        &ns,
        "dependencyresourcebackups,dependencyresourcerestores,backuptargets,events",
        "db-1",
        &secret_key,
    );

    // Deleting the backup removes its object.
    ns.api::<DependencyResourceBackup>()
        .delete("db-1", &DeleteParams::default())
        .await
        .unwrap();
    eventually(WAIT, "the object removed with its backup", || async {
        (object(&key).await.0 == 404).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_bucket_that_refuses_the_keys_is_not_ready_and_a_backup_to_it_fails_saying_why() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "backup-s3-keys").await;
    local_server(&ns).await;
    create(&ns, "db", "postgres", &registry_image("berth/postgres:15")).await;
    wait_ready(&ns.api::<DependencyResource>(), "db").await;
    let wrong = "0".repeat(64);
    apply(&keys(&ns, "wrong-keys", &wrong));
    apply(&bucket_target(&ns, "refused", "wrong-keys"));
    let why = target_ready(&ns, "refused", ConditionStatus::False).await;
    assert!(why.contains("the store answered 403"), "{why}");
    apply(&bucket_target(&ns, "no-keys", "missing"));
    let why = target_ready(&ns, "no-keys", ConditionStatus::False).await;
    assert!(why.contains("Secret missing does not exist"), "{why}");

    apply(&backup(&ns, "db-refused", "refused"));
    let failed = ended(&ns, "db-refused").await.status.unwrap();
    assert_eq!(failed.status, BackupStatus::Failed, "{failed:?}");
    assert_eq!(failed.failure_code.as_deref(), Some("upload-failed"));
    let message = failed.failure_message.unwrap();
    assert!(message.contains("the store answered 403"), "{message}");
    assert!(failed.artifact.is_none() && failed.verification.is_none());
    let notes = event_notes(&ns, "db-refused");
    assert!(notes.iter().any(|(r, _)| r == "BackupFailed"), "{notes:?}");
    let key = format!("{0}/{0}/db/db-refused.berth-backup", ns.name);
    assert_eq!(object(&key).await.0, 404, "nothing stored");
    assert_not_shown(
        &ns,
        "dependencyresourcebackups,backuptargets,events",
        "db-refused",
        &stack_env("BERTH_S3_SECRET_ACCESS_KEY"),
    );
}

#[tokio::test]
async fn shim_and_cli_add_a_bucket_target_whose_keys_are_kept_in_a_secret_and_never_shown() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let secret_key = stack_env("BERTH_S3_SECRET_ACCESS_KEY");
    let target = |bucket: &str, endpoint: &str| {
        json!({"name": "Bucket", "kind": "s3", "s3": {
            "endpoint": endpoint, "bucket": bucket, "region": stack_env("BERTH_S3_REGION"),
            "pathStyle": true, "prefix": org.namespace,
            "accessKeyId": stack_env("BERTH_S3_ACCESS_KEY_ID"), "secretAccessKey": secret_key,
        }})
    };
    let endpoint = stack_env("BERTH_S3_ENDPOINT");
    let bucket = stack_env("BERTH_S3_BUCKET");
    invalid(
        admin
            .post("/backup-targets", target("Bad_Bucket", &endpoint))
            .await,
        "s3.bucket",
    );
    invalid(
        admin
            .post("/backup-targets", target(&bucket, "ftp://127.0.0.1"))
            .await,
        "s3.endpoint",
    );
    invalid(
        admin
            .post("/backup-targets", json!({"name": "Bucket", "kind": "s3"}))
            .await,
        "s3",
    );
    let listed = admin.get("/backup-targets").await.ok();
    assert_eq!(listed["items"], json!([]), "nothing made by a refusal");

    let id = admin
        .post("/backup-targets", target(&bucket, &endpoint))
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = eventually(WAIT, "the bucket target checked", || async {
        let list = admin.get("/backup-targets").await.ok();
        (list["items"][0]["ready"] == true).then_some(list)
    })
    .await;
    let item = &listed["items"][0];
    assert_eq!((&item["id"], &item["kind"]), (&json!(id), &json!("s3")));
    assert_eq!(item["s3"]["bucket"], bucket.as_str());
    assert!(!listed.to_string().contains(&secret_key), "{listed}");
    let keys = kube::Api::<Secret>::namespaced(client.clone(), &org.namespace)
        .get(&format!("{id}-s3-keys"))
        .await
        .expect("the keys' Secret");
    let owners = keys.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners[0].name, id, "owned by its target");

    // The CLI: the secret key from standard input; the table shows where, never the key.
    let berth = Berth::new();
    let token = admin.token.clone().unwrap();
    let env = [("BERTH_TOKEN", token.as_str())];
    let key_id = stack_env("BERTH_S3_ACCESS_KEY_ID");
    let args = [
        "backups",
        "add-target",
        "Second",
        "--s3-endpoint",
        &endpoint,
        "--s3-bucket",
        &bucket,
        "--s3-region",
        "garage",
        "--s3-path-style",
        "--s3-access-key-id",
        &key_id,
        "--s3-secret-access-key-stdin",
    ];
    let stdin = format!("{secret_key}\n");
    berth
        .run_with(&binary(), &args, Some(&stdin), &env)
        .await
        .ok();
    let table = eventually(WAIT, "both targets ready in the CLI", || async {
        let table = berth
            .run_with(&binary(), &["backups", "targets"], None, &env)
            .await
            .ok();
        (table.matches("true").count() == 2).then_some(table)
    })
    .await;
    assert!(
        table.contains(&format!("s3://{bucket} at {endpoint}")),
        "{table}"
    );
    assert!(!table.contains(&secret_key), "{table}");
}
