//! Contract tests that read like a strict client (issue 24): every endpoint of spec §4 that
//! Berth serves is called against the real stack, and its live answer is checked against the
//! spec's §2 tables ([`records`]) by a small validator of our own ([`schema`]): types,
//! presence, value sets, no `null`. A field that drifts fails here with its path.
//!
//! Not called: `POST /bootstrap/auth/first-admin` (the stack's first administrator exists; a
//! second call is refused) and the five migration endpoints (their bodies are "not shown").

mod absent;
mod records;
mod schema;

use std::sync::LazyLock;

use berth_crds::certificate::Certificate;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::{Reply, Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use self::schema::Spec;
use crate::deploy_support::{
    WAIT, docker_names, ready_server, wait_containers_gone, wait_listed_with,
};
use crate::shim_access_failures::{lookup, through_edge};
use crate::shim_deployments_stream::{parse_events, stream};
use crate::shim_projects_envs::{environment, project};
use crate::shim_runtime_logs::follow;
use crate::shim_servers::stack_key;

static SPEC: LazyLock<Spec> = LazyLock::new(|| Spec::new(records::RECORDS, absent::ABSENT_WHEN));

/// Every drift seen, with the endpoint that showed it; the test fails at its end with all of
/// them, so one run names every field that moved.
#[derive(Default)]
struct Client {
    drift: Vec<String>,
}

impl Client {
    /// Reads `answer` of `endpoint` as `record`.
    fn read(&mut self, endpoint: &str, record: &'static str, answer: &Value) {
        for problem in SPEC.check(record, answer) {
            self.drift.push(format!("{endpoint}: {problem}"));
        }
    }

    /// The body of a 200 (or 202), read as `record`.
    #[track_caller]
    fn expect(&mut self, endpoint: &str, record: &'static str, reply: Reply) -> Value {
        assert!(
            reply.status == 200 || reply.status == 202,
            "{endpoint}: {} {}",
            reply.status,
            reply.body
        );
        self.read(endpoint, record, &reply.body);
        reply.body
    }

    #[track_caller]
    fn assert_no_drift(&self) {
        assert!(
            self.drift.is_empty(),
            "answers that a strict client rejects:\n{}",
            self.drift.join("\n")
        );
    }
}

fn id_of(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {value}"))
        .to_string()
}

#[test]
fn the_validator_reads_the_tables_and_names_each_drift() {
    let spec = Spec::new(records::RECORDS, absent::ABSENT_WHEN);
    let sample = json!({
        "sampleId": "s", "observedAt": "t", "collectedAt": "t",
        "scopeEvidence": {"scope": {"kind": "server", "serverId": "edge"}, "serverId": "edge"},
        "totals": {"cpu": {"loadAverage1m": 0.5}}, "freshness": "live", "partial": false,
        "labels": {"providerKey": "docker"}, "warnings": [], "sourceErrors": []});
    assert_eq!(
        spec.check("MonitoringSample", &sample),
        Vec::<String>::new()
    );
    let mut drifted = sample.clone();
    drifted["totals"] = json!({"hostCpuPercent": 3, "cpu": {"loadAverage1m": null}});
    drifted["scopeEvidence"]["scope"] = json!("server");
    drifted["freshness"] = json!("none");
    assert_eq!(
        spec.check("MonitoringSample", &drifted),
        [
            "MonitoringSample.scopeEvidence.scope: expected a Scope object, got \"server\"",
            "MonitoringSample.totals.cpu.loadAverage1m: null",
            "MonitoringSample.freshness: expected one of live|recent-sample|stale|unknown, got \"none\"",
        ]
    );
}

/// Bootstrap, decisions, deploy tokens, the account, organizations, members, invitations,
/// projects, environments, SSH credentials and retention defaults.
#[tokio::test]
async fn contract_identity_organizations_and_configuration_read_as_the_spec_says() {
    let kube = client().await;
    let mut org = TestOrg::new(&kube).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let leaving = org.user(OrganizationRole::Member).await;
    let mut client = Client::default();
    let c = &mut client;
    let rest = &admin.rest;

    // §4.1
    let status = Rest::anonymous().get("/bootstrap/auth/status").await;
    c.expect("GET /bootstrap/auth/status", "BootstrapStatus", status);
    let body = json!({"queries": [{"operationKey": "deployments.create"}]});
    let reply = rest.post("/capabilities/query", body).await;
    let answer = c.expect("POST /capabilities/query", "CapabilityAnswer", reply);
    // Optional fields are filled where Berth has a value.
    assert!(answer["capabilities"][0]["hint"].is_string(), "{answer}");
    assert!(answer["capabilities"][0]["reason"].is_string(), "{answer}");
    let body = json!({"queries": [{"capabilityKey": "deployments"}]});
    let reply = rest.post("/entitlements/query", body).await;
    c.expect("POST /entitlements/query", "EntitlementAnswer", reply);
    let intent = json!({
        "idempotencyKey": format!("k{}", random_suffix()), "capabilityKey": "builds",
        "source": "contract", "actor": {"kind": "user", "id": admin.user_id},
        "quantity": {"value": 2, "unit": "minutes"}, "attributes": {"note": null},
    });
    let reply = rest.post("/usage-intents", intent).await;
    let answer = c.expect("POST /usage-intents", "UsageIntentAnswer", reply);
    let record = &answer["result"]["record"];
    assert_eq!(record["occurredAt"], record["recordedAt"], "{answer}");
    assert!(answer["result"]["reason"].is_string(), "{answer}");
    c.expect(
        "GET /usage-intents",
        "UsageIntentList",
        rest.get("/usage-intents").await,
    );
    let overlay = json!({"operationKey": "deployments.create", "source": "contract"});
    let reply = rest.post("/deployment-overlays", overlay).await;
    c.expect("POST /deployment-overlays", "OverlayAnswer", reply);
    let reply = rest.get("/deployment-overlays").await;
    c.expect("GET /deployment-overlays", "OverlayList", reply);
    let surface =
        json!({"operationKey": "routes.expose", "source": "contract", "surfaceKind": "http"});
    let reply = rest.post("/route-surfaces", surface).await;
    c.expect("POST /route-surfaces", "RouteSurfaceAnswer", reply);
    c.expect(
        "GET /route-surfaces",
        "RouteSurfaceList",
        rest.get("/route-surfaces").await,
    );

    // §4.2
    let tokens = format!("/deploy-tokens?organizationId={}", org.id);
    let body = json!({"organizationId": org.id, "displayName": "ci",
        "scope": {"workflowCommands": ["source-link-deploy"]}});
    let created = c.expect(
        "POST /deploy-tokens",
        "DeployTokenCreated",
        rest.post("/deploy-tokens", body).await,
    );
    let token = id_of(&created, "tokenId");
    c.expect("GET /deploy-tokens", "TokenList", rest.get(&tokens).await);
    let one = format!("/deploy-tokens/{token}?organizationId={}", org.id);
    c.expect(
        "GET /deploy-tokens/{id}",
        "DeployToken",
        rest.get(&one).await,
    );
    let confirm = json!({"organizationId": org.id, "confirmation": {"tokenId": token}});
    let reply = rest
        .post(&format!("/deploy-tokens/{token}/rotate"), confirm.clone())
        .await;
    c.expect("POST /deploy-tokens/{id}/rotate", "TokenRotated", reply);
    let reply = rest
        .post(&format!("/deploy-tokens/{token}/revoke"), confirm)
        .await;
    c.expect("POST /deploy-tokens/{id}/revoke", "TokenRevoked", reply);

    // §4.3
    let profile = rest.get("/account/profile").await;
    c.expect("GET /account/profile", "AccountProfile", profile);
    let reply = rest
        .post("/account/profile", json!({"displayName": "Ada"}))
        .await;
    c.expect("POST /account/profile", "AccountProfile", reply);
    let sessions = c.expect(
        "GET /account/sessions",
        "SessionList",
        rest.get("/account/sessions").await,
    );
    let context = rest.get("/organizations/current-context").await;
    c.expect(
        "GET /organizations/current-context",
        "OrganizationContext",
        context,
    );
    let body = json!({"organizationId": org.id});
    let reply = rest
        .post("/organizations/current-context/switch", body)
        .await;
    c.expect(
        "POST /organizations/current-context/switch",
        "OrganizationContext",
        reply,
    );
    let org_path = format!("/organizations/{}", org.id);
    let reply = rest.get(&format!("{org_path}/profile")).await;
    c.expect(
        "GET /organizations/{id}/profile",
        "OrganizationProfile",
        reply,
    );
    let reply = owner
        .rest
        .post(&format!("{org_path}/profile"), json!({"name": "Contract"}))
        .await;
    c.expect(
        "POST /organizations/{id}/profile",
        "OrganizationProfile",
        reply,
    );
    let reply = rest.get(&format!("{org_path}/members")).await;
    c.expect("GET /organizations/{id}/members", "MemberList", reply);
    let invited = format!("invitee{}@berth.test", random_suffix());
    let body = json!({"email": invited, "role": "member"});
    let reply = rest.post(&format!("{org_path}/invitations"), body).await;
    c.expect("POST /organizations/{id}/invitations", "Invitation", reply);
    let reply = rest.get(&format!("{org_path}/invitations")).await;
    c.expect(
        "GET /organizations/{id}/invitations",
        "InvitationList",
        reply,
    );
    let role = format!("{org_path}/members/{}/role", member.member_id);
    let reply = rest.post(&role, json!({"role": "admin"})).await;
    c.expect(
        "POST /organizations/{id}/members/{id}/role",
        "Member",
        reply,
    );
    let gone = format!("{org_path}/members/{}", leaving.member_id);
    let reply = rest.delete(&gone, json!({})).await;
    c.expect(
        "DELETE /organizations/{id}/members/{id}",
        "MemberRemoved",
        reply,
    );
    let reply = rest.get(&format!("{org_path}/members")).await;
    let members = c.expect("GET /organizations/{id}/members", "MemberList", reply);
    let removed = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["memberId"] == leaving.member_id.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(removed["status"], "deactivated", "{members}");
    let reply = rest.post(&format!("{gone}/reactivate"), json!({})).await;
    c.expect(
        "POST /organizations/{id}/members/{id}/reactivate",
        "Member",
        reply,
    );

    // §4.4
    let reply = rest.post("/projects", json!({"name": "Shop"})).await;
    let shop = id_of(&c.expect("POST /projects", "Id", reply), "id");
    let body = json!({"projectId": shop, "name": "prod", "kind": "production"});
    let reply = rest.post("/environments", body).await;
    let prod = id_of(&c.expect("POST /environments", "Id", reply), "id");
    c.expect(
        "GET /projects/count",
        "Count",
        rest.get("/projects/count").await,
    );
    c.expect("GET /projects", "ProjectList", rest.get("/projects").await);
    let reply = rest.get(&format!("/projects/{shop}")).await;
    c.expect("GET /projects/{id}", "Project", reply);
    let reply = rest
        .get(&format!("/environments/count?projectId={shop}"))
        .await;
    c.expect("GET /environments/count", "Count", reply);
    let reply = rest.get(&format!("/environments?projectId={shop}")).await;
    c.expect("GET /environments", "EnvironmentList", reply);
    let reply = rest.get(&format!("/environments/{prod}")).await;
    c.expect("GET /environments/{id}", "Environment", reply);
    let old = environment(rest, &shop, "old").await;
    let reply = rest
        .post(
            &format!("/environments/{old}/archive"),
            json!({"reason": "done"}),
        )
        .await;
    c.expect("POST /environments/{id}/archive", "Id", reply);
    let archived = project(rest, "Archived").await;
    let reply = rest
        .delete(
            &format!("/projects/{archived}"),
            json!({"confirmation": {"projectId": archived}}),
        )
        .await;
    c.expect("DELETE /projects/{id}", "Id", reply);
    let reply = rest.get("/projects?lifecycleStatus=archived").await;
    c.expect(
        "GET /projects?lifecycleStatus=archived",
        "ProjectList",
        reply,
    );

    // §4.5 retention defaults
    let body =
        json!({"category": "process-attempts", "retentionDays": 30, "scope": "organization"});
    c.expect(
        "POST /retention-defaults",
        "Id",
        rest.post("/retention-defaults", body).await,
    );
    let reply = rest.get("/retention-defaults?scope=organization").await;
    c.expect("GET /retention-defaults", "RetentionList", reply);
    let reply = rest
        .get("/retention-defaults/process-attempts?scope=organization")
        .await;
    c.expect("GET /retention-defaults/{category}", "RetentionShow", reply);
    let reply = rest.get("/retention-defaults/audit-rows").await;
    c.expect("GET /retention-defaults/{category}", "RetentionShow", reply);

    // §4.6
    let body = json!({"name": "wire", "kind": "ssh-private-key", "privateKey": stack_key()});
    let reply = rest.post("/credentials/ssh", body).await;
    let credential = id_of(&c.expect("POST /credentials/ssh", "Id", reply), "id");
    let reply = rest.get("/credentials/ssh").await;
    c.expect("GET /credentials/ssh", "CredentialList", reply);
    let path = format!("/credentials/ssh/{credential}");
    let reply = rest.get(&format!("{path}?includeUsage=true")).await;
    c.expect("GET /credentials/ssh/{id}", "CredentialShow", reply);
    let body = json!({"privateKey": stack_key(), "confirmation": {"credentialId": credential}});
    let reply = rest.post(&format!("{path}/rotate"), body).await;
    c.expect(
        "POST /credentials/ssh/{id}/rotate",
        "CredentialRotated",
        reply,
    );
    let body = json!({"confirmation": {"credentialId": credential}});
    c.expect(
        "DELETE /credentials/ssh/{id}",
        "Id",
        rest.delete(&path, body).await,
    );

    // Last, as they end sign-ins and hand the organization over.
    let session = sessions["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == false)
        .map(|s| id_of(s, "sessionId"));
    if let Some(session) = session {
        let reply = rest
            .post(&format!("/account/sessions/{session}/revoke"), json!({}))
            .await;
        c.expect(
            "POST /account/sessions/{id}/revoke",
            "SessionRevoked",
            reply,
        );
    }
    let body = json!({"confirmation": {"userId": leaving.user_id}});
    let reply = leaving.rest.delete("/account", body).await;
    c.expect("DELETE /account", "AccountDeleted", reply);
    let slug = format!("gone{}", random_suffix());
    let body = json!({"name": "Gone", "slug": slug});
    owner.rest.post("/organizations", body).await.ok();
    let body = json!({"confirmation": {"organizationId": slug}});
    let reply = owner
        .rest
        .delete(&format!("/organizations/{slug}"), body)
        .await;
    c.expect("DELETE /organizations/{id}", "OrganizationDeleted", reply);
    let body = json!({"fromMemberId": owner.member_id, "toMemberId": admin.member_id});
    let reply = owner
        .rest
        .post(&format!("{org_path}/owner-transfer"), body)
        .await;
    c.expect(
        "POST /organizations/{id}/owner-transfer",
        "OwnershipTransferred",
        reply,
    );
    client.assert_no_drift();
}

/// Servers, resources and their configuration, deployments, health, diagnostics, access
/// failures, runtime logs, monitoring, usage, thresholds and terminal sessions, on a deployed
/// sample app.
#[tokio::test]
async fn contract_resources_observations_and_monitoring_read_as_the_spec_says() {
    let kube = client().await;
    let mut org = TestOrg::new(&kube).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let mut client = Client::default();
    let c = &mut client;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("wire{}", random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Wire", "slug": slug,
                "kind": "application",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = id_of(&created, "id");
    let resource = format!("/resources/{id}");

    // Before any deployment: the records' own "none" states, never null.
    let reply = admin.get(&format!("{resource}/health")).await;
    c.expect(
        "GET /resources/{id}/health (not deployed)",
        "ResourceHealth",
        reply,
    );
    let reply = admin.get(&format!("{resource}/diagnostic-summary")).await;
    c.expect(
        "GET /resources/{id}/diagnostic-summary (not deployed)",
        "DiagnosticSummary",
        reply,
    );

    // Configuration.
    let body = json!({"key": "LOG_LEVEL", "value": "debug", "exposure": "runtime"});
    let reply = admin.post(&format!("{resource}/variables"), body).await;
    assert_eq!(reply.expect(200), Value::Null, "JSON null");
    // PORT overrides the network profile's default.
    let content = "A=1\nA=2\nLOG_LEVEL=info\nPORT=8080\n";
    let body = json!({"content": content, "exposure": "runtime"});
    let reply = admin
        .post(&format!("{resource}/variables/import"), body)
        .await;
    c.expect(
        "POST /resources/{id}/variables/import",
        "ImportResult",
        reply,
    );
    let reply = admin
        .delete(
            &format!("{resource}/variables/A"),
            json!({"exposure": "runtime"}),
        )
        .await;
    assert_eq!(reply.expect(200), Value::Null, "JSON null");
    let body = json!({"key": "DB_PASSWORD", "value": "s3cret-wire"});
    let reply = admin.post(&format!("{resource}/secrets"), body).await;
    c.expect("POST /resources/{id}/secrets", "SecretChanged", reply);
    let reply = admin.get(&format!("{resource}/secrets")).await;
    c.expect("GET /resources/{id}/secrets", "SecretList", reply);
    let reply = admin.get(&format!("{resource}/secrets/DB_PASSWORD")).await;
    c.expect("GET /resources/{id}/secrets/{key}", "SecretShow", reply);
    let body = json!({"value": "s3cret-wire-2"});
    let reply = admin
        .post(&format!("{resource}/secrets/DB_PASSWORD"), body)
        .await;
    c.expect("POST /resources/{id}/secrets/{key}", "SecretChanged", reply);
    let reply = admin.get(&format!("{resource}/effective-config")).await;
    c.expect(
        "GET /resources/{id}/effective-config",
        "EffectiveConfig",
        reply,
    );
    let body = json!({"networkProfile": {"internalPort": 8080}});
    let reply = admin
        .post(&format!("{resource}/network-profile"), body)
        .await;
    c.expect("POST /resources/{id}/network-profile", "Id", reply);
    let body = json!({"accessProfile": {"pathPrefix": "/"}});
    let reply = admin
        .post(&format!("{resource}/access-profile"), body)
        .await;
    c.expect("POST /resources/{id}/access-profile", "Id", reply);
    let body = json!({"runtimeProfile": {}});
    let reply = admin
        .post(&format!("{resource}/runtime-profile"), body)
        .await;
    c.expect("POST /resources/{id}/runtime-profile", "Id", reply);
    let body = json!({"source": {"kind": "docker-image", "locator": "berth/sample-app:1"}});
    let reply = admin.post(&format!("{resource}/source"), body).await;
    c.expect("POST /resources/{id}/source", "Id", reply);
    let reply = admin
        .post(
            &format!("{resource}/auto-deploy"),
            json!({"mode": "enable"}),
        )
        .await;
    c.expect(
        "POST /resources/{id}/auto-deploy",
        "AutoDeployResult",
        reply,
    );
    let volume = json!({
        "projectId": shop, "environmentId": prod, "name": "Wire", "kind": "named-volume",
    });
    let volume = admin.post("/storage-volumes", volume).await.expect(201);
    let body = json!({"storageVolumeId": volume["id"], "destinationPath": "/data"});
    let attached = c.expect(
        "POST /resources/{id}/storage-attachments",
        "Id",
        admin
            .post(&format!("{resource}/storage-attachments"), body)
            .await,
    );
    let attachment = id_of(&attached, "id");
    let reply = admin
        .delete(
            &format!("{resource}/storage-attachments/{attachment}"),
            json!({}),
        )
        .await;
    c.expect(
        "DELETE /resources/{id}/storage-attachments/{id}",
        "Id",
        reply,
    );

    // A deployment once the resource names its server, then another, streamed.
    let patch = json!({ "spec": { "serverId": server } });
    Api::<Resource>::namespaced(kube.clone(), &org.namespace)
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("set the resource's server");
    wait_listed_with(&admin, &id, "succeeded").await;
    let body =
        json!({"projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id});
    let (status, _, text) = stream(&admin, &body).await;
    assert_eq!(status, 200, "{text}");
    let events = parse_events(&text);
    assert!(!events.is_empty(), "{text}");
    for event in &events {
        c.read("POST /deployments/stream", "ProgressEvent", &event.data);
    }
    assert_eq!(events.last().unwrap().data["status"], "succeeded", "{text}");
    let reply = admin.get(&format!("/resources?projectId={shop}")).await;
    let listed = c.expect("GET /resources", "ResourceList", reply);
    let deployment = id_of(&listed["items"][0], "lastDeploymentId");

    // Observation records.
    for query in ["", "?mode=live", "?includeChecks=true"] {
        let reply = admin.get(&format!("{resource}/health{query}")).await;
        c.expect("GET /resources/{id}/health", "ResourceHealth", reply);
    }
    let history = eventually(WAIT, "a health observation of the deployment", || async {
        let body = admin.get(&format!("{resource}/health-history")).await.ok();
        let deployed = body["observations"]
            .as_array()?
            .iter()
            .any(|o| o["latestDeploymentId"] == deployment.as_str());
        deployed.then_some(body)
    })
    .await;
    c.read(
        "GET /resources/{id}/health-history",
        "HealthHistory",
        &history,
    );
    for query in [
        "",
        "?includeProxyConfiguration=true",
        &format!("?deploymentId={deployment}&tailLines=50"),
    ] {
        let reply = admin
            .get(&format!("{resource}/diagnostic-summary{query}"))
            .await;
        c.expect(
            "GET /resources/{id}/diagnostic-summary",
            "DiagnosticSummary",
            reply,
        );
    }
    let reply = admin
        .get(&format!("{resource}/runtime-logs?tailLines=5"))
        .await;
    c.expect("GET /resources/{id}/runtime-logs", "RuntimeLogs", reply);
    let http = reqwest::Client::new();
    let stranger = format!("nobody{}.localhost", random_suffix());
    let (_, request, _) = through_edge(&http, port, &stranger, "/missing").await;
    let found = lookup(&admin, &request).await;
    c.read(
        "GET /resource-access-failures/{id}",
        "AccessFailureLookup",
        &found,
    );
    let host = format!("{slug}.localhost");
    let (_, request, _) = through_edge(&http, port, &host, "/elsewhere/../nowhere").await;
    if !request.is_empty() {
        let found = lookup(&admin, &request).await;
        c.read(
            "GET /resource-access-failures/{id}",
            "AccessFailureLookup",
            &found,
        );
    }

    // Monitoring, once the app's container has a CPU share.
    let samples = format!("/runtime-monitoring/samples?scope.resourceId={id}");
    eventually(WAIT, "a container sample with a CPU share", || async {
        let body = admin.get(&samples).await.ok();
        body["samples"]
            .as_array()?
            .iter()
            .any(|s| s["totals"]["cpu"]["containerCpuPercent"].is_number())
            .then_some(())
    })
    .await;
    for query in [
        format!("scope.kind=resource&scope.resourceId={id}"),
        format!("scope.kind=server&scope.serverId={server}"),
        format!("scope.kind=project&scope.projectId={shop}&signals=memory,docker"),
    ] {
        let reply = admin
            .get(&format!("/runtime-monitoring/samples?{query}"))
            .await;
        c.expect("GET /runtime-monitoring/samples", "SamplesList", reply);
        let rollup = format!(
            "/runtime-monitoring/rollup?{query}&bucket=minute&includeDeploymentMarkers=true\
             &includeTopContributors=true"
        );
        c.expect(
            "GET /runtime-monitoring/rollup",
            "Rollup",
            admin.get(&rollup).await,
        );
    }
    let usage = format!("/runtime-usage/inspect/stream?scope.projectId={shop}");
    let (status, _, snapshots, text) = follow(&admin, &usage, 1).await;
    assert_eq!(status, 200, "{text}");
    c.read(
        "GET /runtime-usage/inspect/stream",
        "RuntimeUsageSnapshot",
        &snapshots[0],
    );
    let rule =
        json!({"signal": "cpu", "metric": "containerCpuPercent", "warning": 0, "critical": 1000});
    let body = json!({"scope": {"kind": "server", "serverId": server}, "rules": [rule]});
    let reply = admin.post("/runtime-monitoring/thresholds", body).await;
    c.expect(
        "POST /runtime-monitoring/thresholds",
        "ThresholdsSet",
        reply,
    );
    let thresholds =
        format!("/runtime-monitoring/thresholds?scope.kind=server&scope.serverId={server}");
    let reply = admin.get(&thresholds).await;
    c.expect(
        "GET /runtime-monitoring/thresholds (not yet evaluated)",
        "ThresholdsShow",
        reply,
    );
    let crossed = eventually(WAIT, "the CPU bound crossed", || async {
        let body = admin.get(&thresholds).await.ok();
        (body["evaluation"]["state"] == "warning").then_some(body)
    })
    .await;
    c.read(
        "GET /runtime-monitoring/thresholds",
        "ThresholdsShow",
        &crossed,
    );

    // Terminal sessions, certificates.
    let body = json!({"scope": {"kind": "server", "serverId": server}});
    let reply = admin.post("/terminal-sessions", body).await;
    c.expect("POST /terminal-sessions", "TerminalSession", reply);
    let reply = admin.get("/terminal-sessions").await;
    let listed = c.expect("GET /terminal-sessions", "TerminalSessionList", reply);
    assert!(
        listed["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty()),
        "the created session is listed: {listed}"
    );
    let session = id_of(&listed["items"][0], "sessionId");
    let reply = admin.get(&format!("/terminal-sessions/{session}")).await;
    c.expect(
        "GET /terminal-sessions/{sessionId}",
        "TerminalSessionDetail",
        reply,
    );
    let reply = admin
        .get(&format!(
            "/terminal-sessions?scope=server&serverId={server}&limit=1"
        ))
        .await;
    c.expect(
        "GET /terminal-sessions (filtered)",
        "TerminalSessionList",
        reply,
    );
    let close = format!("/terminal-sessions/{session}/close");
    let reply = admin.post(&close, json!({})).await;
    c.expect(
        "POST /terminal-sessions/{sessionId}/close",
        "TerminalSessionClosed",
        reply,
    );
    let reply = admin.post(&close, json!({})).await;
    c.expect(
        "POST /terminal-sessions/{sessionId}/close (again)",
        "TerminalSessionClosed",
        reply,
    );
    let binding: DomainBinding = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
        "metadata": {"name": format!("{slug}-tls"), "namespace": org.namespace},
        "spec": {"resourceId": id, "hostname": format!("{slug}.wire.test"), "tlsMode": "disabled"},
    }))
    .unwrap();
    let bindings = Api::<DomainBinding>::namespaced(kube.clone(), &org.namespace);
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("create a domain binding");
    let body = json!({"domainBindingId": format!("{slug}-tls"), "idempotencyKey": "wire-1"});
    let reply = admin.post("/certificates/issue-or-renew", body).await;
    c.expect(
        "POST /certificates/issue-or-renew",
        "CertificateIssue",
        reply,
    );
    let name = format!("{slug}-tls");
    let _ = Api::<Certificate>::namespaced(kube.clone(), &org.namespace)
        .delete(&name, &DeleteParams::default())
        .await;
    let _ = bindings.delete(&name, &DeleteParams::default()).await;

    // Removal.
    let reply = admin
        .delete(&format!("{resource}/secrets/DB_PASSWORD"), json!({}))
        .await;
    c.expect(
        "DELETE /resources/{id}/secrets/{key}",
        "SecretChanged",
        reply,
    );
    let body = json!({"confirmation": {"resourceSlug": slug}});
    let reply = admin.delete(&resource, body).await;
    c.expect("DELETE /resources/{id}", "Id", reply);
    wait_containers_gone(&id).await;
    admin
        .post(&format!("/servers/{server}/deactivate"), json!({}))
        .await
        .ok();
    let body = json!({"confirmation": {"serverId": server}});
    let deleted = eventually(WAIT, "the server deleted", || async {
        let reply = admin
            .delete(&format!("/servers/{server}"), body.clone())
            .await;
        (reply.status == 200).then_some(reply.body)
    })
    .await;
    c.read("DELETE /servers/{id}", "Id", &deleted);
    let proxy = format!("name=berth-edge-proxy.*{server}");
    eventually(WAIT, "the edge proxy removed", || async {
        docker_names(&proxy).is_empty().then_some(())
    })
    .await;
    client.assert_no_drift();
}
