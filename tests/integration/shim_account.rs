//! The caller's own account over HTTP (spec §4.3): profile, sessions, account deletion, and the
//! administrators' `POST /users`. Every test makes its own organization, so they run in parallel.

use std::collections::BTreeSet;
use std::time::Duration;

use berth_apiserver_shim::token;
use berth_crds::deploy_token::{DeployToken, DeployTokenSpec};
use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_crds::user::User;
use berth_tests::rest::{Rest, TestOrg, transcript};
use berth_tests::{client, eventually, random_suffix};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Signs in and returns the caller with its session id.
pub(crate) async fn login(email: &str, password: &str) -> (Rest, String) {
    let anonymous = Rest::anonymous();
    let body = anonymous
        .post("/auth/login", json!({"email": email, "password": password}))
        .await
        .ok();
    let rest = anonymous.with_token(body["token"].as_str().expect("a token"));
    (
        rest,
        body["sessionId"].as_str().expect("a session id").into(),
    )
}

/// A deploy token of `org`, made as a custom resource (as GitOps would) and usable once the
/// shim's cache has it.
pub(crate) async fn deploy_token(client: &Client, org: &TestOrg) -> Rest {
    let secret = token::generate(token::DEPLOY_TOKEN_PREFIX);
    let object = DeployToken::new(
        &format!("tok-{}", random_suffix()),
        DeployTokenSpec {
            display_name: "ci".into(),
            scope: Default::default(),
            expires_at: None,
            revoked: false,
            secret_digest: token::digest(&secret),
            secret_suffix: token::suffix(&secret),
        },
    );
    Api::<DeployToken>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &object)
        .await
        .expect("create deploy token");
    let rest = Rest::anonymous().with_token(&secret);
    eventually(Duration::from_secs(10), "deploy token accepted", || async {
        (rest.get("/projects/count").await.status == 200).then_some(())
    })
    .await;
    rest
}

/// Makes the user `user_id` a member of `org` with `role` (as a custom resource); waits until
/// `rest` (that user) sees the organization.
pub(crate) async fn add_member(
    client: &Client,
    org: &TestOrg,
    rest: &Rest,
    user_id: &str,
    email: &str,
    role: OrganizationRole,
) -> String {
    let member_id = format!("mem-{}", random_suffix());
    let member = Member::new(
        &member_id,
        MemberSpec {
            user_id: user_id.into(),
            email: email.into(),
            role,
            active: true,
        },
    );
    Api::<Member>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &member)
        .await
        .expect("create member");
    let path = format!("/organizations/{}/profile", org.id);
    eventually(Duration::from_secs(10), "membership visible", || async {
        (rest.get(&path).await.status == 200).then_some(())
    })
    .await;
    member_id
}

/// Removes a user made with `create_user` that no organization fixture tracks.
pub(crate) async fn delete_user(client: &Client, user_id: &str) {
    let _ = Api::<User>::all(client.clone())
        .delete(user_id, &DeleteParams::background())
        .await;
    let secret = berth_apiserver_shim::domain::accounts::password_secret_name(user_id);
    let _ = Api::<Secret>::namespaced(client.clone(), berth_crds::SYSTEM_NAMESPACE)
        .delete(&secret, &DeleteParams::background())
        .await;
}

/// Asserts a 422 that names `field`.
#[track_caller]
pub(crate) fn assert_invalid(reply: berth_tests::rest::Reply, field: &str) {
    let error = reply.error(422, "validation_error");
    assert_eq!(error["details"]["field"], field, "{error}");
}

