//! The change feed, compression and audit events on the real stack: a deployment's status
//! changes arrive in order and a client that reconnects with its last id misses none; another
//! organization sees none of them and its ids answer 404; answers are compressed with gzip or
//! brotli as negotiated (decoding to the same bytes) but event streams never are; and the
//! audit events name who turned auto-deploy off over REST. Environments and storage volumes
//! change on the feed too, for those whose scope covers them.

use std::io::Read;
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::client;
use berth_tests::rest::{Rest, TestOrg, base_url};
use serde_json::{Value, json};

use crate::cli::Berth;
use crate::deploy_support::{EventReader, ready_server};
use crate::shim_deployment_attempts::{deployed, start};
use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_tokens::create_token;

/// Long enough for an attempt (pull, health check, switch) on two busy cores.
const WAIT: Duration = Duration::from_secs(180);

/// The order a successful attempt's statuses go through: berth-controller marks it running as
/// it starts (detect), then planning, planned, running again (package to verify), succeeded.
/// It writes the newest of those within half a second, so a fast attempt skips some.
const ORDER: [&str; 5] = ["running", "planning", "planned", "running", "succeeded"];

/// Whether `seen` (repeats removed) follows [`ORDER`], skipping none but those a status write
/// may coalesce.
fn in_order(seen: &[&str]) -> bool {
    let mut deduped: Vec<&str> = seen.to_vec();
    deduped.dedup();
    let mut order = ORDER.iter();
    deduped.iter().all(|status| order.any(|o| o == status))
}

