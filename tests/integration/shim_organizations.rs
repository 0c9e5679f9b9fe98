//! Organizations over HTTP (spec §4.3): context and switch, profile, create and delete,
//! members (pagination, roles, removal, reactivation, owner transfer) and invitations.
//! Every test makes its own organizations, so they run in parallel.

use std::collections::BTreeSet;
use std::time::Duration;

use berth_crds::invitation::Invitation;
use berth_crds::member::OrganizationRole;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_tests::rest::{Rest, TestOrg, create_user};
use berth_tests::{client, eventually, random_suffix};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::shim_account::{add_member, assert_invalid, delete_user, deploy_token, login};

/// Every item of a cursor-paginated list, following `nextCursor` to the end with `limit`.
async fn all_pages(rest: &Rest, path: &str, limit: usize) -> Vec<Value> {
    let separator = if path.contains('?') { '&' } else { '?' };
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page_path = match &cursor {
            Some(cursor) => format!("{path}{separator}limit={limit}&cursor={cursor}"),
            None => format!("{path}{separator}limit={limit}"),
        };
        let page = rest.get(&page_path).await.ok();
        let page_items = page["items"].as_array().unwrap();
        assert!(page_items.len() <= limit);
        items.extend(page_items.iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(page_items.len(), limit, "only the last page is short");
                cursor = Some(next.to_string());
            }
            None => return items,
        }
    }
}

fn ids(items: &[Value], field: &str) -> BTreeSet<String> {
    items
        .iter()
        .map(|item| item[field].as_str().unwrap().to_string())
        .collect()
}

fn find_member<'a>(items: &'a [Value], member_id: &str) -> &'a Value {
    items
        .iter()
        .find(|m| m["memberId"] == member_id)
        .expect("member listed")
}

