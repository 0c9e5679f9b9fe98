//! Domain bindings and servers changed over REST on the real stack: a host name bound to a
//! deployed app serves it through the edge proxy, a second binding of the same name is
//! refused (DNS readiness says so before and after binding, and where a name leads),
//! unbinding takes the route away while the app keeps its own name; a server is
//! renamed and its delete-check names what stands in the way; other organizations get 404. The
//! server's rollups count the deployed app, its attempts and its binding. A connectivity test
//! reports each step (TCP, handshake with the host key, login, Docker) and stores nothing.
//! Capacity reads the host's disk, memory and CPU and lists the organization's containers;
//! prune removes only its stopped leftovers.

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, random_suffix};
use serde_json::{Value, json};

use crate::deploy_support::{WAIT, delete_resource, fetch, ready_server, remove_server, wait_body};
use crate::shim_deployment_attempts::deployed;
use crate::shim_servers::{assert_key_never_shown, stack_key};
use crate::tls::dns_a_record;

/// How many list and get requests for domain bindings the API server has answered, from its
/// own `apiserver_request_total` counters.
async fn api_server_binding_reads() -> u64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let metrics = client().await.request_text(request).await.unwrap();
    metrics
        .lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
        .filter(|line| line.contains("resource=\"domainbindings\""))
        .filter(|line| line.contains("verb=\"LIST\"") || line.contains("verb=\"GET\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|count| count as u64)
        .sum()
}

/// `GET /domain-bindings` and `GET /domain-bindings/{id}` are answered from the shim's watch
/// cache: 50 of each add (almost) nothing to the API server's reads of domain bindings. (Not
/// zero: tests running beside this one may read bindings with kubectl or the controller.)
async fn binding_reads_do_not_reach_the_api_server(member: &Rest, binding: &str) {
    let before = api_server_binding_reads().await;
    let shown = format!("/domain-bindings/{binding}");
    for _ in 0..50 {
        let listed = member.get("/domain-bindings").await.ok();
        assert!(
            listed["items"]
                .as_array()
                .is_some_and(|items| !items.is_empty())
        );
        assert_eq!(member.get(&shown).await.ok()["id"], binding);
    }
    let added = api_server_binding_reads().await - before;
    assert!(
        added < 20,
        "100 reads over REST made {added} domain-binding reads at the API server"
    );
}

/// DNS readiness of a name not yet bound: one leading to the server (the stack's DNS answers
/// 127.0.0.1 by default) is ready, one pointed elsewhere says where it leads and what to set;
/// DNS-connector fields and a missing name are refused by field.
async fn dns_readiness_before_binding(member: &Rest, resource: &str, domain: &str) {
    let inspect = "/domain-bindings/dns-readiness/inspect";
    let ready = member
        .post(
            inspect,
            json!({"resourceId": resource, "domainName": domain}),
        )
        .await
        .ok();
    assert_eq!(ready["resolution"]["status"], "points-at-server", "{ready}");
    assert_eq!(ready["conflict"]["status"], "available", "{ready}");
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["actions"]["canApplyDns"], false, "{ready}");
    assert_eq!(ready["requiredRecords"][0]["type"], "A", "{ready}");
    assert_eq!(ready["requiredRecords"][0]["value"], "127.0.0.1", "{ready}");

    let elsewhere = format!("away{}.localhost", random_suffix());
    dns_a_record(&elsewhere, "198.18.0.77").await;
    let away = member
        .post(
            inspect,
            json!({"resourceId": resource, "domainName": elsewhere}),
        )
        .await
        .ok();
    assert_eq!(away["resolution"]["status"], "points-elsewhere", "{away}");
    assert_eq!(away["resolution"]["addresses"], json!(["198.18.0.77"]));
    assert_eq!(away["ready"], false, "{away}");
    let message = away["resolution"]["message"].as_str().unwrap();
    assert!(
        message.contains("198.18.0.77") && message.contains("127.0.0.1"),
        "{message}"
    );

    for (body, field) in [
        (json!({"resourceId": resource}), "domainName"),
        (
            json!({"resourceId": resource, "domainName": "not a host"}),
            "domainName",
        ),
        (
            json!({"resourceId": resource, "domainName": domain, "connectorKey": "cloudflare"}),
            "connectorKey",
        ),
    ] {
        let refused = member.post(inspect, body).await.expect(422);
        assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
    }
}