/// Reads change events until `done` holds for one, or fails after [`WAIT`].
async fn read_until(reader: &mut EventReader, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            let event = reader.next().await.expect("the feed stays open");
            assert_eq!(event.data["kind"], "change", "{}", event.data);
            let change = event.data["change"].clone();
            assert_eq!(event.id, change["eventId"].as_str().unwrap());
            let finished = done(&change);
            seen.push(change);
            if finished {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no end within {WAIT:?}; seen {seen:#?}"));
    seen
}

/// Reads whatever arrives within `window`.
async fn read_for(reader: &mut EventReader, window: Duration) -> Vec<Value> {
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(window, async {
        while let Some(event) = reader.next().await {
            seen.push(event.data);
        }
    })
    .await;
    seen
}

fn sequences(changes: &[Value]) -> Vec<u64> {
    changes
        .iter()
        .map(|c| c["sequence"].as_u64().expect("a sequence"))
        .collect()
}

fn succeeded(attempt: &str) -> impl Fn(&Value) -> bool + '_ {
    move |change| change["objectId"] == attempt && change["status"] == "succeeded"
}

#[tokio::test]
async fn the_change_feed_delivers_a_deployments_statuses_in_order_and_resumes_without_a_gap() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, _host) = deployed(&member, &server, source, "/healthz").await;

    // One client stays connected throughout; another drops after two changes and resumes.
    let path = format!("/events/stream?resourceId={id}&kind=deployment");
    let mut steady = EventReader::open(&member, &path, &[]).await;
    let mut first = EventReader::open(&member, &path, &[]).await;
    // Another organization follows its own feed over the same time.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    let mut outsider_feed = EventReader::open(&outsider, "/events/stream", &[]).await;

    let attempt = start(&member, &id).await;
    let mut resumed = Vec::new();
    while resumed.len() < 2 {
        let event = first.next().await.expect("changes before the end");
        resumed.push(event.data["change"].clone());
    }
    drop(first);
    let last = resumed.last().unwrap()["eventId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut again = EventReader::open(&member, &path, &[("Last-Event-ID", last.as_str())]).await;
    let done = succeeded(&attempt);
    let finished_early = resumed.iter().any(&done);
    if !finished_early {
        resumed.extend(read_until(&mut again, &done).await);
    }
    let all = read_until(&mut steady, &done).await;

    assert_eq!(
        sequences(&resumed),
        sequences(&all),
        "the resumed client saw every change once, in order"
    );
    assert!(sequences(&all).windows(2).all(|w| w[0] < w[1]));
    let statuses: Vec<&str> = all
        .iter()
        .filter(|c| c["objectId"] == attempt)
        .filter_map(|c| c["status"].as_str())
        .collect();
    assert!(in_order(&statuses), "{statuses:?}");
    // The redeploy outlasts the write delay (the old container takes a second to stop): the
    // feed shows it running before it shows it succeeded.
    assert!(
        statuses.len() >= 2,
        "a status before the outcome: {statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&"succeeded"));
    let created = all.iter().find(|c| c["objectId"] == attempt).unwrap();
    assert_eq!(created["changeType"], "created", "{created}");
    for change in &all {
        assert_eq!(change["kind"], "deployment");
        assert_eq!(change["resourceId"], id.as_str());
        assert!(change["summary"].as_str().unwrap().contains("deployment"));
        assert!(change.as_object().unwrap().values().all(|v| !v.is_null()));
    }

    // `after` resumes like the header; the CLI prints the next change and exits.
    let after = all[0]["eventId"].as_str().unwrap();
    let mut from_query = EventReader::open(&member, &format!("{path}&after={after}"), &[]).await;
    let next = from_query.next().await.unwrap();
    assert_eq!(next.data["change"]["sequence"], all[1]["sequence"]);
    let berth = Berth::new();
    let token_env = member.token.clone().unwrap();
    let printed = berth
        .run_with(
            &crate::cli::binary(),
            &[
                "events",
                "--kind",
                "deployment",
                "--after",
                after,
                "--count",
                "1",
                "-o",
                "json",
            ],
            None,
            &[("BERTH_TOKEN", token_env.as_str())],
        )
        .await
        .json();
    assert_eq!(printed["change"]["kind"], "deployment", "{printed}");
    // A position of an earlier process (or no longer kept) asks the client to re-read.
    let mut stale = EventReader::open(&member, "/events/stream?after=1-1", &[]).await;
    let resync = stale.next().await.unwrap();
    assert_eq!(resync.data["kind"], "resync", "{}", resync.data);
    assert_eq!(resync.id, resync.data["eventId"].as_str().unwrap());

    // The outsider saw none of it, and the ids answer 404.
    for data in read_for(&mut outsider_feed, Duration::from_secs(2)).await {
        let change = &data["change"];
        assert_ne!(change["resourceId"], id.as_str(), "{data}");
        assert_ne!(change["objectId"], attempt.as_str(), "{data}");
        assert_ne!(change["serverId"], server.as_str(), "{data}");
    }
    outsider
        .get(&format!("/events/stream?resourceId={id}"))
        .await
        .error(404, "not_found");
    outsider
        .get(&format!("/audit-events?resourceId={id}"))
        .await
        .error(404, "not_found");
    // A deploy token scoped to another resource sees no change of this one.
    let (_, token) = create_token(&admin, &org.id, json!({"resourceIds": ["res-elsewhere"]})).await;
    let scoped = member.with_token(&token);
    scoped
        .get(&format!("/events/stream?resourceId={id}"))
        .await
        .error(404, "not_found");

    invalid(member.get("/events/stream?after=nope").await, "after");
    invalid(member.get("/events/stream?kind=pods").await, "kind");
    invalid(member.get("/events/stream?since=1").await, "since");
    Rest::anonymous()
        .get("/events/stream")
        .await
        .error(401, "unauthenticated");
}

/// Reads change events until one of `kind` about `object` says `what` (its status, or
/// `deleted`).
async fn until_change<'a>(
    reader: &mut EventReader,
    kind: &'a str,
    object: &'a str,
    what: &'a str,
) -> Value {
    let seen = read_until(reader, |c| {
        c["kind"] == kind
            && c["objectId"] == object
            && (c["status"] == what || c["changeType"] == what)
    })
    .await;
    seen.last().unwrap().clone()
}

#[tokio::test]
async fn environments_and_storage_volumes_change_on_the_feed_for_those_who_see_them() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let staging = environment(&member, &shop, "staging").await;
    let path = "/events/stream?kind=environment,storage-volume";
    let mut feed = EventReader::open(&member, path, &[]).await;
    // A deploy token for another environment sees none of it.
    let (_, token) = create_token(
        &admin,
        &org.id,
        json!({"environmentIds": ["env-elsewhere"]}),
    )
    .await;
    let mut scoped = EventReader::open(&member.with_token(&token), path, &[]).await;

    admin
        .post(&format!("/environments/{staging}/lock"), json!({}))
        .await
        .ok();
    let locked = until_change(&mut feed, "environment", &staging, "locked").await;
    assert_eq!(locked["projectId"], shop.as_str(), "{locked}");
    assert_eq!(locked["environmentId"], staging.as_str(), "{locked}");
    assert!(
        locked["summary"].as_str().unwrap().contains("staging"),
        "{locked}"
    );
    // A locked environment's volumes cannot change: unlocked again first.
    admin
        .post(&format!("/environments/{staging}/unlock"), json!({}))
        .await
        .ok();
    read_until(&mut feed, |c| {
        c["objectId"] == staging.as_str() && c["status"] != "locked"
    })
    .await;
    let body = json!({
        "projectId": shop, "environmentId": staging, "name": "uploads", "kind": "named-volume",
    });
    let created = member.post("/storage-volumes", body).await.expect(201);
    let volume = created["id"].as_str().unwrap().to_string();
    let appeared = until_change(&mut feed, "storage-volume", &volume, "created").await;
    assert_eq!(appeared["environmentId"], staging.as_str(), "{appeared}");
    member
        .delete(&format!("/storage-volumes/{volume}"), json!({}))
        .await
        .ok();
    let gone = until_change(&mut feed, "storage-volume", &volume, "deleted").await;
    assert!(
        gone["summary"].as_str().unwrap().ends_with("deleted"),
        "{gone}"
    );
    for data in read_for(&mut scoped, Duration::from_secs(2)).await {
        assert_ne!(data["change"]["environmentId"], staging.as_str(), "{data}");
    }
}

