//! Retiring a container that served: it refuses new connections first, then is stopped
//! (SIGTERM, time to finish what it accepted) and removed.
//!
//! During a zero-downtime switch the old and the new container both carry the resource's
//! upstream name. An app that still listens after SIGTERM (most close their listener at once;
//! many keep it open for a drain delay) takes new connections from the edge proxy while it
//! winds down, and one the kernel accepts a moment before the app closes its listener is reset
//! with the request already written: the proxy retries that only for GET, so a POST fails.
//! Answering new connections with a reset before SIGTERM turns that into a failed dial, which
//! the proxy tries on the other container for every method.

use std::time::Duration;

use berth_remote::RemoteError;

use super::{RETIRE_GRACE, Target};

/// How long refusing new connections may take before the container is stopped regardless
/// (iptables waits at most 5 s of it for the lock Docker also takes).
const REFUSE_WITHIN: Duration = Duration::from_secs(10);

impl Target {
    /// Refuses the container's new connections, stops it gracefully (SIGTERM, then SIGKILL
    /// after [`RETIRE_GRACE`]) and removes it; a failed stop still ends in the forced removal.
    pub async fn retire(&self, name: &str) -> Result<(), RemoteError> {
        self.refuse_new_connections(name).await;
        if let Err(error) = self.stop(name, RETIRE_GRACE).await {
            tracing::debug!(%error, name, "stopping before removal failed");
        }
        self.remove_container(name).await.map(drop)
    }

    /// Best effort: on a server where Berth cannot enter a container's network namespace (not
    /// root, no `nsenter` or `iptables`) the container is retired as it was before.
    async fn refuse_new_connections(&self, name: &str) {
        let pid = match self.inspect(name).await {
            Ok(Some(container)) => container.state.and_then(|s| s.pid).filter(|pid| *pid > 0),
            _ => None,
        };
        let Some(pid) = pid else {
            return;
        };
        let command = refuse_connections_command(pid);
        let refused = tokio::time::timeout(REFUSE_WITHIN, self.connection.exec(&command)).await;
        match refused {
            Ok(Ok(output)) if output.exit_status == Some(0) => {}
            Ok(Ok(output)) => tracing::info!(
                name,
                said = %String::from_utf8_lossy(&output.stderr).trim(),
                "could not refuse the retired container's new connections; stopping it anyway"
            ),
            Ok(Err(error)) => tracing::info!(
                %error,
                name,
                "could not refuse the retired container's new connections; stopping it anyway"
            ),
            Err(_) => tracing::info!(
                name,
                "refusing the retired container's new connections took too long; stopping it"
            ),
        }
    }
}

/// In the network namespace of process `pid`, answers every new inbound TCP connection with a
/// reset (IPv4; IPv6 too where the host has `ip6tables`). Established connections, and the
/// container's own outbound ones, are untouched: only a SYN without ACK matches.
fn refuse_connections_command(pid: i64) -> String {
    let rule = "-w 5 -I INPUT -p tcp --syn -j REJECT --reject-with tcp-reset";
    let enter = format!("nsenter -t {pid} -n");
    format!("{enter} iptables {rule} && {{ {enter} ip6tables {rule} 2>/dev/null || true; }}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_connections_are_reset_in_the_container_s_own_network_namespace() {
        assert_eq!(
            refuse_connections_command(4242),
            "nsenter -t 4242 -n iptables -w 5 -I INPUT -p tcp --syn -j REJECT --reject-with \
             tcp-reset && { nsenter -t 4242 -n ip6tables -w 5 -I INPUT -p tcp --syn -j REJECT \
             --reject-with tcp-reset 2>/dev/null || true; }"
        );
    }
}
