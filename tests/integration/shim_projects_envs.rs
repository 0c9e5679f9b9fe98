//! Projects and environments over HTTP (spec §4.4), against the running shim and the real API
//! server: happy paths, roles, other organizations, confirmations, limits and pagination.

use std::collections::BTreeSet;
use std::time::Duration;

use berth_crds::environment::{Environment, EnvironmentSpec};
use berth_crds::member::OrganizationRole;
use berth_crds::variable::{PlainVariable, VariableExposure};
use berth_tests::rest::{Reply, Rest, TestOrg, transcript};
use berth_tests::{client, eventually};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// Asserts a 422 that names `field`.
#[track_caller]
pub(crate) fn invalid(reply: Reply, field: &str) {
    let error = reply.error(422, "validation_error");
    assert_eq!(error["details"]["field"], field, "{error}");
}

/// Creates a project and returns its id.
pub(crate) async fn project(rest: &Rest, name: &str) -> String {
    let body = rest.post("/projects", json!({"name": name})).await.ok();
    body["id"].as_str().expect("a project id").to_string()
}

/// Creates an environment and returns its id.
pub(crate) async fn environment(rest: &Rest, project_id: &str, name: &str) -> String {
    let body = rest
        .post(
            "/environments",
            json!({"projectId": project_id, "name": name, "kind": "preview"}),
        )
        .await
        .ok();
    let id = body["id"].as_str().expect("an environment id").to_string();
    assert!(id.starts_with("env-"), "{id}");
    id
}

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn projects_are_created_shown_renamed_and_archived() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;

    let created = member
        .rest
        .post(
            "/projects",
            json!({"name": "Web Shop", "description": "storefront", "displayOrder": 2}),
        )
        .await
        .ok();
    let shop = created["id"].as_str().unwrap().to_string();
    assert!(shop.starts_with("prj-"), "{created}");
    let api = project(&member.rest, "API").await;
    let shown = member.rest.get(&format!("/projects/{shop}")).await.ok();
    assert_eq!(shown["id"], shop.as_str());
    assert_eq!(shown["organizationId"], org.id.as_str());
    assert_eq!(shown["name"], "Web Shop");
    assert_eq!(shown["slug"], "web-shop");
    assert_eq!(shown["description"], "storefront");
    assert_eq!(shown["lifecycleStatus"], "active");
    assert_eq!(shown["displayOrder"], 2);
    assert!(shown["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(shown.get("archivedAt").is_none());
    assert_eq!(member.rest.get("/projects/count").await.ok()["count"], 2);
    // Display order first: API (0) before Web Shop (2).
    let listed = member.rest.get("/projects").await.ok();
    assert_eq!(ids(&listed), vec![api.clone(), shop.clone()]);
    assert_eq!(
        (&listed["total"], &listed["limit"], &listed["offset"]),
        (&json!(2), &json!(50), &json!(0))
    );

    let renamed = member
        .rest
        .post(
            &format!("/projects/{shop}/rename"),
            json!({"name": "Shop", "slug": "shop"}),
        )
        .await
        .ok();
    assert_eq!(
        (&renamed["name"], &renamed["slug"]),
        (&json!("Shop"), &json!("shop"))
    );
    member
        .rest
        .post("/projects", json!({"name": "Other", "slug": "shop"}))
        .await
        .error(409, "conflict");
    invalid(
        member
            .rest
            .post(&format!("/projects/{shop}/rename"), json!({"name": ""}))
            .await,
        "name",
    );

    // Archive: admin and above, with a confirmation that repeats the id.
    let path = format!("/projects/{shop}");
    let confirm = json!({"confirmation": {"projectId": shop}, "reason": "replaced"});
    member
        .rest
        .delete(&path, confirm.clone())
        .await
        .error(403, "forbidden");
    invalid(
        admin.rest.delete(&path, json!({})).await,
        "confirmation.projectId",
    );
    admin
        .rest
        .delete(&path, json!({"confirmation": {"projectId": api}}))
        .await
        .error(409, "confirmation_mismatch");
    let archived = admin.rest.delete(&path, confirm.clone()).await.ok();
    assert_eq!(archived["id"], shop.as_str());
    // Repeating it is harmless.
    admin.rest.delete(&path, confirm).await.ok();
    let shown = eventually(WAIT, "archivedAt from the controller", || async {
        let shown = member.rest.get(&path).await.ok();
        shown["archivedAt"].is_string().then_some(shown)
    })
    .await;
    assert_eq!(shown["lifecycleStatus"], "archived");
    assert_eq!(shown["archiveReason"], "replaced");
    assert_eq!(member.rest.get("/projects/count").await.ok()["count"], 1);
    assert_eq!(
        ids(&member.rest.get("/projects").await.ok()),
        vec![api.clone()]
    );
    let archived = member
        .rest
        .get("/projects?lifecycleStatus=archived")
        .await
        .ok();
    assert_eq!(ids(&archived), vec![shop.clone()]);
    let all = member.rest.get("/projects?lifecycleStatus=all").await.ok();
    assert_eq!(all["total"], 2);
}

#[tokio::test]
async fn project_lists_paginate_to_the_end_and_enforce_limits() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    for n in 0..5 {
        project(&user.rest, &format!("p{n}")).await;
    }
    let mut seen = BTreeSet::new();
    let mut offset = 0;
    loop {
        let page = user
            .rest
            .get(&format!("/projects?limit=2&offset={offset}"))
            .await
            .ok();
        assert_eq!(page["total"], 5);
        let items = ids(&page);
        if items.is_empty() {
            break;
        }
        assert!(items.len() <= 2);
        for id in items {
            assert!(seen.insert(id), "a project appeared on two pages");
        }
        offset += 2;
    }
    assert_eq!((seen.len(), offset), (5, 6));

    let get = |path: &'static str| user.rest.get(path);
    invalid(get("/projects?limit=0").await, "limit");
    invalid(get("/projects?limit=501").await, "limit");
    invalid(get("/projects?limit=x").await, "limit");
    assert_eq!(ids(&get("/projects?limit=500").await.ok()).len(), 5);
    invalid(get("/projects?offset=-1").await, "offset");
    invalid(get("/projects?offset=9007199254740992").await, "offset");
    let last = get("/projects?offset=9007199254740991").await.ok();
    assert_eq!((ids(&last).len(), &last["total"]), (0, &json!(5)));
    invalid(
        get("/projects?lifecycleStatus=deleted").await,
        "lifecycleStatus",
    );
}

