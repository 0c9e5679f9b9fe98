//! Facts about a server (OS, architecture, kernel, CPUs, memory), gathered with one exec of
//! standard tools and parsed by a pure function.

use berth_crds::server::ServerFacts;

use super::connection::ServerConnection;
use super::error::RemoteError;

/// Separates the outputs of the commands in [`FACTS_COMMAND`].
const SEPARATOR: &str = "--berth-facts--";

/// `uname -srm`, `/etc/os-release`, `nproc`, `/proc/meminfo`, in that order, in one exec.
pub const FACTS_COMMAND: &str = "uname -srm; echo --berth-facts--; cat /etc/os-release; \
     echo --berth-facts--; nproc; echo --berth-facts--; cat /proc/meminfo";

/// Runs [`FACTS_COMMAND`] on the server. A missing file yields missing fields, not an error.
pub async fn gather(connection: &ServerConnection) -> Result<ServerFacts, RemoteError> {
    let output = connection.exec(FACTS_COMMAND).await?;
    Ok(parse(&output.stdout_text()))
}

/// Parses the output of [`FACTS_COMMAND`].
pub fn parse(output: &str) -> ServerFacts {
    let mut sections = output.split(SEPARATOR).map(str::trim);
    let uname = sections.next().unwrap_or_default();
    let os_release = sections.next().unwrap_or_default();
    let nproc = sections.next().unwrap_or_default();
    let meminfo = sections.next().unwrap_or_default();

    let mut uname = uname.split_whitespace();
    let (_system, kernel, arch) = (uname.next(), uname.next(), uname.next());
    ServerFacts {
        os: os_name(os_release),
        arch: arch.map(str::to_string),
        cpus: nproc
            .lines()
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0),
        memory_bytes: total_memory(meminfo).unwrap_or(0),
        kernel: kernel.map(str::to_string),
    }
}

/// `PRETTY_NAME` (else `NAME VERSION`) from `/etc/os-release`.
fn os_name(os_release: &str) -> Option<String> {
    let field = |key: &str| {
        os_release.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
    };
    field("PRETTY_NAME").or_else(|| match (field("NAME"), field("VERSION")) {
        (Some(name), Some(version)) => Some(format!("{name} {version}")),
        (name, _) => name,
    })
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn total_memory(meminfo: &str) -> Option<i64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "Linux 6.1.0-18-amd64 x86_64
--berth-facts--
PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"
NAME=\"Debian GNU/Linux\"
VERSION_ID=\"12\"
--berth-facts--
4
--berth-facts--
MemTotal:       16310112 kB
MemFree:         1234567 kB
";

    #[test]
    fn parses_every_fact() {
        let facts = parse(OUTPUT);
        assert_eq!(facts.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(facts.arch.as_deref(), Some("x86_64"));
        assert_eq!(facts.kernel.as_deref(), Some("6.1.0-18-amd64"));
        assert_eq!(facts.cpus, 4);
        assert_eq!(facts.memory_bytes, 16310112 * 1024);
    }

    #[test]
    fn command_separates_its_four_outputs() {
        assert_eq!(FACTS_COMMAND.matches(SEPARATOR).count(), 3);
    }

    #[test]
    fn missing_sections_leave_fields_empty() {
        let facts = parse("Linux 6.1.0 aarch64\n--berth-facts--\n\n--berth-facts--\n");
        assert_eq!(facts.arch.as_deref(), Some("aarch64"));
        assert_eq!(facts.os, None);
        assert_eq!(facts.cpus, 0);
        assert_eq!(facts.memory_bytes, 0);
    }

    #[test]
    fn os_falls_back_to_name_and_version() {
        assert_eq!(
            os_name("NAME=Alpine\nVERSION=3.19\n").as_deref(),
            Some("Alpine 3.19")
        );
    }
}
