//! Requests the edge proxy cannot serve (spec §2.2 access-failure evidence): the Caddy routes
//! and error handler that answer them with a request id and a reason, the access log that
//! records only them, and the parser the controller reads that log with.
//!
//! Checked against Caddy 2.6.2 (Debian's, as in `berth/edge-caddy`): a `vars` handler with
//! `skip_log` keeps a request out of the access log, so successful traffic costs no log line;
//! vars set in a route are still set in the server's `errors` routes; `{http.request.uuid}` is
//! one id per request wherever it is used. 2.6 has no RFC 3339 time placeholder, so a body
//! carries no `generatedAt`; the recorded evidence does.

use berth_crds::access_failure::{
    GENERATED_ROUTE_SOURCE, PATH_NOT_FOUND, ROUTE_NOT_FOUND, Reason, SCHEMA_VERSION,
    UPSTREAM_UNAVAILABLE, reason,
};
use serde_json::{Value, json};

/// Response header carrying the request id of every answer of Berth's own.
pub const REQUEST_ID_HEADER: &str = "X-Request-Id";
/// Response header naming the failure's code, read back from the access log.
pub const FAILURE_HEADER: &str = "X-Berth-Access-Failure";
/// Response header naming the resource whose route took the request, when one did.
pub const RESOURCE_HEADER: &str = "X-Berth-Resource";
/// Caddy var a resource route sets: its resource's name.
pub const RESOURCE_VAR: &str = "berth_resource";
/// Caddy var a resource route sets: its path prefix.
pub const PATH_PREFIX_VAR: &str = "berth_path_prefix";
/// The logger the edge server's access log goes to; it writes to the container's stdout, and
/// nothing else does, so the container's stdout holds failures only.
pub const ACCESS_LOGGER: &str = "berth_access";

const ACCESS_LOGGER_FULL: &str = "http.log.access.berth_access";
/// Stands for the error's status in a body template: it must be a JSON number there.
const STATUS_SLOT: &str = "\"@@status@@\"";

/// Caddy's `logging` section: the access logger to stdout as JSON, kept out of the default log.
pub fn logging_config() -> Value {
    json!({ "logs": {
        "default": { "exclude": [ACCESS_LOGGER_FULL] },
        ACCESS_LOGGER: {
            "writer": { "output": "stdout" },
            "encoder": { "format": "json" },
            "include": [ACCESS_LOGGER_FULL],
        },
    }})
}

/// The `vars` handler a resource route starts with: it names the route for the error handler
/// and keeps successful requests out of the access log.
pub fn route_vars(resource: &str, path_prefix: &str) -> Value {
    json!({
        "handler": "vars",
        "skip_log": true,
        RESOURCE_VAR: resource,
        PATH_PREFIX_VAR: path_prefix,
    })
}

/// The evidence body of `reason`, with Caddy placeholders for what only the request knows.
fn body(reason: &Reason, status: Option<u16>, routed: bool) -> String {
    let mut evidence = json!({
        "schemaVersion": SCHEMA_VERSION,
        "requestId": "{http.request.uuid}",
        "code": reason.code,
        "category": reason.category,
        "phase": reason.phase,
        "httpStatus": status.map_or(json!("@@status@@"), |s| json!(s)),
        "retriable": reason.retriable,
        "ownerHint": reason.owner_hint,
        "nextAction": reason.next_action,
        "affected": {
            "hostname": "{http.request.host}",
            "path": "{http.request.uri.path}",
            "method": "{http.request.method}",
        },
    });
    if routed {
        evidence["route"] = json!({
            "host": "{http.request.host}",
            "pathPrefix": format!("{{http.vars.{PATH_PREFIX_VAR}}}"),
            "resourceId": format!("{{http.vars.{RESOURCE_VAR}}}"),
            "routeSource": GENERATED_ROUTE_SOURCE,
        });
    }
    // A path with a `"` in it makes the body invalid JSON (Caddy does not escape
    // placeholders); the recorded evidence, built from the access log, is always valid.
    evidence
        .to_string()
        .replace(STATUS_SLOT, "{http.error.status_code}")
}

/// The `static_response` answering a failure of `code`.
fn answer(code: &str, status: Option<u16>, routed: bool) -> Value {
    let reason = reason(code).expect("Berth's own codes have a reason");
    let mut headers = json!({
        "Content-Type": ["application/json"],
        REQUEST_ID_HEADER: ["{http.request.uuid}"],
        FAILURE_HEADER: [code],
    });
    if routed {
        headers[RESOURCE_HEADER] = json!([format!("{{http.vars.{RESOURCE_VAR}}}")]);
    }
    json!({
        "handler": "static_response",
        "status_code": status.map_or(json!("{http.error.status_code}"), |s| json!(s)),
        "headers": headers,
        "body": body(&reason, status, routed),
    })
}

