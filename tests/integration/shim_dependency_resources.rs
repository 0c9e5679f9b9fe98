//! Dependency resources and bindings over HTTP (Appaloft's `/dependency-resources` and
//! `/resources/{id}/dependency-bindings` routes) against the running shim, controller and the
//! stack's sshd as a server: bad input refused by field with nothing created; a PostgreSQL
//! provisioned through REST becomes `ready`, is listed, counted, shown and renamed, and its
//! password shows in no response body; a resource binds it (not across environments, not twice
//! under one name); a bound dependency cannot be deleted; unbound, its deletion removes the
//! container and keeps the data volume, and a deletion with the name typed removes the volume.

use std::process::Command;
use std::time::Duration;

use berth_crds::dependency_resource::DependencyResource;
use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Reply, Rest, TestOrg, TestUser};
use berth_tests::{client, eventually, stack_env};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::{Value, json};

use crate::cli::Berth;
use crate::dependency_exposure::exposed_over_rest;
use crate::dependency_resources::TLS_PARAMETERS;
use crate::dependency_resources::registry_image;
use crate::dependency_upgrades::upgraded_over_rest;
use crate::deploy_support::assert_never_shown;
use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_servers::{create_credential, create_server, stack_key};

/// Starting PostgreSQL on two busy cores takes a while.
const WAIT: Duration = Duration::from_secs(180);

fn exists(object: &str, name: &str) -> bool {
    Command::new("docker")
        .args([object, "inspect", name])
        .output()
        .expect("docker CLI (tests only)")
        .status
        .success()
}

/// An organization with a project `Shop` (environment `prod`), a project `Blog` (environment
/// `prod`) and the stack's sshd registered as a server without an edge proxy.
pub(crate) struct Setup {
    pub(crate) org: TestOrg,
    user: TestUser,
    pub(crate) admin: Rest,
    pub(crate) member: Rest,
    pub(crate) shop: String,
    pub(crate) prod: String,
    blog: String,
    blog_prod: String,
    pub(crate) server: String,
}

pub(crate) async fn setup() -> Setup {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let user = org.user(OrganizationRole::Member).await;
    let member = user.rest.clone();
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let blog = project(&member, "Blog").await;
    let blog_prod = environment(&member, &blog, "prod").await;
    let credential = create_credential(&admin, &stack_key()).await;
    let port: u16 = stack_env("BERTH_SSH_PORT").parse().unwrap();
    let server = create_server(&admin, &credential, port).await;
    Setup {
        org,
        user,
        admin,
        member,
        shop,
        prod,
        blog,
        blog_prod,
        server,
    }
}

impl Setup {
    /// A provision body for `kind` in Shop/prod with `patch` applied (`null` removes a field).
    fn body(&self, kind: &str, name: &str, patch: Value) -> Value {
        let image = match kind {
            "redis" => "berth/redis:7",
            _ => "berth/postgres:15",
        };
        let mut body = json!({
            "kind": kind, "projectId": self.shop, "environmentId": self.prod,
            "serverId": self.server, "name": name, "image": registry_image(image),
        });
        let fields = body.as_object_mut().unwrap();
        for (key, value) in patch.as_object().unwrap() {
            match value {
                Value::Null => fields.remove(key),
                value => fields.insert(key.clone(), value.clone()),
            };
        }
        body
    }

    pub(crate) async fn provision(&self, kind: &str, name: &str) -> String {
        let created = self
            .member
            .post(
                "/dependency-resources/provision",
                self.body(kind, name, json!({})),
            )
            .await
            .expect(201);
        let id = created["id"].as_str().expect("an id").to_string();
        assert!(id.starts_with("dep-"), "{created}");
        id
    }

    async fn count(&self, query: &str) -> u64 {
        let path = format!("/dependency-resources/count{query}");
        self.member.get(&path).await.ok()["count"].as_u64().unwrap()
    }