/// GET `path` with `Accept-Encoding: encoding`: (status, Content-Encoding, Content-Type, body).
async fn fetch(
    token: Option<&str>,
    path: &str,
    encoding: &str,
) -> (u16, Option<String>, String, Vec<u8>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut request = http
        .get(format!("{}{path}", base_url()))
        .header("accept-encoding", encoding);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the shim answers");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (encoding, content_type) = (header("content-encoding"), header("content-type"));
    let status = response.status().as_u16();
    // A stream never ends: the first chunk says enough.
    let body = if content_type.as_deref() == Some("text/event-stream") {
        Vec::new()
    } else {
        response.bytes().await.unwrap().to_vec()
    };
    (status, encoding, content_type.unwrap_or_default(), body)
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("valid gzip");
    out
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("valid brotli");
    out
}

#[tokio::test]
async fn answers_are_compressed_as_negotiated_and_event_streams_are_not() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    for n in 0..5 {
        project(&owner, &format!("Compressed {n}")).await;
    }
    let token = owner.token.clone().unwrap();
    for (path, token) in [("/openapi.json", None), ("/projects", Some(token.as_str()))] {
        let (status, encoding, content_type, plain) = fetch(token, path, "identity").await;
        assert_eq!((status, encoding), (200, None), "{path}");
        assert_eq!(content_type, "application/json");
        let (status, encoding, _, gzipped) = fetch(token, path, "gzip").await;
        assert_eq!((status, encoding.as_deref()), (200, Some("gzip")), "{path}");
        assert_eq!(
            gunzip(&gzipped),
            plain,
            "{path}: gzip decodes to the same body"
        );
        assert!(gzipped.len() < plain.len());
        let (status, encoding, _, brotlied) = fetch(token, path, "br").await;
        assert_eq!((status, encoding.as_deref()), (200, Some("br")), "{path}");
        assert_eq!(
            unbrotli(&brotlied),
            plain,
            "{path}: brotli decodes to the same body"
        );
        // Both offered: the shim picks one of them and the body still decodes the same.
        let (_, encoding, _, either) = fetch(token, path, "gzip, br").await;
        let decoded = match encoding.as_deref() {
            Some("gzip") => gunzip(&either),
            Some("br") => unbrotli(&either),
            other => panic!("{path}: no compression for gzip, br: {other:?}"),
        };
        assert_eq!(decoded, plain);
    }
    // Event streams: every event must reach the client when it is sent.
    let (status, encoding, content_type, _) =
        fetch(Some(&token), "/events/stream", "gzip, br").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/event-stream");
    assert_eq!(encoding, None, "an event stream is never compressed");
    // An error is JSON too, and says what is wrong once decoded.
    let (status, encoding, _, body) = fetch(Some(&token), "/audit-events?limit=1000", "gzip").await;
    assert_eq!(status, 422);
    let body = match encoding.as_deref() {
        Some("gzip") => gunzip(&body),
        _ => body,
    };
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["details"]["field"], "limit", "{error}");
}