#[tokio::test]
async fn projects_refuse_strangers_and_hide_other_organizations() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Admin).await;
    let stranger = other.user(OrganizationRole::Owner).await;
    let id = project(&user.rest, "Private").await;

    let anonymous = Rest::anonymous();
    anonymous
        .get("/projects")
        .await
        .error(401, "unauthenticated");
    anonymous
        .get("/projects/count")
        .await
        .error(401, "unauthenticated");
    anonymous
        .post("/projects", json!({"name": "x"}))
        .await
        .error(401, "unauthenticated");
    anonymous
        .get(&format!("/projects/{id}"))
        .await
        .error(401, "unauthenticated");
    Rest::anonymous()
        .with_token("bst_not-a-real-token")
        .get("/projects")
        .await
        .error(401, "unauthenticated");

    // Another organization's project is indistinguishable from one that does not exist.
    let missing = stranger
        .rest
        .get("/projects/prj-doesnotexist")
        .await
        .error(404, "not_found");
    let hidden = stranger
        .rest
        .get(&format!("/projects/{id}"))
        .await
        .error(404, "not_found");
    assert_eq!(hidden["message"], format!("project {id} not found"));
    assert_eq!(missing["category"], hidden["category"]);
    stranger
        .rest
        .post(&format!("/projects/{id}/rename"), json!({"name": "mine"}))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .delete(
            &format!("/projects/{id}"),
            json!({"confirmation": {"projectId": id}}),
        )
        .await
        .error(404, "not_found");
    assert!(!ids(&stranger.rest.get("/projects").await.ok()).contains(&id));
    assert_eq!(stranger.rest.get("/projects/count").await.ok()["count"], 0);

    invalid(
        user.rest.post("/projects", json!({"name": ""})).await,
        "name",
    );
    invalid(user.rest.post("/projects", json!({})).await, "name");
    invalid(
        user.rest
            .post("/projects", json!({"name": "a", "colour": "red"}))
            .await,
        "colour",
    );
    invalid(
        user.rest
            .post("/projects", json!({"name": "a", "slug": "Not A Slug"}))
            .await,
        "slug",
    );
    // A body that is not JSON at all is a 400, not a 422.
    let response = reqwest::Client::new()
        .post(format!("{}/projects", berth_tests::rest::base_url()))
        .bearer_auth(user.rest.token.as_deref().unwrap())
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "malformed_request");
}