/// The server's rollups (`servers.show/v1`) while `binding` serves `resource`: the resource,
/// its attempts as `GET /deployments` counts and orders them, and the binding, ready. Left out
/// when asked.
async fn rollups_count_the_app_and_its_binding(
    member: &Rest,
    server: &str,
    resource: &str,
    binding: &str,
) {
    let binding_path = format!("/domain-bindings/{binding}");
    eventually(WAIT, "the binding ready", || async {
        (member.get(&binding_path).await.ok()["ready"] == true).then_some(())
    })
    .await;
    let path = format!("/servers/{server}");
    let shown = member.get(&path).await.ok();
    let rollups = &shown["rollups"];
    assert_eq!(
        rollups["resources"],
        json!({"total": 1, "deployedResourceIds": [resource]}),
        "{shown}"
    );
    assert_eq!(
        rollups["domains"],
        json!({"total": 1, "statusCounts": [{"status": "ready", "count": 1}],
            "latestDomainBindingId": binding, "latestDomainBindingStatus": "ready"}),
        "{shown}"
    );
    let deployments = &rollups["deployments"];
    let count = member
        .get(&format!("/deployments/count?serverId={server}"))
        .await
        .ok()["count"]
        .clone();
    assert!(count.as_u64().is_some_and(|c| c >= 1), "{count}");
    assert_eq!(deployments["total"], count, "{shown}");
    let counted: u64 = deployments["statusCounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(counted), count.as_u64(), "{shown}");
    let newest = member
        .get(&format!("/deployments?serverId={server}&limit=1"))
        .await
        .ok()["items"][0]
        .clone();
    assert_eq!(deployments["latestDeploymentId"], newest["id"], "{shown}");
    assert_eq!(
        deployments["latestDeploymentStatus"], newest["status"],
        "{shown}"
    );

    let without = member
        .get(&format!("{path}?includeRollups=false"))
        .await
        .ok();
    assert!(without.get("rollups").is_none(), "{without}");
    assert_eq!(without["server"]["id"], server);
    let refused = member
        .get(&format!("{path}?includeRollups=maybe"))
        .await
        .expect(422);
    assert_eq!(refused["error"]["details"]["field"], "includeRollups");
}

/// What `servers.show/v1` counts of the server's domain bindings.
async fn domain_rollup(member: &Rest, server: &str) -> Value {
    member.get(&format!("/servers/{server}")).await.ok()["rollups"]["domains"].clone()
}

#[tokio::test]
async fn a_domain_bound_over_rest_serves_the_app_until_it_is_unbound() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, host) = deployed(&member, &server, source, "/healthz").await;
    let resource = member.get(&format!("/resources/{id}")).await.ok()["resource"].clone();
    let domain = format!("shop{}.localhost", random_suffix());

    // Bad input is refused by its field, and nothing is created.
    let bind = |extra: serde_json::Value| {
        let mut body = json!({
            "projectId": resource["projectId"], "environmentId": resource["environmentId"],
            "resourceId": id, "domainName": domain, "tlsMode": "disabled",
        });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    for (extra, field) in [
        (json!({"domainName": "not a host"}), "domainName"),
        (json!({"pathHandling": "strip"}), "pathHandling"),
        (json!({"tlsMode": "manual"}), "tlsMode"),
        (json!({"environmentId": "env-other"}), "environmentId"),
    ] {
        let refused = member
            .post("/domain-bindings", bind(extra))
            .await
            .expect(422);
        assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
    }
    let before = member.get("/domain-bindings").await.ok()["items"].clone();
    assert_eq!(before.as_array().map(Vec::len), Some(0), "{before}");
    dns_readiness_before_binding(&member, &id, &domain).await;

    // Bound: the host name serves the app through the edge proxy.
    let keyed = bind(json!({"idempotencyKey": "bind-1"}));
    let created = member
        .post("/domain-bindings", keyed.clone())
        .await
        .expect(201);
    let binding = created["id"].as_str().unwrap().to_string();
    let again = member.post("/domain-bindings", keyed).await.expect(201);
    assert_eq!(again["id"], binding.as_str(), "one key, one binding");
    wait_body(port, &domain, "sample-app v1").await;
    let shown = member
        .get(&format!("/domain-bindings/{binding}"))
        .await
        .ok();
    assert_eq!(shown["hostname"], domain.as_str());
    assert_eq!(shown["resourceId"], id.as_str());
    rollups_count_the_app_and_its_binding(&member, &server, &id, &binding).await;
    binding_reads_do_not_reach_the_api_server(&member, &binding).await;
    // The same name again (without the key) is a conflict naming the binding.
    let taken = member
        .post("/domain-bindings", bind(json!({})))
        .await
        .expect(409);
    assert_eq!(
        taken["error"]["details"]["conflictingDomainBindingId"],
        binding.as_str()
    );

    // Bound, the name is the binding's: a second binding of it would conflict.
    let inspect = "/domain-bindings/dns-readiness/inspect";
    let own = member
        .post(inspect, json!({"domainBindingId": binding}))
        .await
        .ok();
    assert_eq!(own["domainBindingId"], binding.as_str(), "{own}");
    assert_eq!(own["conflict"]["status"], "available", "{own}");
    assert_eq!(own["ready"], true, "{own}");
    let second = member
        .post(inspect, json!({"resourceId": id, "domainName": domain}))
        .await
        .ok();
    assert_eq!(second["conflict"]["status"], "conflict", "{second}");
    assert_eq!(
        second["conflict"]["conflictingDomainBindingId"],
        binding.as_str()
    );
    assert_eq!(second["ready"], false, "{second}");

    // Delete-check, then an unconfirmed delete refused, then unbound.
    let check = member
        .get(&format!("/domain-bindings/{binding}/delete-check"))
        .await
        .ok();
    assert_eq!(check["safeToDelete"], true, "{check}");
    let path = format!("/domain-bindings/{binding}");
    member.delete(&path, json!({})).await.expect(422);
    let wrong = json!({"confirmation": {"domainBindingId": "dom-other"}});
    member.delete(&path, wrong).await.expect(409);
    wait_body(port, &domain, "sample-app v1").await;
    let confirmed = json!({"confirmation": {"domainBindingId": binding}});
    let deleted = member.delete(&path, confirmed).await.ok();
    assert_eq!(deleted["id"], binding.as_str());
    let http = reqwest::Client::new();
    eventually(WAIT, &format!("{domain} no longer routed"), || {
        let (http, domain) = (http.clone(), domain.clone());
        async move {
            let (status, _) = fetch(&http, port, &domain).await?;
            (status != 200).then_some(())
        }
    })
    .await;
    // The app keeps serving under its own name.
    wait_body(port, &host, "sample-app v1").await;
    // The shim reads bindings from its watch cache, which sees the deletion a moment later.
    eventually(WAIT, "the unbound binding is not found", || {
        let (member, path) = (&member, &path);
        async move { (member.get(path).await.status == 404).then_some(()) }
    })
    .await;
    member.get(&path).await.error(404, "not_found");
    // Its server counts it no more once the binding's object is gone.
    eventually(WAIT, "the unbound binding not counted", || async {
        let domains = domain_rollup(&member, &server).await;
        (domains["total"] == 0).then_some(())
    })
    .await;
    assert_eq!(
        domain_rollup(&member, &server).await,
        json!({"total": 0, "statusCounts": []})
    );

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .post(
            "/domain-bindings",
            bind(json!({"domainName": "x.localhost"})),
        )
        .await
        .error(404, "not_found");
    outsider
        .post(
            "/domain-bindings/dns-readiness/inspect",
            json!({"resourceId": id, "domainName": "x.localhost"}),
        )
        .await
        .error(404, "not_found");
    outsider
        .get(&format!("/servers/{server}/delete-check"))
        .await
        .error(404, "not_found");
    outsider
        .post(
            &format!("/servers/{server}/rename"),
            json!({"name": "mine"}),
        )
        .await
        .error(404, "not_found");

    // The server: renamed by an administrator only; its delete-check names what blocks it.
    let rename = format!("/servers/{server}/rename");
    member
        .post(&rename, json!({"name": "edge-eu"}))
        .await
        .error(403, "forbidden");
    admin.post(&rename, json!({"name": ""})).await.expect(422);
    admin.post(&rename, json!({"name": "edge-eu"})).await.ok();
    assert_eq!(
        admin.get(&format!("/servers/{server}")).await.ok()["name"],
        "edge-eu"
    );
    let check = member
        .get(&format!("/servers/{server}/delete-check"))
        .await
        .ok();
    assert_eq!(check["schemaVersion"], "servers.delete-check/v1");
    assert_eq!(check["eligible"], false);
    let kinds: Vec<&str> = check["blockers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"active-server"), "{check}");
    assert!(kinds.contains(&"resource-placement"), "{check}");
    assert!(kinds.contains(&"deployment-history"), "{check}");

    let slug = resource["slug"].as_str().unwrap().to_string();
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

#[tokio::test]
async fn a_connectivity_test_reports_each_step_and_stores_nothing() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let ssh_port: u16 = berth_tests::stack_env("BERTH_SSH_PORT").parse().unwrap();
    let key = stack_key();
    let draft = |extra: serde_json::Value| {
        let mut server = json!({"name": "draft", "host": "127.0.0.1", "port": ssh_port,
            "username": "root", "credential": {"kind": "ssh-private-key", "privateKey": key}});
        server
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "server": server })
    };
    let statuses = |report: &serde_json::Value| -> Vec<(String, String)> {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().into(),
                    c["status"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let named = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };

    // A good host and key: every step passes, the host key to pin and Docker's version shown.
    let report = admin
        .post("/servers/connectivity-tests", draft(json!({})))
        .await
        .ok();
    assert_eq!(report["status"], "healthy", "{report}");
    let host_key = report["checks"][1]["metadata"]["hostKeyFingerprint"]
        .as_str()
        .expect("the host key to pin")
        .to_string();
    assert!(host_key.starts_with("SHA256:"), "{report}");
    assert!(
        report["checks"][3]["metadata"]["dockerVersion"].is_string(),
        "{report}"
    );
    // Pinned to that key it passes; pinned to another the handshake fails, nothing after it.
    let pinned = draft(json!({"expectedHostKeyFingerprint": host_key}));
    let report = admin.post("/servers/connectivity-tests", pinned).await.ok();
    assert_eq!(report["status"], "healthy", "{report}");
    let wrong_pin =
        json!({"expectedHostKeyFingerprint": "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"});
    let report = admin
        .post("/servers/connectivity-tests", draft(wrong_pin))
        .await
        .ok();
    assert_eq!(report["status"], "unreachable");
    assert_eq!(
        statuses(&report),
        named(&[
            ("tcp", "passed"),
            ("ssh-handshake", "failed"),
            ("authentication", "skipped"),
            ("docker", "skipped")
        ])
    );
    assert_eq!(
        report["checks"][1]["metadata"]["hostKeyFingerprint"],
        host_key.as_str()
    );
    // A key the server does not know fails authentication; a closed port fails TCP.
    let stranger = crate::git_sources::unknown_key();
    let unknown = json!({"credential": {"kind": "ssh-private-key", "privateKey": stranger}});
    let report = admin
        .post("/servers/connectivity-tests", draft(unknown))
        .await
        .ok();
    assert_eq!(report["checks"][2]["status"], "failed", "{report}");
    let closed = draft(json!({"port": 1}));
    let report = admin.post("/servers/connectivity-tests", closed).await.ok();
    assert_eq!(report["checks"][0]["status"], "failed", "{report}");
    // Bad input names its field; members may not test; nothing was stored.
    for (extra, field) in [
        (
            json!({"credential": {"kind": "ssh-private-key", "privateKey": "not a key"}}),
            "server.credential.privateKey",
        ),
        (
            json!({"credential": {"kind": "local-ssh-agent"}}),
            "server.credential.kind",
        ),
        (
            json!({"expectedHostKeyFingerprint": "md5"}),
            "server.expectedHostKeyFingerprint",
        ),
    ] {
        let refused = admin
            .post("/servers/connectivity-tests", draft(extra))
            .await
            .expect(422);
        assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
    }
    member
        .post("/servers/connectivity-tests", draft(json!({})))
        .await
        .error(403, "forbidden");
    let servers = admin.get("/servers").await.ok();
    assert_eq!(
        servers["items"].as_array().map(Vec::len),
        Some(0),
        "{servers}"
    );
    let credentials = admin.get("/credentials/ssh").await.ok();
    assert_eq!(
        credentials["items"].as_array().map(Vec::len),
        Some(0),
        "{credentials}"
    );
    assert_key_never_shown(&key);

    // A registered server is tested against the key it pinned.
    let (server, _) = ready_server(&admin).await;
    let report = admin
        .post(&format!("/servers/{server}/connectivity-tests"), json!({}))
        .await
        .ok();
    assert_eq!(report["status"], "healthy", "{report}");
    assert_eq!(report["serverId"], server.as_str());
    remove_server(&admin, &server).await;
}

