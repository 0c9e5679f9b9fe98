//! The server's own disk, inodes, memory and CPU for `GET /servers/{id}/capacity`: `df -P -k`
//! and `df -P -i` of `/` and of Docker's data root, `/proc/meminfo`, the count of logical cores
//! and `/proc/loadavg`, read in one exec when asked (as Appaloft's inspection does), and the
//! parsing of what that prints.

use berth_api::server_capacity::{CpuCapacity, DiskCapacity, InodeCapacity, MemoryCapacity};
use berth_remote::docker::docker_call;
use berth_remote::{ServerConnection, shell_quote};
use bollard::Docker;

/// Arguments: the paths to measure. Output, one fact a line, tab-separated:
/// `disk PATH MOUNT SIZE_KB USED_KB AVAILABLE_KB USE%`, `inodes PATH MOUNT USED FREE USE%`,
/// `memory TOTAL_KB AVAILABLE_KB` (empty what `/proc/meminfo` lacks) and
/// `cpu CORES LOAD1 LOAD5 LOAD15` (empty what could not be read; cores as the usage probe
/// counts them). A path `df` cannot read prints nothing.
const SCRIPT: &str = r#"for target in "$@"; do
  df -P -k "$target" 2>/dev/null | P=$target awk 'NR==2 { m=$6; for (i=7; i<=NF; i++) m=m " " $i;
    printf "disk\t%s\t%s\t%s\t%s\t%s\t%s\n", ENVIRON["P"], m, $2, $3, $4, $5 }'
  df -P -i "$target" 2>/dev/null | P=$target awk 'NR==2 { m=$6; for (i=7; i<=NF; i++) m=m " " $i;
    printf "inodes\t%s\t%s\t%s\t%s\t%s\n", ENVIRON["P"], m, $3, $4, $5 }'
done
awk '$1 == "MemTotal:" { t=$2 } $1 == "MemAvailable:" { a=$2 }
  END { printf "memory\t%s\t%s\n", t, a }' /proc/meminfo 2>/dev/null
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)
if [ -r /proc/loadavg ]; then read -r load1 load5 load15 rest < /proc/loadavg; fi
printf 'cpu\t%s\t%s\t%s\t%s\n' "$cores" "$load1" "$load5" "$load15"
exit 0"#;

/// Where Docker keeps its data when it does not say.
const DEFAULT_DOCKER_ROOT: &str = "/var/lib/docker";

/// What the server said of its disk, inodes, memory and CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    /// One entry for each path `df` could read.
    pub disk: Vec<DiskCapacity>,
    /// One entry for each path whose filesystem counts inodes.
    pub inodes: Vec<InodeCapacity>,
    pub memory: MemoryCapacity,
    pub cpu: CpuCapacity,
}

/// The paths measured: `/` and Docker's data root, once each.
pub fn targets(docker_root: &str) -> Vec<String> {
    let mut targets = vec!["/".to_string()];
    let root = docker_root.trim_end_matches('/');
    if !root.is_empty() {
        targets.push(root.to_string());
    }
    targets
}

/// The command line running [`SCRIPT`] over `targets`.
pub fn command(targets: &[String]) -> String {
    let mut command = format!("sh -c {} berth-capacity", shell_quote(SCRIPT));
    for target in targets {
        command.push(' ');
        command.push_str(&shell_quote(target));
    }
    command
}

/// Kibibytes as bytes.
fn bytes(kib: i64) -> i64 {
    kib.saturating_mul(1024)
}

/// `df`'s `12%` as 12; `-` (no inode count) as nothing.
fn percent(text: &str) -> Option<i64> {
    text.strip_suffix('%')?.parse().ok()
}

