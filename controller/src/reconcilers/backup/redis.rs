//! The pure half of a Redis backup and restore: the snapshot taken from the live server
//! (`redis-cli --rdb`, the same full sync a replica gets, so the server keeps serving), and the
//! throwaway container that holds it: it idles until the snapshot is written into it, then a
//! server loads it (no AOF, nothing saved, its password from the container's environment) and
//! its keys are read. A restore makes the target a replica of that server until it has synced
//! the whole snapshot, then a primary again: the target swaps its data for the snapshot's at
//! once, without a restart, and keeps its own password and AOF.

use berth_remote::shell_quote;

use super::plan::docker;

/// Where the throwaway container keeps the snapshot, and the file its server logs to (read
/// when the snapshot does not load).
const SNAPSHOT_DIR: &str = "/data";
const SNAPSHOT_FILE: &str = "restore.rdb";
const LOG_FILE: &str = "/data/verify.log";

/// The live server's snapshot, to standard output. The password stays in the container's
/// environment (`REDISCLI_AUTH`), out of every command line.
pub fn dump_command(socket: &str, container: &str) -> String {
    let dump = "REDISCLI_AUTH=\"$REDIS_PASSWORD\" exec redis-cli -h 127.0.0.1 --rdb -";
    in_container(socket, container, dump)
}

/// What the throwaway container runs until the snapshot is in: nothing.
pub fn idle_command() -> Vec<String> {
    ["sh", "-c", "while :; do sleep 3600; done"]
        .map(String::from)
        .to_vec()
}

/// Writes the snapshot read from standard input into the throwaway container.
pub fn receive_command(socket: &str, scratch: &str) -> String {
    let write = format!("cat > {SNAPSHOT_DIR}/{SNAPSHOT_FILE}");
    format!(
        "{} exec -i {} sh -c {}",
        docker(socket),
        shell_quote(scratch),
        shell_quote(&write)
    )
}

/// Starts a server in the throwaway container on the received snapshot: no AOF, never
/// saving, logging to [`LOG_FILE`], requiring the container's `REDIS_PASSWORD` (read from
/// standard input, as the managed server does, so no command line shows it).
pub fn load_command(socket: &str, scratch: &str) -> String {
    let start = format!(
        "exec redis-server - --dir {SNAPSHOT_DIR} --dbfilename {SNAPSHOT_FILE} --appendonly no \
         --save '' --port 6379 --daemonize yes --logfile {LOG_FILE} <<EOF\n\
         requirepass $REDIS_PASSWORD\nEOF"
    );
    in_container(socket, scratch, &start)
}

/// Runs `script` with `sh` in `container` (whose environment holds its `REDIS_PASSWORD`).
fn in_container(socket: &str, container: &str, script: &str) -> String {
    format!(
        "{} exec {} sh -c {}",
        docker(socket),
        shell_quote(container),
        shell_quote(script)
    )
}

/// The keyspace (`INFO keyspace`) of the server in `container` (the throwaway one or a
/// managed one).
pub fn keyspace_command(socket: &str, container: &str) -> String {
    let info = "REDISCLI_AUTH=\"$REDIS_PASSWORD\" exec redis-cli -h 127.0.0.1 info keyspace";
    in_container(socket, container, info)
}

/// The replication state (`INFO replication`) of the server in `container`.
pub fn replication_command(socket: &str, container: &str) -> String {
    let info = "REDISCLI_AUTH=\"$REDIS_PASSWORD\" exec redis-cli -h 127.0.0.1 info replication";
    in_container(socket, container, info)
}

/// Makes the target a replica of the throwaway server at `$SOURCE_HOST`, signing in with
/// `$SOURCE_PASSWORD` (both given as the script's environment, never its text).
pub const REPLICATE_SCRIPT: &str = "export REDISCLI_AUTH=\"$REDIS_PASSWORD\"; \
    redis-cli -h 127.0.0.1 CONFIG SET masterauth \"$SOURCE_PASSWORD\" | grep -qx OK && \
    redis-cli -h 127.0.0.1 REPLICAOF \"$SOURCE_HOST\" 6379 | grep -qx OK";

/// Makes the target a primary again and forgets the throwaway server's password.
pub const PROMOTE_SCRIPT: &str = "export REDISCLI_AUTH=\"$REDIS_PASSWORD\"; \
    redis-cli -h 127.0.0.1 REPLICAOF NO ONE | grep -qx OK && \
    redis-cli -h 127.0.0.1 CONFIG SET masterauth '' | grep -qx OK";

