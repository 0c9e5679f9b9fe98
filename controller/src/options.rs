//! Command line of `berth-controller`. Every option can also come from the environment.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "berth-controller",
    version,
    about = "Berth's reconcilers: converge organizations, projects, environments and servers."
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `run`, the default when no subcommand is given.
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the reconcilers (the default).
    Run(Box<RunOptions>),
    /// Print every Berth CRD as YAML.
    Crd,
}

#[derive(Args, Debug, Clone)]
pub struct RunOptions {
    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "BERTH_CONTROLLER_ADDR", default_value = "127.0.0.1:9464")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub system: berth_process::flags::SystemOptions,
    /// This replica's identity in the Lease (defaults to host name and process id).
    #[arg(long, env = "BERTH_CONTROLLER_IDENTITY")]
    pub identity: Option<String>,
    /// Seconds a Lease stays valid without renewal.
    #[arg(long, env = "BERTH_LEASE_SECONDS", default_value_t = 15)]
    pub lease_seconds: u64,
    /// How long to wait for Berth's CRDs to be established before giving up, in seconds.
    #[arg(long, env = "BERTH_CRD_WAIT_SECONDS", default_value_t = 120)]
    pub crd_wait_seconds: u64,
    #[command(flatten)]
    pub logging: berth_process::logging::LogOptions,
    #[command(flatten)]
    pub store: berth_observations::StoreOptions,
    /// ACME directory certificates are ordered from (DESIGN §5b).
    #[arg(
        long,
        env = "BERTH_ACME_DIRECTORY_URL",
        default_value = "https://acme-v02.api.letsencrypt.org/directory"
    )]
    pub acme_directory_url: String,
    /// The web console's address (such as https://berth.example.com), for links in
    /// notifications; messages carry no link without it.
    #[arg(long, env = "BERTH_CONSOLE_URL")]
    pub console_url: Option<String>,
    /// berth-shim's origin (such as http://berth-shim): the leader asks it to run each step of
    /// a Migration written with kubectl; such Migrations wait without it. In a pod, the
    /// Service berth-shim's address from the environment Kubernetes sets, when unset.
    #[arg(long, env = "BERTH_SHIM_URL")]
    pub shim_url: Option<String>,
    /// PEM file of a root to trust for the ACME directory's HTTPS (a test CA); system roots
    /// when unset.
    #[arg(long, env = "BERTH_ACME_DIRECTORY_CA")]
    pub acme_directory_ca: Option<std::path::PathBuf>,
    /// The resolver of the certificate pre-flight check.
    #[command(flatten)]
    pub dns: berth_process::flags::DnsOptions,
    /// Days deployment timelines are kept: seeds the system RetentionPolicy `process-attempts`
    /// (until a person changes that policy).
    #[arg(long, env = "BERTH_TIMELINE_RETENTION_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub timeline_retention_days: u64,
    /// Seconds between health-history observations of a resource whose health is unchanged
    /// (a change is recorded at once).
    #[arg(long, env = "BERTH_HEALTH_HISTORY_INTERVAL_SECONDS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(60..=86_400))]
    pub health_history_interval_seconds: u64,
    /// Days health-history observations and access-failure evidence are kept: seeds the system
    /// RetentionPolicy `domain-event-streams` (until a person changes that policy).
    #[arg(long, env = "BERTH_HEALTH_HISTORY_RETENTION_DAYS", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub health_history_retention_days: u64,
    #[command(flatten)]
    pub monitoring_interval: berth_process::flags::MonitoringOptions,
    /// Seconds between two scheduled runs of each retention policy (a change runs it at once).
    #[arg(long, env = "BERTH_RETENTION_INTERVAL_SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(5..=86_400))]
    pub retention_interval_seconds: u64,
    /// Hours monitoring samples are kept, rounded up to whole days: seeds the system
    /// RetentionPolicy `runtime-monitoring-samples` (until a person changes that policy).
    #[arg(long, env = "BERTH_MONITORING_RETENTION_HOURS", default_value_t = 168,
          value_parser = clap::value_parser!(u64).range(1..=87_600))]
    pub monitoring_retention_hours: u64,
    /// Directory of the copies of git repositories the controller fetches (and the commits it
    /// exports for builds); default: `sources` in the data directory.
    #[arg(long, env = "BERTH_SOURCE_CACHE_DIR")]
    pub source_cache_dir: Option<std::path::PathBuf>,
    /// In the cluster: the namespace of Berth's own Deployments, which get a
    /// PodDisruptionBudget each, in the policy version the API server serves (the manifests
    /// set it to the pod's namespace).
    #[arg(long, env = "BERTH_DISRUPTION_BUDGETS_IN")]
    pub disruption_budgets_in: Option<String>,
    /// Image of the short-lived containers that read and write storage volumes' files for
    /// backups and restores (pulled by a server's Docker when missing; needs `sh` and `find`
    /// for a restore in place, `cp -a` for a quiesced backup).
    #[arg(
        long,
        env = "BERTH_VOLUME_HELPER_IMAGE",
        default_value = "busybox:1.37"
    )]
    pub volume_helper_image: String,
}