/// Parses what [`SCRIPT`] printed; a line with a field it cannot read is left out.
pub fn parse(output: &str) -> Host {
    let mut host = Host::default();
    for line in output.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let number = |i: usize| fields.get(i).and_then(|f| f.trim().parse::<i64>().ok());
        match fields.as_slice() {
            ["disk", path, mount, _, _, _, use_percent] => {
                let (Some(size), Some(used), Some(available), Some(use_percent)) =
                    (number(3), number(4), number(5), percent(use_percent))
                else {
                    continue;
                };
                host.disk.push(DiskCapacity {
                    path: path.to_string(),
                    mount: mount.to_string(),
                    size: bytes(size),
                    used: bytes(used),
                    available: bytes(available),
                    use_percent,
                });
            }
            ["inodes", path, mount, _, _, use_percent] => {
                let (Some(used), Some(free), Some(use_percent)) =
                    (number(3), number(4), percent(use_percent))
                else {
                    continue;
                };
                host.inodes.push(InodeCapacity {
                    path: path.to_string(),
                    mount: mount.to_string(),
                    used,
                    free,
                    use_percent,
                });
            }
            ["memory", _, _] => host.memory = memory(number(1), number(2)),
            ["cpu", cores, load1, load5, load15] => {
                host.cpu = cpu(cores, [*load1, *load5, *load15]);
            }
            _ => {}
        }
    }
    host
}

/// The memory record from `MemTotal` and `MemAvailable` in kibibytes.
fn memory(total: Option<i64>, available: Option<i64>) -> MemoryCapacity {
    let total = total.filter(|t| *t > 0).map(bytes);
    let available = available.map(bytes);
    let used = total.zip(available).map(|(t, a)| (t - a).max(0));
    let use_percent = total.zip(used).map(|(t, u)| {
        let share = u as f64 / t as f64 * 100.0;
        share.round() as i64
    });
    MemoryCapacity {
        total,
        available,
        used,
        use_percent,
    }
}

/// The CPU record from the core count and the three load averages as printed; a figure that is
/// not a number (or not a sensible one) stays null.
fn cpu(cores: &str, loads: [&str; 3]) -> CpuCapacity {
    let load = |text: &str| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|l| l.is_finite() && *l >= 0.0)
    };
    let [load1, load5, load15] = loads.map(load);
    CpuCapacity {
        logical_cores: cores.trim().parse::<i64>().ok().filter(|c| *c > 0),
        load_average_1m: load1,
        load_average_5m: load5,
        load_average_15m: load15,
    }
}

/// What `host` lacks of what was asked, as warnings.
pub fn gaps(targets: &[String], host: &Host) -> Vec<String> {
    let mut warnings: Vec<String> = targets
        .iter()
        .filter(|t| !host.disk.iter().any(|d| d.path == **t))
        .map(|t| format!("df could not read {t} on the server"))
        .collect();
    if host.memory.total.is_none() {
        warnings.push("the server's /proc/meminfo could not be read".into());
    }
    if host.cpu.logical_cores.is_none() {
        warnings.push("the server's count of logical cores could not be read".into());
    }
    let cpu = &host.cpu;
    if [
        cpu.load_average_1m,
        cpu.load_average_5m,
        cpu.load_average_15m,
    ]
    .contains(&None)
    {
        warnings.push("the server's /proc/loadavg could not be read".into());
    }
    warnings
}

