//! The table rows of the API's records: each reads the record's typed fields (berth-api), so
//! a field renamed on one side breaks the build of both. `-o json|yaml` prints the answer as
//! it came, never these.

use berth_api::deploy_tokens::TokenRecord;
use berth_api::environments::EnvironmentRecord;
use berth_api::members::MemberRecord;
use berth_api::monitoring::{Point, ResourceMetrics, Sample, Scope, Signal};
use berth_api::organizations::OrganizationSummary;
use berth_api::projects::ProjectRecord;
use berth_api::resources::{DeployedState, ResourceRecord};
use berth_api::servers::{Check, ServerRecord};
use berth_api::variables::{ImportedEntry, VariableEntry};

use crate::output::{Row, optional, text, wire};

impl Row for ProjectRecord {
    const HEADERS: &'static [&'static str] = &["ID", "SLUG", "NAME", "STATUS", "CREATED"];

    fn cells(&self) -> Vec<String> {
        [
            &self.id,
            &self.slug,
            &self.name,
            &self.lifecycle_status,
            &self.created_at,
        ]
        .map(|value| text(value))
        .to_vec()
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for EnvironmentRecord {
    const HEADERS: &'static [&'static str] =
        &["ID", "PROJECT", "NAME", "KIND", "STATUS", "CREATED"];

    fn cells(&self) -> Vec<String> {
        [
            &self.id,
            &self.project_id,
            &self.name,
            &self.kind,
            &self.lifecycle_status,
            &self.created_at,
        ]
        .map(|value| text(value))
        .to_vec()
    }

    fn id(&self) -> &str {
        &self.id
    }
}

impl Row for MemberRecord {
    const HEADERS: &'static [&'static str] = &["ID", "EMAIL", "NAME", "ROLE", "STATUS", "JOINED"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.member_id),
            text(&self.email),
            optional(self.display_name.as_ref()),
            text(&self.role),
            text(&self.status),
            text(&self.joined_at),
        ]
    }

    fn id(&self) -> &str {
        &self.member_id
    }
}

/// A variable or secret; the value is the API's, masked (`****`) for secrets.
impl Row for VariableEntry {
    const HEADERS: &'static [&'static str] = &["KEY", "VALUE", "EXPOSURE", "SCOPE", "SECRET"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.key),
            text(&self.value),
            text(&self.exposure),
            text(&self.scope),
            self.is_secret.to_string(),
        ]
    }

    fn id(&self) -> &str {
        &self.key
    }
}

/// An entry a variables import wrote.
impl Row for ImportedEntry {
    const HEADERS: &'static [&'static str] =
        &["KEY", "VALUE", "EXPOSURE", "SECRET", "ACTION", "LINE"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.key),
            text(&self.value),
            text(&self.exposure),
            self.is_secret.to_string(),
            text(&self.action),
            self.source_line.to_string(),
        ]
    }

    fn id(&self) -> &str {
        &self.key
    }
}

/// A deploy token: never its secret, which the record does not carry.
impl Row for TokenRecord {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "STATUS",
        "SUFFIX",
        "PROJECTS",
        "RESOURCES",
        "EXPIRES",
        "LAST USED",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.token_id),
            text(&self.display_name),
            text(&self.status),
            text(&self.secret_suffix),
            text(&self.scope.project_ids.join(",")),
            text(&self.scope.resource_ids.join(",")),
            optional(self.expires_at.as_ref()),
            optional(self.last_used_at.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.token_id
    }
}

impl Row for ResourceRecord {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "SLUG",
        "NAME",
        "KIND",
        "ENVIRONMENT",
        "DEPLOYMENTS",
        "LAST",
        "DEPLOYED",
        "URL",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.id),
            text(&self.slug),
            text(&self.name),
            wire(&self.kind),
            text(&self.environment_id),
            self.deployment_count.to_string(),
            wire(&self.last_deployment_status),
            deployed(self.deployed_state.as_ref()),
            text(self.url().unwrap_or_default()),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// Whether what serves is the declared spec: `yes`, `no: <fields>` (changes not deployed),
/// `deploying: <fields>` while an attempt of the declared spec runs, `-` while nothing serves.
fn deployed(state: Option<&DeployedState>) -> String {
    match state {
        None => "-".to_string(),
        Some(state) if state.up_to_date => "yes".to_string(),
        Some(state) => {
            let fields = state.changes_not_deployed.join(",");
            let word = if state.deploying_id.is_some() {
                "deploying"
            } else {
                "no"
            };
            format!("{word}: {fields}")
        }
    }
}

