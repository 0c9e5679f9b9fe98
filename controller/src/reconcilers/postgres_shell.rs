//! Commands run on a server over SSH against a PostgreSQL in a container, shared by backups
//! (their restore check) and a managed PostgreSQL's major-version upgrade: the `docker`
//! client for the server's socket, whether a server accepts connections, and an exact count of
//! the `app` database's tables and rows.

use berth_crds::dependency_resource::{POSTGRES_DATABASE, POSTGRES_USER};
use berth_remote::shell_quote;

/// The `docker` client for the server's socket.
pub fn docker(socket: &str) -> String {
    format!("docker -H {}", shell_quote(&format!("unix://{socket}")))
}

/// Whether the database in `scratch` answers over TCP (the image's first start may run a
/// temporary server on its socket only).
pub fn ready_command(socket: &str, scratch: &str) -> String {
    format!(
        "{} exec {} pg_isready -q -h 127.0.0.1 -U {POSTGRES_USER} -d {POSTGRES_DATABASE}",
        docker(socket),
        shell_quote(scratch)
    )
}

/// Tables outside the system schemas and their rows, each table counted exactly:
/// `<tables>|<rows>`.
const COUNT_SQL: &str = "SELECT count(*), coalesce(sum((xpath('/row/c/text()', \
    query_to_xml(format('select count(*) as c from %I.%I', table_schema, table_name), \
    false, true, '')))[1]::text::bigint), 0) FROM information_schema.tables \
    WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'";

pub fn count_command(socket: &str, scratch: &str) -> String {
    format!(
        "{} exec {} psql -qAt -U {POSTGRES_USER} -d {POSTGRES_DATABASE} -c {}",
        docker(socket),
        shell_quote(scratch),
        shell_quote(COUNT_SQL)
    )
}

/// `(tables, rows)` from [`count_command`]'s output.
pub fn parse_counts(output: &str) -> Option<(i64, i64)> {
    let (tables, rows) = output.trim().split_once('|')?;
    Some((tables.parse().ok()?, rows.parse().ok()?))
}