#[tokio::test]
async fn shim_account_profile_reads_and_updates() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;

    let profile = user.rest.get("/account/profile").await.ok();
    assert_eq!(profile["userId"], user.user_id.as_str());
    assert_eq!(profile["email"], user.email.as_str());
    assert_eq!(profile["displayName"], "Test member");
    assert_eq!(profile["emailVerified"], false);
    assert!(profile["createdAt"].is_string() && profile["updatedAt"].is_string());

    let change = json!({"displayName": "Ada Lovelace", "avatarUrl": "https://example.com/ada.png"});
    let updated = user.rest.post("/account/profile", change).await.ok();
    assert_eq!(updated["displayName"], "Ada Lovelace");
    assert_eq!(updated["avatarUrl"], "https://example.com/ada.png");
    assert!(updated["updatedAt"].as_str() >= profile["createdAt"].as_str());
    let read = user.rest.get("/account/profile").await.ok();
    assert_eq!(read["displayName"], "Ada Lovelace");
    assert_eq!(read["email"], user.email.as_str(), "email is untouched");

    // An empty string clears the avatar; the name stays.
    let cleared = user
        .rest
        .post("/account/profile", json!({"avatarUrl": ""}))
        .await
        .ok();
    assert!(cleared.get("avatarUrl").is_none(), "{cleared}");
    assert_eq!(cleared["displayName"], "Ada Lovelace");
    // An empty body changes nothing.
    let same = user.rest.post("/account/profile", json!({})).await.ok();
    assert_eq!(same["displayName"], "Ada Lovelace");

    let post = |body: Value| user.rest.post("/account/profile", body);
    assert_invalid(post(json!({"email": "new@example.com"})).await, "email");
    assert_invalid(
        post(json!({"displayName": "x".repeat(121)})).await,
        "displayName",
    );
    assert_invalid(
        post(json!({"avatarUrl": "ftp://example.com/a"})).await,
        "avatarUrl",
    );
    assert_invalid(post(json!({"nickname": "ada"})).await, "nickname");
    assert_invalid(post(json!({"displayName": 7})).await, "displayName");
    // 120 characters is the bound itself.
    post(json!({"displayName": "y".repeat(120)})).await.ok();

    let anonymous = Rest::anonymous();
    anonymous
        .get("/account/profile")
        .await
        .error(401, "unauthenticated");
    anonymous
        .post("/account/profile", json!({}))
        .await
        .error(401, "unauthenticated");
    let ci = deploy_token(&client, &org).await;
    ci.get("/account/profile").await.error(403, "forbidden");
    ci.get("/account/sessions").await.error(403, "forbidden");
}

#[tokio::test]
async fn shim_account_sessions_mark_current_paginate_and_revoke() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let other = org.user(OrganizationRole::Member).await;
    let (a, a_id) = login(&user.email, &user.password).await;
    let (b, b_id) = login(&user.email, &user.password).await;
    let (_, other_id) = login(&other.email, &other.password).await;

    let listed = a.get("/account/sessions").await.ok();
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "this user's three sessions: {listed}");
    assert!(items.iter().all(|s| s["userId"] == user.user_id.as_str()));
    assert!(!items.iter().any(|s| s["sessionId"] == other_id.as_str()));
    let current: Vec<&Value> = items.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["sessionId"], a_id.as_str());
    assert_eq!(current[0]["clientKind"], "web");
    assert!(current[0]["expiresAt"].is_string() && current[0]["createdAt"].is_string());

    // Cursor pagination reaches every session exactly once.
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/account/sessions?limit=1&cursor={cursor}"),
            None => "/account/sessions?limit=1".to_string(),
        };
        let page = a.get(&path).await.ok();
        assert_eq!(page["items"].as_array().unwrap().len(), 1);
        assert!(seen.insert(page["items"][0]["sessionId"].as_str().unwrap().to_string()));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), items.len());
    assert_invalid(a.get("/account/sessions?limit=0").await, "limit");
    assert_invalid(a.get("/account/sessions?limit=251").await, "limit");
    assert_invalid(a.get("/account/sessions?cursor=nope").await, "cursor");

    // Revoking B refuses B's very next request.
    let revoked = a
        .post(&format!("/account/sessions/{b_id}/revoke"), json!({}))
        .await
        .ok();
    assert_eq!(revoked["sessionId"], b_id.as_str());
    let revoked_at = revoked["revokedAt"].as_str().unwrap().to_string();
    b.get("/account/profile")
        .await
        .error(401, "unauthenticated");
    let after = a.get("/account/sessions").await.ok();
    assert!(
        !after["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == b_id.as_str())
    );
    // Repeating the revoke reports the first revocation.
    let again = a
        .post(&format!("/account/sessions/{b_id}/revoke"), json!({}))
        .await
        .ok();
    assert_eq!(again["revokedAt"], revoked_at.as_str());

    // Someone else's session is invisible; unknown ids likewise; the body must be an object.
    a.post(&format!("/account/sessions/{other_id}/revoke"), json!({}))
        .await
        .error(404, "not_found");
    other.rest.get("/account/profile").await.ok();
    a.post("/account/sessions/sess-nope/revoke", json!({}))
        .await
        .error(404, "not_found");
    assert_invalid(
        a.post(&format!("/account/sessions/{a_id}/revoke"), json!({"x": 1}))
            .await,
        "x",
    );
    Rest::anonymous()
        .post(&format!("/account/sessions/{a_id}/revoke"), json!({}))
        .await
        .error(401, "unauthenticated");

    // Revoking the current session signs it out.
    a.post(&format!("/account/sessions/{a_id}/revoke"), json!({}))
        .await
        .ok();
    a.get("/account/sessions")
        .await
        .error(401, "unauthenticated");
    user.rest.get("/account/profile").await.ok();
}