/// The audit events of `aggregate` once one satisfies `found` (they are recorded as the shim
/// sees the writes, so a kubectl write shows a moment later).
async fn audit_event_of(rest: &Rest, aggregate: &str, found: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/audit-events?aggregateId={aggregate}&limit=100");
    for _ in 0..100 {
        let list = rest.get(&path).await.ok();
        if let Some(event) = list["items"].as_array().unwrap().iter().find(|e| found(e)) {
            return event.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no such audit event of {aggregate}: {}",
        rest.get(&path).await.ok()
    );
}

/// Writes made around the REST API (kubectl, a GitOps tool) are audit events too, named by
/// their field manager and the fields they changed, never a value; a delete over REST names
/// its person; a failed sign-in and a refused token are kept too.
#[tokio::test]
async fn audit_events_keep_kubectl_writes_and_deletes() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin_user = org.user(OrganizationRole::Admin).await;
    let admin = admin_user.rest.clone();
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("kub{}", berth_tests::random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": slug, "slug": slug,
                "kind": "application",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();

    // `kubectl edit`: a description and a label, as the field manager kubectl uses.
    let secret_note = format!("edited-{}", berth_tests::random_suffix());
    let resources: kube::Api<berth_crds::resource::Resource> =
        kube::Api::namespaced(client.clone(), &org.namespace);
    let params = kube::api::PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..Default::default()
    };
    let patch = json!({"metadata": {"labels": {"team": "checkout"}},
                       "spec": {"description": secret_note}});
    resources
        .patch(&id, &params, &kube::api::Patch::Merge(&patch))
        .await
        .unwrap();
    let edit = audit_event_of(&admin, &id, |e| e["source"] == "kubernetes-api").await;
    assert_eq!(
        edit["actor"],
        json!({"kind": "field-manager", "id": "kubectl-edit"})
    );
    assert_eq!(edit["eventType"], "resource.updated");
    assert_eq!(edit["aggregateKind"], "resource");
    assert_eq!(edit["resourceId"], id.as_str());
    assert_eq!(edit["action"], "Update through the Kubernetes API");
    let fields: Vec<&str> = edit["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["spec.description", "metadata.labels.team"],
        "{edit}"
    );
    let list = admin
        .get(&format!("/audit-events?aggregateId={id}&limit=100"))
        .await
        .ok();
    assert!(!list.to_string().contains(&secret_note), "no value: {list}");
    let by_kubectl = list["items"].as_array().unwrap().iter();
    assert_eq!(
        by_kubectl
            .filter(|e| e["source"] == "kubernetes-api")
            .count(),
        1,
        "one write, one event: {list:#}"
    );

    // Kinds the change feed does not carry are audited too: a label on the project.
    let projects: kube::Api<berth_crds::project::Project> =
        kube::Api::namespaced(client.clone(), &org.namespace);
    let params = kube::api::PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..Default::default()
    };
    let label = json!({"metadata": {"labels": {"tier": "gold"}}});
    projects
        .patch(&shop, &params, &kube::api::Patch::Merge(&label))
        .await
        .unwrap();
    let labelled = audit_event_of(&admin, &shop, |e| e["source"] == "kubernetes-api").await;
    assert_eq!(labelled["eventType"], "project.updated");
    assert_eq!(labelled["actor"]["id"], "kubectl-label");
    assert_eq!(
        labelled["changes"],
        json!([{"field": "metadata.labels.tier"}])
    );

    let body = json!({"confirmation": {"resourceSlug": slug}});
    admin.delete(&format!("/resources/{id}"), body).await.ok();
    let deleted = audit_event_of(&admin, &id, |e| e["eventType"] == "resource.deleted").await;
    assert_eq!(deleted["source"], "rest");
    assert_eq!(
        deleted["actor"],
        json!({"kind": "user", "id": admin_user.user_id})
    );
    assert_eq!(deleted["action"], "DELETE /resources/{resourceId}");

    // A wrong password for a member is an event of the organization, without the password.
    let wrong = format!("not-{}", admin_user.password);
    let login = json!({"email": admin_user.email, "password": wrong});
    Rest::anonymous()
        .post("/auth/login", login)
        .await
        .error(401, "unauthenticated");
    let user = admin_user.user_id.as_str();
    let failed = audit_event_of(&admin, user, |e| e["eventType"] == "user.sign-in-failed").await;
    assert_eq!(failed["actor"]["kind"], "anonymous");
    let summary = failed["summary"].as_str().unwrap();
    assert!(summary.contains(&admin_user.email), "{failed}");
    assert!(!failed.to_string().contains(&wrong), "{failed}");

    // A revoked token used again and again: its refusal is recorded, once a minute at most.
    let (token_id, secret) = create_token(&admin, &org.id, json!({})).await;
    let confirmed = json!({"organizationId": org.id, "confirmation": {"tokenId": token_id}});
    let revoke = format!("/deploy-tokens/{token_id}/revoke");
    admin.post(&revoke, confirmed).await.ok();
    let ci = Rest::anonymous().with_token(&secret);
    for _ in 0..5 {
        ci.get("/projects/count")
            .await
            .error(401, "unauthenticated");
    }
    let refused = audit_event_of(&admin, &token_id, |e| {
        e["eventType"] == "deploy-token.refused"
    })
    .await;
    assert_eq!(
        refused["actor"],
        json!({"kind": "deploy-token", "id": token_id})
    );
    assert!(
        refused["summary"].as_str().unwrap().contains("revoked"),
        "{refused}"
    );
    let list = admin
        .get(&format!("/audit-events?aggregateId={token_id}&limit=100"))
        .await
        .ok();
    let refusals = list["items"].as_array().unwrap().iter();
    let refusals = refusals.filter(|e| e["eventType"] == "deploy-token.refused");
    // Five uses within a minute (two if the minute turned meanwhile).
    assert!((1..=2).contains(&refusals.count()), "{list:#}");
    assert!(!list.to_string().contains(&secret));
}