#[tokio::test]
async fn shim_org_context_lists_memberships_and_switches() {
    let client = client().await;
    let mut first = TestOrg::new(&client).await;
    let second = TestOrg::new(&client).await;
    let stranger = TestOrg::new(&client).await;
    let user = first.user(OrganizationRole::Owner).await;
    add_member(
        &client,
        &second,
        &user.rest,
        &user.user_id,
        &user.email,
        OrganizationRole::Member,
    )
    .await;

    let context = user.rest.get("/organizations/current-context").await.ok();
    assert_eq!(context["user"]["userId"], user.user_id.as_str());
    assert_eq!(context["user"]["email"], user.email.as_str());
    assert_eq!(context["user"]["displayName"], "Test owner");
    assert_eq!(context["loginMethods"][0]["key"], "local-password");
    let organizations = context["organizations"].as_array().unwrap();
    let roles: BTreeSet<(String, String)> = organizations
        .iter()
        .map(|o| {
            assert!(o["name"].is_string() && o["slug"].is_string());
            (
                o["organizationId"].as_str().unwrap().into(),
                o["role"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        BTreeSet::from([
            (first.id.clone(), "owner".into()),
            (second.id.clone(), "member".into())
        ])
    );

    let switched = user
        .rest
        .post(
            "/organizations/current-context/switch",
            json!({"organizationId": second.id}),
        )
        .await
        .ok();
    assert_eq!(
        switched["currentOrganization"]["organizationId"],
        second.id.as_str()
    );
    assert_eq!(switched["currentOrganization"]["role"], "member");
    assert_eq!(switched["permissions"]["canInviteMembers"], false);
    assert_eq!(switched["permissions"]["canListMembers"], true);
    assert_eq!(switched["permissions"]["canTransferOwnership"], false);
    // The choice is kept on the session and every other endpoint acts in it.
    let again = user.rest.get("/organizations/current-context").await.ok();
    assert_eq!(
        again["currentOrganization"]["organizationId"],
        second.id.as_str()
    );
    let project = user
        .rest
        .post("/projects", json!({"name": "Switched"}))
        .await
        .ok();
    let in_second = Api::<Project>::namespaced(client.clone(), &second.namespace)
        .get_opt(project["id"].as_str().unwrap())
        .await
        .unwrap();
    assert!(
        in_second.is_some(),
        "the project landed in the switched-to organization"
    );

    let back = user
        .rest
        .post(
            "/organizations/current-context/switch",
            json!({"organizationId": first.id}),
        )
        .await
        .ok();
    assert_eq!(back["currentOrganization"]["role"], "owner");
    assert_eq!(
        back["permissions"],
        json!({"canInviteMembers": true, "canListMembers": true, "canManageDeployTokens": true,
               "canRemoveMembers": true, "canTransferOwnership": true, "canUpdateMemberRoles": true})
    );

    let switch = |body: Value| {
        user.rest
            .post("/organizations/current-context/switch", body)
    };
    switch(json!({"organizationId": stranger.id}))
        .await
        .error(404, "not_found");
    switch(json!({"organizationId": "t-does-not-exist"}))
        .await
        .error(404, "not_found");
    assert_invalid(switch(json!({})).await, "organizationId");
    assert_invalid(
        switch(json!({"organizationId": ""})).await,
        "organizationId",
    );
    Rest::anonymous()
        .get("/organizations/current-context")
        .await
        .error(401, "unauthenticated");
    let ci = deploy_token(&client, &first).await;
    ci.get("/organizations/current-context")
        .await
        .error(403, "forbidden");
    ci.post(
        "/organizations/current-context/switch",
        json!({"organizationId": first.id}),
    )
    .await
    .error(403, "forbidden");
}

#[tokio::test]
async fn shim_org_create_update_and_delete() {
    let client = client().await;
    let mut home = TestOrg::new(&client).await;
    let creator = home.user(OrganizationRole::Member).await;
    let outsider = home.user(OrganizationRole::Owner).await;
    let slug = format!("t-new-{}", random_suffix());

    let created = creator
        .rest
        .post("/organizations", json!({"name": "New Org", "slug": slug}))
        .await
        .ok();
    assert_eq!(created["id"], slug.as_str());
    let profile_path = format!("/organizations/{slug}/profile");
    let profile = creator.rest.get(&profile_path).await.ok();
    assert_eq!(profile["organizationId"], slug.as_str());
    assert_eq!(profile["name"], "New Org");
    assert_eq!(profile["slug"], slug.as_str());
    assert_eq!(profile["role"], "owner");
    assert_eq!(profile["permissions"]["canTransferOwnership"], true);
    assert!(profile["createdAt"].is_string() && profile["updatedAt"].is_string());
    let context = creator
        .rest
        .get("/organizations/current-context")
        .await
        .ok();
    assert!(
        context["organizations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["organizationId"] == slug.as_str() && o["role"] == "owner")
    );

    let post = |body: Value| creator.rest.post("/organizations", body);
    post(json!({"name": "Again", "slug": slug}))
        .await
        .error(409, "conflict");
    assert_invalid(
        post(json!({"name": "Bad", "slug": "Bad_Slug"})).await,
        "slug",
    );
    assert_invalid(
        post(json!({"name": "Long", "slug": "a".repeat(59)})).await,
        "slug",
    );
    assert_invalid(
        post(json!({"name": "Reserved", "slug": "current-context"})).await,
        "slug",
    );
    assert_invalid(post(json!({"name": " "})).await, "name");
    assert_invalid(post(json!({"name": "x".repeat(121)})).await, "name");
    assert_invalid(post(json!({"slug": "t-no-name"})).await, "name");

    // Outsiders see nothing; confirmations must repeat the id.
    outsider
        .rest
        .get(&profile_path)
        .await
        .error(404, "not_found");
    let delete_path = format!("/organizations/{slug}");
    let confirmed = json!({"confirmation": {"organizationId": slug}});
    outsider
        .rest
        .delete(&delete_path, confirmed.clone())
        .await
        .error(404, "not_found");
    creator
        .rest
        .delete(
            &delete_path,
            json!({"confirmation": {"organizationId": home.id}}),
        )
        .await
        .error(409, "confirmation_mismatch");
    assert_invalid(
        creator.rest.delete(&delete_path, json!({})).await,
        "confirmation.organizationId",
    );

    let deleted = creator.rest.delete(&delete_path, confirmed).await.ok();
    assert_eq!(deleted["organizationId"], slug.as_str());
    assert!(deleted["deletedAt"].is_string());
    creator
        .rest
        .get(&profile_path)
        .await
        .error(404, "not_found");
    let context = creator
        .rest
        .get("/organizations/current-context")
        .await
        .ok();
    assert!(
        !context["organizations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["organizationId"] == slug.as_str())
    );
    let organizations = Api::<Organization>::all(client.clone());
    eventually(
        Duration::from_secs(30),
        "organization removed by its finalizer",
        || async {
            organizations
                .get_opt(&slug)
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn shim_org_profile_follows_roles_and_hides_other_organizations() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let path = format!("/organizations/{}/profile", org.id);

    let seen = member.rest.get(&path).await.ok();
    assert_eq!(seen["role"], "member");
    assert_eq!(seen["slug"], org.id.as_str());
    assert_eq!(seen["permissions"]["canInviteMembers"], false);
    member
        .rest
        .post(&path, json!({"name": "Mine"}))
        .await
        .error(403, "forbidden");

    let updated = admin
        .rest
        .post(
            &path,
            json!({"name": "Renamed", "logoUrl": "https://example.com/logo.svg"}),
        )
        .await
        .ok();
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["logoUrl"], "https://example.com/logo.svg");
    assert_eq!(updated["role"], "admin");
    assert_eq!(member.rest.get(&path).await.ok()["name"], "Renamed");
    let cleared = admin.rest.post(&path, json!({"logoUrl": ""})).await.ok();
    assert!(cleared.get("logoUrl").is_none(), "{cleared}");
    assert_invalid(admin.rest.post(&path, json!({"name": ""})).await, "name");
    assert_invalid(
        admin
            .rest
            .post(&path, json!({"name": "n".repeat(121)}))
            .await,
        "name",
    );
    assert_invalid(
        admin.rest.post(&path, json!({"logoUrl": "logo.png"})).await,
        "logoUrl",
    );
    assert_invalid(
        admin.rest.post(&path, json!({"slug": "other"})).await,
        "slug",
    );

    outsider.rest.get(&path).await.error(404, "not_found");
    outsider
        .rest
        .post(&path, json!({"name": "Taken"}))
        .await
        .error(404, "not_found");
    admin
        .rest
        .get("/organizations/t-missing/profile")
        .await
        .error(404, "not_found");
    admin
        .rest
        .delete(
            &format!("/organizations/{}", org.id),
            json!({"confirmation": {"organizationId": org.id}}),
        )
        .await
        .error(403, "forbidden");
    member.rest.get(&path).await.ok();
    Rest::anonymous()
        .get(&path)
        .await
        .error(401, "unauthenticated");
}

#[tokio::test]
async fn shim_members_paginate_to_the_end() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let mut expected = BTreeSet::from([owner.member_id.clone()]);
    for _ in 0..4 {
        expected.insert(org.user(OrganizationRole::Member).await.member_id);
    }
    let outsider = other.user(OrganizationRole::Owner).await;
    let path = format!("/organizations/{}/members", org.id);

    let items = all_pages(&owner.rest, &path, 2).await;
    assert_eq!(items.len(), 5);
    assert_eq!(ids(&items, "memberId"), expected);
    let me = find_member(&items, &owner.member_id);
    assert_eq!(me["userId"], owner.user_id.as_str());
    assert_eq!(me["email"], owner.email.as_str());
    assert_eq!(me["role"], "owner");
    assert_eq!(me["status"], "active");
    assert_eq!(me["displayName"], "Test owner");
    assert!(me["joinedAt"].is_string());
    let everything = owner.rest.get(&format!("{path}?limit=250")).await.ok();
    assert_eq!(everything["items"].as_array().unwrap().len(), 5);
    assert!(everything.get("nextCursor").is_none());

    assert_invalid(owner.rest.get(&format!("{path}?limit=0")).await, "limit");
    assert_invalid(owner.rest.get(&format!("{path}?limit=251")).await, "limit");
    assert_invalid(owner.rest.get(&format!("{path}?limit=two")).await, "limit");
    assert_invalid(
        owner.rest.get(&format!("{path}?cursor=zzz")).await,
        "cursor",
    );
    assert_invalid(owner.rest.get(&format!("{path}?cursor=")).await, "cursor");
    outsider.rest.get(&path).await.error(404, "not_found");
    Rest::anonymous()
        .get(&path)
        .await
        .error(401, "unauthenticated");
    deploy_token(&client, &org)
        .await
        .get(&path)
        .await
        .error(403, "forbidden");
}

#[tokio::test]
async fn shim_member_roles_follow_the_owner_rules() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let helper = org.user(OrganizationRole::Member).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let role_path = |id: &str| format!("/organizations/{}/members/{id}/role", org.id);

    let promoted = admin
        .rest
        .post(&role_path(&member.member_id), json!({"role": "admin"}))
        .await
        .ok();
    assert_eq!(promoted["role"], "admin");
    assert_eq!(promoted["memberId"], member.member_id.as_str());
    // Only owners hand out or take away the owner role.
    admin
        .rest
        .post(&role_path(&member.member_id), json!({"role": "owner"}))
        .await
        .error(403, "forbidden");
    admin
        .rest
        .post(&role_path(&owner.member_id), json!({"role": "member"}))
        .await
        .error(403, "forbidden");
    helper
        .rest
        .post(&role_path(&member.member_id), json!({"role": "member"}))
        .await
        .error(403, "forbidden");
    // The last owner cannot step down.
    owner
        .rest
        .post(&role_path(&owner.member_id), json!({"role": "admin"}))
        .await
        .error(409, "conflict");
    owner
        .rest
        .post(&role_path(&member.member_id), json!({"role": "owner"}))
        .await
        .ok();
    let stepped_down = owner
        .rest
        .post(&role_path(&owner.member_id), json!({"role": "admin"}))
        .await
        .ok();
    assert_eq!(stepped_down["role"], "admin");
    let permissions = owner
        .rest
        .get(&format!("/organizations/{}/profile", org.id))
        .await
        .ok()["permissions"]
        .clone();
    assert_eq!(permissions["canTransferOwnership"], false);

    assert_invalid(
        member
            .rest
            .post(&role_path(&helper.member_id), json!({"role": "boss"}))
            .await,
        "role",
    );
    assert_invalid(
        member
            .rest
            .post(&role_path(&helper.member_id), json!({}))
            .await,
        "role",
    );
    member
        .rest
        .post(&role_path("mem-missing"), json!({"role": "admin"}))
        .await
        .error(404, "not_found");
    // Another organization's member, through either organization's path: 404.
    member
        .rest
        .post(&role_path(&outsider.member_id), json!({"role": "admin"}))
        .await
        .error(404, "not_found");
    outsider
        .rest
        .post(&role_path(&helper.member_id), json!({"role": "admin"}))
        .await
        .error(404, "not_found");
    outsider
        .rest
        .post(
            &format!(
                "/organizations/{}/members/{}/role",
                other.id, helper.member_id
            ),
            json!({"role": "admin"}),
        )
        .await
        .error(404, "not_found");
}

#[tokio::test]
async fn shim_members_are_removed_and_reactivated() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let peer = org.user(OrganizationRole::Member).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let path = |id: &str| format!("/organizations/{}/members/{id}", org.id);
    let members_path = format!("/organizations/{}/members", org.id);

    peer.rest
        .delete(&path(&member.member_id), json!({}))
        .await
        .error(403, "forbidden");
    let removed = admin
        .rest
        .delete(&path(&member.member_id), json!({}))
        .await
        .ok();
    assert_eq!(removed["memberId"], member.member_id.as_str());
    assert_eq!(removed["organizationId"], org.id.as_str());
    let removed_at = removed["removedAt"].as_str().unwrap().to_string();
    // The removed member loses access at once; the organization still lists them.
    member.rest.get(&members_path).await.error(404, "not_found");
    let context = member.rest.get("/organizations/current-context").await.ok();
    assert_eq!(context["organizations"], json!([]));
    let items = admin.rest.get(&members_path).await.ok()["items"].clone();
    assert_eq!(
        find_member(items.as_array().unwrap(), &member.member_id)["status"],
        "deactivated"
    );
    let again = admin
        .rest
        .delete(&path(&member.member_id), json!({}))
        .await
        .ok();
    assert_eq!(again["removedAt"], removed_at.as_str());

    admin
        .rest
        .delete(&path(&owner.member_id), json!({}))
        .await
        .error(403, "forbidden");
    owner
        .rest
        .delete(&path(&owner.member_id), json!({}))
        .await
        .error(409, "conflict");
    outsider
        .rest
        .delete(&path(&peer.member_id), json!({}))
        .await
        .error(404, "not_found");
    admin
        .rest
        .delete(&path(&outsider.member_id), json!({}))
        .await
        .error(404, "not_found");
    assert_invalid(
        admin
            .rest
            .delete(&path(&peer.member_id), json!({"reason": "x"}))
            .await,
        "reason",
    );

    let reactivate = format!("{}/reactivate", path(&member.member_id));
    peer.rest
        .post(&reactivate, json!({}))
        .await
        .error(403, "forbidden");
    outsider
        .rest
        .post(&reactivate, json!({}))
        .await
        .error(404, "not_found");
    let back = admin.rest.post(&reactivate, json!({})).await.ok();
    assert_eq!(back["status"], "active");
    assert_eq!(back["role"], "member");
    member.rest.get(&members_path).await.ok();
    // Reactivating an active member changes nothing.
    assert_eq!(
        admin.rest.post(&reactivate, json!({})).await.ok()["status"],
        "active"
    );
}

#[tokio::test]
async fn shim_owner_transfer_hands_over_the_callers_ownership() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let gone = org.user(OrganizationRole::Member).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let path = format!("/organizations/{}/owner-transfer", org.id);
    let transfer = |from: &str, to: &str| json!({"fromMemberId": from, "toMemberId": to});

    admin
        .rest
        .post(&path, transfer(&admin.member_id, &member.member_id))
        .await
        .error(403, "forbidden");
    owner
        .rest
        .post(&path, transfer(&admin.member_id, &member.member_id))
        .await
        .error(403, "forbidden");
    assert_invalid(
        owner
            .rest
            .post(&path, transfer(&owner.member_id, &owner.member_id))
            .await,
        "toMemberId",
    );
    owner
        .rest
        .post(&path, transfer(&owner.member_id, "mem-missing"))
        .await
        .error(404, "not_found");
    owner
        .rest
        .post(&path, transfer(&owner.member_id, &outsider.member_id))
        .await
        .error(404, "not_found");
    outsider
        .rest
        .post(&path, transfer(&outsider.member_id, &member.member_id))
        .await
        .error(404, "not_found");
    assert_invalid(
        owner
            .rest
            .post(&path, json!({"fromMemberId": owner.member_id}))
            .await,
        "toMemberId",
    );
    owner
        .rest
        .delete(
            &format!("/organizations/{}/members/{}", org.id, gone.member_id),
            json!({}),
        )
        .await
        .ok();
    owner
        .rest
        .post(&path, transfer(&owner.member_id, &gone.member_id))
        .await
        .error(409, "conflict");

    let done = owner
        .rest
        .post(&path, transfer(&owner.member_id, &member.member_id))
        .await
        .ok();
    assert_eq!(done["fromMember"]["memberId"], owner.member_id.as_str());
    assert_eq!(done["fromMember"]["role"], "admin");
    assert_eq!(done["toMember"]["memberId"], member.member_id.as_str());
    assert_eq!(done["toMember"]["role"], "owner");
    assert!(done["transferredAt"].is_string());
    // The former owner is an admin now and cannot transfer again.
    owner
        .rest
        .post(&path, transfer(&owner.member_id, &admin.member_id))
        .await
        .error(403, "forbidden");
    let items = owner
        .rest
        .get(&format!("/organizations/{}/members", org.id))
        .await
        .ok()["items"]
        .clone();
    let owners: Vec<&Value> = items
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "owner" && m["status"] == "active")
        .collect();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0]["memberId"], member.member_id.as_str());
}

