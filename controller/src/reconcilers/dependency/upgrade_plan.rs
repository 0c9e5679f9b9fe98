//! A managed PostgreSQL's major-version upgrade by dump and restore, decided without I/O: the
//! names of the new server's container and volume, the SQL and commands each step runs, and
//! the `status.upgrade` record at each point.
//!
//! The old server is made read-only (new transactions default to it; writes in flight are
//! given a moment, then ended), everything is dumped with `pg_dumpall` into a file on the
//! server, restored into a new container of the new image on a new volume, and the `app`
//! database's tables and rows counted on both; only when they match does the dependency switch
//! to the new volume. The old volume is kept.

use berth_crds::dependency_resource::{
    DependencyResource, DependencyUpgrade, POSTGRES_DATABASE, POSTGRES_USER, UpgradePhase,
};
use berth_remote::shell_quote;
use bollard::models::ContainerCreateBody;
use k8s_openapi::jiff::Timestamp;

use super::plan::Names;
use crate::reconcilers::postgres_shell::docker;

/// New transactions of the old server are read-only from here on (any session, at its next
/// transaction: a reload reaches them).
pub const READ_ONLY_SQL: &str =
    "ALTER SYSTEM SET default_transaction_read_only = on;\nSELECT pg_reload_conf();\n";
/// The old server takes writes again (a failed upgrade).
pub const WRITABLE_SQL: &str =
    "ALTER SYSTEM RESET default_transaction_read_only;\nSELECT pg_reload_conf();\n";
/// Sessions with a write in flight (a transaction id assigned), other than the asking one.
const WRITERS_SQL: &str = "SELECT count(*) FROM pg_stat_activity \
     WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()";
/// Ends those sessions: what they had not committed is rolled back, never half-copied.
const END_WRITERS_SQL: &str = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
     WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()";

/// The new server's container while it is filled and checked (`<container>-upgrade`).
pub fn upgrade_container(names: &Names) -> String {
    format!("{}-upgrade", names.container)
}

/// The volume the new major version's data goes to (`<container>-data-pg<major>`).
pub fn new_volume(names: &Names, to: u32) -> String {
    format!("{}-data-pg{to}", names.container)
}

/// The container of the new server: `body` (the dependency's, on the new volume) without a
/// network, a restart policy or TLS: nothing but the copy reaches it.
pub fn upgrade_body(mut body: ContainerCreateBody) -> ContainerCreateBody {
    if let Some(host) = body.host_config.as_mut() {
        host.network_mode = Some("none".to_string());
        host.restart_policy = None;
    }
    body
}

/// `psql` in `container` running `sql`, its answer on standard output.
pub fn psql_command(socket: &str, container: &str, sql: &str) -> String {
    format!(
        "{} exec {} psql -v ON_ERROR_STOP=1 -qAt -U {POSTGRES_USER} -d {POSTGRES_DATABASE} -c {}",
        docker(socket),
        shell_quote(container),
        shell_quote(sql)
    )
}

pub fn writers_command(socket: &str, container: &str) -> String {
    psql_command(socket, container, WRITERS_SQL)
}

pub fn end_writers_command(socket: &str, container: &str) -> String {
    psql_command(socket, container, END_WRITERS_SQL)
}

/// Whether `login` may log in on the server in `container`: `t` on standard output.
pub fn login_command(socket: &str, container: &str, login: &str) -> String {
    let sql = format!("SELECT rolcanlogin FROM pg_roles WHERE rolname = '{login}'");
    psql_command(socket, container, &sql)
}

/// Dumps every database and login of `old` into a file on the server (readable by root
/// only: it holds the logins' password hashes) and restores it into `new`, removing the file
/// however it ends. The restore goes on past errors: "role berth already exists" and
/// "database app already exists" are expected (the new server was initialised with them); the
/// counts decide whether the copy is whole.
pub fn copy_command(socket: &str, old: &str, new: &str) -> String {
    let docker = docker(socket);
    let file = shell_quote(&format!("/var/tmp/berth-upgrade-{old}.sql"));
    format!(
        "set -e\numask 077\ntrap 'rm -f {file}' EXIT\n\
         {docker} exec {old} pg_dumpall -U {POSTGRES_USER} > {file}\n\
         {docker} exec -i {new} psql -q -U {POSTGRES_USER} -d postgres -v ON_ERROR_STOP=0 \
         < {file} > /dev/null 2>&1\n",
        old = shell_quote(old),
        new = shell_quote(new),
    )
}

/// What an upgrade that finds no server of the old version to copy from says: nothing is
/// touched, and how to bring the old server back.
pub fn source_missing_message(names: &Names, (from, to): (u32, u32)) -> String {
    format!(
        "the upgrade to PostgreSQL {to} copies from the PostgreSQL {from} container {}, which \
         is not on the server (removed by hand?); nothing was touched and the data stays on \
         volume {}: set spec.image back to a PostgreSQL {from} image to bring it back, then \
         upgrade again",
        names.container, names.volume
    )
}