/// What `resources show` says below the record when the declared spec is not what serves:
/// the fields, what still serves, and how to deploy them.
pub fn not_deployed_notice(resource: &ResourceRecord) -> Option<String> {
    let state = resource.deployed_state.as_ref().filter(|s| !s.up_to_date)?;
    let fields = state.changes_not_deployed.join(", ");
    let serving = &state.deployment_id;
    let then = match &state.deploying_id {
        Some(deploying) => format!(
            "deployment {deploying} is deploying them (berth deployments follow {deploying})"
        ),
        None => format!(
            "deploy them with `berth deploy {0}`, or turn auto-deploy on (`berth config \
             auto-deploy --resource {0} enable`) so changes deploy by themselves",
            resource.slug
        ),
    };
    Some(format!(
        "changes not deployed: {fields}\ndeployment {serving} still serves the previous \
         spec; {then}"
    ))
}

/// A resource as `resources show` prints it: its list row and more.
pub struct ResourceDetail<'a>(pub &'a ResourceRecord);

impl Row for ResourceDetail<'_> {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "SLUG",
        "NAME",
        "KIND",
        "ENVIRONMENT",
        "DEPLOYMENTS",
        "LAST",
        "DEPLOYED",
        "URL",
        "PROJECT",
        "PORT",
        "ROUTE",
        "LAST DEPLOYMENT",
        "CREATED",
    ];

    fn cells(&self) -> Vec<String> {
        let r = self.0;
        let port = r.network_profile.as_ref().map(|n| n.internal_port);
        let mut cells = r.cells();
        cells.extend([
            text(&r.project_id),
            wire(&port),
            wire(&r.proxy_route_status),
            optional(r.last_deployment_id.as_ref()),
            text(&r.created_at),
        ]);
        cells
    }

    fn id(&self) -> &str {
        &self.0.id
    }
}

impl Row for ServerRecord {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "HOST",
        "PORT",
        "STATUS",
        "REACHABLE",
        "PROXY",
        "DOCKER",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.id),
            text(&self.name),
            text(&self.host),
            self.port.to_string(),
            wire(&self.lifecycle_status),
            self.reachable.to_string(),
            text(&self.proxy.status),
            optional(self.docker_version.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// One step of a connectivity test, as `servers test` prints it.
impl Row for Check {
    const HEADERS: &'static [&'static str] = &["CHECK", "STATUS", "MS", "MESSAGE"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.name),
            text(&self.status),
            self.duration_ms.to_string(),
            text(&self.message),
        ]
    }

    fn id(&self) -> &str {
        &self.name
    }
}

/// A server as `servers show` prints it: its list row and more.
pub struct ServerDetail<'a>(pub &'a ServerRecord);

impl Row for ServerDetail<'_> {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "HOST",
        "PORT",
        "STATUS",
        "REACHABLE",
        "PROXY",
        "DOCKER",
        "HOST KEY",
        "BASE DOMAIN",
        "LAST CONTACT",
        "BLOCKERS",
    ];

    fn cells(&self) -> Vec<String> {
        let server = self.0;
        let blockers: Vec<String> = server
            .delete_blockers
            .iter()
            .map(|b| format!("{} {}", b.kind, b.id))
            .collect();
        let mut cells = server.cells();
        cells.extend([
            optional(server.host_key_fingerprint.as_ref()),
            optional(server.base_domain.as_ref()),
            optional(server.last_contact_at.as_ref()),
            text(&blockers.join(", ")),
        ]);
        cells
    }

    fn id(&self) -> &str {
        &self.0.id
    }
}

/// One of the caller's organizations, the current one marked `*`.
pub struct OrganizationRow<'a> {
    pub organization: &'a OrganizationSummary,
    pub current: bool,
}

impl Row for OrganizationRow<'_> {
    const HEADERS: &'static [&'static str] = &["", "ID", "SLUG", "NAME", "ROLE"];

    fn cells(&self) -> Vec<String> {
        let o = self.organization;
        vec![
            text(if self.current { "*" } else { "" }),
            text(&o.organization_id),
            text(&o.slug),
            text(&o.name),
            text(&o.role),
        ]
    }

    fn id(&self) -> &str {
        &self.organization.organization_id
    }
}