    /// The `dependencyResource` of `GET /dependency-resources/{id}`.
    pub(crate) async fn shown(&self, id: &str) -> Value {
        let answer = self
            .member
            .get(&format!("/dependency-resources/{id}"))
            .await
            .ok();
        assert_eq!(answer["schemaVersion"], "dependency-resources.show/v1");
        answer["dependencyResource"].clone()
    }

    pub(crate) async fn wait_ready(&self, id: &str) -> Value {
        eventually(WAIT, &format!("{id} ready"), || async {
            let shown = self.shown(id).await;
            (shown["lifecycleStatus"] == "ready").then_some(shown)
        })
        .await
    }

    /// A resource of `project`/`environment` (never deployed); returns its id.
    async fn resource(&self, project: &str, environment: &str, name: &str) -> String {
        let body = json!({
            "projectId": project, "environmentId": environment, "name": name,
            "kind": "application",
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "networkProfile": {"internalPort": 8080},
        });
        self.member.post("/resources", body).await.ok()["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn bind(&self, resource: &str, body: Value) -> Reply {
        let path = format!("/resources/{resource}/dependency-bindings");
        self.member.post(&path, body).await
    }

    async fn delete(&self, id: &str, body: Value) -> Reply {
        let path = format!("/dependency-resources/{id}");
        self.member.delete(&path, body).await
    }

    /// The container `berth-dep-<namespace>-<id>`.
    pub(crate) fn container(&self, id: &str) -> String {
        format!("berth-dep-{}-{id}", self.org.namespace)
    }

    pub(crate) async fn password(&self, id: &str) -> String {
        let secrets = Api::<Secret>::namespaced(client().await, &self.org.namespace);
        let secret = secrets
            .get(&format!("{id}-connection"))
            .await
            .expect("the connection Secret");
        let password = secret.data.expect("data")["password"].0.clone();
        let password = String::from_utf8(password).unwrap();
        assert!(password.len() >= 16, "a generated password");
        password
    }
}

#[tokio::test]
async fn shim_dependency_resources_refuse_bad_input_by_field_and_create_nothing() {
    let s = setup().await;
    let provision = |body: Value| {
        let rest = s.member.clone();
        async move { rest.post("/dependency-resources/provision", body).await }
    };
    for (patch, field) in [
        (json!({"kind": "mysql"}), "kind"),
        (json!({"kind": null}), "kind"),
        (json!({"name": ""}), "name"),
        (json!({"name": "   "}), "name"),
        (json!({"name": null}), "name"),
        (json!({"image": "postgres 16"}), "image"),
        (json!({"environmentId": s.blog_prod}), "environmentId"),
        (
            json!({"exposure": {"hostPort": 5432}}),
            "exposure.allowFrom",
        ),
        (
            json!({"exposure": {"hostPort": 15432, "allowFrom": []}}),
            "exposure.allowFrom",
        ),
        (
            json!({"exposure": {"hostPort": 0, "allowFrom": ["198.18.0.1/32"]}}),
            "exposure.hostPort",
        ),
        (
            json!({"exposure": {"hostPort": 15432, "allowFrom": ["198.18.0.1/32", "198.18.0.300/32"]}}),
            "exposure.allowFrom[1]",
        ),
    ] {
        let reply = provision(s.body("postgres", "Main", patch.clone())).await;
        assert_eq!(reply.status, 422, "{patch}: {}", reply.body);
        invalid(reply, field);
    }
    for (patch, field) in [
        (json!({"serverId": "srv-missing"}), "serverId"),
        (json!({"projectId": "prj-missing"}), "projectId"),
        (json!({"environmentId": "env-missing"}), "environmentId"),
    ] {
        let error = provision(s.body("postgres", "Main", patch))
            .await
            .error(404, "not_found");
        assert_eq!(error["details"]["field"], field, "{error}");
    }
    let error = s
        .member
        .get("/dependency-resources?kind=mysql")
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "kind");
    assert_eq!(s.count("").await, 0, "nothing was created");
    let listed = s.member.get("/dependency-resources").await.ok();
    assert_eq!(listed["schemaVersion"], "dependency-resources.list/v1");
    assert_eq!(listed["items"], json!([]));
    s.member
        .get("/dependency-resources/dep-missing")
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .get("/dependency-resources")
        .await
        .error(401, "unauthenticated");
    // The blog project has no dependency either way.
    assert_eq!(s.count(&format!("?projectId={}", s.blog)).await, 0);
}