/// The route every request no application claims ends in.
pub fn not_found_route() -> Value {
    json!({ "handle": [answer(ROUTE_NOT_FOUND, Some(404), false)] })
}

/// For each host whose routes all match path prefixes, a 404 for the paths none of them claims,
/// naming the host's (first) resource. `routes` are the resource routes, in order.
pub fn path_not_found_routes(routes: &[Value]) -> Vec<Value> {
    let mut hosts: Vec<(String, Value)> = Vec::new();
    let mut whole_hosts: Vec<String> = Vec::new();
    for route in routes {
        let Some(matcher) = route.pointer("/match/0") else {
            continue;
        };
        let route_hosts = matcher["host"].as_array().cloned().unwrap_or_default();
        for host in route_hosts.iter().filter_map(Value::as_str) {
            if matcher.get("path").is_none() {
                whole_hosts.push(host.to_string());
            } else if !hosts.iter().any(|(known, _)| known == host) {
                let vars = route.pointer("/handle/0").cloned().unwrap_or_default();
                hosts.push((host.to_string(), vars));
            }
        }
    }
    hosts
        .into_iter()
        .filter(|(host, _)| !whole_hosts.contains(host))
        .map(|(host, vars)| {
            let mut names = json!({ "handler": "vars" });
            for var in [RESOURCE_VAR, PATH_PREFIX_VAR] {
                names[var] = vars.get(var).cloned().unwrap_or(json!(""));
            }
            json!({
                "match": [{ "host": [host] }],
                "handle": [names, answer(PATH_NOT_FOUND, Some(404), true)],
                "terminal": true,
            })
        })
        .collect()
}

/// The server's `errors` section: an upstream that refuses, vanished or is not ready (the
/// errors `reverse_proxy` returns: 502, 503, 504) gets its evidence, logged again.
pub fn error_handling() -> Value {
    json!({ "routes": [{
        "handle": [
            { "handler": "vars", "skip_log": false },
            answer(UPSTREAM_UNAVAILABLE, None, true),
        ],
    }]})
}

/// A failure as the access log recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeFailure {
    pub request_id: String,
    pub code: String,
    /// The resource whose route took the request.
    pub resource: Option<String>,
    pub status: u16,
    pub method: String,
    /// Without a port.
    pub hostname: String,
    /// Without the query string, which may carry tokens.
    pub path: String,
    /// When Caddy logged it, in Unix milliseconds.
    pub at_ms: i64,
}

/// The failure one access-log line records; `None` for anything else (startup messages, a
/// request answered by something other than Berth's failure routes).
pub fn parse_failure_line(line: &str) -> Option<EdgeFailure> {
    let entry: Value = serde_json::from_str(line.trim()).ok()?;
    if !entry["logger"].as_str()?.starts_with("http.log.access") {
        return None;
    }
    let header = |name: &str| -> Option<String> {
        let value = entry["resp_headers"][name].get(0)?.as_str()?;
        (!value.is_empty()).then(|| value.to_string())
    };
    let request = &entry["request"];
    let uri = request["uri"].as_str().unwrap_or("/");
    Some(EdgeFailure {
        request_id: header(REQUEST_ID_HEADER)?,
        code: header(FAILURE_HEADER)?,
        resource: header(RESOURCE_HEADER),
        status: u16::try_from(entry["status"].as_u64()?).ok()?,
        method: request["method"].as_str().unwrap_or_default().to_string(),
        hostname: without_port(request["host"].as_str().unwrap_or_default()).to_string(),
        path: uri.split(['?', '#']).next().unwrap_or("/").to_string(),
        at_ms: (entry["ts"].as_f64()? * 1000.0) as i64,
    })
}

