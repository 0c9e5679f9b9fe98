//! Decisions and records of spec §4.1 over HTTP: capability and entitlement queries, usage
//! intents (idempotent by key, also under concurrent repeats), deployment-overlay and
//! route-surface decisions, with their limits, scopes and organizations.

use berth_crds::member::OrganizationRole;
use berth_crds::usage_intent::UsageIntent;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, random_suffix};
use futures::future::join_all;
use kube::Api;
use serde_json::{Value, json};

use crate::shim_projects_envs::{invalid, project};
use crate::shim_tokens::{assert_shown_once, create_token};

fn records(list: &Value) -> Vec<Value> {
    list["records"].as_array().expect("records").clone()
}

fn record_ids(list: &Value) -> Vec<String> {
    records(list)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn capabilities_and_entitlements_are_all_granted_when_self_hosted() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let (_, secret) = {
        let admin = org.user(OrganizationRole::Admin).await;
        create_token(&admin.rest, &org.id, json!({})).await
    };

    let answer = user
        .rest
        .post(
            "/capabilities/query",
            json!({"queries": [{"operationKey": "deployments.create"},
                               {"operationKey": "domains.bind"}]}),
        )
        .await
        .ok();
    let capabilities = answer["capabilities"].as_array().unwrap();
    assert_eq!(capabilities.len(), 2);
    assert_eq!(capabilities[0]["operationKey"], "deployments.create");
    assert_eq!(capabilities[1]["operationKey"], "domains.bind");
    for capability in capabilities {
        assert_eq!(capability["allowed"], true);
        assert_eq!(capability["mode"], "unrestricted");
    }
    let answer = Rest::anonymous()
        .with_token(&secret)
        .post(
            "/entitlements/query",
            json!({"queries": [{"capabilityKey": "custom-domains"}]}),
        )
        .await
        .ok();
    let entitlement = &answer["entitlements"][0];
    assert_eq!(entitlement["capabilityKey"], "custom-domains");
    assert_eq!(entitlement["entitled"], true);
    assert_eq!(entitlement["status"], "entitled");
    assert_eq!(entitlement["source"], "self-hosted");
    assert!(entitlement["mode"].is_string());

    for (path, key) in [
        ("/capabilities/query", "operationKey"),
        ("/entitlements/query", "capabilityKey"),
    ] {
        let post = |body: Value| user.rest.post(path, body);
        invalid(
            post(json!({"queries": [{key: ""}]})).await,
            &format!("queries[0].{key}"),
        );
        invalid(
            post(json!({"queries": [{key: "a"}, {}]})).await,
            &format!("queries[1].{key}"),
        );
        invalid(post(json!({})).await, "queries");
        invalid(post(json!({"queries": []})).await, "queries");
        let many: Vec<Value> = (0..101).map(|n| json!({key: format!("k{n}")})).collect();
        invalid(post(json!({"queries": many})).await, "queries");
        let hundred: Vec<Value> = (0..100).map(|n| json!({key: format!("k{n}")})).collect();
        post(json!({"queries": hundred})).await.ok();
        invalid(
            post(json!({"queries": [{key: "a", "x": 1}]})).await,
            "queries[0].x",
        );
        Rest::anonymous()
            .post(path, json!({"queries": [{key: "a"}]}))
            .await
            .error(401, "unauthenticated");
    }
    assert_shown_once(&secret);
}