/// A stopped container labelled as Berth's for `namespace` (a leftover Berth no longer
/// tracks); returns its id.
fn leftover(namespace: &str, labels: &[(&str, &str)]) -> String {
    let mut args = vec!["create".to_string()];
    let base = [
        ("berth.dev/managed", "true"),
        ("berth.dev/namespace", namespace),
        ("berth.dev/resource", "res-gone"),
        ("berth.dev/deployment", "dep-res-gone-1"),
    ];
    for (key, value) in base.iter().chain(labels) {
        args.push("--label".into());
        args.push(format!("{key}={value}"));
    }
    args.extend(["berth/busybox:1".into(), "true".into()]);
    let output = std::process::Command::new("docker")
        .args(&args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// The logical cores online on this machine, as the capacity inspection counts them.
fn logical_cores_here() -> i64 {
    let output = std::process::Command::new("getconf")
        .arg("_NPROCESSORS_ONLN")
        .output()
        .expect("getconf");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("getconf prints a count")
}

fn exists(container: &str) -> bool {
    std::process::Command::new("docker")
        .args(["inspect", container])
        .output()
        .unwrap()
        .status
        .success()
}

#[tokio::test]
async fn prune_removes_only_the_organizations_stopped_leftovers() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, host) = deployed(&member, &server, source, "/healthz").await;
    let ours = leftover(&org.namespace, &[]);
    let theirs = leftover("org-someone-else", &[]);
    let not_berths = {
        let output = std::process::Command::new("docker")
            .args(["create", "berth/busybox:1", "true"])
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    };
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    // Capacity lists the organization's containers: the app running, the leftover stopped.
    let capacity = member
        .get(&format!("/servers/{server}/capacity"))
        .await
        .ok();
    assert_eq!(capacity["schemaVersion"], "servers.capacity.inspect/v1");
    // The server's own disk, inodes and memory, as df and /proc/meminfo read them now.
    let number = |v: &serde_json::Value, key: &str| v[key].as_i64().unwrap_or(-1);
    let disks = capacity["disk"].as_array().unwrap();
    assert!(disks.iter().any(|d| d["path"] == "/"), "{capacity}");
    for disk in disks {
        let size = number(disk, "size");
        assert!(
            size > 0 && (0..=size).contains(&number(disk, "used")),
            "{disk}"
        );
        assert!((0..=size).contains(&number(disk, "available")), "{disk}");
    }
    let inodes = capacity["inodes"].as_array().unwrap();
    assert!(!inodes.is_empty(), "{capacity}");
    for inode in inodes {
        let (used, free) = (number(inode, "used"), number(inode, "free"));
        assert!(used > 0 && free >= 0, "{inode}");
        assert!((0..=100).contains(&number(inode, "usePercent")), "{inode}");
    }
    let memory = &capacity["memory"];
    let total = number(memory, "total");
    assert!(
        total > 0 && (0..=total).contains(&number(memory, "used")),
        "{capacity}"
    );
    assert!(
        (0..=total).contains(&number(memory, "available")),
        "{capacity}"
    );
    // The server is this machine: as many logical cores as getconf counts here, and its loads.
    let cpu = &capacity["cpu"];
    assert_eq!(cpu["logicalCores"], logical_cores_here(), "{capacity}");
    for load in ["loadAverage1m", "loadAverage5m", "loadAverage15m"] {
        assert!(cpu[load].as_f64().is_some_and(|l| l >= 0.0), "{capacity}");
    }
    assert!(
        !capacity["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("cores") || w.contains("loadavg"))),
        "{capacity}"
    );
    let listed: Vec<(&str, bool)> = capacity["platformContainers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["running"] == true))
        .collect();
    assert!(listed.contains(&(ours.as_str(), false)), "{capacity}");
    assert!(listed.iter().any(|(_, running)| *running), "{capacity}");
    assert!(
        !listed.iter().any(|(c, _)| *c == theirs || *c == not_berths),
        "{capacity}"
    );

    // A dry run (the default) lists only our leftover and removes nothing.
    let path = format!("/servers/{server}/capacity/prune");
    let dry = admin.post(&path, json!({})).await.ok();
    assert_eq!(dry["dryRun"], true);
    let matched: Vec<&str> = dry["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "matched")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(matched, vec![ours.as_str()], "{dry}");
    assert!(exists(&ours));
    // Members may look, not prune; categories Berth does not prune are refused by name.
    member.post(&path, json!({})).await.error(403, "forbidden");
    let refused = admin
        .post(&path, json!({"categories": ["unused-images"]}))
        .await
        .expect(422);
    assert_eq!(refused["error"]["details"]["field"], "categories");

    // Applied: the leftover goes; the other organization's, a stranger's and the app stay.
    let applied = admin.post(&path, json!({"dryRun": false})).await.ok();
    assert_eq!(applied["summary"]["prunedCount"], 1, "{applied}");
    assert!(!exists(&ours));
    assert!(exists(&theirs) && exists(&not_berths));
    wait_body(port, &host, "sample-app v1").await;

    for container in [theirs, not_berths] {
        std::process::Command::new("docker")
            .args(["rm", &container])
            .output()
            .unwrap();
    }
    let resource = admin.get(&format!("/resources/{id}")).await.ok();
    let slug = resource["resource"]["slug"].as_str().unwrap().to_string();
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