#[tokio::test]
async fn environments_are_created_listed_counted_and_archived() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let member = org.user(OrganizationRole::Member).await;
    let shop = project(&member.rest, "Shop").await;
    let blog = project(&member.rest, "Blog").await;

    let production = member
        .rest
        .post(
            "/environments",
            json!({"projectId": shop, "name": "production", "kind": "production"}),
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let preview = member
        .rest
        .post(
            "/environments",
            json!({"projectId": shop, "name": "pr-1", "kind": "preview",
                   "parentEnvironmentId": production}),
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let blog_env = environment(&member.rest, &blog, "staging").await;

    let shown = member
        .rest
        .get(&format!("/environments/{preview}"))
        .await
        .ok();
    assert_eq!(shown["id"], preview.as_str());
    assert_eq!(shown["projectId"], shop.as_str());
    assert_eq!(shown["name"], "pr-1");
    assert_eq!(shown["kind"], "preview");
    assert_eq!(shown["parentEnvironmentId"], production.as_str());
    assert_eq!(shown["lifecycleStatus"], "active");
    assert_eq!(shown["maskedVariables"], json!([]));
    assert!(shown["createdAt"].is_string());

    let count = |path: String| {
        let rest = member.rest.clone();
        async move { rest.get(&path).await.ok()["count"].clone() }
    };
    assert_eq!(count("/environments/count".into()).await, 3);
    assert_eq!(
        count(format!("/environments/count?projectId={shop}")).await,
        2
    );
    // Oldest first; environments made within one second tie and are ordered by id.
    let listed = member
        .rest
        .get(&format!("/environments?projectId={shop}"))
        .await
        .ok();
    let mut expected = vec![production.clone(), preview.clone()];
    let mut got = ids(&listed);
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    let all = ids(&member.rest.get("/environments").await.ok());
    assert_eq!(all.len(), 3);
    assert!(all.contains(&blog_env));
    let limited = ids(&member.rest.get("/environments?limit=1").await.ok());
    assert_eq!(limited, vec![all[0].clone()]);

    // A second active environment of the same name in one project is a conflict.
    member
        .rest
        .post(
            "/environments",
            json!({"projectId": shop, "name": "Production", "kind": "production"}),
        )
        .await
        .error(409, "conflict");

    // Archive: admin and above; the record stays readable.
    let path = format!("/environments/{preview}/archive");
    member
        .rest
        .post(&path, json!({"reason": "merged"}))
        .await
        .error(403, "forbidden");
    let archived = admin
        .rest
        .post(&path, json!({"reason": "merged"}))
        .await
        .ok();
    assert_eq!(archived["id"], preview.as_str());
    admin.rest.post(&path, json!({})).await.ok();
    let shown = eventually(WAIT, "archivedAt from the controller", || async {
        let shown = member
            .rest
            .get(&format!("/environments/{preview}"))
            .await
            .ok();
        shown["archivedAt"].is_string().then_some(shown)
    })
    .await;
    assert_eq!(shown["lifecycleStatus"], "archived");
    assert_eq!(shown["archiveReason"], "merged", "the first reason stands");
    assert_eq!(
        count(format!("/environments/count?projectId={shop}")).await,
        1
    );
    let active = member
        .rest
        .get(&format!("/environments?projectId={shop}"))
        .await
        .ok();
    assert_eq!(ids(&active), vec![production.clone()]);
    let archived = member
        .rest
        .get(&format!(
            "/environments?projectId={shop}&lifecycleStatus=archived"
        ))
        .await
        .ok();
    assert_eq!(ids(&archived), vec![preview.clone()]);
    // The name is free again once the old environment is archived.
    environment(&member.rest, &shop, "pr-1").await;

    // Archiving the project closes it to new environments.
    admin
        .rest
        .delete(
            &format!("/projects/{blog}"),
            json!({"confirmation": {"projectId": blog}}),
        )
        .await
        .ok();
    member
        .rest
        .post(
            "/environments",
            json!({"projectId": blog, "name": "later", "kind": "preview"}),
        )
        .await
        .error(409, "conflict");
}

#[tokio::test]
async fn environment_variables_are_masked_when_they_look_secret() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Member).await;
    let shop = project(&user.rest, "Shop").await;
    let variable = |key: &str, value: &str, exposure| PlainVariable {
        key: key.into(),
        value: value.into(),
        exposure,
    };
    // Made with the API server directly, as a GitOps tool would.
    let environment = Environment::new(
        "env-gitops",
        EnvironmentSpec {
            project_id: shop.clone(),
            name: "production".into(),
            kind: "production".into(),
            parent_environment_id: None,
            variables: vec![
                variable("LOG_LEVEL", "debug", VariableExposure::Runtime),
                variable("DB_PASSWORD", "hunter2-plain", VariableExposure::Runtime),
                variable(
                    "DATABASE_URL",
                    "postgres://app:s3cr3t-in-url@db/app",
                    VariableExposure::Runtime,
                ),
                variable(
                    "stripe_api_key",
                    "sk_live_plain",
                    VariableExposure::BuildTime,
                ),
            ],
            locked: true,
            lock_reason: Some("release freeze".into()),
            locked_at: None,
            archived: false,
            archive_reason: None,
        },
    );
    Api::<Environment>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &environment)
        .await
        .unwrap();
    let shown = eventually(WAIT, "environment and lockedAt visible", || async {
        let reply = user.rest.get("/environments/env-gitops").await;
        (reply.status == 200 && reply.body["lockedAt"].is_string()).then_some(reply.body)
    })
    .await;
    assert_eq!(shown["lockReason"], "release freeze");
    let variables = shown["maskedVariables"].as_array().unwrap();
    let by_key = |key: &str| variables.iter().find(|v| v["key"] == key).unwrap().clone();
    assert_eq!(
        by_key("LOG_LEVEL"),
        json!({"key": "LOG_LEVEL", "value": "debug", "scope": "environment",
               "exposure": "runtime", "isSecret": false, "kind": "plain-config"})
    );
    for key in ["DB_PASSWORD", "DATABASE_URL", "stripe_api_key"] {
        let shown = by_key(key);
        assert_eq!(
            (&shown["value"], &shown["isSecret"]),
            (&json!("****"), &json!(true))
        );
        assert_eq!(shown["kind"], "secret");
    }
    assert_eq!(by_key("stripe_api_key")["exposure"], "build-time");
    let listed = user.rest.get("/environments").await.ok();
    assert_eq!(listed["items"][0]["maskedVariables"][1]["value"], "****");
    for secret in ["hunter2-plain", "s3cr3t-in-url", "sk_live_plain"] {
        assert!(
            !transcript().iter().any(|body| body.contains(secret)),
            "{secret} appeared in a response"
        );
    }
}

