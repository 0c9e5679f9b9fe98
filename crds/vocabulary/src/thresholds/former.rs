//! Threshold rules written before rules named `resourceMetrics` fields: their metric was a
//! flat name of the observation store (`memoryUsedBytes`), under signals of their own (`load`,
//! `docker-storage`). A rule naming one is read as its current name, never rewritten: see
//! [`read_metric`].

use crate::monitoring::{RULE_METRICS, Signal, rule_metrics};

/// One metric name of the former vocabulary (the store's flat names), and what a rule naming
/// it read then and reads now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormerMetric {
    /// The signal it was under then.
    pub signal: &'static str,
    /// Its name.
    pub metric: &'static str,
    /// The group of `resourceMetrics` it belongs to now.
    pub now: Signal,
    /// The field a rule of a `server` scope reads now (those read the server's host then).
    pub host: Option<&'static str>,
    /// The field a rule of another scope reads now (those read containers then).
    pub container: Option<&'static str>,
}

const fn former(
    signal: &'static str,
    metric: &'static str,
    now: Signal,
    host: Option<&'static str>,
    container: Option<&'static str>,
) -> FormerMetric {
    FormerMetric {
        signal,
        metric,
        now,
        host,
        container,
    }
}

/// The same field whatever the scope.
const fn renamed(
    signal: &'static str,
    metric: &'static str,
    now: Signal,
    field: &'static str,
) -> FormerMetric {
    former(signal, metric, now, Some(field), Some(field))
}

/// No rule metric stands for it now (Appaloft's closed set has none).
const fn retired(signal: &'static str, metric: &'static str, now: Signal) -> FormerMetric {
    former(signal, metric, now, None, None)
}

use Signal::{Cpu, Disk, Docker, Inode, Memory, Network};

/// Every former rule metric whose name or signal changed (`cpu` / `containerCpuPercent` kept
/// both). `memoryUsedBytes` was the host's on a server scope and a container's elsewhere, so
/// it reads as `usedBytes` or `containerUsedBytes`.
pub const FORMER_METRICS: [FormerMetric; 18] = [
    renamed("load", "load1", Cpu, "loadAverage1m"),
    former(
        "memory",
        "memoryUsedBytes",
        Memory,
        Some("usedBytes"),
        Some("containerUsedBytes"),
    ),
    renamed("disk", "diskUsedBytes", Disk, "usedBytes"),
    renamed("disk", "inodesUsed", Inode, "used"),
    renamed("network", "networkRxBytes", Network, "rxBytes"),
    renamed("network", "networkTxBytes", Network, "txBytes"),
    renamed("docker-storage", "dockerImageBytes", Docker, "imageBytes"),
    renamed(
        "docker-storage",
        "dockerBuildCacheBytes",
        Docker,
        "buildCacheBytes",
    ),
    renamed(
        "docker-storage",
        "containerWritableBytes",
        Docker,
        "containerWritableBytes",
    ),
    retired("cpu", "logicalCores", Cpu),
    retired("cpu", "hostCpuPercent", Cpu),
    retired("cpu", "containerCpuCores", Cpu),
    retired("memory", "memoryTotalBytes", Memory),
    retired("memory", "memoryAvailableBytes", Memory),
    retired("load", "load5", Cpu),
    retired("load", "load15", Cpu),
    retired("disk", "diskTotalBytes", Disk),
    retired("disk", "inodesTotal", Inode),
];

impl FormerMetric {
    /// Why a rule naming it cannot be read now: what it was, and what its group offers.
    pub fn retired_message(&self) -> String {
        format!(
            "`{}` (signal `{}`) is a former metric name no threshold metric stands for now: \
             a rule of signal `{}` names one of {}",
            self.metric,
            self.signal,
            self.now.as_str(),
            rule_metrics(self.now).join(", ")
        )
    }
}

/// How a rule's `(signal, metric)` is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricReading {
    /// As written: current names, or names of neither vocabulary (the rule checks say what
    /// is wrong with those).
    AsWritten,
    /// A former name, read as the current `signal` / `metric`.
    Renamed {
        former: FormerMetric,
        signal: Signal,
        metric: &'static str,
    },
    /// A former name no rule metric stands for now.
    Retired(FormerMetric),
}