#[tokio::test]
async fn shim_invitations_are_created_accepted_and_revoked() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let outsider = other.user(OrganizationRole::Owner).await;
    let (invitee_id, invitee_email, invitee_password) = create_user(&client, "invitee").await;
    let (second_id, second_email, second_password) = create_user(&client, "second").await;
    let (invitee, _) = login(&invitee_email, &invitee_password).await;
    let (second, _) = login(&second_email, &second_password).await;
    let path = format!("/organizations/{}/invitations", org.id);

    let invitation = admin
        .rest
        .post(
            &path,
            json!({"email": invitee_email.to_uppercase(), "role": "member"}),
        )
        .await
        .ok();
    let id = invitation["invitationId"].as_str().unwrap().to_string();
    assert_eq!(invitation["organizationId"], org.id.as_str());
    assert_eq!(invitation["email"], invitee_email.as_str());
    assert_eq!(invitation["role"], "member");
    assert_eq!(invitation["status"], "pending");
    assert_eq!(invitation["inviter"]["userId"], admin.user_id.as_str());
    assert_eq!(invitation["inviter"]["email"], admin.email.as_str());
    assert!(invitation["expiresAt"].as_str() > invitation["createdAt"].as_str());

    let post = |rest: &Rest, body: Value| {
        let rest = rest.clone();
        let path = path.clone();
        async move { rest.post(&path, body).await }
    };
    post(
        &admin.rest,
        json!({"email": invitee_email, "role": "admin"}),
    )
    .await
    .error(409, "conflict");
    post(
        &admin.rest,
        json!({"email": member.email, "role": "member"}),
    )
    .await
    .error(409, "conflict");
    post(
        &member.rest,
        json!({"email": second_email, "role": "member"}),
    )
    .await
    .error(403, "forbidden");
    post(&admin.rest, json!({"email": second_email, "role": "owner"}))
        .await
        .error(403, "forbidden");
    assert_invalid(
        post(&admin.rest, json!({"email": "nobody", "role": "member"})).await,
        "email",
    );
    assert_invalid(
        post(&admin.rest, json!({"email": second_email, "role": "king"})).await,
        "role",
    );
    assert_invalid(
        post(&admin.rest, json!({"email": second_email})).await,
        "role",
    );
    outsider
        .rest
        .post(&path, json!({"email": second_email, "role": "member"}))
        .await
        .error(404, "not_found");
    let owner_invite = post(&owner.rest, json!({"email": second_email, "role": "owner"}))
        .await
        .ok();
    let owner_invite_id = owner_invite["invitationId"].as_str().unwrap().to_string();

    let pending = member
        .rest
        .get(&format!("{path}?status=pending"))
        .await
        .ok();
    assert_eq!(
        ids(pending["items"].as_array().unwrap(), "invitationId"),
        BTreeSet::from([id.clone(), owner_invite_id.clone()])
    );
    assert_invalid(
        member.rest.get(&format!("{path}?status=open")).await,
        "status",
    );
    assert_invalid(member.rest.get(&format!("{path}?limit=251")).await, "limit");
    assert_invalid(member.rest.get(&format!("{path}?limit=0")).await, "limit");
    outsider.rest.get(&path).await.error(404, "not_found");

    // Only the person invited can accept; to anyone else the invitation does not exist.
    let accept = format!("/invitations/{id}/accept");
    member
        .rest
        .post(&accept, json!({}))
        .await
        .error(404, "not_found");
    second
        .post(&accept, json!({}))
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .post(&accept, json!({}))
        .await
        .error(401, "unauthenticated");
    let accepted = invitee.post(&accept, json!({})).await.ok();
    assert_eq!(accepted["invitation"]["status"], "accepted");
    assert_eq!(accepted["member"]["userId"], invitee_id.as_str());
    assert_eq!(accepted["member"]["role"], "member");
    assert_eq!(accepted["member"]["status"], "active");
    let context = invitee.get("/organizations/current-context").await.ok();
    assert_eq!(
        context["currentOrganization"]["organizationId"],
        org.id.as_str()
    );
    invitee
        .get(&format!("/organizations/{}/members", org.id))
        .await
        .ok();
    invitee
        .post(&accept, json!({}))
        .await
        .error(409, "conflict");
    let accepted_list = admin
        .rest
        .get(&format!("{path}?status=accepted"))
        .await
        .ok();
    assert_eq!(
        ids(accepted_list["items"].as_array().unwrap(), "invitationId"),
        BTreeSet::from([id.clone()])
    );
    admin
        .rest
        .post(&format!("{path}/{id}/revoke"), json!({}))
        .await
        .error(409, "conflict");

    // A revoked invitation cannot be accepted.
    let revoke = format!("{path}/{owner_invite_id}/revoke");
    member
        .rest
        .post(&revoke, json!({}))
        .await
        .error(403, "forbidden");
    outsider
        .rest
        .post(&revoke, json!({}))
        .await
        .error(404, "not_found");
    outsider
        .rest
        .post(
            &format!(
                "/organizations/{}/invitations/{owner_invite_id}/revoke",
                other.id
            ),
            json!({}),
        )
        .await
        .error(404, "not_found");
    let revoked = admin.rest.post(&revoke, json!({})).await.ok();
    assert_eq!(revoked["status"], "revoked");
    assert_eq!(
        admin.rest.post(&revoke, json!({})).await.ok()["status"],
        "revoked"
    );
    let refused = second
        .post(&format!("/invitations/{owner_invite_id}/accept"), json!({}))
        .await
        .error(409, "conflict");
    assert_eq!(refused["details"]["status"], "revoked");
    let context = second.get("/organizations/current-context").await.ok();
    assert_eq!(context["organizations"], json!([]));

    delete_user(&client, &invitee_id).await;
    delete_user(&client, &second_id).await;
}