/// `host` without its `:port` (an IPv6 literal keeps its brackets).
fn without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource_route(host: &str, path: Option<&str>, resource: &str) -> Value {
        let mut matcher = json!({ "host": [host] });
        if let Some(path) = path {
            matcher["path"] = json!([path, format!("{path}/*")]);
        }
        json!({
            "@id": format!("berth-route.org.{resource}"),
            "match": [matcher],
            "handle": [route_vars(resource, path.unwrap_or("/")), {"handler": "reverse_proxy"}],
        })
    }

    #[test]
    fn not_found_body_is_the_spec_evidence_with_the_request_id() {
        let route = not_found_route();
        let answer = &route["handle"][0];
        assert_eq!(answer["status_code"], 404);
        assert_eq!(
            answer["headers"][REQUEST_ID_HEADER][0],
            "{http.request.uuid}"
        );
        assert_eq!(answer["headers"][FAILURE_HEADER][0], ROUTE_NOT_FOUND);
        let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["schemaVersion"], SCHEMA_VERSION);
        assert_eq!(body["requestId"], "{http.request.uuid}");
        assert_eq!(body["httpStatus"], 404);
        assert_eq!(body["ownerHint"], "platform");
        assert!(body.get("route").is_none());
    }

    #[test]
    fn upstream_errors_answer_with_their_status_and_the_route_vars() {
        let handling = error_handling();
        let handle = &handling["routes"][0]["handle"];
        assert_eq!(handle[0], json!({"handler": "vars", "skip_log": false}));
        let answer = &handle[1];
        assert_eq!(answer["status_code"], "{http.error.status_code}");
        assert_eq!(
            answer["headers"][RESOURCE_HEADER][0],
            "{http.vars.berth_resource}"
        );
        let body = answer["body"].as_str().unwrap();
        assert!(
            body.contains(r#""httpStatus":{http.error.status_code}"#),
            "{body}"
        );
        // With the status in place it is JSON.
        let filled: Value =
            serde_json::from_str(&body.replace("{http.error.status_code}", "502")).unwrap();
        assert_eq!(filled["code"], UPSTREAM_UNAVAILABLE);
        assert_eq!(filled["route"]["resourceId"], "{http.vars.berth_resource}");
    }

    #[test]
    fn hosts_matched_by_path_prefix_only_get_a_path_404_naming_their_resource() {
        let routes = [
            resource_route("a.example", Some("/app"), "web"),
            resource_route("a.example", Some("/api"), "api"),
            resource_route("b.example", None, "site"),
            resource_route("b.example", Some("/docs"), "docs"),
        ];
        let extra = path_not_found_routes(&routes);
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert_eq!(extra[0]["match"][0], json!({"host": ["a.example"]}));
        assert_eq!(extra[0]["handle"][0][RESOURCE_VAR], "web");
        assert_eq!(extra[0]["handle"][0][PATH_PREFIX_VAR], "/app");
        assert!(extra[0]["handle"][0].get("skip_log").is_none());
        assert_eq!(
            extra[0]["handle"][1]["headers"][FAILURE_HEADER][0],
            PATH_NOT_FOUND
        );
        assert!(path_not_found_routes(&[]).is_empty());
    }

    #[test]
    fn access_lines_of_failures_parse_and_everything_else_is_skipped() {
        // A line as Caddy 2.6.2 wrote it for a refused upstream.
        let line = r#"{"level":"error","ts":1795405889.4685113,"logger":"http.log.access.berth_access","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"38548","proto":"HTTP/1.1","method":"GET","host":"a.test:8080","uri":"/app/x?token=s3cret","headers":{"User-Agent":["curl/7.88.1"]}},"user_id":"","duration":1.0,"size":147,"status":502,"resp_headers":{"X-Berth-Resource":["web"],"X-Berth-Access-Failure":["resource_access_upstream_unavailable"],"X-Request-Id":["ddbefa4b-e18d-4a13-b9b2-b689cf3c66e8"],"Content-Type":["application/json"]}}"#;
        let failure = parse_failure_line(line).unwrap();
        assert_eq!(
            failure,
            EdgeFailure {
                request_id: "ddbefa4b-e18d-4a13-b9b2-b689cf3c66e8".into(),
                code: UPSTREAM_UNAVAILABLE.into(),
                resource: Some("web".into()),
                status: 502,
                method: "GET".into(),
                hostname: "a.test".into(),
                path: "/app/x".into(),
                at_ms: 1_795_405_889_468,
            }
        );
        let unknown_host = line
            .replace(r#""X-Berth-Resource":["web"],"#, "")
            .replace(UPSTREAM_UNAVAILABLE, ROUTE_NOT_FOUND);
        assert_eq!(parse_failure_line(&unknown_host).unwrap().resource, None);
        let startup = r#"{"level":"info","ts":1.0,"logger":"http.log","msg":"server running"}"#;
        for other in [
            startup,
            "not json",
            "",
            &line.replace("X-Request-Id", "X-Other"),
        ] {
            assert_eq!(parse_failure_line(other), None, "{other}");
        }
    }

    #[test]
    fn ports_come_off_hosts() {
        assert_eq!(without_port("a.test:8080"), "a.test");
        assert_eq!(without_port("a.test"), "a.test");
        assert_eq!(without_port("[::1]:80"), "[::1]");
        assert_eq!(without_port("[::1]"), "[::1]");
    }
}