/// `group.field=value` of every figure measured, e.g. `cpu.containerCpuPercent=2.5`.
fn figures(metrics: &ResourceMetrics) -> String {
    let all: Vec<String> = metrics
        .figures()
        .into_iter()
        .map(|(signal, name, value)| format!("{}.{name}={value}", signal.as_str()))
        .collect();
    text(&all.join(" "))
}

/// `kind/id` of a monitoring scope, e.g. `resource/web`.
fn scope(scope: &Scope) -> String {
    let id = [
        &scope.deployment_id,
        &scope.resource_id,
        &scope.environment_id,
        &scope.project_id,
        &scope.server_id,
    ]
    .into_iter()
    .find_map(|id| id.as_deref());
    match (scope.kind, id) {
        (Some(kind), Some(id)) => format!("{}/{id}", kind.as_str()),
        (Some(kind), None) => kind.as_str().to_string(),
        (None, _) => "-".to_string(),
    }
}

impl Row for Sample {
    const HEADERS: &'static [&'static str] = &["OBSERVED", "SCOPE", "FIGURES"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.observed_at),
            scope(&self.scope_evidence.scope),
            figures(&self.totals),
        ]
    }

    fn id(&self) -> &str {
        &self.sample_id
    }
}

/// One bucket of a rollup series.
pub struct RollupPoint {
    pub signal: Signal,
    pub point: Point,
}