/// Binding refusals of `web` (bound to `db` as DATABASE_URL already): the field each names.
async fn bind_refusals(s: &Setup, web: &str, db: &str, elsewhere: &str) {
    let error = s
        .bind(
            elsewhere,
            json!({"dependencyResourceId": db, "targetName": "DATABASE_URL"}),
        )
        .await
        .error(409, "resource_dependency_binding_context_mismatch");
    assert_eq!(error["details"]["field"], "dependencyResourceId");
    let error = s
        .bind(
            web,
            json!({"dependencyResourceId": db, "targetName": "DATABASE_URL"}),
        )
        .await
        .error(409, "conflict");
    assert_eq!(error["details"]["field"], "targetName");
    for (body, field) in [
        (
            json!({"dependencyResourceId": db, "targetName": "1DB"}),
            "targetName",
        ),
        (
            json!({"dependencyResourceId": db, "targetName": "DB-URL"}),
            "targetName",
        ),
        (
            json!({"dependencyResourceId": db, "targetName": "DB", "scope": "build-only"}),
            "scope",
        ),
        (
            json!({"dependencyResourceId": db, "targetName": "DB", "injectionMode": "file"}),
            "injectionMode",
        ),
    ] {
        invalid(s.bind(web, body).await, field);
    }
    let error = s
        .bind(
            web,
            json!({"dependencyResourceId": "dep-missing", "targetName": "DB"}),
        )
        .await
        .error(404, "not_found");
    assert_eq!(error["details"]["field"], "dependencyResourceId");
}

/// Checks the bindings of `web`: exactly `DATABASE_URL` to `db`, masked.
async fn assert_bound(s: &Setup, web: &str, db: &str) {
    let path = format!("/resources/{web}/dependency-bindings");
    // The binding is ready once its database is; a health check slowed by a loaded machine
    // may read it degraded for a moment.
    let listed = eventually(WAIT, "the binding ready", || async {
        let listed = s.member.get(&path).await.ok();
        (listed["items"][0]["lifecycleStatus"] == "ready").then_some(listed)
    })
    .await;
    assert_eq!(
        listed["schemaVersion"],
        "resources.dependency-bindings.list/v1"
    );
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed}");
    let binding = &items[0];
    assert_eq!(binding["id"], "DATABASE_URL");
    assert_eq!(binding["dependencyResourceId"], db);
    assert_eq!(binding["target"]["scope"], "runtime-only");
    assert_eq!(binding["target"]["injectionMode"], "env");
    assert_eq!(binding["lifecycleStatus"], "ready");
    assert_eq!(binding["snapshotReadiness"]["status"], "ready");
    let masked = binding["connection"]["maskedConnection"].as_str().unwrap();
    assert!(masked.contains(":****@"), "{masked}");
    let shown = s.member.get(&format!("{path}/DATABASE_URL")).await.ok();
    assert_eq!(
        shown["schemaVersion"],
        "resources.dependency-bindings.show/v1"
    );
    assert_eq!(shown["binding"]["id"], "DATABASE_URL");
}