#[tokio::test]
async fn usage_intents_are_idempotent_by_key_even_when_concurrent() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let stranger = other.user(OrganizationRole::Owner).await;
    let key = format!("deploy-{}", random_suffix());
    let body = json!({
        "idempotencyKey": key, "capabilityKey": "deployments.create", "source": "cli",
        "tenantId": "t-1", "resourceRefs": {"projectId": "prj-1", "customRef": "x"},
        "quantity": {"value": 1, "unit": "deployment"},
        "occurredAt": "2030-01-01T10:00:00Z", "attributes": {"nested": {"a": [1, 2]}},
    });
    let first = user.rest.post("/usage-intents", body.clone()).await.ok();
    let result = &first["result"];
    assert_eq!(result["duplicate"], false);
    assert_eq!(result["accepted"], true);
    assert_eq!(result["status"], "accepted");
    assert_eq!(result["idempotencyKey"], key.as_str());
    assert_eq!(result["capabilityKey"], "deployments.create");
    assert_eq!(result["source"], "cli");
    let record = result["record"].clone();
    assert_eq!(record["schemaVersion"], "usage-intent.record/v1");
    assert!(record["id"].as_str().unwrap().starts_with("ui-"));
    assert_eq!(record["organizationId"], org.id.as_str());
    assert_eq!(record["tenantId"], "t-1");
    assert_eq!(record["actor"]["kind"], "user");
    assert_eq!(record["actor"]["userId"], user.user_id.as_str());
    assert_eq!(record["actor"]["email"], user.email.as_str());
    assert_eq!(record["resourceRefs"]["customRef"], "x");
    assert_eq!(
        record["quantity"],
        json!({"value": 1.0, "unit": "deployment"})
    );
    assert_eq!(record["occurredAt"], "2030-01-01T10:00:00Z");
    assert_eq!(record["attributes"]["nested"]["a"], json!([1, 2]));
    assert!(record["recordedAt"].is_string());

    // A repeat, even with other fields, returns the original record.
    let mut changed = body.clone();
    changed["capabilityKey"] = json!("something-else");
    let repeat = user.rest.post("/usage-intents", changed).await.ok();
    assert_eq!(repeat["result"]["duplicate"], true);
    assert_eq!(repeat["result"]["record"], record);

    // Concurrent first submissions of a new key: exactly one creates, all get the same record.
    let fresh = format!("race-{}", random_suffix());
    let racing = json!({"idempotencyKey": fresh, "capabilityKey": "c", "source": "ci"});
    let replies = join_all((0..8).map(|_| user.rest.post("/usage-intents", racing.clone()))).await;
    let results: Vec<Value> = replies
        .into_iter()
        .map(|r| r.ok()["result"].clone())
        .collect();
    let originals = results.iter().filter(|r| r["duplicate"] == false).count();
    assert_eq!(originals, 1, "{results:?}");
    assert!(results.iter().all(|r| r["record"] == results[0]["record"]));
    let stored: Vec<UsageIntent> = Api::<UsageIntent>::namespaced(client.clone(), &org.namespace)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|i| i.spec.idempotency_key == fresh)
        .collect();
    assert_eq!(stored.len(), 1);

    // Keys are per organization.
    let theirs = stranger
        .rest
        .post("/usage-intents", body.clone())
        .await
        .ok();
    assert_eq!(theirs["result"]["duplicate"], false);
    assert_eq!(
        theirs["result"]["record"]["organizationId"],
        other.id.as_str()
    );
    let their_list = stranger.rest.get("/usage-intents").await.ok();
    assert_eq!(records(&their_list).len(), 1);

    // Lists: filters, newest first, limit.
    let list = |query: &str| {
        let path = format!("/usage-intents{query}");
        let rest = user.rest.clone();
        async move { rest.get(&path).await }
    };
    assert_eq!(records(&list("").await.ok()).len(), 2);
    let filtered = list("?capabilityKey=deployments.create&source=cli&tenantId=t-1")
        .await
        .ok();
    assert_eq!(record_ids(&filtered), vec![record["id"].as_str().unwrap()]);
    let by_org = list(&format!("?organizationId={}", org.id)).await.ok();
    assert_eq!(records(&by_org).len(), 2);
    assert!(records(&list(&format!("?organizationId={}", other.id)).await.ok()).is_empty());
    assert!(records(&list("?accountId=nobody").await.ok()).is_empty());
    assert_eq!(records(&list("?limit=1").await.ok()).len(), 1);
    list("?limit=500").await.ok();
    invalid(list("?limit=0").await, "limit");
    invalid(list("?limit=501").await, "limit");
    invalid(list("?source=").await, "source");
    invalid(list("?capabilityKey=").await, "capabilityKey");
    invalid(list("?operationKey=x").await, "operationKey");
}

