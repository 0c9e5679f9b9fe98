//! The server's firewall for an exposed dependency, decided without I/O: the shell scripts that
//! let only `allowFrom` reach its host port, and that take the rules away again.
//!
//! Docker publishes a port past the server's own firewall rules, so the rules go where Docker's
//! traffic passes: `DOCKER-USER` (a published port reached from outside is forwarded there, its
//! original port kept by conntrack) and `INPUT` (an engine without iptables rules, or a client
//! on the host, reaches Docker's proxy there). Both jump to one chain per dependency that
//! returns the allowed sources and drops the rest. The chain is replaced in one
//! `iptables-restore` transaction, and a jump is added before a stale one is removed, so an
//! update never leaves the port open to everyone.

use berth_crds::dependency_resource::DependencyExposure;
use sha2::{Digest, Sha256};

/// Marks the jumps of this port (`iptables -S` shows it), so a jump to another port is known
/// as stale.
const COMMENT_PREFIX: &str = "berth-dependency-port-";

/// The firewall rules of one exposed dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The chain (`BERTH-DEP-` and a hash of the container's name: iptables allows 28
    /// characters).
    pub chain: String,
    pub host_port: u16,
    /// IPv4 sources allowed.
    pub v4: Vec<String>,
    /// IPv6 sources allowed; with none, the port is published on IPv4 only.
    pub v6: Vec<String>,
}

impl Rules {
    pub fn of(container: &str, exposure: &DependencyExposure) -> Self {
        Self {
            chain: chain_name(container),
            host_port: u16::try_from(exposure.host_port).unwrap_or_default(),
            v4: exposure.sources(false).map(str::to_string).collect(),
            v6: exposure.sources(true).map(str::to_string).collect(),
        }
    }

    /// Whether the port is published on IPv6 too (only when an IPv6 source is allowed).
    pub fn publishes_v6(&self) -> bool {
        !self.v6.is_empty()
    }

    /// The script that puts the rules in place (idempotent); it fails, saying why, when the
    /// server has no iptables.
    pub fn apply_script(&self) -> String {
        let mut script = String::from("set -e\n");
        script.push_str(&require_iptables());
        script.push_str(&self.family_script("iptables", &self.v4));
        if self.publishes_v6() {
            script.push_str(&self.family_script("ip6tables", &self.v6));
        }
        script
    }

    fn family_script(&self, tool: &str, sources: &[String]) -> String {
        let chain = &self.chain;
        let port = self.host_port;
        let comment = format!("{COMMENT_PREFIX}{port}");
        let mut table = format!("*filter\n:{chain} - [0:0]\n");
        for source in sources {
            table.push_str(&format!("-A {chain} -s {source} -j RETURN\n"));
        }
        table.push_str(&format!("-A {chain} -j DROP\nCOMMIT\n"));
        format!(
            "{tool}-restore -w 5 --noflush <<'BERTH_RULES'\n{table}BERTH_RULES\n\
             jump() {{ {tool} -w 5 -C \"$@\" 2>/dev/null || {tool} -w 5 -I \"$@\"; }}\n\
             jump INPUT -p tcp --dport {port} -m comment --comment {comment} -j {chain}\n\
             if {tool} -w 5 -S DOCKER-USER >/dev/null 2>&1; then\n\
             jump DOCKER-USER -p tcp -m conntrack --ctorigdstport {port} --ctdir ORIGINAL \
             -m comment --comment {comment} -j {chain}\n\
             fi\n\
             {}",
            drop_jumps(tool, chain, Some(&comment))
        )
    }

    /// The script that removes the rules (idempotent: nothing to remove is no error).
    pub fn removal_script(chain: &str) -> String {
        let mut script = String::from("set -e\n");
        for tool in ["iptables", "ip6tables"] {
            script.push_str(&format!(
                "if command -v {tool} >/dev/null && {tool} -w 5 -S {chain} >/dev/null 2>&1; then\n\
                 {}{tool} -w 5 -F {chain}\n{tool} -w 5 -X {chain}\nfi\n",
                drop_jumps(tool, chain, None)
            ));
        }
        script
    }
}

/// The chain of the dependency whose container is `container`.
pub fn chain_name(container: &str) -> String {
    let digest = hex::encode(Sha256::digest(container.as_bytes()));
    format!("BERTH-DEP-{}", &digest[..16])
}

fn require_iptables() -> String {
    "command -v iptables-restore >/dev/null || { echo 'iptables is not installed on the server: \
     Berth cannot limit who reaches the port' >&2; exit 3; }\n"
        .to_string()
}

/// Deletes the jumps from `INPUT` and `DOCKER-USER` to `chain`, except those marked `keep`.
fn drop_jumps(tool: &str, chain: &str, keep: Option<&str>) -> String {
    let kept = keep
        .map(|comment| format!(" | grep -v -e ' {comment} '"))
        .unwrap_or_default();
    format!(
        "for parent in INPUT DOCKER-USER; do\n\
         {tool} -w 5 -S \"$parent\" 2>/dev/null | grep -e ' -j {chain}$'{kept} | \
         sed 's/^-A //' | while read -r rule; do {tool} -w 5 -D $rule; done\n\
         done\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure(sources: &[&str]) -> DependencyExposure {
        DependencyExposure {
            host_port: 15432,
            allow_from: sources.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn only_the_listed_sources_return_and_the_rest_is_dropped() {
        let rules = Rules::of("berth-dep-org-acme-db", &exposure(&["198.18.0.0/15"]));
        assert_eq!(rules.chain.len(), "BERTH-DEP-".len() + 16);
        assert!(rules.chain.len() <= 28, "iptables' limit");
        let script = rules.apply_script();
        let chain = &rules.chain;
        let allowed = format!("-A {chain} -s 198.18.0.0/15 -j RETURN\n-A {chain} -j DROP\n");
        assert!(script.contains(&allowed), "{script}");
        assert!(script.contains("--dport 15432 -m comment"), "{script}");
        assert!(script.contains("--ctorigdstport 15432"), "{script}");
        assert!(
            !script.contains("ip6tables"),
            "no IPv6 source, no IPv6 rules"
        );
        assert!(!rules.publishes_v6());
    }

    #[test]
    fn ipv6_sources_get_rules_of_their_own() {
        let rules = Rules::of("db", &exposure(&["198.18.0.1/32", "2001:db8::/32"]));
        assert!(rules.publishes_v6());
        let script = rules.apply_script();
        let v6 = script.split("ip6tables-restore").nth(1).unwrap();
        assert!(v6.contains("-s 2001:db8::/32 -j RETURN"), "{script}");
        assert!(!v6.contains("198.18.0.1"), "{script}");
    }

    #[test]
    fn stale_jumps_go_after_the_new_one_is_in() {
        let script = Rules::of("db", &exposure(&["198.18.0.1/32"])).apply_script();
        let jump = script.find("jump INPUT").unwrap();
        let stale = script.find("-D $rule").unwrap();
        assert!(jump < stale, "{script}");
        assert!(script.contains("grep -v -e ' berth-dependency-port-15432 '"));
        let removal = Rules::removal_script("BERTH-DEP-x");
        assert!(removal.contains("-X BERTH-DEP-x"), "{removal}");
        assert!(!removal.contains("grep -v"), "every jump goes");
    }
}