#[tokio::test]
async fn shim_dependency_resource_is_provisioned_bound_and_deleted_over_rest() {
    let s = setup().await;
    let db = s.provision("postgres", "Orders DB").await;
    let cache = s.provision("redis", "Cache").await;
    // The same name's slug in the same environment is taken.
    let taken = s
        .member
        .post(
            "/dependency-resources/provision",
            s.body("redis", "orders db", json!({})),
        )
        .await
        .error(409, "dependency_resource_slug_conflict");
    assert_eq!(taken["details"]["field"], "name");

    let shown = s.wait_ready(&db).await;
    assert_eq!(
        (&shown["kind"], &shown["sourceMode"], &shown["slug"]),
        (
            &json!("postgres"),
            &json!("appaloft-managed"),
            &json!("orders-db")
        )
    );
    assert_eq!(shown["bindingReadiness"]["status"], "ready");
    assert_eq!(shown["deleteSafety"]["blockers"], json!([]));
    let connection = &shown["connection"];
    assert_eq!(connection["secretRef"], format!("{db}-connection"));
    assert_eq!(
        connection["maskedConnection"],
        format!(
            "postgres://berth:****@{}:5432/app{TLS_PARAMETERS}",
            s.container(&db)
        )
    );
    let password = s.password(&db).await;
    s.wait_ready(&cache).await;
    served_its_authority(&s, &db, &cache).await;
    exposed_over_rest(&s, &db, &cache).await;

    assert_listed_and_counted(&s, &db, &cache).await;
    rename_and_hide_from_strangers(&s, &db).await;

    let web = s.resource(&s.shop, &s.prod, "Web").await;
    let elsewhere = s.resource(&s.blog, &s.blog_prod, "Blog").await;
    let bound = s
        .bind(
            &web,
            json!({"dependencyResourceId": db, "targetName": "DATABASE_URL"}),
        )
        .await
        .ok();
    assert_eq!(bound, json!({"id": "DATABASE_URL"}));
    bind_refusals(&s, &web, &db, &elsewhere).await;
    assert_bound(&s, &web, &db).await;
    // Another setting written afterwards (a full apply of the spec) keeps the binding.
    let profile = json!({"networkProfile": {"internalPort": 8081}});
    let path = format!("/resources/{web}/network-profile");
    s.member.post(&path, profile).await.ok();
    assert_bound(&s, &web, &db).await;
    cli_lists_binds_and_refuses(&s, &web, &db, &password).await;
    rotated_over_rest(&s, &db, &cache).await;
    rotated_through_the_binding(&s, &web, &db, &cache).await;
    upgraded_over_rest(&s, &db, &cache).await;
    let rotated_password = s.password(&db).await;
    assert_ne!(
        rotated_password, password,
        "a new password after the rotation"
    );
    delete_while_bound_then_unbound(&s, &web, &db).await;
    delete_with_the_name_typed(&s, &cache).await;
    assert_never_shown(&password, &[]);
    assert_never_shown(&rotated_password, &[]);
}

/// Admins rotate a PostgreSQL's login over REST (a resource that never deployed waits for
/// nothing); members may not, and a Redis refuses it naming why.
async fn rotated_over_rest(s: &Setup, db: &str, cache: &str) {
    let path = |id: &str| format!("/dependency-resources/{id}/credential-rotations");
    s.member
        .post(&path(db), json!({}))
        .await
        .error(403, "forbidden");
    let refused = s
        .admin
        .post(&path(cache), json!({}))
        .await
        .error(422, "dependency_credential_rotation_unsupported");
    assert!(
        refused["message"].as_str().unwrap().contains("redis"),
        "{refused}"
    );
    let started = s.admin.post(&path(db), json!({})).await;
    assert_eq!(started.status, 202, "{}", started.body);
    assert_eq!(started.body["id"], db);
    let shown = eventually(WAIT, "the rotation done", || async {
        let shown = s.shown(db).await;
        let credentials = &shown["credentials"];
        (credentials["user"] == "berth_r1" && credentials.get("revoking").is_none())
            .then_some(shown)
    })
    .await;
    assert_eq!(shown["credentials"]["rotation"], started.body["rotation"]);
    assert_eq!(
        shown["connection"]["maskedConnection"],
        format!(
            "postgres://berth_r1:****@{}:5432/app{TLS_PARAMETERS}",
            s.container(db)
        )
    );
}

