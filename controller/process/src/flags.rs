//! Flag groups both binaries take, with one name, one environment variable, one default and
//! one meaning each.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

/// Where Berth keeps its own objects.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SystemOptions {
    /// Namespace of Berth's own objects: the controller's leader Lease, sessions, password
    /// hashes and the system policies.
    #[arg(long, env = "BERTH_SYSTEM_NAMESPACE", default_value = berth_crds::SYSTEM_NAMESPACE)]
    pub system_namespace: String,
}

/// The DNS server host names are resolved with: the controller's certificate pre-flight and
/// the shim's DNS readiness must agree with what the ACME CA sees.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct DnsOptions {
    /// DNS server (`address:port`) host names are resolved with, the one the ACME CA uses (a
    /// test DNS); the system resolver when unset.
    #[arg(long, env = "BERTH_ACME_DNS")]
    pub acme_dns: Option<SocketAddr>,
}

/// How often the controller samples servers: it samples at this pace, and the shim judges the
/// samples' freshness by it.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct MonitoringOptions {
    /// Seconds between two monitoring samples of each server and its containers (5..=3600):
    /// samples older than two intervals are `stale`, gaps longer than 2.5 intervals are
    /// `missing-samples`.
    #[arg(long, env = "BERTH_MONITORING_INTERVAL_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(5..=3600))]
    pub monitoring_interval_seconds: u64,
}

impl MonitoringOptions {
    pub fn interval(&self) -> Duration {
        Duration::from_secs(self.monitoring_interval_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Both {
        #[command(flatten)]
        system: SystemOptions,
        #[command(flatten)]
        dns: DnsOptions,
        #[command(flatten)]
        monitoring: MonitoringOptions,
    }

    #[test]
    fn the_defaults_are_the_system_namespace_the_system_resolver_and_30_seconds() {
        let parsed = Both::try_parse_from(["berth"]).unwrap();
        assert_eq!(parsed.system.system_namespace, berth_crds::SYSTEM_NAMESPACE);
        assert_eq!(parsed.dns.acme_dns, None);
        assert_eq!(parsed.monitoring.interval(), Duration::from_secs(30));
    }

    #[test]
    fn a_monitoring_interval_below_5_seconds_or_a_bad_resolver_is_refused() {
        for bad in [
            ["--monitoring-interval-seconds", "4"],
            ["--acme-dns", "not-an-address"],
        ] {
            assert!(
                Both::try_parse_from(["berth", bad[0], bad[1]]).is_err(),
                "{bad:?}"
            );
        }
        let parsed = Both::try_parse_from([
            "berth",
            "--acme-dns",
            "127.0.0.1:53",
            "--monitoring-interval-seconds",
            "5",
        ])
        .unwrap();
        assert_eq!(parsed.dns.acme_dns, Some("127.0.0.1:53".parse().unwrap()));
        assert_eq!(parsed.monitoring.interval(), Duration::from_secs(5));
    }
}