#[tokio::test]
async fn shim_account_delete_confirms_and_removes_the_account() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let member = org.user(OrganizationRole::Member).await;
    let (second, _) = login(&member.email, &member.password).await;

    assert_invalid(
        member.rest.delete("/account", json!({})).await,
        "confirmation.userId",
    );
    member
        .rest
        .delete(
            "/account",
            json!({"confirmation": {"userId": owner.user_id}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    member.rest.get("/account/profile").await.ok();

    let deleted = member
        .rest
        .delete(
            "/account",
            json!({"confirmation": {"userId": member.user_id}}),
        )
        .await
        .ok();
    assert_eq!(deleted["userId"], member.user_id.as_str());
    assert!(deleted["deletedAt"].is_string());
    // Every session of the account is refused at once, and the password no longer works.
    member
        .rest
        .get("/account/profile")
        .await
        .error(401, "unauthenticated");
    second
        .get("/account/sessions")
        .await
        .error(401, "unauthenticated");
    Rest::anonymous()
        .post(
            "/auth/login",
            json!({"email": member.email, "password": member.password}),
        )
        .await
        .error(401, "unauthenticated");
    // The membership stays visible to the organization as removed.
    let members = owner
        .rest
        .get(&format!("/organizations/{}/members", org.id))
        .await
        .ok();
    let record = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["memberId"] == member.member_id.as_str())
        .cloned()
        .expect("the removed member is listed");
    assert_eq!(record["status"], "deactivated");

    let ci = deploy_token(&client, &org).await;
    ci.delete(
        "/account",
        json!({"confirmation": {"userId": owner.user_id}}),
    )
    .await
    .error(403, "forbidden");
    Rest::anonymous()
        .delete(
            "/account",
            json!({"confirmation": {"userId": owner.user_id}}),
        )
        .await
        .error(401, "unauthenticated");
}

#[tokio::test]
async fn shim_account_delete_protects_organizations_and_the_first_admin() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let member = org.user(OrganizationRole::Member).await;
    let confirm = json!({"confirmation": {"userId": owner.user_id}});

    // The only owner of an organization with other members cannot leave it ownerless.
    let error = owner
        .rest
        .delete("/account", confirm.clone())
        .await
        .error(409, "conflict");
    assert_eq!(error["details"]["organizationIds"], json!([org.id]));
    owner.rest.get("/account/profile").await.ok();

    // With a second owner the account can go.
    owner
        .rest
        .post(
            &format!(
                "/organizations/{}/members/{}/role",
                org.id, member.member_id
            ),
            json!({"role": "owner"}),
        )
        .await
        .ok();
    owner.rest.delete("/account", confirm).await.ok();
    owner
        .rest
        .get("/account/profile")
        .await
        .error(401, "unauthenticated");
    let members = member
        .rest
        .get(&format!("/organizations/{}/members", org.id))
        .await
        .ok();
    let statuses: Vec<(&str, &str)> = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["status"].as_str().unwrap()))
        .collect();
    assert!(
        statuses.contains(&("owner", "deactivated")) && statuses.contains(&("owner", "active"))
    );

    // The first administrator's account is kept: bootstrap cannot run again.
    let admin = Rest::admin().await;
    let admin_id = admin.get("/account/profile").await.ok()["userId"].clone();
    admin
        .delete("/account", json!({"confirmation": {"userId": admin_id}}))
        .await
        .error(409, "conflict");
    admin.get("/account/profile").await.ok();
}