/// Appaloft's binding secret rotation: refusals by field (nothing written), a Redis binding
/// blocked naming why, then a second login issued whose version the binding shows.
async fn rotated_through_the_binding(s: &Setup, web: &str, db: &str, cache: &str) {
    let path =
        |binding: &str| format!("/resources/{web}/dependency-bindings/{binding}/secret-rotations");
    let confirmed = json!({"confirmHistoricalSnapshotsRemainUnchanged": true});
    let before = s.shown(db).await["credentials"].clone();
    s.member
        .post(&path("DATABASE_URL"), confirmed.clone())
        .await
        .error(403, "forbidden");
    s.admin
        .post(&path("NOT_BOUND"), confirmed.clone())
        .await
        .error(404, "not_found");
    for (body, field) in [
        (json!({}), "confirmHistoricalSnapshotsRemainUnchanged"),
        (
            json!({"secretValue": "canary-s3cret", "confirmHistoricalSnapshotsRemainUnchanged": true}),
            "secretValue",
        ),
        (
            json!({"secretRef": "mine", "confirmHistoricalSnapshotsRemainUnchanged": true}),
            "secretRef",
        ),
    ] {
        let reply = s.admin.post(&path("DATABASE_URL"), body).await;
        assert!(
            !reply.body.to_string().contains("canary-s3cret"),
            "never echoed"
        );
        invalid(reply, field);
    }
    let bound = json!({"dependencyResourceId": cache, "targetName": "REDIS_URL"});
    s.bind(web, bound).await.ok();
    let blocked = s
        .admin
        .post(&path("REDIS_URL"), confirmed.clone())
        .await
        .error(409, "resource_dependency_binding_rotation_blocked");
    assert!(
        blocked["message"].as_str().unwrap().contains("redis"),
        "{blocked}"
    );
    let unbind = format!("/resources/{web}/dependency-bindings/REDIS_URL");
    s.member.delete(&unbind, json!({})).await.ok();
    assert_eq!(
        s.shown(db).await["credentials"],
        before,
        "a refused rotation changes nothing"
    );

    let started = s.admin.post(&path("DATABASE_URL"), confirmed).await;
    assert_eq!(started.status, 202, "{}", started.body);
    assert_eq!(started.body["id"], "DATABASE_URL");
    let version = started.body["secretVersion"].clone();
    let binding = format!("/resources/{web}/dependency-bindings/DATABASE_URL");
    let shown = eventually(WAIT, "the binding's secret rotated", || async {
        let shown = s.member.get(&binding).await.ok()["binding"].clone();
        (shown["secretRotation"]["secretVersion"] == version).then_some(shown)
    })
    .await;
    assert_eq!(
        shown["secretRotation"]["secretRef"],
        format!("{db}-connection")
    );
    eventually(WAIT, "the old login revoked", || async {
        let credentials = s.shown(db).await["credentials"].clone();
        (credentials["user"] == "berth_r2" && credentials.get("revoking").is_none()).then_some(())
    })
    .await;
}

/// Both dependencies listed and counted, filters applied.
async fn assert_listed_and_counted(s: &Setup, db: &str, cache: &str) {
    assert_eq!(s.count("").await, 2);
    assert_eq!(s.count("?kind=redis").await, 1);
    assert_eq!(s.count(&format!("?environmentId={}", s.blog_prod)).await, 0);
    let listed = s
        .member
        .get(&format!("/dependency-resources?projectId={}", s.shop))
        .await
        .ok();
    let mut ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut both = [db, cache];
    both.sort();
    assert_eq!(ids, both);
}

/// A rename takes a free name only; another organization's member sees no such dependency.
async fn rename_and_hide_from_strangers(s: &Setup, db: &str) {
    let path = format!("/dependency-resources/{db}/rename");
    invalid(s.member.post(&path, json!({"name": " "})).await, "name");
    let taken = s
        .member
        .post(&path, json!({"name": "CACHE"}))
        .await
        .error(409, "dependency_resource_slug_conflict");
    assert_eq!(taken["details"]["field"], "name");
    s.member.post(&path, json!({"name": "Orders"})).await.ok();
    assert_eq!(s.shown(db).await["name"], "Orders");

    let mut other = TestOrg::new(&client().await).await;
    let stranger = other.user(OrganizationRole::Member).await.rest;
    let shown = format!("/dependency-resources/{db}");
    stranger.get(&shown).await.error(404, "not_found");
    stranger
        .post(&path, json!({"name": "Mine"}))
        .await
        .error(404, "not_found");
    stranger
        .delete(&shown, json!({}))
        .await
        .error(404, "not_found");
    let listed = stranger.get("/dependency-resources").await.ok();
    assert_eq!(listed["items"], json!([]));
}