/// Reads the server's disk, inodes, memory and CPU now, through `connection` (and Docker's data
/// root through `docker`); what could not be read is added to `warnings`.
pub async fn read(
    connection: &ServerConnection,
    docker: &Docker,
    warnings: &mut Vec<String>,
) -> Host {
    let root = match docker_call(connection, "reading Docker's data root", docker.info()).await {
        Ok(info) => info
            .docker_root_dir
            .unwrap_or_else(|| DEFAULT_DOCKER_ROOT.into()),
        Err(error) => {
            warnings.push(format!("Docker's data root could not be read: {error}"));
            String::new()
        }
    };
    let targets = targets(&root);
    match connection.exec(&command(&targets)).await {
        Ok(output) => {
            let host = parse(&output.stdout_text());
            warnings.extend(gaps(&targets, &host));
            host
        }
        Err(error) => {
            warnings.push(format!(
                "the server's disk, memory and CPU could not be read: {error}"
            ));
            Host::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_parsed_and_what_is_unreadable_is_left_out() {
        let output = "disk\t/\t/\t51474912\t20123456\t28711048\t42%\n\
            inodes\t/\t/\t812345\t2464455\t25%\n\
            disk\t/var/lib/docker\t/mnt/docker data\t1000\t500\t450\t53%\n\
            inodes\t/var/lib/docker\t/mnt/docker data\t0\t0\t-\n\
            memory\t16310112\t12000000\ncpu\t8\t0.52\t1.05\t12.00\nnoise\n";
        let host = parse(output);
        assert_eq!(host.disk.len(), 2);
        assert_eq!(
            host.disk[0],
            DiskCapacity {
                path: "/".into(),
                mount: "/".into(),
                size: 51474912 * 1024,
                used: 20123456 * 1024,
                available: 28711048 * 1024,
                use_percent: 42,
            }
        );
        assert_eq!(host.disk[1].mount, "/mnt/docker data");
        assert_eq!(host.inodes.len(), 1, "btrfs keeps no inode count");
        assert_eq!(
            (host.inodes[0].used, host.inodes[0].free),
            (812345, 2464455)
        );
        assert_eq!(host.memory.total, Some(16310112 * 1024));
        assert_eq!(host.memory.used, Some((16310112 - 12000000) * 1024));
        assert_eq!(host.memory.use_percent, Some(26));
        assert_eq!(
            host.cpu,
            CpuCapacity {
                logical_cores: Some(8),
                load_average_1m: Some(0.52),
                load_average_5m: Some(1.05),
                load_average_15m: Some(12.0),
            }
        );
        assert!(gaps(&targets("/var/lib/docker"), &host).is_empty());
    }

    #[test]
    fn memory_the_server_did_not_report_stays_null() {
        let host = parse("memory\t8000000\t\n");
        assert_eq!(host.memory.total, Some(8000000 * 1024));
        assert_eq!(
            (
                host.memory.available,
                host.memory.used,
                host.memory.use_percent
            ),
            (None, None, None)
        );
        assert_eq!(parse("memory\t\t\n").memory, MemoryCapacity::default());
        let warnings = gaps(&targets(""), &parse(""));
        assert_eq!(warnings.len(), 4, "{warnings:?}");
    }

    #[test]
    fn cpu_figures_the_server_did_not_report_stay_null_with_a_warning() {
        let only_cores = parse("cpu\t4\t\t\t\n");
        assert_eq!(only_cores.cpu.logical_cores, Some(4));
        assert_eq!(only_cores.cpu.load_average_1m, None);
        let warnings = gaps(&[], &only_cores);
        assert!(
            warnings.iter().any(|w| w.contains("/proc/loadavg")),
            "{warnings:?}"
        );
        assert!(!warnings.iter().any(|w| w.contains("logical cores")));
        let garbled = parse("cpu\tundefined\t0.1\t-1\tNaN\n").cpu;
        assert_eq!(
            garbled,
            CpuCapacity {
                load_average_1m: Some(0.1),
                ..CpuCapacity::default()
            }
        );
        assert_eq!(parse("cpu\t0\t\t\t\n").cpu.logical_cores, None);
    }

    #[test]
    fn cpu_fields_are_spelled_as_appaloft_spells_them() {
        let wire = serde_json::to_value(CpuCapacity::default()).unwrap();
        assert_eq!(
            wire,
            serde_json::json!({"logicalCores": null, "loadAverage1m": null,
                "loadAverage5m": null, "loadAverage15m": null})
        );
    }

    #[test]
    fn the_command_quotes_every_path() {
        assert_eq!(targets("/srv/docker/"), vec!["/", "/srv/docker"]);
        let command = command(&["/".into(), "/x'y".into()]);
        assert!(command.starts_with("sh -c '"));
        assert!(command.ends_with(r" berth-capacity '/' '/x'\''y'"));
    }

    #[test]
    fn the_script_runs_here_and_reads_this_host() {
        let output = std::process::Command::new("sh")
            .args(["-c", SCRIPT, "berth-capacity", "/", "/no-such-path"])
            .output()
            .expect("sh");
        let host = parse(&String::from_utf8_lossy(&output.stdout));
        assert_eq!(host.disk.len(), 1, "{host:?}");
        let disk = &host.disk[0];
        assert!(disk.size > 0 && disk.used <= disk.size, "{host:?}");
        assert!(host.memory.total.is_some_and(|t| t > 0), "{host:?}");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            host.cpu.logical_cores.is_some_and(|c| c >= cores as i64),
            "{host:?}"
        );
        assert!(host.cpu.load_average_15m.is_some(), "{host:?}");
    }
}