#[tokio::test]
async fn shim_users_are_created_by_admins_and_can_sign_in() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let email = format!("new-{}@test.berth.local", random_suffix());

    let created = admin
        .rest
        .post(
            "/users",
            json!({"email": email.to_uppercase(), "displayName": "New Person"}),
        )
        .await
        .ok();
    assert_eq!(created["email"], email.as_str(), "stored in lower case");
    let password = created["generatedPassword"].as_str().unwrap().to_string();
    let (person, _) = login(&email, &password).await;
    let profile = person.get("/account/profile").await.ok();
    assert_eq!(profile["userId"], created["userId"]);
    assert_eq!(profile["displayName"], "New Person");
    // A new account belongs to no organization until it accepts an invitation.
    let context = person.get("/organizations/current-context").await.ok();
    assert_eq!(context["organizations"], json!([]));
    assert!(context.get("currentOrganization").is_none());

    let chosen_email = format!("chosen-{}@test.berth.local", random_suffix());
    let chosen = admin
        .rest
        .post(
            "/users",
            json!({"email": chosen_email, "password": "correct horse battery"}),
        )
        .await
        .ok();
    assert!(chosen.get("generatedPassword").is_none(), "{chosen}");
    let (chosen_rest, _) = login(&chosen_email, "correct horse battery").await;

    admin
        .rest
        .post("/users", json!({"email": email}))
        .await
        .error(409, "conflict");
    member
        .rest
        .post("/users", json!({"email": format!("x-{email}")}))
        .await
        .error(403, "forbidden");
    let post = |body: Value| admin.rest.post("/users", body);
    assert_invalid(post(json!({"email": "not-an-email"})).await, "email");
    assert_invalid(
        post(json!({"email": format!("y-{email}"), "password": "elevenchars"})).await,
        "password",
    );
    assert_invalid(
        post(json!({"email": format!("z-{email}"), "role": "admin"})).await,
        "role",
    );
    Rest::anonymous()
        .post("/users", json!({"email": format!("w-{email}")}))
        .await
        .error(401, "unauthenticated");

    // The generated password was shown exactly once: in the creation response.
    let showing = transcript()
        .iter()
        .filter(|body| body.contains(&password))
        .count();
    assert_eq!(showing, 1);
    if let Ok(path) = std::env::var("BERTH_SHIM_LOG") {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        assert!(!log.contains(&password), "the shim log holds a password");
        assert!(!log.contains("correct horse battery"));
    }

    // Tidy up through the API itself.
    for (rest, body) in [(person, created), (chosen_rest, chosen)] {
        rest.delete(
            "/account",
            json!({"confirmation": {"userId": body["userId"]}}),
        )
        .await
        .ok();
    }
}