/// The controller's Events stay in the audit events after the API server expired them (an
/// hour by default; here the Event is deleted, as expiry does).
#[tokio::test]
async fn audit_events_keep_the_controllers_events_after_they_expire() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest.clone();
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("kev{}", berth_tests::random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": slug, "slug": slug,
                "kind": "application",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let note = format!("route removed for {slug}");
    let event = Event {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{id}.{}", berth_tests::random_suffix())),
            ..Default::default()
        },
        event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        reporting_controller: Some("berth-controller".into()),
        reporting_instance: Some("berth-controller-test".into()),
        action: Some("Reconcile".into()),
        reason: Some("ProxyRemoved".into()),
        note: Some(note.clone()),
        type_: Some("Normal".into()),
        regarding: Some(ObjectReference {
            api_version: Some("berth.dev/v1alpha1".into()),
            kind: Some("Resource".into()),
            name: Some(id.clone()),
            namespace: Some(org.namespace.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let events: kube::Api<Event> = kube::Api::namespaced(client.clone(), &org.namespace);
    let made = events
        .create(&kube::api::PostParams::default(), &event)
        .await
        .unwrap();
    let name = made.metadata.name.clone().unwrap();
    let uid = made.metadata.uid.clone().unwrap();
    let live = audit_event_of(&admin, &id, |e| e["eventType"] == "ProxyRemoved").await;
    assert_eq!(live["auditEventId"], format!("kev-{uid}"));
    // The store keeps it within a moment; then the API server lets it go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    events
        .delete(&name, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let list = admin
        .get(&format!("/audit-events?aggregateId={id}&limit=100"))
        .await
        .ok();
    let kept: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["eventType"] == "ProxyRemoved")
        .collect();
    assert_eq!(kept.len(), 1, "kept once: {list:#}");
    let kept = kept[0];
    assert_eq!(kept["auditEventId"], live["auditEventId"]);
    assert_eq!(kept["source"], "kubernetes-event");
    assert_eq!(
        kept["actor"],
        json!({"kind": "controller", "id": "berth-controller"})
    );
    assert_eq!(kept["summary"], note.as_str());
    assert_eq!(kept["resourceId"], id.as_str());
    assert_eq!(kept["action"], "Reconcile");
}

#[tokio::test]
async fn audit_events_name_who_turned_auto_deploy_off_over_rest() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin_user = org.user(OrganizationRole::Admin).await;
    let member_user = org.user(OrganizationRole::Member).await;
    let (admin, member) = (admin_user.rest.clone(), member_user.rest.clone());
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let slug = format!("aud{}", berth_tests::random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": slug, "slug": slug,
                "kind": "application",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let auto_deploy = format!("/resources/{id}/auto-deploy");
    admin
        .post(&auto_deploy, json!({"mode": "enable"}))
        .await
        .ok();
    member
        .post(&auto_deploy, json!({"mode": "disable"}))
        .await
        .ok();
    // Disabling again changes nothing, so it is no event.
    member
        .post(&auto_deploy, json!({"mode": "disable"}))
        .await
        .ok();

    let list = member
        .get(&format!("/audit-events?resourceId={id}"))
        .await
        .ok();
    assert_eq!(list["schemaVersion"], "audit-events.list/v1");
    assert!(list["generatedAt"].is_string());
    let rest_items: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["source"] == "rest")
        .collect();
    assert_eq!(rest_items.len(), 3, "{list:#}");
    let off = rest_items[0];
    assert_eq!(off["actor"]["kind"], "user");
    assert_eq!(off["actor"]["id"], member_user.user_id.as_str(), "{off}");
    assert_eq!(off["aggregateId"], id.as_str());
    assert_eq!(off["aggregateKind"], "resource");
    assert_eq!(off["eventType"], "resource.updated");
    assert_eq!(off["resourceId"], id.as_str());
    assert_eq!(off["action"], "POST /resources/{resourceId}/auto-deploy");
    assert!(
        off["changes"]
            .as_array()
            .unwrap()
            .contains(&json!({"field": "spec.autoDeploy.enabled", "value": false})),
        "{off}"
    );
    assert!(
        off["summary"]
            .as_str()
            .unwrap()
            .contains("spec.autoDeploy.enabled=false")
    );
    let on = rest_items[1];
    assert_eq!(on["actor"]["id"], admin_user.user_id.as_str());
    assert!(
        on["changes"]
            .as_array()
            .unwrap()
            .contains(&json!({"field": "spec.autoDeploy.enabled", "value": true}))
    );
    assert_eq!(rest_items[2]["eventType"], "resource.created");
    assert_eq!(rest_items[2]["action"], "POST /resources");
    for item in list["items"].as_array().unwrap() {
        assert!(
            item.as_object().unwrap().values().all(|v| !v.is_null()),
            "{item}"
        );
    }

    // Paged newest first by cursor: the pages together are the whole list.
    let ids = |page: &Value| -> Vec<Value> {
        let items = page["items"].as_array().unwrap();
        items.iter().map(|i| i["auditEventId"].clone()).collect()
    };
    let whole = member
        .get(&format!("/audit-events?resourceId={id}&limit=100"))
        .await
        .ok();
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/audit-events?resourceId={id}&limit=2");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let page = member.get(&path).await.ok();
        paged.extend(ids(&page));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    // The controller may report on the resource meanwhile: the pages are the whole list as it
    // was before them or as it is after them.
    let after = member
        .get(&format!("/audit-events?resourceId={id}&limit=100"))
        .await
        .ok();
    assert!(
        paged == ids(&whole) || paged == ids(&after),
        "{paged:?}\n{whole:#}\n{after:#}"
    );
    assert!(ids(&whole).contains(&off["auditEventId"]));
    let by_object = member
        .get(&format!("/audit-events?aggregateId={id}&limit=100"))
        .await
        .ok();
    assert!(by_object["items"].as_array().unwrap().len() >= 3);

    // The CLI answers the question.
    let berth = Berth::new();
    berth.login(&member_user).await;
    let printed = berth
        .run(&["audit", "--resource", &slug, "-o", "json"])
        .await
        .json();
    // The newest change made over REST (the controller's own events may come after it).
    let newest_rest = printed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["source"] == "rest")
        .unwrap_or_else(|| panic!("no REST change in {printed}"));
    assert_eq!(newest_rest["actor"]["id"], member_user.user_id.as_str());
    let table = berth.run(&["audit", "--resource", &slug]).await.ok();
    assert!(table.contains("spec.autoDeploy.enabled=false"), "{table}");

    // Deploy tokens see only their scope; other organizations get 404.
    let (_, elsewhere) =
        create_token(&admin, &org.id, json!({"resourceIds": ["res-elsewhere"]})).await;
    member
        .with_token(&elsewhere)
        .get(&format!("/audit-events?resourceId={id}"))
        .await
        .error(404, "not_found");
    let everything = member
        .with_token(&elsewhere)
        .get("/audit-events")
        .await
        .ok();
    assert!(
        everything["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["resourceId"] != id.as_str()),
        "{everything}"
    );
    let (_, within) = create_token(&admin, &org.id, json!({"resourceIds": [id]})).await;
    let scoped = member
        .with_token(&within)
        .get(&format!("/audit-events?resourceId={id}"))
        .await
        .ok();
    assert!(ids(&scoped).contains(&off["auditEventId"]), "{scoped}");
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("/audit-events?resourceId={id}"))
        .await
        .error(404, "not_found");
    let theirs = outsider.get("/audit-events").await.ok();
    assert!(
        theirs["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["aggregateId"] != id.as_str()),
        "{theirs}"
    );

    invalid(member.get("/audit-events?limit=0").await, "limit");
    invalid(member.get("/audit-events?cursor=nope").await, "cursor");
    invalid(member.get("/audit-events?resource=x").await, "resource");
}
