//! Bad input is a 4xx naming the field and changes nothing, never a 5xx: control characters in
//! bodies and queries, ids in paths that cannot name anything, environment kinds outside the
//! closed set.

use berth_crds::member::OrganizationRole;
use berth_tests::client;
use berth_tests::rest::TestOrg;
use serde_json::json;

use crate::shim_projects_envs::{invalid, project};

#[tokio::test]
async fn control_characters_are_refused_naming_the_field() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let before = admin.get("/projects/count").await.ok();

    invalid(
        admin.post("/projects", json!({"name": "a\u{0}b"})).await,
        "name",
    );
    invalid(
        admin.post("/projects", json!({"name": "two\nlines"})).await,
        "name",
    );
    invalid(
        admin
            .post("/projects", json!({"name": "esc\u{1b}[31m"}))
            .await,
        "name",
    );
    invalid(
        admin
            .post(
                "/credentials/ssh",
                json!({"name": "k\u{7f}", "kind": "ssh-private-key", "privateKey": "x"}),
            )
            .await,
        "name",
    );
    invalid(
        admin
            .post(
                "/servers",
                json!({"name": "s", "host": "h\u{0}", "credentialId": "c"}),
            )
            .await,
        "host",
    );
    invalid(
        admin.get("/projects?lifecycleStatus=act%00ive").await,
        "lifecycleStatus",
    );
    assert_eq!(
        admin.get("/projects/count").await.ok(),
        before,
        "nothing was created"
    );

    let shop = project(&admin, "Shop").await;
    let kind = admin
        .post(
            "/environments",
            json!({"projectId": shop, "name": "p", "kind": "plain-config"}),
        )
        .await
        .error(422, "validation_error");
    assert_eq!(kind["details"]["field"], "kind");
    assert_eq!(
        kind["details"]["allowed"],
        json!([
            "local",
            "development",
            "test",
            "staging",
            "production",
            "preview",
            "custom"
        ])
    );
    for kind in [
        "local",
        "development",
        "test",
        "staging",
        "production",
        "custom",
    ] {
        admin
            .post(
                "/environments",
                json!({"projectId": shop, "name": kind, "kind": kind}),
            )
            .await
            .ok();
    }
}

#[tokio::test]
async fn ids_that_cannot_name_anything_are_not_found() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let paths = [
        "/projects/prj-%00",
        "/projects/%ff%fe",
        "/environments/env-%0a1",
        "/servers/srv-%01",
        "/credentials/ssh/%c3%28",
        "/resources/res-%00/effective-config",
    ];
    for path in paths {
        admin.get(path).await.error(404, "not_found");
    }
    admin
        .delete(
            "/servers/srv-%00",
            json!({"confirmation": {"serverId": "srv-\u{0}"}}),
        )
        .await
        .error(404, "not_found");
    admin
        .post("/projects/%ff/rename", json!({"name": "x"}))
        .await
        .error(404, "not_found");
}
