//! SSH credentials, servers and terminal sessions over HTTP (spec §4.6, §4.8, §3): roles,
//! confirmations, usage and delete-safety guards, key rotation against a private sshd, and no
//! private key in any response or log line. Terminal tests are in `shim_servers/terminal.rs`.

mod terminal;

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::server::{Server, ServerLifecycle};
use berth_crds::ssh_credential::SshCredential;
use berth_tests::rest::{Rest, TestOrg, transcript};
use berth_tests::sshd::{TestSshd, new_client_key};
use berth_tests::{client, eventually, random_suffix, stack_env};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// The stack's client key (authorized by the stack's sshd).
pub(crate) fn stack_key() -> String {
    std::fs::read_to_string(stack_env("BERTH_SSH_KEY")).expect("read $BERTH_SSH_KEY")
}

/// Asserts no base64 line of `private_key` is in any response body or in the shim's log.
pub(crate) fn assert_key_never_shown(private_key: &str) {
    let lines: Vec<&str> = private_key
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 20)
        .collect();
    assert!(!lines.is_empty(), "the key has body lines to look for");
    let path = std::env::var("BERTH_SHIM_LOG").expect("BERTH_SHIM_LOG (hack/test.sh sets it)");
    let log = std::fs::read_to_string(&path).expect("the shim log is readable");
    let bodies = transcript();
    for line in lines {
        assert!(!log.contains(line), "private key material in {path}");
        assert!(
            !bodies.iter().any(|b| b.contains(line)),
            "private key material in a response body"
        );
    }
}

/// Creates a credential through the API; returns its id.
pub(crate) async fn create_credential(rest: &Rest, private_key: &str) -> String {
    let body = json!({"name": "deploy key", "kind": "ssh-private-key", "privateKey": private_key});
    rest.post("/credentials/ssh", body).await.ok()["id"]
        .as_str()
        .expect("an id")
        .to_string()
}

/// Registers a server on 127.0.0.1:`port` without an edge proxy; returns its id.
pub(crate) async fn create_server(rest: &Rest, credential: &str, port: u16) -> String {
    let body = json!({
        "name": "local", "host": "127.0.0.1", "port": port, "username": "root",
        "credentialId": credential, "proxy": {"kind": "none"},
    });
    rest.post("/servers", body).await.ok()["id"]
        .as_str()
        .expect("an id")
        .to_string()
}

/// Waits until the server record says reachable with a pinned host key.
pub(crate) async fn wait_reachable(rest: &Rest, id: &str) -> Value {
    eventually(WAIT, "server reachable", || async {
        let record = rest.get(&format!("/servers/{id}")).await.ok();
        (record["reachable"] == true && record["hostKeyFingerprint"].is_string()).then_some(record)
    })
    .await
}

/// Waits until the server's record says when it became inactive, and that time is not before
/// `asked` (to the second, as status times are kept) nor after now; returns it. Appaloft's
/// summary says the same.
async fn deactivated_since(rest: &Rest, id: &str, asked: Timestamp) -> String {
    let record = eventually(WAIT, "deactivatedAt recorded", || async {
        let record = rest.get(&format!("/servers/{id}")).await.ok();
        let at: Timestamp = record["deactivatedAt"].as_str()?.parse().ok()?;
        (at.as_second() >= asked.as_second()).then_some(record)
    })
    .await;
    let text = record["deactivatedAt"].as_str().unwrap().to_string();
    let at: Timestamp = text.parse().unwrap();
    assert!(at <= Timestamp::now(), "{record}");
    assert_eq!(record["server"]["deactivatedAt"], text.as_str(), "{record}");
    assert_eq!(record["server"]["lifecycleStatus"], "inactive", "{record}");
    text
}

/// Asserts a 422 naming `field`.
#[track_caller]
fn invalid(reply: berth_tests::rest::Reply, field: &str) {
    let error = reply.error(422, "validation_error");
    assert_eq!(error["details"]["field"], field, "{error}");
}

fn stack_port() -> u16 {
    stack_env("BERTH_SSH_PORT").parse().unwrap()
}