impl Row for RollupPoint {
    const HEADERS: &'static [&'static str] = &["SIGNAL", "FROM", "SAMPLES", "AVERAGES"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.signal.as_str().to_string(),
            text(&self.point.from),
            self.point.sample_count.to_string(),
            figures(&self.point.totals),
        ]
    }

    fn id(&self) -> &str {
        &self.point.from
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Format, Output, col};
    use serde_json::json;

    /// The typed rows print what the JSON-pointer columns printed before them.
    #[test]
    fn typed_rows_print_the_table_people_saw() {
        let out = Output {
            format: Format::Table,
            quiet: false,
            color: false,
        };
        let answer = json!({"memberId": "mem-1", "userId": "usr-1", "role": "owner",
            "joinedAt": "2030-01-01T00:00:00Z", "email": "ana@example.com", "status": "active"});
        let member: MemberRecord = serde_json::from_value(answer.clone()).unwrap();
        let columns = [
            col("ID", "/memberId"),
            col("EMAIL", "/email"),
            col("NAME", "/displayName"),
            col("ROLE", "/role"),
            col("STATUS", "/status"),
            col("JOINED", "/joinedAt"),
        ];
        assert_eq!(
            out.grid(MemberRecord::HEADERS, vec![member.cells()]),
            out.table(&[answer], &columns)
        );
        let entry: VariableEntry = serde_json::from_value(json!({"resourceId": "res-1",
            "key": "TOKEN", "value": "****", "scope": "resource", "exposure": "runtime",
            "isSecret": true, "kind": "secret"}))
        .unwrap();
        assert_eq!(
            entry.cells(),
            ["TOKEN", "****", "runtime", "resource", "true"]
        );
    }

    /// Resources and servers print what their JSON-pointer columns printed before they were
    /// read typed; the URL is the newest applied route's.
    #[test]
    fn resource_and_server_rows_print_the_table_people_saw() {
        let out = Output {
            format: Format::Table,
            quiet: false,
            color: false,
        };
        let resource = json!({"id": "res-1", "projectId": "prj-1", "environmentId": "env-1",
            "name": "Web", "slug": "web", "kind": "application", "createdAt": "2030-01-01T00:00:00Z",
            "services": [], "deploymentCount": 2, "lastDeploymentStatus": "succeeded",
            "networkProfile": {"internalPort": 8080},
            "accessSummary": {"latestGeneratedAccessRoute": {"url": "http://web.example",
                "hostname": "web.example", "scheme": "http", "deploymentId": "dep-2",
                "deploymentStatus": "succeeded", "pathPrefix": "/", "proxyKind": "caddy",
                "updatedAt": "2030-01-01T00:00:00Z"}}});
        let columns = [
            col("ID", "/id"),
            col("SLUG", "/slug"),
            col("NAME", "/name"),
            col("KIND", "/kind"),
            col("ENVIRONMENT", "/environmentId"),
            col("DEPLOYMENTS", "/deploymentCount"),
            col("LAST", "/lastDeploymentStatus"),
            col("DEPLOYED", "/deployedState"),
            col("URL", "/accessSummary/latestGeneratedAccessRoute/url"),
        ];
        let record: ResourceRecord = serde_json::from_value(resource.clone()).unwrap();
        assert_eq!(
            out.grid(ResourceRecord::HEADERS, vec![record.cells()]),
            out.table(&[resource], &columns)
        );
        let detail = ResourceDetail(&record).cells();
        assert_eq!(detail[10..], ["8080", "-", "-", "2030-01-01T00:00:00Z"]);
        assert_eq!(detail.len(), ResourceDetail::HEADERS.len());
        assert_eq!(ResourceDetail::HEADERS[7], "DEPLOYED");

        let server = json!({"id": "srv-1", "name": "one", "host": "10.0.0.1", "port": 22,
            "username": "root", "credentialId": "ssh-1", "providerKey": "generic-ssh",
            "lifecycleStatus": "inactive", "reachable": true, "dockerVersion": "26.1.5",
            "proxy": {"kind": "caddy", "status": "not-ready", "image": "caddy", "httpPort": 80,
                "httpsPort": 443},
            "conditions": [{"type": "Ready", "status": "False", "reason": "ProxyNotReady",
                "message": "…", "lastTransitionTime": "2030-01-01T00:00:00Z"}],
            "deleteBlockers": [{"kind": "resource", "id": "res-1"}],
            "createdAt": "2030-01-01T00:00:00Z"});
        let columns = [
            col("ID", "/id"),
            col("NAME", "/name"),
            col("HOST", "/host"),
            col("PORT", "/port"),
            col("STATUS", "/lifecycleStatus"),
            col("REACHABLE", "/reachable"),
            col("PROXY", "/proxy/status"),
            col("DOCKER", "/dockerVersion"),
        ];
        let record: ServerRecord = serde_json::from_value(server.clone()).unwrap();
        assert_eq!(
            out.grid(ServerRecord::HEADERS, vec![record.cells()]),
            out.table(&[server], &columns)
        );
        assert_eq!(ServerDetail(&record).cells()[11], "resource res-1");
    }

    /// The DEPLOYED column and `resources show`'s notice say which changes are not deployed
    /// and how to deploy them; nothing is said while the declared spec serves.
    #[test]
    fn a_resource_says_which_changes_are_not_deployed() {
        let mut record: ResourceRecord = serde_json::from_value(json!({"id": "res-1",
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web", "slug": "web",
            "kind": "application", "createdAt": "2030-01-01T00:00:00Z", "services": [],
            "deploymentCount": 1,
            "deployedState": {"upToDate": false, "deploymentId": "dep-web-1",
                "changesNotDeployed": ["runtimeProfile", "configuration"]}}))
        .unwrap();
        assert_eq!(record.cells()[7], "no: runtimeProfile,configuration");
        let notice = not_deployed_notice(&record).unwrap();
        assert!(
            notice.starts_with("changes not deployed: runtimeProfile, configuration\n")
                && notice.contains("deployment dep-web-1 still serves")
                && notice.contains("`berth deploy web`")
                && notice.contains("auto-deploy --resource web enable"),
            "{notice}"
        );
        let state = record.deployed_state.as_mut().unwrap();
        state.deploying_id = Some("dep-web-2".into());
        assert_eq!(record.cells()[7], "deploying: runtimeProfile,configuration");
        let notice = not_deployed_notice(&record).unwrap();
        assert!(notice.contains("dep-web-2 is deploying them"), "{notice}");
        let state = record.deployed_state.as_mut().unwrap();
        state.up_to_date = true;
        state.changes_not_deployed.clear();
        assert_eq!(record.cells()[7], "yes");
        assert_eq!(not_deployed_notice(&record), None);
    }

    /// A sample prints when, whose and every figure it holds.
    #[test]
    fn a_sample_row_names_its_scope_and_each_figure() {
        let sample: Sample = serde_json::from_value(json!({"sampleId": "s-1",
            "observedAt": "2030-01-01T00:00:00Z", "collectedAt": "2030-01-01T00:00:00Z",
            "scopeEvidence": {"scope": {"kind": "resource", "resourceId": "web"}, "serverId": "edge"},
            "totals": {"cpu": {"containerCpuPercent": 2.5}, "memory": {"containerUsedBytes": 1024.0}},
            "freshness": "live", "partial": false, "labels": {}, "warnings": [], "sourceErrors": []}))
        .unwrap();
        assert_eq!(
            sample.cells(),
            [
                "2030-01-01T00:00:00Z",
                "resource/web",
                "cpu.containerCpuPercent=2.5 memory.containerUsedBytes=1024"
            ]
        );
    }
}
