//! Deploy tokens over HTTP (spec §4.2, §5): the secret is shown once (create, rotate), only its
//! digest is stored, rotation and revocation take effect on the very next request, and a token
//! acts only inside its organization and scope.

use std::time::Duration;

use berth_apiserver_shim::token;
use berth_crds::deploy_token::DeployToken;
use berth_crds::environment::Environment;
use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, transcript};
use berth_tests::{client, eventually};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::shim_projects_envs::{environment, invalid, project};

const WAIT: Duration = Duration::from_secs(30);

/// A new deploy token of `organization`: `(tokenId, secret)`.
pub(crate) async fn create_token(
    rest: &Rest,
    organization: &str,
    scope: Value,
) -> (String, String) {
    let created = rest
        .post(
            "/deploy-tokens",
            json!({"organizationId": organization, "displayName": "ci", "scope": scope}),
        )
        .await
        .ok();
    (
        created["tokenId"].as_str().unwrap().to_string(),
        created["token"].as_str().unwrap().to_string(),
    )
}

/// How many response bodies so far contain `needle`.
fn responses_containing(needle: &str) -> usize {
    transcript().iter().filter(|b| b.contains(needle)).count()
}

/// Asserts `secret` was returned once (by create or rotate) and never logged.
pub(crate) fn assert_shown_once(secret: &str) {
    assert_eq!(
        responses_containing(secret),
        1,
        "a deploy token secret was returned again"
    );
    assert_not_logged(secret);
}

/// Asserts the shim's and the controller's logs never mention `secret`.
fn assert_not_logged(secret: &str) {
    for variable in ["BERTH_SHIM_LOG", "BERTH_CONTROLLER_LOG"] {
        let path = std::env::var(variable).unwrap_or_else(|_| panic!("{variable} is set"));
        let log = std::fs::read_to_string(&path).expect("the log is readable");
        assert!(!log.contains(secret), "a deploy token secret is in {path}");
    }
}

