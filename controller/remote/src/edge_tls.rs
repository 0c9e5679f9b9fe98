//! Domains and TLS on the edge proxy (DESIGN §5b): HTTP-01 answers, domain routes, certificate
//! files and the HTTPS server. Private keys reach Caddy as files in the admin directory
//! (uploaded through Docker's archive API), never inside the JSON configuration, which
//! `GET /config/` would hand to anyone who reads the proxy's configuration.

use serde_json::{Value, json};

use crate::edge_failures;

/// The HTTPS server of the edge proxy's `http` app (the plain one is `edge`).
pub const HTTPS_SERVER: &str = "edge_tls";
/// Path prefix of ACME HTTP-01 answers (RFC 8555 §8.3).
pub const ACME_CHALLENGE_PATH: &str = "/.well-known/acme-challenge/";
/// Where certificate files live inside the proxy container (the admin directory's mount).
pub const TLS_DIR_IN_CONTAINER: &str = "/run/caddy/tls";

/// `@id` prefix of the HTTP-01 answers published for one Certificate.
pub fn challenge_route_prefix(namespace: &str, certificate: &str) -> String {
    format!("berth-acme.{namespace}.{certificate}.")
}

/// `@id` of a DomainBinding's routes (the same on the HTTP and the HTTPS server).
pub fn domain_route_id(namespace: &str, binding: &str) -> String {
    format!("berth-domain.{namespace}.{binding}")
}

/// The route answering one HTTP-01 challenge (or Berth's own pre-flight probe) for `hostname`.
pub fn challenge_route(id_prefix: &str, hostname: &str, token: &str, answer: &str) -> Value {
    json!({
        "@id": format!("{id_prefix}{token}"),
        "match": [{ "host": [hostname], "path": [format!("{ACME_CHALLENGE_PATH}{token}")] }],
        "handle": [{
            "handler": "static_response",
            "status_code": 200,
            "headers": { "Content-Type": ["application/octet-stream"] },
            "body": answer,
        }],
        "terminal": true,
    })
}

/// A certificate as Caddy loads it: files in the container, selected by `tag`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFiles {
    pub tag: String,
    pub certificate: String,
    pub key: String,
}

impl CertificateFiles {
    /// File names carry a digest of the chain, so a renewed certificate is a changed
    /// configuration (Caddy skips a `/load` of an identical one).
    pub fn named(tag: &str, chain_digest: &str) -> Self {
        let stem = format!("{TLS_DIR_IN_CONTAINER}/{tag}-{chain_digest}");
        Self {
            tag: tag.to_string(),
            certificate: format!("{stem}.crt"),
            key: format!("{stem}.key"),
        }
    }
}

/// One DomainBinding as the edge proxy serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainRoute {
    pub id: String,
    pub hostname: String,
    pub path_prefix: String,
    /// Resource name, for the access-failure evidence.
    pub resource: String,
    /// `alias:port` on the edge network.
    pub dial: String,
    /// Present once a certificate is loaded.
    pub tls: Option<DomainTls>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainTls {
    pub files: CertificateFiles,
    /// Plain HTTP answers with a redirect to this HTTPS port (policy `redirect`).
    pub redirect_to_port: Option<u16>,
}

fn matcher(hostname: &str, path_prefix: &str) -> Value {
    let mut matcher = json!({ "host": [hostname] });
    let prefix = path_prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        matcher["path"] = json!([prefix, format!("{prefix}/*")]);
    }
    matcher
}

fn proxy_route(route: &DomainRoute) -> Value {
    json!({
        "@id": route.id,
        "match": [matcher(&route.hostname, &route.path_prefix)],
        "handle": [edge_failures::route_vars(&route.resource, &route.path_prefix), {
            "handler": "reverse_proxy",
            "upstreams": [{ "dial": route.dial }],
            "transport": { "protocol": "http", "keep_alive": { "enabled": false } },
            "load_balancing": { "try_duration": "5s", "try_interval": "100ms" },
        }],
        "terminal": true,
    })
}

/// The route on the plain HTTP server: the application, or a redirect to HTTPS.
pub fn http_route(route: &DomainRoute) -> Value {
    match route.tls.as_ref().and_then(|t| t.redirect_to_port) {
        Some(port) => {
            let authority = if port == 443 {
                "{http.request.host}".to_string()
            } else {
                format!("{{http.request.host}}:{port}")
            };
            json!({
                "@id": route.id,
                "match": [matcher(&route.hostname, &route.path_prefix)],
                "handle": [{
                    "handler": "static_response",
                    "status_code": 308,
                    "headers": { "Location": [format!("https://{authority}{{http.request.uri}}")] },
                }],
                "terminal": true,
            })
        }
        None => proxy_route(route),
    }
}