#[tokio::test]
async fn usage_intents_check_their_context() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let other = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let base = json!({"idempotencyKey": "k-1", "capabilityKey": "c", "source": "cli"});
    let with = |extra: Value| {
        let mut body = base.clone();
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let post = |body: Value| user.rest.post("/usage-intents", body);
    for field in ["idempotencyKey", "capabilityKey", "source"] {
        let mut body = base.clone();
        body.as_object_mut().unwrap().remove(field);
        invalid(post(body).await, field);
        invalid(post(with(json!({field: ""}))).await, field);
    }
    invalid(
        post(with(json!({"idempotencyKey": "k".repeat(257)}))).await,
        "idempotencyKey",
    );
    invalid(
        post(with(json!({"occurredAt": "yesterday"}))).await,
        "occurredAt",
    );
    invalid(
        post(with(json!({"quantity": {"value": -1, "unit": "x"}}))).await,
        "quantity.value",
    );
    invalid(
        post(with(json!({"quantity": {"value": 1}}))).await,
        "quantity.unit",
    );
    invalid(
        post(with(json!({"actor": {"kind": "system"}}))).await,
        "actor.kind",
    );
    invalid(
        post(with(json!({"actor": {"id": "usr-someone-else"}}))).await,
        "actor.id",
    );
    invalid(
        post(with(json!({"resourceRefs": {"projectId": ""}}))).await,
        "resourceRefs.projectId",
    );
    invalid(post(with(json!({"tenantId": ""}))).await, "tenantId");
    invalid(
        post(with(json!({"attributes": {"blob": "x".repeat(17 * 1024)}}))).await,
        "attributes",
    );
    invalid(post(with(json!({"status": "rejected"}))).await, "status");
    // Another organization, named in the body or the references, is a 404.
    post(with(json!({"organizationId": other.id})))
        .await
        .error(404, "not_found");
    post(with(json!({"resourceRefs": {"organizationId": other.id}})))
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .post("/usage-intents", base.clone())
        .await
        .error(401, "unauthenticated");
    Rest::anonymous()
        .get("/usage-intents")
        .await
        .error(401, "unauthenticated");
    // Nothing was recorded by the refused calls; a matching actor is accepted.
    assert!(records(&user.rest.get("/usage-intents").await.ok()).is_empty());
    let ok = post(with(json!({"actor": {"kind": "user", "id": user.user_id}})))
        .await
        .ok();
    assert_eq!(
        ok["result"]["record"]["actor"]["email"],
        user.email.as_str()
    );
}

#[tokio::test]
async fn overlay_and_route_surface_decisions_are_recorded_and_listed() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let stranger = other.user(OrganizationRole::Member).await;

    let overlay = user
        .rest
        .post(
            "/deployment-overlays",
            json!({"operationKey": "deployments.preview", "source": "cli",
                   "capabilityKey": "previews", "resourceRefs": {"resourceId": "res-1"},
                   "details": {"why": "pr"}}),
        )
        .await
        .ok();
    let result = &overlay["result"];
    assert_eq!(result["operationKey"], "deployments.preview");
    assert_eq!(result["decision"], "enabled");
    assert_eq!(result["allowed"], true);
    assert_eq!(result["source"], "cli");
    let record = &result["record"];
    assert_eq!(record["schemaVersion"], "deployment-overlay.decision/v1");
    assert!(record["id"].as_str().unwrap().starts_with("ovl-"));
    assert_eq!(record["decision"], "enabled");
    assert_eq!(record["capabilityKey"], "previews");
    assert_eq!(record["organizationId"], org.id.as_str());
    assert_eq!(record["actor"]["kind"], "user");
    assert_eq!(record["details"]["why"], "pr");
    assert!(record["decidedAt"].is_string() && record.get("surfaceKind").is_none());

    let surface = user
        .rest
        .post(
            "/route-surfaces",
            json!({"operationKey": "routes.bind", "source": "console",
                   "surfaceKind": "generated-access",
                   "resourceRefs": {"domainBindingId": "db-1", "routeId": "r-1"}}),
        )
        .await
        .ok();
    let result = &surface["result"];
    assert_eq!(result["surfaceKind"], "generated-access");
    assert_eq!(
        (&result["decision"], &result["allowed"]),
        (&json!("enabled"), &json!(true))
    );
    let record = &result["record"];
    assert_eq!(record["schemaVersion"], "route-surface.decision/v1");
    assert_eq!(record["surfaceKind"], "generated-access");
    assert_eq!(record["resourceRefs"]["routeId"], "r-1");
    assert!(record["id"].as_str().unwrap().starts_with("rsd-"));

    // Each decision is a new record; lists filter and bound.
    user.rest
        .post(
            "/deployment-overlays",
            json!({"operationKey": "deployments.rollback", "source": "cli"}),
        )
        .await
        .ok();
    let list = |path: String| {
        let rest = user.rest.clone();
        async move { rest.get(&path).await }
    };
    assert_eq!(
        records(&list("/deployment-overlays".into()).await.ok()).len(),
        2
    );
    let one =
        list("/deployment-overlays?operationKey=deployments.preview&capabilityKey=previews".into())
            .await
            .ok();
    assert_eq!(
        record_ids(&one),
        vec![overlay["result"]["record"]["id"].as_str().unwrap()]
    );
    assert_eq!(
        records(&list("/deployment-overlays?limit=1".into()).await.ok()).len(),
        1
    );
    let surfaces = list("/route-surfaces?surfaceKind=generated-access&source=console".into())
        .await
        .ok();
    assert_eq!(records(&surfaces).len(), 1);
    assert!(
        records(
            &list("/route-surfaces?surfaceKind=custom-domain".into())
                .await
                .ok()
        )
        .is_empty()
    );
    for path in ["/deployment-overlays", "/route-surfaces"] {
        invalid(list(format!("{path}?limit=0")).await, "limit");
        invalid(list(format!("{path}?limit=501")).await, "limit");
        list(format!("{path}?limit=500")).await.ok();
        invalid(list(format!("{path}?operationKey=")).await, "operationKey");
        invalid(list(format!("{path}?tenant=x")).await, "tenant");
        Rest::anonymous()
            .get(path)
            .await
            .error(401, "unauthenticated");
        // Other organizations see none of these records.
        assert!(records(&stranger.rest.get(path).await.ok()).is_empty());
    }
    invalid(
        list("/deployment-overlays?surfaceKind=x".into()).await,
        "surfaceKind",
    );

    let overlay = |body: Value| user.rest.post("/deployment-overlays", body);
    invalid(overlay(json!({"source": "cli"})).await, "operationKey");
    invalid(overlay(json!({"operationKey": "a"})).await, "source");
    invalid(
        overlay(json!({"operationKey": "a", "source": ""})).await,
        "source",
    );
    invalid(
        overlay(json!({"operationKey": "a", "source": "cli", "surfaceKind": "x"})).await,
        "surfaceKind",
    );
    invalid(
        overlay(json!({"operationKey": "a", "source": "cli", "decision": "disabled"})).await,
        "decision",
    );
    overlay(json!({"operationKey": "a", "source": "cli", "organizationId": other.id}))
        .await
        .error(404, "not_found");
    let surface = |body: Value| user.rest.post("/route-surfaces", body);
    invalid(
        surface(json!({"operationKey": "a", "source": "cli"})).await,
        "surfaceKind",
    );
    invalid(
        surface(json!({"operationKey": "a", "source": "cli", "surfaceKind": ""})).await,
        "surfaceKind",
    );
    Rest::anonymous()
        .post(
            "/route-surfaces",
            json!({"operationKey": "a", "source": "b", "surfaceKind": "c"}),
        )
        .await
        .error(401, "unauthenticated");
}

