//! One read of a server's counters: a POSIX shell script run on one exec channel per tick,
//! however many containers there are (no agent on the server), and the parsing of what it
//! prints. It reads the kernel's own files: `/proc` for the host, each container's cgroup
//! (v2, or v1 as on older hosts) for CPU time and memory, and its network namespace through
//! one of its processes.

use berth_remote::shell_quote;
use std::collections::HashMap;

/// Arguments: the filesystem to measure (Docker's data root), then container ids.
/// Output, one fact per line: `uptime`, `cores`, `loadavg`, `meminfo`, `stat`, `df`, `dfi`,
/// and `container ID CPU_NS MEM_BYTES RX TX` with `-` for what it could not read.
pub const SCRIPT: &str = include_str!("probe.sh");

/// What one run printed about the host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostReading {
    /// Seconds since the server booted: the clock CPU shares are computed against.
    pub uptime_seconds: Option<f64>,
    pub cores: Option<f64>,
    pub load: Option<[f64; 3]>,
    /// (total, available) bytes.
    pub memory: Option<(f64, f64)>,
    /// (all jiffies, idle and iowait jiffies) since boot.
    pub cpu_jiffies: Option<(f64, f64)>,
    /// (total, used) bytes of Docker's filesystem.
    pub disk: Option<(f64, f64)>,
    /// (total, used) inodes of it.
    pub inodes: Option<(f64, f64)>,
}

/// What one run printed about a container; `None` where its cgroup could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerReading {
    /// CPU time used since it started, in nanoseconds.
    pub cpu_ns: Option<f64>,
    pub memory_bytes: Option<f64>,
    /// (received, sent) bytes over its non-loopback interfaces.
    pub network: Option<(f64, f64)>,
}

/// The whole output of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub host: HostReading,
    pub containers: HashMap<String, ContainerReading>,
}

/// The command line running [`SCRIPT`] for `ids`, measuring the filesystem at `root`.
pub fn command(root: &str, ids: &[String]) -> String {
    let mut command = format!(
        "sh -c {} berth-usage {}",
        shell_quote(SCRIPT),
        shell_quote(root)
    );
    for id in ids {
        command.push(' ');
        command.push_str(&shell_quote(id));
    }
    command
}

/// Parses what [`SCRIPT`] printed; lines it does not know or cannot read are skipped.
pub fn parse(output: &str) -> Reading {
    let mut reading = Reading::default();
    for line in output.lines() {
        let mut words = line.split_whitespace();
        let Some(tag) = words.next() else { continue };
        let numbers: Vec<Option<f64>> = words.clone().map(|w| w.parse().ok()).collect();
        let pair = || Some((numbers.first().copied()??, numbers.get(1).copied()??));
        let host = &mut reading.host;
        match tag {
            "uptime" => host.uptime_seconds = numbers.first().copied().flatten(),
            "cores" => host.cores = numbers.first().copied().flatten(),
            "loadavg" => {
                host.load = match numbers.as_slice() {
                    [Some(a), Some(b), Some(c)] => Some([*a, *b, *c]),
                    _ => None,
                }
            }
            "meminfo" => host.memory = pair(),
            "stat" => host.cpu_jiffies = pair(),
            "df" => host.disk = pair(),
            "dfi" => host.inodes = pair(),
            "container" => {
                let Some(id) = words.next() else { continue };
                let numbers: Vec<Option<f64>> = words.map(|w| w.parse().ok()).collect();
                let at = |i: usize| numbers.get(i).copied().flatten();
                let network = at(2).zip(at(3));
                let container = ContainerReading {
                    cpu_ns: at(0),
                    memory_bytes: at(1),
                    network,
                };
                reading.containers.insert(id.to_string(), container);
            }
            _ => {}
        }
    }
    reading
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_parsed_and_unreadable_parts_stay_unknown() {
        let output = "uptime 1234.56\ncores 2\nloadavg 0.50 0.25 0.10\n\
            meminfo 8000000000 6000000000\nstat 100000 80000\ndf 50000000000 20000000000\n\
            dfi \ncontainer abc 2500000000 1048576 100 200\ncontainer def - - - -\nnoise\n";
        let reading = parse(output);
        assert_eq!(reading.host.uptime_seconds, Some(1234.56));
        assert_eq!(reading.host.cores, Some(2.0));
        assert_eq!(reading.host.load, Some([0.5, 0.25, 0.1]));
        assert_eq!(reading.host.memory, Some((8e9, 6e9)));
        assert_eq!(reading.host.disk, Some((5e10, 2e10)));
        assert_eq!(reading.host.inodes, None);
        let abc = &reading.containers["abc"];
        assert_eq!(abc.cpu_ns, Some(2.5e9));
        assert_eq!(abc.network, Some((100.0, 200.0)));
        assert_eq!(reading.containers["def"], ContainerReading::default());
    }

    #[test]
    fn the_command_quotes_every_argument() {
        let command = command("/var/lib/docker", &["abc".into(), "x'y".into()]);
        assert!(command.starts_with("sh -c '"));
        assert!(command.ends_with(r" berth-usage '/var/lib/docker' 'abc' 'x'\''y'"));
    }

    #[test]
    fn the_script_runs_here_and_reads_this_host() {
        let output = std::process::Command::new("sh")
            .args(["-c", SCRIPT, "berth-usage", "/", "no-such-container"])
            .output()
            .expect("sh");
        let reading = parse(&String::from_utf8_lossy(&output.stdout));
        assert!(reading.host.cores.is_some_and(|c| c >= 1.0), "{reading:?}");
        assert!(reading.host.memory.is_some(), "{reading:?}");
        assert!(reading.host.cpu_jiffies.is_some(), "{reading:?}");
        assert!(reading.host.disk.is_some(), "{reading:?}");
        assert_eq!(
            reading.containers["no-such-container"],
            ContainerReading::default()
        );
    }
}