/// How a rule naming `signal` / `metric` is read; `host`: the rule is of a `server` scope.
/// A former metric name is recognised under its former signal or its current one (a rule
/// written with another signal was inconsistent then too, and is left to the checks).
///
/// Reading, not rewriting: the user's object (often applied by a GitOps tool, which would
/// undo a rewrite) keeps its words, and the policy says what they are read as.
pub fn read_metric(signal: &str, metric: &str, host: bool) -> MetricReading {
    let current = |of: Signal, name: &str| RULE_METRICS.contains(&(of, name));
    if Signal::parse(signal).is_some_and(|of| current(of, metric)) {
        return MetricReading::AsWritten;
    }
    let Some(former) = FORMER_METRICS
        .into_iter()
        .find(|f| f.metric == metric && (f.signal == signal || f.now.as_str() == signal))
    else {
        return MetricReading::AsWritten;
    };
    match if host { former.host } else { former.container } {
        Some(field) => MetricReading::Renamed {
            former,
            signal: former.now,
            metric: field,
        },
        None => MetricReading::Retired(former),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed_to(signal: &str, metric: &str, host: bool) -> Option<(&'static str, &'static str)> {
        match read_metric(signal, metric, host) {
            MetricReading::Renamed { signal, metric, .. } => Some((signal.as_str(), metric)),
            _ => None,
        }
    }

    #[test]
    fn the_former_names_read_as_the_current_ones() {
        let both = |signal, metric| {
            let host = renamed_to(signal, metric, true);
            assert_eq!(host, renamed_to(signal, metric, false), "{metric}");
            host.unwrap()
        };
        assert_eq!(both("load", "load1"), ("cpu", "loadAverage1m"));
        assert_eq!(both("disk", "diskUsedBytes"), ("disk", "usedBytes"));
        assert_eq!(both("disk", "inodesUsed"), ("inode", "used"));
        assert_eq!(both("network", "networkRxBytes"), ("network", "rxBytes"));
        assert_eq!(both("network", "networkTxBytes"), ("network", "txBytes"));
        assert_eq!(
            both("docker-storage", "dockerImageBytes"),
            ("docker", "imageBytes")
        );
        assert_eq!(
            both("docker-storage", "dockerBuildCacheBytes"),
            ("docker", "buildCacheBytes")
        );
        assert_eq!(
            both("docker-storage", "containerWritableBytes"),
            ("docker", "containerWritableBytes")
        );
        // The host's on a server scope, a container's on the others, as it read then.
        let used = |host| renamed_to("memory", "memoryUsedBytes", host);
        assert_eq!(used(true), Some(("memory", "usedBytes")));
        assert_eq!(used(false), Some(("memory", "containerUsedBytes")));
        // Under its current signal too.
        assert_eq!(both("docker", "dockerImageBytes"), ("docker", "imageBytes"));
    }

    #[test]
    fn current_names_and_names_of_neither_are_read_as_written() {
        for (signal, metric) in RULE_METRICS {
            assert_eq!(
                read_metric(signal.as_str(), metric, true),
                MetricReading::AsWritten
            );
        }
        for (signal, metric) in [
            ("memory", "cpuPercent"),
            ("gpu", "usedBytes"),
            // A former name under a signal it never had.
            ("cpu", "memoryUsedBytes"),
        ] {
            assert_eq!(read_metric(signal, metric, true), MetricReading::AsWritten);
        }
    }

    #[test]
    fn a_former_name_without_a_rule_metric_is_retired() {
        for metric in ["hostCpuPercent", "memoryTotalBytes", "load5", "inodesTotal"] {
            let former = FORMER_METRICS.iter().find(|f| f.metric == metric).unwrap();
            let reading = read_metric(former.signal, metric, true);
            assert_eq!(reading, MetricReading::Retired(*former), "{metric}");
            assert!(former.retired_message().contains(metric));
        }
    }

    #[test]
    fn every_former_name_reads_as_a_rule_metric_of_its_group() {
        for former in FORMER_METRICS {
            for field in [former.host, former.container].into_iter().flatten() {
                assert!(
                    rule_metrics(former.now).contains(&field),
                    "{} reads as {field}",
                    former.metric
                );
            }
        }
    }
}