/// The record of an upgrade that starts now.
pub fn started(
    dependency: &DependencyResource,
    (from, to): (u32, u32),
    previous_volume: &str,
    now: Timestamp,
) -> DependencyUpgrade {
    DependencyUpgrade {
        from_version: from.to_string(),
        to_version: to.to_string(),
        image: dependency.spec.image().to_string(),
        phase: UpgradePhase::Running,
        message: format!(
            "upgrading PostgreSQL {from} to {to} by dump and restore: the old server serves \
             reads, writes wait until the new one serves"
        ),
        generation: dependency.metadata.generation,
        previous_volume: previous_volume.to_string(),
        tables: None,
        rows: None,
        started_at: now.to_string(),
        finished_at: None,
    }
}

/// The record once the new server holds everything counted: `(tables, rows)`.
pub fn succeeded(
    upgrade: DependencyUpgrade,
    (tables, rows): (i64, i64),
    now: Timestamp,
) -> DependencyUpgrade {
    let message = format!(
        "PostgreSQL {} now serves the data of PostgreSQL {} ({tables} tables, {rows} rows of \
         {POSTGRES_DATABASE} counted on both); the old data stays in volume {} (read-only \
         settings; remove it with `docker volume rm` once it is no longer needed)",
        upgrade.to_version, upgrade.from_version, upgrade.previous_volume
    );
    DependencyUpgrade {
        phase: UpgradePhase::Succeeded,
        message,
        tables: Some(tables),
        rows: Some(rows),
        finished_at: Some(now.to_string()),
        ..upgrade
    }
}

/// The record of an upgrade given up on: `why`.
pub fn failed(upgrade: DependencyUpgrade, why: String, now: Timestamp) -> DependencyUpgrade {
    DependencyUpgrade {
        phase: UpgradePhase::Failed,
        message: why,
        finished_at: Some(now.to_string()),
        ..upgrade
    }
}

/// Why the copy is not whole, if it is not: the counts of the old and new servers differ.
pub fn mismatch(old: (i64, i64), new: (i64, i64), to: &str) -> Option<String> {
    (old != new).then(|| {
        format!(
            "the copy is not whole: {} tables and {} rows on the old server, {} and {} on \
             PostgreSQL {to}",
            old.0, old.1, new.0, new.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            container: "berth-dep-org-acme-db".into(),
            network: "berth-dep-org-acme-db".into(),
            volume: "berth-dep-org-acme-db-data".into(),
            secret: "db-connection".into(),
        }
    }

    #[test]
    fn the_new_server_gets_names_of_its_own_and_no_network() {
        let names = names();
        assert_eq!(upgrade_container(&names), "berth-dep-org-acme-db-upgrade");
        assert_eq!(new_volume(&names, 16), "berth-dep-org-acme-db-data-pg16");
        let body = ContainerCreateBody {
            host_config: Some(Default::default()),
            ..Default::default()
        };
        let host = upgrade_body(body).host_config.unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert!(host.restart_policy.is_none());
    }

    #[test]
    fn the_dump_is_kept_in_a_private_file_that_goes_however_the_copy_ends() {
        let command = copy_command("/run/docker.sock", "db", "db-upgrade");
        let trap = command.find("trap 'rm -f").unwrap();
        let dump = command.find("pg_dumpall").unwrap();
        assert!(command.contains("umask 077") && trap < dump, "{command}");
        assert!(command.contains("exec -i 'db-upgrade' psql"), "{command}");
        assert!(command.starts_with("set -e"), "a failed dump stops it");
    }

    #[test]
    fn an_upgrade_without_its_old_server_names_it_and_the_way_back() {
        let db: DependencyResource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": {"name": "db", "namespace": "org-acme", "generation": 3},
            "spec": {"kind": "postgres", "projectId": "p", "environmentId": "e",
                     "serverId": "s", "name": "db", "image": "postgres:16"},
        }))
        .unwrap();
        let names = Names::of(&db);
        let message = source_missing_message(&names, (15, 16));
        assert!(message.contains(&names.container), "{message}");
        assert!(message.contains(&names.volume), "{message}");
        assert!(
            message.contains("set spec.image back to a PostgreSQL 15 image"),
            "{message}"
        );
    }

    #[test]
    fn counts_that_differ_fail_the_upgrade() {
        assert_eq!(mismatch((3, 10), (3, 10), "16"), None);
        let why = mismatch((3, 10), (3, 9), "16").unwrap();
        assert!(why.contains("10 rows on the old server"), "{why}");
    }
}