/// `berth db` as a person uses it: the list and record show the connection masked, a second
/// binding comes and goes, and a delete of the bound dependency fails naming the binding.
async fn cli_lists_binds_and_refuses(s: &Setup, web: &str, db: &str, password: &str) {
    let berth = Berth::new();
    berth.login(&s.user).await;
    let listed = berth.run(&["db", "list", "-o", "json"]).await.json();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == db)
    );
    let shown = berth.run(&["db", "show", db]).await.ok();
    assert!(
        shown.contains(":****@") && !shown.contains(password),
        "{shown}"
    );
    let bind = ["db", "bind", db, "--resource", web, "--as", "CLI_DB_URL"];
    assert!(berth.run(&bind).await.ok().contains("CLI_DB_URL"));
    let bindings = ["db", "bindings", "--resource", web, "-o", "json"];
    assert_eq!(
        berth.run(&bindings).await.json()["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    berth
        .run(&["db", "unbind", "--resource", web, "CLI_DB_URL"])
        .await
        .ok();
    let refused = berth.run(&["db", "delete", db]).await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("DATABASE_URL"), "{refused:?}");
    // Rotation is an admin's: a member is told which role it needs.
    let refused = berth.run(&["db", "rotate", db]).await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("admin role"), "{refused:?}");
    let authority = berth.run(&["db", "ca-certificate", db]).await.ok();
    assert!(
        authority.starts_with("-----BEGIN CERTIFICATE-----"),
        "{authority}"
    );
    let help = berth.run(&["db", "--help"]).await.ok();
    for command in [
        "list",
        "show",
        "create",
        "import",
        "delete",
        "bind",
        "unbind",
        "rotate",
        "ca-certificate",
    ] {
        assert!(help.contains(command), "{help}");
    }
}

/// A bound dependency is not deleted; unbound, its container goes and its volume stays.
async fn delete_while_bound_then_unbound(s: &Setup, web: &str, db: &str) {
    let blockers = &s.shown(db).await["deleteSafety"]["blockers"];
    assert_eq!(
        blockers,
        &json!([{"kind": "resource-binding", "relatedEntityId": web,
                 "relatedEntityType": "resource", "count": 1, "bindingIds": ["DATABASE_URL"]}])
    );
    let error = s
        .delete(db, json!({}))
        .await
        .error(409, "dependency_resource_delete_blocked");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(web) && message.contains("DATABASE_URL"),
        "{message}"
    );
    let path = format!("/resources/{web}/dependency-bindings/DATABASE_URL");
    let unbound = s.member.delete(&path, json!({})).await.ok();
    assert_eq!(unbound, json!({"id": "DATABASE_URL"}));
    s.member
        .delete(&path, json!({}))
        .await
        .error(404, "not_found");
    let listed = s
        .member
        .get(&format!("/resources/{web}/dependency-bindings"))
        .await
        .ok();
    assert_eq!(listed["items"], json!([]));

    invalid(
        s.delete(db, json!({"deleteDataConfirmation": "Orders DB"}))
            .await,
        "deleteDataConfirmation",
    );
    invalid(
        s.delete(db, json!({"skipFinalBackupConfirmation": "orders"}))
            .await,
        "skipFinalBackupConfirmation",
    );
    let container = s.container(db);
    let volume = format!("{container}-data");
    // A refused delete removes nothing: the object is not being deleted and its server is
    // there. (Waited for, not caught at one moment: right after a major-version upgrade the
    // container is still made again once: an open finding, see the closing note of stop 62.)
    let dependencies = Api::<DependencyResource>::namespaced(client().await, &s.org.namespace);
    let kept = dependencies.get(db).await.expect("the dependency");
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "a refused delete deletes nothing"
    );
    eventually(
        WAIT,
        "the dependency's container after refused deletes",
        || async { exists("container", &container).then_some(()) },
    )
    .await;
    assert_eq!(s.delete(db, json!({})).await.ok(), json!({"id": db}));
    eventually(WAIT, "the dependency's container removed", || async {
        (!exists("container", &container)).then_some(())
    })
    .await;
    assert!(exists("volume", &volume), "the data volume is kept");
    eventually(WAIT, "the dependency gone from the API", || async {
        let reply = s.member.get(&format!("/dependency-resources/{db}")).await;
        (reply.status == 404).then_some(())
    })
    .await;
    Command::new("docker")
        .args(["volume", "rm", &volume])
        .output()
        .expect("docker CLI (tests only)");
}

