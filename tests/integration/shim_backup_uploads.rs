//! A dump made outside Berth: `pg_dump -Fc` of a stock PostgreSQL (the stack's, Debian's),
//! its SQL naming a database Berth has never seen, uploaded with `berth backups upload`
//! (`POST /dependency-resources/{id}/backups/upload`). Bad uploads are refused by field and
//! create nothing; a good one is stored sealed, proven by a test restore that counts its rows,
//! restored in place with its rows and their checksum identical to the source's, and its
//! staged file is gone from the server afterwards.

use std::process::Command;
use std::time::Duration;

use berth_tests::{eventually, stack_env};
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::dependency_resources::{psql, registry_image};
use crate::shim_backups::restore_ended;
use crate::shim_dependency_resources::{Setup, setup};
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(240);
const ROWS: i64 = 1_000;
/// One figure for the whole table: equal only when every row is.
const CHECKSUM: &str =
    "select md5(string_agg(id::text || ':' || note, ',' order by id)) from sales";

#[tokio::test]
async fn a_pg_dump_from_outside_berth_is_uploaded_proven_and_restored_with_identical_rows() {
    registry_image("berth/postgres:15");
    let s = setup().await;
    let db = s.provision("postgres", "Sales DB").await;
    let directory = format!("/tmp/berth-test-backups/{}", s.org.namespace);
    let target = json!({"name": "Offsite", "kind": "server-directory", "serverId": s.server,
                        "path": directory});
    s.admin.post("/backup-targets", target).await.expect(201);
    s.wait_ready(&db).await;
    let outside = OutsideDatabase::create(&s.org.namespace);
    let (dump, expected) = outside.dump();

    let upload = format!("/dependency-resources/{db}/backups/upload");
    let backups = format!("/dependency-resources/{db}/backups");
    refused_uploads(&s, &upload, &dump).await;
    let none = s.member.get(&backups).await.ok();
    assert_eq!(
        none["items"],
        json!([]),
        "a refused upload created a backup: {none}"
    );

    let file = std::env::temp_dir().join(format!("{}-outside.dump", s.org.namespace));
    std::fs::write(&file, &dump).unwrap();
    let token = s.member.token.clone().unwrap();
    let uploaded = Berth::new()
        .run_with(
            &binary(),
            &[
                "backups",
                "upload",
                &db,
                file.to_str().unwrap(),
                "--description",
                "from the old host",
            ],
            None,
            &[("BERTH_TOKEN", token.as_str())],
        )
        .await
        .ok();
    let _ = std::fs::remove_file(&file);
    let id = uploaded
        .split_whitespace()
        .find(|word| word.contains("-up-"))
        .unwrap_or_else(|| panic!("the CLI names the backup: {uploaded}"))
        .to_string();

    let shown_path = format!("/dependency-resources/backups/{id}");
    let shown: Value = eventually(WAIT, "the uploaded backup proven", || async {
        let shown = s.member.get(&shown_path).await.ok();
        (shown["backup"]["status"] != "pending").then_some(shown)
    })
    .await;
    let backup = &shown["backup"];
    assert_eq!(backup["status"], "ready", "{shown}");
    assert_eq!(backup["description"], "from the old host");
    let file_name = file.file_name().unwrap().to_str().unwrap();
    assert_eq!(backup["uploaded"]["fileName"], file_name, "{shown}");
    assert_eq!(backup["uploaded"]["bytes"], dump.len() as i64, "{shown}");
    assert_eq!(backup["verification"]["tables"], 1, "{shown}");
    assert_eq!(backup["verification"]["rows"], ROWS, "{shown}");
    let (any, out) = psql(
        &s.container(&db),
        "select count(*) from pg_tables where tablename = 'sales'",
    );
    assert!(any, "{out}");
    assert_eq!(out, "0", "the database is untouched until the restore");
    assert!(
        !staged_files(&s.org.namespace).contains(&id),
        "the staged dump stays on the server after its backup ended"
    );

    let restore = format!("{shown_path}/restore");
    let acknowledged =
        json!({"acknowledgeDataOverwrite": true, "acknowledgeRuntimeNotRestarted": true});
    let attempt = s.member.post(&restore, acknowledged).await.expect(202);
    let ended = restore_ended(&s, &shown_path, attempt["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["report"]["rows"], ROWS, "{ended}");
    let (ok, restored) = psql(&s.container(&db), CHECKSUM);
    assert!(ok, "{restored}");
    assert_eq!(
        restored, expected,
        "the restored rows differ from the source's"
    );
    let _ = std::fs::remove_dir_all(&directory);
}

/// Uploads that are not a dump, or name what does not exist, are refused by field.
async fn refused_uploads(s: &Setup, upload: &str, dump: &[u8]) {
    let plain_sql = b"CREATE TABLE sales (id int);\n".to_vec();
    invalid(s.member.upload(upload, plain_sql).await, "body");
    invalid(s.member.upload(upload, Vec::new()).await, "body");
    invalid(
        s.member
            .upload(&format!("{upload}?targetId=bkt-nope"), dump.to_vec())
            .await,
        "targetId",
    );
    let unknown = s
        .member
        .upload(&format!("{upload}?when=now"), dump.to_vec())
        .await;
    assert!((400..500).contains(&unknown.status), "{:?}", unknown.body);
    s.member
        .upload(
            "/dependency-resources/dep-nope/backups/upload",
            dump.to_vec(),
        )
        .await
        .error(404, "not_found");
}

/// The uploads waiting on the test server (the stack's own, reached as root).
fn staged_files(namespace: &str) -> String {
    let listed = Command::new("sh")
        .args([
            "-c",
            &format!("ls /root/.berth/uploads 2>/dev/null | grep {namespace} || true"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout).into_owned()
}

/// A database on the stack's PostgreSQL, outside Berth; dropped with this value.
struct OutsideDatabase {
    name: String,
    url: String,
}

impl OutsideDatabase {
    fn create(namespace: &str) -> Self {
        let admin = stack_env("BERTH_TEST_POSTGRES_URL");
        let name = format!("outside_{}", namespace.replace('-', "_"));
        psql_url(&admin, &format!("drop database if exists {name}"));
        psql_url(&admin, &format!("create database {name}"));
        let url = with_database(&admin, &name);
        psql_url(
            &url,
            &format!(
                "create table sales (id int primary key, note text not null); \
                 insert into sales select g, md5(g::text) from generate_series(1, {ROWS}) g"
            ),
        );
        Self { name, url }
    }

    /// `pg_dump -Fc` of it, and the checksum of its rows.
    fn dump(&self) -> (Vec<u8>, String) {
        let dumped = Command::new("pg_dump")
            .args(["-Fc", "-d", &self.url])
            .output()
            .unwrap();
        assert!(
            dumped.status.success(),
            "{}",
            String::from_utf8_lossy(&dumped.stderr)
        );
        (dumped.stdout, psql_url(&self.url, CHECKSUM))
    }
}

impl Drop for OutsideDatabase {
    fn drop(&mut self) {
        let admin = stack_env("BERTH_TEST_POSTGRES_URL");
        let drop = format!("drop database if exists {} with (force)", self.name);
        let _ = Command::new("psql")
            .args(["-d", &admin, "-tAc", &drop])
            .output();
    }
}

/// `url` with its database replaced by `database` (the query string kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

fn psql_url(url: &str, sql: &str) -> String {
    let ran = Command::new("psql")
        .args(["-d", url, "-v", "ON_ERROR_STOP=1", "-tAc", sql])
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8_lossy(&ran.stdout).trim().to_string()
}