fn token_ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|t| t["tokenId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn deploy_tokens_are_created_shown_rotated_and_revoked() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let expires = Timestamp::now()
        .checked_add(SignedDuration::from_hours(24))
        .unwrap()
        .to_string();
    let scope = json!({
        "projectIds": ["prj-a"], "resourceIds": ["res-1"],
        "repositoryFullNames": ["acme/shop"], "workflowCommands": ["source-link-deploy"],
    });
    let created = admin
        .rest
        .post(
            "/deploy-tokens",
            json!({"organizationId": org.id, "displayName": "GitHub Actions",
                   "scope": scope, "expiresAt": expires}),
        )
        .await
        .ok();
    let id = created["tokenId"].as_str().unwrap().to_string();
    let secret = created["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with("bdt_") && secret.len() > 40);
    assert_eq!(created["organizationId"], org.id.as_str());
    assert_eq!(created["displayName"], "GitHub Actions");
    assert_eq!(created["secretSuffix"], token::suffix(&secret).as_str());
    assert_eq!(created["scopes"]["projectIds"], json!(["prj-a"]));
    assert_eq!(created["scopes"]["environmentIds"], json!([]));
    assert!(created["createdAt"].is_string() && created["expiresAt"].is_string());

    // Only the digest is stored.
    let stored = Api::<DeployToken>::namespaced(client.clone(), &org.namespace)
        .get(&id)
        .await
        .unwrap();
    assert_eq!(stored.spec.secret_digest, token::digest(&secret));
    assert!(!serde_json::to_string(&stored).unwrap().contains(&secret));

    let show_path = format!("/deploy-tokens/{id}?organizationId={}", org.id);
    let shown = admin.rest.get(&show_path).await.ok();
    assert!(shown.get("token").is_none() && !shown.to_string().contains("sha256"));
    assert_eq!(shown["status"], "active");
    assert_eq!(shown["secretSuffix"], created["secretSuffix"]);
    assert_eq!(
        shown["scope"]["workflowCommands"],
        json!(["source-link-deploy"])
    );
    assert_eq!(shown["expiresAt"], created["expiresAt"]);
    assert!(shown.get("lastUsedAt").is_none());

    // Using the token records lastUsedAt (asynchronously, at most once a minute).
    let ci = Rest::anonymous().with_token(&secret);
    ci.get("/projects/count").await.ok();
    let used = eventually(WAIT, "lastUsedAt", || async {
        let shown = admin.rest.get(&show_path).await.ok();
        shown["lastUsedAt"].is_string().then_some(shown)
    })
    .await;
    ci.get("/projects/count").await.ok();
    let again = admin.rest.get(&show_path).await.ok();
    assert_eq!(again["lastUsedAt"], used["lastUsedAt"], "throttled");

    // Rotation: confirmation required; the old secret is refused on the next request.
    let rotate = format!("/deploy-tokens/{id}/rotate");
    let confirmed = json!({"organizationId": org.id, "confirmation": {"tokenId": id}});
    admin
        .rest
        .post(
            &rotate,
            json!({"organizationId": org.id, "confirmation": {"tokenId": "dtk-other"}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    invalid(
        admin
            .rest
            .post(&rotate, json!({"organizationId": org.id}))
            .await,
        "confirmation.tokenId",
    );
    let rotated = admin.rest.post(&rotate, confirmed.clone()).await.ok();
    let new_secret = rotated["token"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["tokenId"], id.as_str());
    assert_eq!(rotated["scopes"]["resourceIds"], json!(["res-1"]));
    ci.get("/projects/count")
        .await
        .error(401, "unauthenticated");
    let ci = Rest::anonymous().with_token(&new_secret);
    ci.get("/projects/count").await.ok();
    let shown = admin.rest.get(&show_path).await.ok();
    assert_eq!(shown["rotatedAt"], rotated["rotatedAt"]);
    assert_eq!(shown["secretSuffix"], token::suffix(&new_secret).as_str());

    // Revocation: refused on the next request, reported, and idempotent.
    let revoke = format!("/deploy-tokens/{id}/revoke");
    admin
        .rest
        .post(
            &revoke,
            json!({"organizationId": org.id, "confirmation": {"tokenId": "x"}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    ci.get("/projects/count").await.ok();
    let revoked = admin.rest.post(&revoke, confirmed.clone()).await.ok();
    assert_eq!(revoked["tokenId"], id.as_str());
    let error = ci
        .get("/projects/count")
        .await
        .error(401, "unauthenticated");
    assert!(!error.to_string().contains(&new_secret));
    let shown = admin.rest.get(&show_path).await.ok();
    assert_eq!(shown["status"], "revoked");
    assert_eq!(shown["revokedAt"], revoked["revokedAt"]);
    let again = admin.rest.post(&revoke, confirmed.clone()).await.ok();
    assert_eq!(again["revokedAt"], revoked["revokedAt"]);
    admin
        .rest
        .post(&rotate, confirmed)
        .await
        .error(409, "conflict");
    // The object says so too (`kubectl get deploytoken -o yaml`), with the reported time.
    let stored = Api::<DeployToken>::namespaced(client.clone(), &org.namespace)
        .get(&id)
        .await
        .unwrap();
    assert!(stored.spec.revoked);
    let status = serde_json::to_value(stored.status.unwrap()).unwrap();
    assert_eq!(status["revokedAt"], revoked["revokedAt"]);
    assert_eq!(status["rotatedAt"], rotated["rotatedAt"]);

    let listed = |query: &str| {
        let path = format!("/deploy-tokens?organizationId={}{query}", org.id);
        let rest = admin.rest.clone();
        async move { token_ids(&rest.get(&path).await.ok()) }
    };
    assert_eq!(listed("&status=revoked").await, vec![id.clone()]);
    assert!(listed("&status=active").await.is_empty());
    assert_eq!(listed("&resourceId=res-1").await, vec![id.clone()]);
    assert!(listed("&resourceId=res-2").await.is_empty());
    assert_eq!(
        listed("&repositoryFullName=acme%2Fshop").await,
        vec![id.clone()]
    );

    // Each secret appears in exactly one response (its create or rotate) and in no log.
    assert_shown_once(&secret);
    assert_shown_once(&new_secret);
}

#[tokio::test]
async fn deploy_token_management_needs_a_signed_in_admin() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let member = org.user(OrganizationRole::Member).await;
    let (id, secret) = create_token(&owner.rest, &org.id, json!({})).await;
    let ci = Rest::anonymous().with_token(&secret);
    let confirmed = json!({"organizationId": org.id, "confirmation": {"tokenId": id}});
    let create = json!({"organizationId": org.id, "displayName": "x", "scope": {}});
    let list = format!("/deploy-tokens?organizationId={}", org.id);
    let show = format!("/deploy-tokens/{id}?organizationId={}", org.id);
    let rotate = format!("/deploy-tokens/{id}/rotate");
    let revoke = format!("/deploy-tokens/{id}/revoke");

    for (caller, status, code) in [
        (Rest::anonymous(), 401, "unauthenticated"),
        (member.rest.clone(), 403, "forbidden"),
        (ci.clone(), 403, "forbidden"),
    ] {
        caller.get(&list).await.error(status, code);
        caller.get(&show).await.error(status, code);
        caller
            .post("/deploy-tokens", create.clone())
            .await
            .error(status, code);
        caller
            .post(&rotate, confirmed.clone())
            .await
            .error(status, code);
        caller
            .post(&revoke, confirmed.clone())
            .await
            .error(status, code);
    }
    // The token still works: refused calls changed nothing.
    ci.get("/projects/count").await.ok();
    assert_eq!(token_ids(&owner.rest.get(&list).await.ok()), vec![id]);
    assert_shown_once(&secret);
}

#[tokio::test]
async fn deploy_tokens_of_other_organizations_are_not_found() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let stranger = other.user(OrganizationRole::Owner).await;
    let (id, secret) = create_token(&admin.rest, &org.id, json!({})).await;
    let confirmed = |organization: &str| json!({"organizationId": organization, "confirmation": {"tokenId": id}});

    // Naming the other organization: 404, exactly as for one that does not exist.
    let hidden = stranger
        .rest
        .get(&format!("/deploy-tokens?organizationId={}", org.id))
        .await
        .error(404, "not_found");
    let missing = stranger
        .rest
        .get("/deploy-tokens?organizationId=org-does-not-exist")
        .await
        .error(404, "not_found");
    assert_eq!(hidden["details"]["kind"], missing["details"]["kind"]);
    stranger
        .rest
        .get(&format!("/deploy-tokens/{id}?organizationId={}", org.id))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .post(&format!("/deploy-tokens/{id}/revoke"), confirmed(&org.id))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .post(
            "/deploy-tokens",
            json!({"organizationId": org.id, "displayName": "x", "scope": {}}),
        )
        .await
        .error(404, "not_found");
    // Naming their own organization: the token is not there.
    stranger
        .rest
        .get(&format!("/deploy-tokens/{id}?organizationId={}", other.id))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .post(&format!("/deploy-tokens/{id}/rotate"), confirmed(&other.id))
        .await
        .error(404, "not_found");

    // The token sees nothing of the other organization.
    let theirs = project(&stranger.rest, "Theirs").await;
    let ci = Rest::anonymous().with_token(&secret);
    ci.get(&format!("/projects/{theirs}"))
        .await
        .error(404, "not_found");
    assert_eq!(ci.get("/projects/count").await.ok()["count"], 0);
    ci.post(
        "/environments",
        json!({"projectId": theirs, "name": "x", "kind": "preview"}),
    )
    .await
    .error(404, "not_found");
    ci.post(
        "/usage-intents",
        json!({"idempotencyKey": "k", "capabilityKey": "c", "source": "ci",
               "organizationId": other.id}),
    )
    .await
    .error(404, "not_found");
    assert_shown_once(&secret);
}

#[tokio::test]
async fn deploy_token_requests_are_validated_and_lists_bounded() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(create_token(&admin.rest, &org.id, json!({})).await.0);
    }
    let list = |query: &str| {
        let path = format!("/deploy-tokens?{query}");
        let rest = admin.rest.clone();
        async move { rest.get(&path).await }
    };
    let o = format!("organizationId={}", org.id);
    // limit bounds the page (newest first; equal creation seconds tie-break by id).
    let two = token_ids(&list(&format!("{o}&limit=2")).await.ok());
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|t| made.contains(t)));
    assert_eq!(
        token_ids(&list(&format!("{o}&limit=100")).await.ok()).len(),
        3
    );
    invalid(list(&format!("{o}&limit=0")).await, "limit");
    invalid(list(&format!("{o}&limit=101")).await, "limit");
    invalid(list("limit=10").await, "organizationId");
    invalid(list("organizationId=").await, "organizationId");
    invalid(list(&format!("{o}&status=expired")).await, "status");
    invalid(list(&format!("{o}&resourceId=")).await, "resourceId");
    invalid(list(&format!("{o}&projectId=prj-1")).await, "projectId");
    invalid(
        admin.rest.get(&format!("/deploy-tokens/{}", made[0])).await,
        "organizationId",
    );

    let create = |body: Value| admin.rest.post("/deploy-tokens", body);
    let with = |extra: Value| {
        let mut body = json!({"organizationId": org.id, "displayName": "ci", "scope": {}});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    invalid(
        create(with(json!({"displayName": ""}))).await,
        "displayName",
    );
    invalid(
        create(with(json!({"displayName": "x".repeat(121)}))).await,
        "displayName",
    );
    invalid(
        create(json!({"organizationId": org.id, "scope": {}})).await,
        "displayName",
    );
    invalid(
        create(json!({"organizationId": org.id, "displayName": "ci"})).await,
        "scope",
    );
    invalid(
        create(json!({"displayName": "ci", "scope": {}})).await,
        "organizationId",
    );
    invalid(create(with(json!({"colour": "red"}))).await, "colour");
    invalid(
        create(with(json!({"scope": {"projectIdz": []}}))).await,
        "scope.projectIdz",
    );
    invalid(
        create(with(json!({"scope": {"projectIds": [""]}}))).await,
        "scope.projectIds[0]",
    );
    let many: Vec<String> = (0..101).map(|n| format!("prj-{n}")).collect();
    invalid(
        create(with(json!({"scope": {"environmentIds": many}}))).await,
        "scope.environmentIds",
    );
    invalid(
        create(with(json!({"expiresAt": "2001-01-01T00:00:00Z"}))).await,
        "expiresAt",
    );
    invalid(
        create(with(json!({"expiresAt": "tomorrow"}))).await,
        "expiresAt",
    );
    // Nothing was created by the refused calls.
    assert_eq!(token_ids(&list(&o).await.ok()).len(), 3);
}

#[tokio::test]
async fn deploy_tokens_act_only_within_their_scope() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let inside = project(&admin.rest, "Inside").await;
    let outside = project(&admin.rest, "Outside").await;
    let outside_env = environment(&admin.rest, &outside, "production").await;
    let (token_id, secret) =
        create_token(&admin.rest, &org.id, json!({"projectIds": [inside]})).await;
    let ci = Rest::anonymous().with_token(&secret);

    let listed = ci.get("/projects").await.ok();
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["items"][0]["id"], inside.as_str());
    ci.get(&format!("/projects/{inside}")).await.ok();
    ci.get(&format!("/projects/{outside}"))
        .await
        .error(404, "not_found");
    ci.get(&format!("/environments/{outside_env}"))
        .await
        .error(404, "not_found");
    ci.get(&format!("/environments?projectId={outside}"))
        .await
        .error(403, "forbidden");
    ci.post(
        "/environments",
        json!({"projectId": outside, "name": "pr-9", "kind": "preview"}),
    )
    .await
    .error(403, "forbidden");
    ci.post("/projects", json!({"name": "new"}))
        .await
        .error(403, "forbidden");

    // Inside its scope the token works, and the change names it as the actor.
    let env = ci
        .post(
            "/environments",
            json!({"projectId": inside, "name": "pr-1", "kind": "preview"}),
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let stored = Api::<Environment>::namespaced(client.clone(), &org.namespace)
        .get(&env)
        .await
        .unwrap();
    let annotations = stored.annotations();
    assert_eq!(
        annotations
            .get("berth.dev/updated-by-actor-kind")
            .map(String::as_str),
        Some("deploy-token")
    );
    assert_eq!(
        annotations.get("berth.dev/updated-by-actor-id"),
        Some(&token_id)
    );
    let environments = ci.get("/environments").await.ok();
    assert_eq!(environments["items"].as_array().unwrap().len(), 1);
    // Archiving needs an admin; a token acts with member rights.
    ci.post(&format!("/environments/{env}/archive"), json!({}))
        .await
        .error(403, "forbidden");

    // An environment-scoped token sees only that environment.
    let (_, narrow) = create_token(&admin.rest, &org.id, json!({"environmentIds": [env]})).await;
    let narrow = Rest::anonymous().with_token(&narrow);
    let seen = narrow.get("/environments?lifecycleStatus=all").await.ok();
    let seen: Vec<&Value> = seen["items"].as_array().unwrap().iter().collect();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["id"], env.as_str());

    // An expired token is refused from its expiry on.
    let soon = Timestamp::now()
        .checked_add(SignedDuration::from_secs(3))
        .unwrap()
        .to_string();
    let expiring = admin
        .rest
        .post(
            "/deploy-tokens",
            json!({"organizationId": org.id, "displayName": "short", "scope": {},
                   "expiresAt": soon}),
        )
        .await
        .ok();
    let expiring = Rest::anonymous().with_token(expiring["token"].as_str().unwrap());
    expiring.get("/projects/count").await.ok();
    tokio::time::sleep(Duration::from_secs(4)).await;
    expiring
        .get("/projects/count")
        .await
        .error(401, "unauthenticated");
    assert_shown_once(&secret);
}