#[tokio::test]
async fn shim_invitations_expire_and_paginate() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let (invitee_id, invitee_email, invitee_password) = create_user(&client, "late").await;
    let (invitee, _) = login(&invitee_email, &invitee_password).await;
    let path = format!("/organizations/{}/invitations", org.id);

    let mut expected = BTreeSet::new();
    for i in 0..4 {
        let email = format!("p{i}-{}@test.berth.local", random_suffix());
        let created = admin
            .rest
            .post(&path, json!({"email": email, "role": "member"}))
            .await
            .ok();
        expected.insert(created["invitationId"].as_str().unwrap().to_string());
    }
    let late = admin
        .rest
        .post(&path, json!({"email": invitee_email, "role": "admin"}))
        .await
        .ok();
    let late_id = late["invitationId"].as_str().unwrap().to_string();
    expected.insert(late_id.clone());

    let items = all_pages(&admin.rest, &path, 2).await;
    assert_eq!(ids(&items, "invitationId"), expected);
    let pending = all_pages(&admin.rest, &format!("{path}?status=pending"), 3).await;
    assert_eq!(pending.len(), 5);

    // Expiry is computed from expiresAt: move it into the past, as an operator could.
    Api::<Invitation>::namespaced(client.clone(), &org.namespace)
        .patch(
            &late_id,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"expiresAt": "2020-01-01T00:00:00Z"}})),
        )
        .await
        .unwrap();
    let expired = eventually(Duration::from_secs(10), "invitation expired", || async {
        let page = admin.rest.get(&format!("{path}?status=expired")).await.ok();
        let items = page["items"].as_array()?.clone();
        (!items.is_empty()).then_some(items)
    })
    .await;
    assert_eq!(
        ids(&expired, "invitationId"),
        BTreeSet::from([late_id.clone()])
    );
    let refused = invitee
        .post(&format!("/invitations/{late_id}/accept"), json!({}))
        .await
        .error(409, "conflict");
    assert_eq!(refused["details"]["status"], "expired");
    assert!(refused["message"].as_str().unwrap().contains("expired"));
    // An expired invitation no longer blocks a new one for the same email.
    admin
        .rest
        .post(&path, json!({"email": invitee_email, "role": "member"}))
        .await
        .ok();

    delete_user(&client, &invitee_id).await;
}