/// What the HTTPS side of a configuration holds; carried over whenever the plain server's
/// routes are rebuilt (`edge_config`), so deployments and TLS never undo each other.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlsParts {
    pub routes: Vec<Value>,
    pub policies: Vec<Value>,
    pub files: Vec<Value>,
}

impl TlsParts {
    pub fn of(config: &Value) -> Self {
        let list = |pointer: &str| {
            config
                .pointer(pointer)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let server = format!("/apps/http/servers/{HTTPS_SERVER}");
        Self {
            // The catch-all 404 has no `@id` and is added again.
            routes: list(&format!("{server}/routes"))
                .into_iter()
                .filter(|r| r.get("@id").is_some())
                .collect(),
            policies: list(&format!("{server}/tls_connection_policies")),
            files: list("/apps/tls/certificates/load_files"),
        }
    }

    /// Sets (or, with `None`, removes) a binding's HTTPS route and its certificate.
    pub fn set(&mut self, id: &str, route: Option<&DomainRoute>) {
        self.routes.retain(|r| r["@id"] != id);
        let tag = json!(certificate_tag(id));
        self.policies
            .retain(|p| p.pointer("/certificate_selection/any_tag/0") != Some(&tag));
        self.files.retain(|f| f.pointer("/tags/0") != Some(&tag));
        let Some(route) = route else { return };
        let Some(tls) = &route.tls else { return };
        self.routes.push(proxy_route(route));
        self.policies.push(json!({
            "match": { "sni": [route.hostname] },
            "certificate_selection": { "any_tag": [tls.files.tag] },
        }));
        self.files.push(json!({
            "certificate": tls.files.certificate,
            "key": tls.files.key,
            "format": "pem",
            "tags": [tls.files.tag],
        }));
    }

    /// Adds the HTTPS server and the `tls` app to `config` (a fresh `edge_config`).
    pub fn apply_to(&self, config: &mut Value) {
        if self.routes.is_empty() && self.files.is_empty() {
            return;
        }
        let mut routes = self.routes.clone();
        routes.push(edge_failures::not_found_route());
        config["apps"]["http"]["servers"][HTTPS_SERVER] = json!({
            "listen": [":443"],
            "automatic_https": { "disable": true },
            "routes": routes,
            "tls_connection_policies": self.policies,
            "errors": edge_failures::error_handling(),
            "logs": { "default_logger_name": edge_failures::ACCESS_LOGGER },
        });
        config["apps"]["tls"] = json!({ "certificates": { "load_files": self.files } });
    }
}

/// The tag a binding's certificate is selected by.
pub fn certificate_tag(route_id: &str) -> String {
    format!("{route_id}.tls")
}

/// Routes of a plain-server route list with HTTP-01 answers first: they must win over a
/// domain route of the same host.
pub fn challenges_first(routes: Vec<Value>) -> Vec<Value> {
    let is_challenge = |r: &Value| {
        r["@id"]
            .as_str()
            .is_some_and(|id| id.starts_with("berth-acme."))
    };
    let (mut first, rest): (Vec<Value>, Vec<Value>) = routes.into_iter().partition(is_challenge);
    first.extend(rest);
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge_proxy::edge_config;

    fn route(tls: bool) -> DomainRoute {
        let id = domain_route_id("org-a", "shop");
        DomainRoute {
            tls: tls.then(|| DomainTls {
                files: CertificateFiles::named(&certificate_tag(&id), "abcd"),
                redirect_to_port: Some(8443),
            }),
            id,
            hostname: "shop.example".into(),
            path_prefix: "/".into(),
            resource: "web".into(),
            dial: "berth-upstream-1:8080".into(),
        }
    }

    #[test]
    fn tls_parts_survive_a_rebuild_and_hold_no_key_material() {
        let mut parts = TlsParts::default();
        parts.set(&route(true).id, Some(&route(true)));
        let mut config = edge_config(vec![http_route(&route(true))]);
        parts.apply_to(&mut config);
        assert_eq!(TlsParts::of(&config), parts);
        let text = config.to_string();
        assert!(text.contains("/run/caddy/tls/berth-domain.org-a.shop.tls-abcd.key"));
        assert!(!text.contains("PRIVATE KEY"));
        let redirect = &config.pointer("/apps/http/servers/edge/routes/0").unwrap();
        assert_eq!(
            redirect["handle"][0]["headers"]["Location"][0],
            "https://{http.request.host}:8443{http.request.uri}"
        );
        parts.set(&route(true).id, None);
        assert_eq!(parts, TlsParts::default());
    }

    #[test]
    fn challenges_come_before_domain_routes() {
        let answer = challenge_route("berth-acme.org-a.shop.", "shop.example", "tok", "tok.key");
        let routes = challenges_first(vec![http_route(&route(false)), answer.clone()]);
        assert_eq!(routes[0], answer);
        assert_eq!(
            answer["match"][0]["path"][0],
            "/.well-known/acme-challenge/tok"
        );
    }
}
