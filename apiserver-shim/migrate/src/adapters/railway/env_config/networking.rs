//! `networking` of a service: custom domains migrate, Railway's own domains do not, TCP
//! proxies block (Berth's bundle has no raw TCP exposure).

use berth_api::migrations::BundleDomain;
use berth_api::validate::FieldError;

use super::Networking;
use crate::adapters::draft::Draft;
use crate::adapters::fields::Obj;

impl Networking {
    pub(super) fn read(obj: Option<Obj>, draft: &mut Draft) -> Result<Self, FieldError> {
        let Some(mut obj) = obj else {
            return Ok(Self::default());
        };
        let mut networking = Self {
            file: obj.file.to_string(),
            path: obj.path.clone(),
            ..Self::default()
        };
        networking.custom = domains(obj.obj("customDomains")?, draft)?;
        networking.railway = domains(obj.obj("serviceDomains")?, draft)?;
        if let Some(proxies) = obj.obj("tcpProxies")? {
            networking.tcp = proxies.entries().map(|(port, _)| port.clone()).collect();
        }
        if obj.str("privateNetworkEndpoint")?.is_some() {
            draft.warn(format!(
                "{}: {} is not migrated: Berth resources reach each other by their own names.",
                obj.file,
                obj.child("privateNetworkEndpoint")
            ));
        }
        obj.warn_unread(draft);
        Ok(networking)
    }

    /// The port a custom domain routes to, else a Railway domain's.
    pub(super) fn port(&self) -> Option<u16> {
        self.custom
            .iter()
            .chain(&self.railway)
            .find_map(|(_, port)| *port)
    }

    /// Domains, warnings and blockers for the resource `reference`.
    pub(super) fn emit(&self, reference: &str, name: &str, port: Option<u16>, draft: &mut Draft) {
        for (host, host_port) in &self.custom {
            draft.domains.push(BundleDomain {
                hostname: host.to_ascii_lowercase(),
                resource_ref: reference.to_string(),
                tls_policy: "automatic".into(),
            });
            if host_port.is_some() && *host_port != port {
                draft.warn(format!(
                    "{}: {}.customDomains.{host} routes to another port than the service's; Berth \
                     routes every domain of a resource to its one port.",
                    self.file, self.path
                ));
            }
        }
        for (host, _) in &self.railway {
            draft.warn(format!(
                "{}: {}.serviceDomains.{host} is a Railway domain and is not migrated; point a \
                 domain of your own at Berth instead.",
                self.file, self.path
            ));
        }
        for port in &self.tcp {
            draft.block(
                "railway_tcp_proxy_unsupported",
                format!("{}:{}.tcpProxies.{port}", self.file, self.path),
                format!(
                    "Service {name} exposes TCP port {port} through a Railway TCP proxy; Berth's \
                     bundle cannot publish a raw TCP port."
                ),
            );
        }
    }
}

/// `{<host>: {port}}`.
fn domains(obj: Option<Obj>, draft: &mut Draft) -> Result<Vec<(String, Option<u16>)>, FieldError> {
    let mut found = Vec::new();
    for (host, mut entry) in obj
        .map(|obj| obj.members())
        .transpose()?
        .unwrap_or_default()
    {
        let port = match entry.uint("port")? {
            Some(port) => Some(
                u16::try_from(port)
                    .ok()
                    .filter(|port| *port > 0)
                    .ok_or_else(|| entry.wrong("port", "a port (1-65535)"))?,
            ),
            None => None,
        };
        entry.warn_unread(draft);
        found.push((host.to_string(), port));
    }
    Ok(found)
}