#[tokio::test]
async fn environments_refuse_strangers_bad_input_and_other_organizations() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let mut other = TestOrg::new(&client).await;
    let user = org.user(OrganizationRole::Admin).await;
    let stranger = other.user(OrganizationRole::Owner).await;
    let shop = project(&user.rest, "Shop").await;
    let blog = project(&user.rest, "Blog").await;
    let production = environment(&user.rest, &shop, "production").await;
    let blog_env = environment(&user.rest, &blog, "staging").await;

    let anonymous = Rest::anonymous();
    anonymous
        .get("/environments")
        .await
        .error(401, "unauthenticated");
    anonymous
        .get("/environments/count")
        .await
        .error(401, "unauthenticated");
    anonymous
        .get(&format!("/environments/{production}"))
        .await
        .error(401, "unauthenticated");
    anonymous
        .post("/environments", json!({}))
        .await
        .error(401, "unauthenticated");
    anonymous
        .post(&format!("/environments/{production}/archive"), json!({}))
        .await
        .error(401, "unauthenticated");

    for path in [
        format!("/environments/{production}"),
        "/environments/env-doesnotexist".to_string(),
    ] {
        stranger.rest.get(&path).await.error(404, "not_found");
    }
    stranger
        .rest
        .post(&format!("/environments/{production}/archive"), json!({}))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .get(&format!("/environments?projectId={shop}"))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .get(&format!("/environments/count?projectId={shop}"))
        .await
        .error(404, "not_found");
    stranger
        .rest
        .post(
            "/environments",
            json!({"projectId": shop, "name": "intruder", "kind": "preview"}),
        )
        .await
        .error(404, "not_found");
    assert_eq!(
        ids(&stranger.rest.get("/environments").await.ok()),
        Vec::<String>::new()
    );

    let create = |body: Value| user.rest.post("/environments", body);
    invalid(
        create(json!({"name": "a", "kind": "preview"})).await,
        "projectId",
    );
    invalid(
        create(json!({"projectId": shop, "kind": "preview"})).await,
        "name",
    );
    invalid(
        create(json!({"projectId": shop, "name": "a"})).await,
        "kind",
    );
    invalid(
        create(json!({"projectId": shop, "name": "", "kind": "preview"})).await,
        "name",
    );
    invalid(
        create(json!({"projectId": shop, "name": "a", "kind": "Pre view"})).await,
        "kind",
    );
    invalid(
        create(json!({"projectId": shop, "name": "a", "kind": "preview", "extra": 1})).await,
        "extra",
    );
    invalid(
        create(json!({"projectId": shop, "name": "a", "kind": "preview",
                      "parentEnvironmentId": blog_env}))
        .await,
        "parentEnvironmentId",
    );
    create(json!({"projectId": "prj-missing", "name": "a", "kind": "preview"}))
        .await
        .error(404, "not_found");
    invalid(
        user.rest
            .post(
                &format!("/environments/{production}/archive"),
                json!({"reason": ""}),
            )
            .await,
        "reason",
    );

    let get = |path: &'static str| user.rest.get(path);
    invalid(get("/environments?limit=0").await, "limit");
    invalid(get("/environments?limit=501").await, "limit");
    get("/environments?limit=500").await.ok();
    invalid(get("/environments?projectId=").await, "projectId");
    invalid(get("/environments?project=x").await, "project");
    invalid(get("/environments/count?limit=1").await, "limit");
}