impl RunOptions {
    /// The controller's copies of git repositories.
    pub fn sources(&self) -> berth_source::SourceCache {
        let dir = self.source_cache_dir.clone();
        berth_source::SourceCache::new(dir.unwrap_or_else(|| self.store.data_dir.join("sources")))
    }

    pub fn acme(&self) -> crate::context::AcmeSettings {
        crate::context::AcmeSettings {
            directory_url: self.acme_directory_url.clone(),
            directory_ca: self.acme_directory_ca.clone(),
            dns_server: self.dns.acme_dns,
        }
    }

    /// Where the steps of Migrations written with kubectl run: `--shim-url`, else the Service
    /// berth-shim that Kubernetes names in a pod's environment (no cluster DNS needed).
    pub fn migration_runner(&self) -> crate::migration_steps::Shim {
        let namespace = self.system.system_namespace.clone();
        let env = |name: &str| std::env::var(name).ok();
        let service = service_link(
            env("BERTH_SHIM_SERVICE_HOST"),
            env("BERTH_SHIM_SERVICE_PORT"),
        );
        crate::migration_steps::Shim::new(self.shim_url.clone().or(service), namespace)
    }

    /// How often the health history is observed.
    pub fn health_history(&self) -> crate::health_history::Settings {
        crate::health_history::Settings {
            interval: std::time::Duration::from_secs(self.health_history_interval_seconds),
        }
    }

    /// What the system RetentionPolicies start as.
    pub fn retention_seeds(&self) -> crate::reconcilers::retention_seeds::Seeds {
        let days = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        crate::reconcilers::retention_seeds::Seeds {
            process_attempts_days: days(self.timeline_retention_days),
            domain_event_streams_days: days(self.health_history_retention_days),
            monitoring_sample_days: days(self.monitoring_retention_hours.div_ceil(24)),
        }
    }

    /// How retention policies run.
    pub fn retention(&self) -> crate::reconcilers::retention::Settings {
        crate::reconcilers::retention::Settings {
            interval: std::time::Duration::from_secs(self.retention_interval_seconds),
            system_namespace: self.system.system_namespace.clone(),
        }
    }

    /// How monitoring samples are collected.
    pub fn monitoring(&self) -> crate::observer::MonitoringSettings {
        crate::observer::MonitoringSettings {
            interval: self.monitoring_interval.interval(),
        }
    }
}

/// The origin of a Service from the variables Kubernetes sets in a pod for it
/// (`<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`); an IPv6 address is bracketed.
fn service_link(host: Option<String>, port: Option<String>) -> Option<String> {
    let (host, port) = (host?, port?);
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    Some(format!("http://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_reached_by_the_address_kubernetes_names() {
        let link = |host: &str, port: &str| service_link(Some(host.into()), Some(port.into()));
        assert_eq!(
            link("169.254.20.4", "80").as_deref(),
            Some("http://169.254.20.4:80")
        );
        assert_eq!(
            link("fd00::4", "80").as_deref(),
            Some("http://[fd00::4]:80")
        );
        assert_eq!(service_link(None, Some("80".into())), None);
    }
}