#[tokio::test]
async fn decisions_by_deploy_tokens_name_the_token_and_respect_its_scope() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let inside = project(&admin.rest, "Inside").await;
    let outside = project(&admin.rest, "Outside").await;
    let (token_id, secret) =
        create_token(&admin.rest, &org.id, json!({"projectIds": [inside]})).await;
    let ci = Rest::anonymous().with_token(&secret);

    let decided = ci
        .post(
            "/deployment-overlays",
            json!({"operationKey": "deployments.create", "source": "github-actions",
                   "resourceRefs": {"projectId": inside}}),
        )
        .await
        .ok();
    let actor = &decided["result"]["record"]["actor"];
    assert_eq!(actor["kind"], "deploy-token");
    assert_eq!(actor["id"], token_id.as_str());
    let intent = ci
        .post(
            "/usage-intents",
            json!({"idempotencyKey": "ci-1", "capabilityKey": "c", "source": "ci",
                   "actor": {"kind": "deploy-token", "id": token_id}}),
        )
        .await
        .ok();
    assert_eq!(intent["result"]["record"]["actor"]["kind"], "deploy-token");
    // A token cannot claim to be a user.
    invalid(
        ci.post(
            "/usage-intents",
            json!({"idempotencyKey": "ci-2", "capabilityKey": "c", "source": "ci",
                   "actor": {"userId": "usr-admin"}}),
        )
        .await,
        "actor.userId",
    );

    // Ids outside the token's scope are refused, and records about them stay hidden.
    for (path, extra) in [
        ("/deployment-overlays", json!({})),
        (
            "/route-surfaces",
            json!({"surfaceKind": "generated-access"}),
        ),
        (
            "/usage-intents",
            json!({"idempotencyKey": "ci-3", "capabilityKey": "c"}),
        ),
    ] {
        let mut body = json!({"operationKey": "x", "source": "ci",
                              "resourceRefs": {"projectId": outside}});
        if path == "/usage-intents" {
            body.as_object_mut().unwrap().remove("operationKey");
        }
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        ci.post(path, body.clone()).await.error(403, "forbidden");
        admin.rest.post(path, body).await.ok();
        let mine = records(&ci.get(path).await.ok());
        let all = records(&admin.rest.get(path).await.ok());
        assert!(mine.len() < all.len(), "{path}: {mine:?}");
        assert!(
            mine.iter()
                .all(|r| r["resourceRefs"]["projectId"] != outside.as_str())
        );
    }
    // Repeating an admin's key outside the scope does not reveal that record.
    ci.post(
        "/usage-intents",
        json!({"idempotencyKey": "ci-3", "capabilityKey": "c", "source": "ci"}),
    )
    .await
    .error(409, "conflict");
    assert_shown_once(&secret);
}