/// The name typed into `deleteDataConfirmation` removes the data volume too.
async fn delete_with_the_name_typed(s: &Setup, cache: &str) {
    let container = s.container(cache);
    let volume = format!("{container}-data");
    assert!(exists("volume", &volume), "{volume} exists while it runs");
    let body = json!({"deleteDataConfirmation": "Cache"});
    assert_eq!(s.delete(cache, body).await.ok(), json!({"id": cache}));
    eventually(WAIT, "the cache's container and volume removed", || async {
        (!exists("container", &container) && !exists("volume", &volume)).then_some(())
    })
    .await;
    eventually(WAIT, "no dependency left", || async {
        (s.count("").await == 0).then_some(())
    })
    .await;
}

/// The authority of a PostgreSQL's certificate is served for download, and it is the one the
/// server presents (checked with openssl against the running server); a Redis has none.
async fn served_its_authority(s: &Setup, db: &str, cache: &str) {
    let served = s
        .member
        .get(&format!("/dependency-resources/{db}/ca-certificate"))
        .await
        .ok();
    let pem = served["certificatePem"].as_str().expect("a PEM");
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{served}");
    assert_eq!(served["caPath"], "/etc/berth/database-ca.crt");
    assert!(!served.to_string().contains("PRIVATE KEY"));
    let file = std::env::temp_dir().join(format!("berth-ca-{db}.crt"));
    std::fs::write(&file, pem).unwrap();
    // The certificate PostgreSQL presents, verified against the download and by its name.
    let container = s.container(db);
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
    let address = Command::new("docker")
        .args(["inspect", "-f", format, &container])
        .output()
        .expect("docker CLI (tests only)");
    let address = String::from_utf8_lossy(&address.stdout).trim().to_string();
    let handshake = Command::new("openssl")
        .args(["s_client", "-starttls", "postgres", "-verify_return_error"])
        .args([
            "-connect",
            &format!("{address}:5432"),
            "-verify_hostname",
            &container,
        ])
        .arg("-CAfile")
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl");
    let said = String::from_utf8_lossy(&handshake.stdout);
    assert!(
        handshake.status.success() && said.contains("Verify return code: 0 (ok)"),
        "{said}{}",
        String::from_utf8_lossy(&handshake.stderr)
    );
    let _ = std::fs::remove_file(file);
    s.member
        .get(&format!("/dependency-resources/{cache}/ca-certificate"))
        .await
        .error(409, "dependency_resource_tls_unavailable");
}