#[tokio::test]
async fn every_credential_server_and_terminal_endpoint_needs_a_token() {
    let anonymous = Rest::anonymous();
    let calls = [
        ("GET", "/credentials/ssh"),
        ("POST", "/credentials/ssh"),
        ("GET", "/credentials/ssh/ssh-x"),
        ("DELETE", "/credentials/ssh/ssh-x"),
        ("POST", "/credentials/ssh/ssh-x/rotate"),
        ("GET", "/servers"),
        ("POST", "/servers"),
        ("GET", "/servers/srv-x"),
        ("POST", "/servers/srv-x/activate"),
        ("POST", "/servers/srv-x/deactivate"),
        ("DELETE", "/servers/srv-x"),
        ("POST", "/terminal-sessions"),
        ("GET", "/terminal-sessions/trm-x/ws"),
        (
            "GET",
            "/terminal-sessions/trm-x/ws?access_token=bst_not-a-token",
        ),
    ];
    for (method, path) in calls {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let body = (method != reqwest::Method::GET).then(|| json!({}));
        anonymous
            .send(method, path, body)
            .await
            .error(401, "unauthenticated");
    }
}

#[tokio::test]
async fn credentials_are_created_listed_shown_and_deleted_without_showing_the_key() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let mut other_org = TestOrg::new(&client).await;
    let outsider = other_org.user(OrganizationRole::Owner).await.rest;
    let key = stack_key();
    let create = |private_key: &str| {
        json!({"name": "deploy key", "kind": "ssh-private-key", "privateKey": private_key,
               "username": "deploy"})
    };

    Rest::anonymous()
        .get("/credentials/ssh")
        .await
        .error(401, "unauthenticated");
    member
        .post("/credentials/ssh", create(&key))
        .await
        .error(403, "forbidden");
    // A key that does not parse: 422 on privateKey, and the message does not repeat it.
    let broken = key.replace("AAAA", "AAAB");
    let error = admin
        .post("/credentials/ssh", create(&broken))
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "privateKey");
    let mut wrong_kind = create(&key);
    wrong_kind["kind"] = json!("password");
    invalid(admin.post("/credentials/ssh", wrong_kind).await, "kind");
    let mut unnamed = create(&key);
    unnamed["name"] = json!("");
    invalid(admin.post("/credentials/ssh", unnamed).await, "name");

    let id = admin.post("/credentials/ssh", create(&key)).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.starts_with("ssh-"), "{id}");
    // The key sits only in a Secret of the organization, owned by the credential.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &org.namespace);
    let secret = secrets.get(&format!("{id}-key")).await.expect("key Secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/ssh-auth"));
    let owner = &secret.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("SshCredential", id.as_str())
    );

    let items = member.get("/credentials/ssh").await.ok()["items"].clone();
    let record = items
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id.as_str())
        .expect("listed")
        .clone();
    assert_eq!(record["kind"], "ssh-private-key");
    assert_eq!(record["username"], "deploy");
    assert_eq!(record["privateKeyConfigured"], true);
    assert_eq!(record["publicKeyConfigured"], true);
    assert!(
        record["publicKey"]
            .as_str()
            .unwrap()
            .starts_with("ssh-ed25519 ")
    );
    assert!(record["createdAt"].is_string());
    for limit in ["0", "501", "x"] {
        invalid(
            member.get(&format!("/credentials/ssh?limit={limit}")).await,
            "limit",
        );
    }
    assert!(member.get("/credentials/ssh?limit=500").await.status == 200);

    let shown = member
        .get(&format!("/credentials/ssh/{id}?includeUsage=true"))
        .await
        .ok();
    assert_eq!(shown["schemaVersion"], "credentials.show/v1");
    assert_eq!(shown["credential"]["id"], id.as_str());
    assert_eq!(shown["usage"]["totalServers"], 0);
    assert!(shown["generatedAt"].is_string());
    let plain = member.get(&format!("/credentials/ssh/{id}")).await.ok();
    assert!(plain.get("usage").is_none(), "{plain}");
    outsider
        .get(&format!("/credentials/ssh/{id}"))
        .await
        .error(404, "not_found");

    let path = format!("/credentials/ssh/{id}");
    let confirmed = json!({"confirmation": {"credentialId": id}});
    outsider
        .delete(&path, confirmed.clone())
        .await
        .error(404, "not_found");
    member
        .delete(&path, confirmed.clone())
        .await
        .error(403, "forbidden");
    admin
        .delete(
            &path,
            json!({"confirmation": {"credentialId": "ssh-other"}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    invalid(
        admin.delete(&path, json!({})).await,
        "confirmation.credentialId",
    );
    assert_eq!(admin.delete(&path, confirmed).await.ok()["id"], id.as_str());
    member.get(&path).await.error(404, "not_found");
    eventually(WAIT, "the key Secret garbage-collected", || async {
        secrets
            .get_opt(&format!("{id}-key"))
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert_key_never_shown(&key);
}

#[tokio::test]
async fn servers_are_guarded_until_inactive_and_unblocked_and_credentials_while_used() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let mut other_org = TestOrg::new(&client).await;
    let outsider = other_org.user(OrganizationRole::Admin).await.rest;
    let credential = create_credential(&admin, &stack_key()).await;
    let foreign_credential = create_credential(&outsider, &stack_key()).await;

    let body = |credential: &str| {
        json!({"name": "web 1", "host": "127.0.0.1", "port": stack_port(),
               "credentialId": credential, "proxy": {"kind": "none"}})
    };
    member
        .post("/servers", body(&credential))
        .await
        .error(403, "forbidden");
    invalid(
        admin.post("/servers", body("ssh-missing")).await,
        "credentialId",
    );
    invalid(
        admin.post("/servers", body(&foreign_credential)).await,
        "credentialId",
    );
    let mut bad_port = body(&credential);
    bad_port["port"] = json!(0);
    invalid(admin.post("/servers", bad_port).await, "port");
    let mut bad_proxy = body(&credential);
    bad_proxy["proxy"] = json!({"kind": "nginx"});
    invalid(admin.post("/servers", bad_proxy).await, "proxy.kind");

    let id = admin.post("/servers", body(&credential)).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.starts_with("srv-"), "{id}");
    let record = wait_reachable(&member, &id).await;
    assert_eq!(record["name"], "web 1");
    assert_eq!(record["username"], "root");
    assert_eq!(record["lifecycleStatus"], "active");
    assert_eq!(
        record["hostKeyFingerprint"],
        stack_env("BERTH_SSH_HOST_KEY_FINGERPRINT").as_str()
    );
    assert_eq!(record["proxy"]["kind"], "none");
    assert_eq!(record["proxy"]["status"], "disabled");
    let record = eventually(WAIT, "Docker version and facts", || async {
        let record = member.get(&format!("/servers/{id}")).await.ok();
        record["dockerVersion"].is_string().then_some(record)
    })
    .await;
    assert!(record["facts"]["cpus"].as_i64().unwrap() >= 1, "{record}");
    // Appaloft's fields: show nests its summary, the list counts its page.
    assert_eq!(record["schemaVersion"], "servers.show/v1");
    assert_eq!(record["server"]["id"], id.as_str());
    assert_eq!(record["server"]["targetKind"], "single-server");
    let roles = json!(["deployment-runtime", "artifact-builder"]);
    assert_eq!(record["server"]["workloadRoles"], roles);
    // The credential it logs in with, by name and whether its keys are set, never a key.
    let summary = json!({"kind": "ssh-private-key", "credentialId": credential,
        "credentialName": "deploy key", "username": "root",
        "publicKeyConfigured": true, "privateKeyConfigured": true});
    let record = eventually(WAIT, "the credential's keys configured", || async {
        let record = member.get(&format!("/servers/{id}")).await.ok();
        (record["credential"] == summary).then_some(record)
    })
    .await;
    assert_eq!(record["server"]["credential"], summary, "{record}");
    assert!(record.get("deactivatedAt").is_none(), "{record}");
    assert!(record["server"].get("deactivatedAt").is_none(), "{record}");
    // Nothing deployed or bound on it yet.
    assert_eq!(
        record["rollups"],
        json!({"resources": {"total": 0, "deployedResourceIds": []},
            "deployments": {"total": 0, "statusCounts": []},
            "domains": {"total": 0, "statusCounts": []}}),
        "{record}"
    );
    let listed = member.get("/servers").await.ok();
    let items = listed["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|s| s["id"] == id.as_str() && s["credential"] == summary)
    );
    assert!(items.iter().all(|s| s["workloadRoles"] == roles));
    assert_eq!(listed["total"], items.len(), "{listed}");
    assert_eq!(
        (&listed["limit"], &listed["offset"]),
        (&json!(100), &json!(0))
    );
    let past = member
        .get(&format!("/servers?offset={}", items.len()))
        .await;
    assert_eq!(past.ok()["items"], json!([]));
    invalid(member.get("/servers?limit=501").await, "limit");
    outsider
        .get(&format!("/servers/{id}"))
        .await
        .error(404, "not_found");

    // The credential is in use: its deletion is refused and names the server.
    let credential_path = format!("/credentials/ssh/{credential}");
    let delete_credential = json!({"confirmation": {"credentialId": credential}});
    let refused = admin
        .delete(&credential_path, delete_credential.clone())
        .await
        .error(409, "conflict");
    assert_eq!(refused["details"]["blockers"][0]["id"], id.as_str());
    let usage = member
        .get(&format!("{credential_path}?includeUsage=1"))
        .await
        .ok()["usage"]
        .clone();
    assert_eq!(
        (
            usage["totalServers"].clone(),
            usage["activeServers"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(usage["servers"][0]["serverId"], id.as_str());
    assert_eq!(usage["servers"][0]["host"], "127.0.0.1");

    // An active server is not deleted.
    let path = format!("/servers/{id}");
    let confirmed = json!({"confirmation": {"serverId": id}, "idempotencyKey": random_suffix()});
    outsider
        .delete(&path, confirmed.clone())
        .await
        .error(404, "not_found");
    member
        .delete(&path, confirmed.clone())
        .await
        .error(403, "forbidden");
    admin
        .delete(&path, json!({"confirmation": {"serverId": "srv-other"}}))
        .await
        .error(409, "confirmation_mismatch");
    let active = admin
        .delete(&path, confirmed.clone())
        .await
        .error(409, "conflict");
    assert_eq!(active["details"]["lifecycleStatus"], "active");

    member
        .post(&format!("{path}/deactivate"), json!({}))
        .await
        .error(403, "forbidden");
    outsider
        .post(&format!("{path}/deactivate"), json!({}))
        .await
        .error(404, "not_found");
    let asked = Timestamp::now();
    let inactive = admin
        .post(&format!("{path}/deactivate"), json!({}))
        .await
        .ok();
    assert_eq!(inactive["lifecycleStatus"], "inactive");
    let deactivated_at = deactivated_since(&member, &id, asked).await;
    let usage = member
        .get(&format!("{credential_path}?includeUsage=true"))
        .await
        .ok()["usage"]
        .clone();
    assert_eq!(usage["inactiveServers"], 1);
    let listed = |filter: &'static str| {
        let member = member.clone();
        async move {
            let reply = member
                .get(&format!("/servers?lifecycleStatus={filter}"))
                .await;
            let ids: Vec<Value> = reply.ok()["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].clone())
                .collect();
            ids
        }
    };
    assert_eq!(listed("inactive").await, vec![json!(id)]);
    assert!(listed("active").await.is_empty());
    let items = member.get("/servers?lifecycleStatus=inactive").await.ok()["items"].clone();
    assert_eq!(
        items[0]["deactivatedAt"],
        deactivated_at.as_str(),
        "{items}"
    );
    // activate undoes it (and needs an admin too).
    member
        .post(&format!("{path}/activate"), json!({}))
        .await
        .error(403, "forbidden");
    let active = admin
        .post(&format!("{path}/activate"), json!({}))
        .await
        .ok();
    assert_eq!(active["lifecycleStatus"], "active");
    assert!(active.get("deactivatedAt").is_none(), "{active}");
    let shown = member.get(&path).await.ok();
    assert!(shown.get("deactivatedAt").is_none(), "{shown}");
    // The controller clears its time once it sees the server active.
    let servers = Api::<Server>::namespaced(client.clone(), &org.namespace);
    eventually(WAIT, "deactivatedAt cleared in status", || async {
        let status = servers.get_status(&id).await.ok()?.status?;
        let cleared = status.lifecycle_status == Some(ServerLifecycle::Active)
            && status.deactivated_at.is_none();
        cleared.then_some(())
    })
    .await;
    // Deactivated again: a new time, not the first one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let asked_again = Timestamp::now();
    admin
        .post(&format!("{path}/deactivate"), json!({}))
        .await
        .ok();
    let again = deactivated_since(&member, &id, asked_again).await;
    assert_ne!(again, deactivated_at);
    // An inactive server still uses the credential.
    admin
        .delete(&credential_path, delete_credential.clone())
        .await
        .error(409, "conflict");

    // A resource on the server is a delete-safety blocker.
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": "shop", "environmentId": "production", "serverId": id,
        "name": "Shop web", "kind": "application",
    }))
    .unwrap();
    let resources: Api<Resource> = Api::namespaced(client.clone(), &org.namespace);
    resources
        .create(&PostParams::default(), &Resource::new("shop-web", spec))
        .await
        .unwrap();
    let blocked = admin
        .delete(&path, confirmed.clone())
        .await
        .error(409, "conflict");
    assert_eq!(
        blocked["details"]["blockers"],
        json!([{"kind": "resource", "id": "shop-web"}])
    );
    resources
        .delete("shop-web", &DeleteParams::default())
        .await
        .unwrap();
    // The Resource's finalizer cleans up first; the blocker clears once it is really gone.
    berth_tests::eventually(
        std::time::Duration::from_secs(30),
        "resource shop-web deleted",
        || async {
            resources
                .get_opt("shop-web")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;

    assert_eq!(
        admin.delete(&path, confirmed.clone()).await.ok()["id"],
        id.as_str()
    );
    // The same idempotency key repeats the outcome; the server is gone for readers.
    assert_eq!(admin.delete(&path, confirmed).await.ok()["id"], id.as_str());
    member.get(&path).await.error(404, "not_found");
    // Right away the credential lists no server and may go: the controller keeps it, and its
    // key, until the server's cleanup no longer needs them.
    let shown = admin
        .get(&format!("{credential_path}?includeUsage=true"))
        .await
        .ok();
    assert_eq!(shown["usage"]["totalServers"], 0, "{shown}");
    assert_eq!(
        admin
            .delete(&credential_path, delete_credential.clone())
            .await
            .ok()["id"],
        credential.as_str()
    );
    admin.get(&credential_path).await.error(404, "not_found");
    let credentials = Api::<SshCredential>::namespaced(client.clone(), &org.namespace);
    eventually(
        WAIT,
        "credential gone after the server's cleanup",
        || async {
            credentials
                .get_opt(&credential)
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    assert_key_never_shown(&stack_key());
}

#[tokio::test]
async fn rotation_switches_the_key_in_place_and_the_server_stays_reachable() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let keys = std::env::temp_dir().join(format!("berth-shim-keys-{}", random_suffix()));
    let (old_key, old_public, _) = new_client_key(&keys, "old");
    let (new_key, new_public, new_fingerprint) = new_client_key(&keys, "new");
    let sshd = TestSshd::start(&[&old_public]);
    let credential = create_credential(&admin, &old_key).await;
    let server = create_server(&admin, &credential, sshd.port).await;
    wait_reachable(&member, &server).await;

    // Only the new key is authorized from now on; the rotation must make Berth use it.
    sshd.set_authorized_keys(&[&new_public]);
    let path = format!("/credentials/ssh/{credential}/rotate");
    let confirmed =
        |key: &str| json!({"privateKey": key, "confirmation": {"credentialId": credential}});
    let mut other_org = TestOrg::new(&client).await;
    let outsider = other_org.user(OrganizationRole::Admin).await.rest;
    outsider
        .post(&path, confirmed(&new_key))
        .await
        .error(404, "not_found");
    member
        .post(&path, confirmed(&new_key))
        .await
        .error(403, "forbidden");
    admin
        .post(
            &path,
            json!({"privateKey": new_key, "confirmation": {"credentialId": "ssh-x"}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    invalid(
        admin.post(&path, json!({"privateKey": new_key})).await,
        "confirmation.credentialId",
    );
    invalid(
        admin.post(&path, confirmed("not a key")).await,
        "privateKey",
    );
    let rotated = admin.post(&path, confirmed(&new_key)).await.ok();
    assert_eq!(rotated["schemaVersion"], "credentials.rotate-ssh/v1");
    assert_eq!(rotated["credential"]["id"], credential.as_str());
    assert_eq!(rotated["credential"]["kind"], "ssh-private-key");
    assert_eq!(rotated["credential"]["usernameConfigured"], false);
    assert_eq!(rotated["credential"]["privateKeyConfigured"], true);
    assert_eq!(rotated["affectedUsage"]["totalServers"], 1);
    assert_eq!(
        rotated["affectedUsage"]["servers"][0]["serverId"],
        server.as_str()
    );
    let rotated_at = rotated["credential"]["rotatedAt"].clone();

    // The controller logs in with the new key and the server stays reachable.
    eventually(WAIT, "a login with the new key", || async {
        sshd.log()
            .lines()
            .any(|l| l.contains("Accepted publickey") && l.contains(&new_fingerprint))
            .then_some(())
    })
    .await;
    let record = wait_reachable(&member, &server).await;
    assert_eq!(
        record["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Reachable")
            .unwrap()["status"],
        "True"
    );
    let shown = member
        .get(&format!("/credentials/ssh/{credential}"))
        .await
        .ok();
    assert_eq!(shown["credential"]["fingerprint"], new_fingerprint.as_str());
    assert_eq!(shown["credential"]["rotatedAt"], rotated_at);

    // The terminal (the shim's own connection) uses the new key too.
    let mut shell = terminal::open_shell(&admin, &server, json!({})).await;
    shell
        .run_and_expect("echo rotated-$((40+2))", "rotated-42")
        .await;
    shell.exit().await;

    std::fs::remove_dir_all(&keys).ok();
    assert_key_never_shown(&old_key);
    assert_key_never_shown(&new_key);
}