/// Where a replica is in taking its primary's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// Connected, the full snapshot loaded.
    Done,
    /// Still connecting, transferring or loading (or not answering yet).
    Underway,
}

/// The replica's sync state from `INFO replication`.
pub fn parse_sync(output: &str) -> Sync {
    let field = |name: &str| {
        output
            .lines()
            .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
    };
    let synced = field("role") == Some("slave")
        && field("master_link_status") == Some("up")
        && field("master_sync_in_progress") == Some("0");
    if synced { Sync::Done } else { Sync::Underway }
}

/// The end of the throwaway server's log: why a snapshot did not load.
pub fn log_tail_command(socket: &str, scratch: &str) -> String {
    in_container(socket, scratch, &format!("exec tail -n 5 {LOG_FILE}"))
}

/// Keys over every logical database, from `INFO keyspace`; `None` while the server cannot
/// answer (still loading, not started, gone).
pub fn parse_keyspace(output: &str) -> Option<i64> {
    let mut lines = output.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next()? != "# Keyspace" {
        return None;
    }
    lines.try_fold(0i64, |sum, line| {
        // `db0:keys=3,expires=0,avg_ttl=0`
        let (_, fields) = line.split_once(':')?;
        let keys = fields.split(',').find_map(|f| f.strip_prefix("keys="))?;
        Some(sum + keys.parse::<i64>().ok()?)
    })
}

/// The line of the throwaway server's log that says why it stopped, if any.
pub fn load_error(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .map(str::trim)
        .find(|line| line.contains('#'))
        .map(|line| match line.split_once(" # ") {
            Some((_, said)) => said.to_string(),
            None => line.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_is_taken_with_the_password_from_the_containers_environment() {
        let dump = dump_command("/run/docker.sock", "berth-dep-org-cache");
        assert_eq!(
            dump,
            "docker -H 'unix:///run/docker.sock' exec 'berth-dep-org-cache' sh -c \
             'REDISCLI_AUTH=\"$REDIS_PASSWORD\" exec redis-cli -h 127.0.0.1 --rdb -'"
        );
        let load = load_command("/s", "scratch");
        assert!(load.contains("--appendonly no"), "{load}");
        assert!(load.contains("requirepass $REDIS_PASSWORD"), "{load}");
        assert!(
            keyspace_command("/s", "c").contains("REDISCLI_AUTH=\"$REDIS_PASSWORD\""),
            "the password never on a command line"
        );
        assert!(receive_command("/s", "scratch").ends_with("'cat > /data/restore.rdb'"));
    }

    #[test]
    fn keys_are_summed_over_the_logical_databases() {
        let info =
            "# Keyspace\r\ndb0:keys=1000,expires=2,avg_ttl=0\r\ndb3:keys=5,expires=0,avg_ttl=0\r\n";
        assert_eq!(parse_keyspace(info), Some(1005));
        assert_eq!(parse_keyspace("# Keyspace\r\n"), Some(0));
        assert_eq!(
            parse_keyspace("LOADING Redis is loading the dataset in memory"),
            None
        );
        assert_eq!(
            parse_keyspace("Could not connect to Redis at 127.0.0.1:6379"),
            None
        );
        assert_eq!(parse_keyspace("# Keyspace\ndb0:expires=1"), None);
    }

    #[test]
    fn a_replica_is_synced_once_its_link_is_up_and_no_sync_runs() {
        let synced = "# Replication\r\nrole:slave\r\nmaster_host:scratch\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\n";
        assert_eq!(parse_sync(synced), Sync::Done);
        let loading = synced.replace("master_sync_in_progress:0", "master_sync_in_progress:1");
        assert_eq!(parse_sync(&loading), Sync::Underway);
        let down = synced.replace("master_link_status:up", "master_link_status:down");
        assert_eq!(parse_sync(&down), Sync::Underway);
        assert_eq!(
            parse_sync("# Replication\r\nrole:master\r\n"),
            Sync::Underway
        );
        assert_eq!(parse_sync(""), Sync::Underway);
    }

    #[test]
    fn a_load_error_is_the_last_line_the_server_logged() {
        let log = "1:C 03 Dec 2026 18:00:00.000 * oO0OoO0OoO0Oo Redis is starting\n\
                   1:M 03 Dec 2026 18:00:00.100 # Wrong signature trying to load DB from file\n";
        assert_eq!(
            load_error(log).as_deref(),
            Some("Wrong signature trying to load DB from file")
        );
        assert_eq!(load_error(""), None);
    }
}