#[tokio::test]
async fn shim_imports_an_external_database_by_url_and_never_shows_its_password() {
    let s = setup().await;
    let image = registry_image("berth/postgres:15");
    let secret = "imp0rted-pw";
    // Nothing listens there: the dependency is recorded, checked from the server, and says so.
    let url = format!("postgresql://shop:{secret}@198.18.0.1:6543/orders?sslmode=disable");
    let body = |patch: Value| {
        let mut body = json!({
            "kind": "postgres", "projectId": s.shop, "environmentId": s.prod,
            "serverId": s.server, "name": "Orders", "connectionUrl": url, "image": image,
        });
        for (key, value) in patch.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let import = |body: Value| {
        let rest = s.member.clone();
        async move { rest.post("/dependency-resources/import", body).await }
    };
    for (patch, status, field) in [
        (
            json!({"connectionUrl": format!("redis://:{secret}@h:6379")}),
            422,
            "connectionUrl",
        ),
        (
            json!({"connectionUrl": format!("postgres://u:{secret}@/db")}),
            422,
            "connectionUrl",
        ),
        (json!({"connectionUrl": ""}), 422, "connectionUrl"),
        (json!({"kind": "mysql"}), 422, "kind"),
        (json!({"secretRef": "vault://x"}), 422, "secretRef"),
        (json!({"environmentId": s.blog_prod}), 422, "environmentId"),
        (json!({"serverId": "srv-missing"}), 404, "serverId"),
    ] {
        let reply = import(body(patch.clone())).await;
        let text = reply.body.to_string();
        assert!(
            !text.contains(secret),
            "{patch}: the password echoed: {text}"
        );
        assert_eq!(reply.status, status, "{patch}: {text}");
        assert_eq!(
            reply.body["error"]["details"]["field"], field,
            "{patch}: {text}"
        );
    }
    assert_eq!(s.count("").await, 0, "nothing created by a refused import");

    let created = import(body(json!({}))).await.expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let shown = eventually(WAIT, "the import checked", || async {
        let shown = s.shown(&id).await;
        shown["connection"]["maskedConnection"]
            .is_string()
            .then_some(shown)
    })
    .await;
    assert_eq!(shown["sourceMode"], "imported-external");
    assert_eq!(shown["providerKey"], "external-postgres");
    assert_eq!(
        shown["lifecycleStatus"], "provisioning",
        "it never answered: {shown}"
    );
    assert_eq!(
        shown["connection"]["maskedConnection"],
        "postgresql://shop:****@198.18.0.1:6543/orders?sslmode=disable"
    );
    assert!(!shown.to_string().contains(secret));
    let listed = s.member.get("/dependency-resources").await.ok();
    assert!(!listed.to_string().contains(secret));
    // Berth keeps the URL in a Secret the dependency owns.
    let secrets = Api::<Secret>::namespaced(client().await, &s.org.namespace);
    let kept = secrets
        .get(&format!("{id}-import"))
        .await
        .expect("the URL's Secret");
    let owners = kept.metadata.owner_references.unwrap_or_default();
    assert!(
        owners.iter().any(|o| o.name == id),
        "owned by {id}: {owners:?}"
    );
    s.delete(&id, json!({})).await.expect(200);

    // The CLI takes the URL on standard input, and never prints it.
    let berth = Berth::new();
    berth.login(&s.user).await;
    let redis = format!("redis://:{secret}@198.18.0.1:6390/0");
    let args = [
        "db",
        "import",
        "Sessions",
        "--kind",
        "redis",
        "--project",
        &s.shop,
        "--environment",
        &s.prod,
        "--server",
        &s.server,
        "--image",
        "127.0.0.1:5000/berth/redis:7",
        "--connection-url-stdin",
        "-o",
        "json",
    ];
    let imported = berth
        .run_with(&crate::cli::binary(), &args, Some(&redis), &[])
        .await;
    assert_eq!(imported.code, 0, "{imported:?}");
    let imported_id = imported.json()["id"].as_str().unwrap().to_string();
    let shown = berth
        .run(&["db", "show", &imported_id, "-o", "json"])
        .await
        .ok();
    assert!(
        shown.contains("imported-external") && !shown.contains(secret),
        "{shown}"
    );
    let empty = berth
        .run_with(&crate::cli::binary(), &args, Some(""), &[])
        .await;
    assert_ne!(empty.code, 0, "an empty stdin is refused: {empty:?}");
    let none = berth.run(&["db", "ca-certificate", &imported_id]).await;
    assert!(none.stderr.contains("not a managed PostgreSQL"), "{none:?}");
    s.delete(&imported_id, json!({})).await.expect(200);
}
