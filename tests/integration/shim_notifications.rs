//! Notification channels and deliveries over HTTP and the CLI against the running shim: bad
//! input refused by field with nothing created; a webhook channel created by an admin (its
//! Secret owned by it with the URL and a signing secret shown in the create's answer only),
//! listed and shown with the target masked to scheme and host, an email channel showing its
//! recipients and keeping its SMTP password in the Secret; members read but cannot write;
//! `test` answering 202 with a pending NotificationDelivery owned by the channel, listed in
//! `/notification-deliveries`; hidden from other organizations; delete; `berth notify`
//! creating, testing and listing. Whether berth-controller delivers is the controller's tests'.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::notification::{
    CHANNEL_LABEL, NotificationChannel, NotificationDelivery, NotificationEvent,
    SIGNING_SECRET_KEY, SMTP_CA_KEY, SMTP_PASSWORD_KEY, URL_KEY,
};
use berth_tests::rest::{Rest, TestOrg, TestUser};
use berth_tests::{client, eventually};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::{Value, json};

use crate::cli::Berth;
use crate::shim_projects_envs::{invalid, project};

/// How long the garbage collector may take to remove a deleted channel's Secret.
const GC_WAIT: Duration = Duration::from_secs(90);
const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";
const HOOK: &str = "https://hooks.example.com/services/T0/B0/very-secret-path?token=abc";

struct Setup {
    org: TestOrg,
    admin_user: TestUser,
    admin: Rest,
    member: Rest,
    project: String,
}

async fn setup() -> Setup {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin_user = org.user(OrganizationRole::Admin).await;
    let admin = admin_user.rest.clone();
    let member = org.user(OrganizationRole::Member).await.rest;
    let project = project(&member, "Shop").await;
    Setup {
        org,
        admin_user,
        admin,
        member,
        project,
    }
}

impl Setup {
    async fn channels(&self) -> Api<NotificationChannel> {
        Api::namespaced(client().await, &self.org.namespace)
    }

    async fn deliveries(&self) -> Api<NotificationDelivery> {
        Api::namespaced(client().await, &self.org.namespace)
    }

    async fn secrets(&self) -> Api<Secret> {
        Api::namespaced(client().await, &self.org.namespace)
    }

    /// The channels `GET /notification-channels{query}` lists for `rest`.
    async fn listed(&self, rest: &Rest, query: &str) -> Vec<Value> {
        let listed = rest
            .get(&format!("/notification-channels{query}"))
            .await
            .ok();
        assert_eq!(
            listed["schemaVersion"], "notification-channels.list/v1",
            "{listed}"
        );
        assert!(listed["generatedAt"].is_string(), "{listed}");
        listed["items"].as_array().unwrap().clone()
    }
}

fn webhook(patch: Value) -> Value {
    let mut body = json!({"name": "Ops", "kind": "webhook", "url": HOOK});
    for (key, value) in patch.as_object().unwrap() {
        match value {
            Value::Null => body.as_object_mut().unwrap().remove(key),
            value => body
                .as_object_mut()
                .unwrap()
                .insert(key.clone(), value.clone()),
        };
    }
    body
}

fn email_settings(patch: Value) -> Value {
    let mut settings = json!({
        "to": ["ops@example.com"], "from": "berth@example.com", "smtpHost": "smtp.example.com",
    });
    for (key, value) in patch.as_object().unwrap() {
        settings[key] = value.clone();
    }
    settings
}

#[tokio::test]
async fn shim_notifications_refuse_bad_input_by_field_and_create_nothing() {
    let s = setup().await;
    for (body, field) in [
        (webhook(json!({"url": null})), "url"),
        (webhook(json!({"url": "ftp://hooks.example.com/x"})), "url"),
        (webhook(json!({"url": "not a url"})), "url"),
        (webhook(json!({"kind": "slack", "url": "https://"})), "url"),
        (webhook(json!({"name": " "})), "name"),
        (webhook(json!({"kind": "sms"})), "kind"),
        (webhook(json!({"events": ["deploy-failed"]})), "events[0]"),
        (webhook(json!({"events": ["test"]})), "events[0]"),
        (webhook(json!({"projectId": "prj-missing"})), "projectId"),
        (
            webhook(json!({"email": email_settings(json!({}))})),
            "email",
        ),
        (webhook(json!({"secret": "x"})), "secret"),
        (json!({"name": "Mail", "kind": "email"}), "email"),
        (
            json!({"name": "Mail", "kind": "email", "email": email_settings(json!({"to": []}))}),
            "email.to",
        ),
        (
            json!({"name": "Mail", "kind": "email",
                   "email": email_settings(json!({"to": ["ops@example.com", "nobody"]}))}),
            "email.to[1]",
        ),
        (
            json!({"name": "Mail", "kind": "email", "email": email_settings(json!({"from": "x"}))}),
            "email.from",
        ),
        (
            json!({"name": "Mail", "kind": "email",
                   "email": email_settings(json!({"smtpPort": 0}))}),
            "email.smtpPort",
        ),
        (
            json!({"name": "Mail", "kind": "email",
                   "email": email_settings(json!({"smtpCa": "not a certificate"}))}),
            "email.smtpCa",
        ),
    ] {
        let reply = s.admin.post("/notification-channels", body.clone()).await;
        assert_eq!(reply.status, 422, "{body}: {}", reply.body);
        invalid(reply, field);
    }
    // A member may not write, even a valid channel.
    let error = s
        .member
        .post("/notification-channels", webhook(json!({})))
        .await
        .error(403, "forbidden");
    assert_eq!(error["details"]["requiredRole"], "admin", "{error}");
    for (path, field) in [
        ("/notification-deliveries?status=lost", "status"),
        ("/notification-deliveries?event=deploy-failed", "event"),
        ("/notification-deliveries?sort=asc", "sort"),
        ("/notification-channels?page=2", "page"),
    ] {
        invalid(s.member.get(path).await, field);
    }
    assert!(s.listed(&s.member, "").await.is_empty(), "nothing listed");
    let stored = s.channels().await.list(&Default::default()).await.unwrap();
    assert!(stored.items.is_empty(), "no NotificationChannel was made");
    let labelled = kube::api::ListParams::default().labels(CHANNEL_LABEL);
    let secrets = s.secrets().await.list(&labelled).await.unwrap();
    assert!(secrets.items.is_empty(), "no channel Secret was made");
    for path in [
        "/notification-channels/ntf-missing",
        "/notification-deliveries/ntf-missing-test-x",
    ] {
        s.member.get(path).await.error(404, "not_found");
    }
    s.admin
        .post("/notification-channels/ntf-missing/test", json!({}))
        .await
        .error(404, "not_found");
    s.admin
        .delete("/notification-channels/ntf-missing", json!({}))
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .get("/notification-channels")
        .await
        .error(401, "unauthenticated");
}

/// Creates the webhook channel every later step uses; returns its id.
async fn create_webhook(s: &Setup) -> String {
    let body = webhook(json!({
        "projectId": s.project,
        "events": ["deployment-failed", "deployment-succeeded", "deployment-failed"],
    }));
    let created = s
        .admin
        .post("/notification-channels", body)
        .await
        .expect(201);
    assert_eq!(created["schemaVersion"], "notification-channels.command/v1");
    let channel = &created["channel"];
    let id = channel["id"].as_str().expect("an id").to_string();
    assert!(id.starts_with("ntf-"), "{created}");
    assert_eq!(channel["name"], "Ops");
    assert_eq!(channel["kind"], "webhook");
    assert_eq!(channel["projectId"], s.project.as_str());
    assert_eq!(
        channel["events"],
        json!(["deployment-failed", "deployment-succeeded"])
    );
    assert_eq!(channel["target"], "https://hooks.example.com/****");
    let signing = created["signingSecret"]
        .as_str()
        .expect("the signing secret, once")
        .to_string();
    assert_eq!(signing.len(), 64, "{created}");
    assert!(signing.chars().all(|c| c.is_ascii_hexdigit()));
    let text = created.to_string();
    assert!(!text.contains("very-secret-path") && !text.contains("token=abc"));

    // The object kubectl and the controller see, and its Secret, owned by it.
    let object = s.channels().await.get(&id).await.expect("the channel");
    assert_eq!(object.spec.secret_ref, format!("{id}-notification"));
    assert_eq!(object.spec.problem(), None);
    let secret = s
        .secrets()
        .await
        .get(&object.spec.secret_ref)
        .await
        .expect("the channel's Secret");
    let data = secret.data.clone().unwrap();
    assert_eq!(data[URL_KEY].0, HOOK.as_bytes());
    assert_eq!(data[SIGNING_SECRET_KEY].0, signing.as_bytes());
    let owner = &secret.metadata.owner_references.expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("NotificationChannel", id.as_str())
    );
    id
}

/// Lists and shows it to a member: masked target, no secret anywhere.
async fn list_and_show(s: &Setup, id: &str) {
    let listed = s.listed(&s.member, "").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let shown = s
        .member
        .get(&format!("/notification-channels/{id}"))
        .await
        .ok();
    assert_eq!(shown["schemaVersion"], "notification-channels.show/v1");
    for channel in [&listed[0], &shown["channel"]] {
        assert_eq!(channel["id"], id);
        assert_eq!(channel["target"], "https://hooks.example.com/****");
        assert!(channel.get("signingSecret").is_none(), "{channel}");
        assert!(channel["createdAt"].is_string());
        assert!(channel["ready"].is_boolean());
        let text = channel.to_string();
        assert!(!text.contains("very-secret-path"), "{text}");
        assert!(!text.contains("token=abc"), "{text}");
    }
    let of_project = format!("?projectId={}", s.project);
    assert_eq!(s.listed(&s.member, &of_project).await.len(), 1);
    s.member
        .get("/notification-channels?projectId=prj-missing")
        .await
        .error(404, "not_found");
}

/// An email channel: the recipients are its target, the password stays in the Secret; the
/// default events are spelled out.
async fn email_channel(s: &Setup) {
    let body = json!({"name": "Mail", "kind": "email", "email": email_settings(json!({
        "to": ["ops@example.com", "dev@example.com"], "smtpPort": 2525,
        "smtpUsername": "berth", "smtpPassword": "smtp-password-123", "smtpCa": CA,
    }))});
    let created = s
        .admin
        .post("/notification-channels", body)
        .await
        .expect(201);
    let channel = &created["channel"];
    assert!(created.get("signingSecret").is_none(), "{created}");
    assert_eq!(channel["target"], "ops@example.com, dev@example.com");
    let events = channel["events"].as_array().unwrap();
    assert!(events.contains(&json!("deployment-failed")), "{channel}");
    assert!(
        !events.contains(&json!("deployment-succeeded")),
        "{channel}"
    );
    assert!(!created.to_string().contains("smtp-password-123"));
    let id = channel["id"].as_str().unwrap();
    let object = s.channels().await.get(id).await.unwrap();
    let email = object.spec.email.clone().expect("email settings");
    assert_eq!((email.smtp_port, email.start_tls), (2525, true));
    let secret = s
        .secrets()
        .await
        .get(&object.spec.secret_ref)
        .await
        .unwrap();
    let data = secret.data.unwrap();
    assert_eq!(data[SMTP_PASSWORD_KEY].0, b"smtp-password-123");
    assert_eq!(data[SMTP_CA_KEY].0, CA.as_bytes());
    assert!(!data.contains_key(URL_KEY) && !data.contains_key(SIGNING_SECRET_KEY));
    let shown = s
        .member
        .get(&format!("/notification-channels/{id}"))
        .await
        .ok();
    assert!(!shown.to_string().contains("smtp-password-123"), "{shown}");
}

/// A test: 202, a pending delivery object owned by the channel, listed and shown; a member
/// may not send one.
async fn test_message(s: &Setup, id: &str) -> String {
    let path = format!("/notification-channels/{id}/test");
    s.member
        .post(&path, json!({}))
        .await
        .error(403, "forbidden");
    let sent = s.admin.post(&path, json!({})).await.expect(202);
    assert_eq!(sent["schemaVersion"], "notification-channels.test/v1");
    let delivery = &sent["delivery"];
    let delivery_id = delivery["id"].as_str().expect("a delivery id").to_string();
    assert_eq!(delivery["channelId"], id);
    assert_eq!(delivery["event"], "test");
    assert_eq!(delivery["subject"]["kind"], "NotificationChannel");
    assert_eq!(delivery["subject"]["name"], id);
    assert_eq!(delivery["summary"], "Test message from Berth");
    assert_eq!(delivery["projectId"], s.project.as_str());
    assert!(delivery["occurredAt"].is_string());
    let object = s
        .deliveries()
        .await
        .get(&delivery_id)
        .await
        .expect("the NotificationDelivery");
    assert_eq!(object.spec.event, NotificationEvent::Test);
    assert_eq!(object.metadata.labels.clone().unwrap()[CHANNEL_LABEL], id);
    let owner = &object.metadata.owner_references.clone().expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("NotificationChannel", id)
    );
    // A second test is a second delivery, not merged with the first.
    let again = s.admin.post(&path, json!({})).await.expect(202);
    assert_ne!(again["delivery"]["id"], delivery_id.as_str());

    let listed = s
        .member
        .get(&format!(
            "/notification-deliveries?channelId={id}&event=test"
        ))
        .await
        .ok();
    assert_eq!(listed["schemaVersion"], "notification-deliveries.list/v1");
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(ids.contains(&delivery_id.as_str()), "{listed}");
    let page = s
        .member
        .get(&format!("/notification-deliveries?channelId={id}&limit=1"))
        .await
        .ok();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert!(page["nextCursor"].is_string(), "{page}");
    let shown = s
        .member
        .get(&format!("/notification-deliveries/{delivery_id}"))
        .await
        .ok();
    assert_eq!(shown["schemaVersion"], "notification-deliveries.show/v1");
    assert_eq!(shown["delivery"]["id"], delivery_id.as_str());
    assert!(shown["delivery"]["status"].is_string());
    // The channel shows its newest delivery.
    let channel = s
        .member
        .get(&format!("/notification-channels/{id}"))
        .await
        .ok();
    assert!(
        channel["channel"]["lastDelivery"]["deliveryId"].is_string(),
        "{channel}"
    );
    delivery_id
}

/// Another organization sees none of it.
async fn hidden_from_others(s: &Setup, id: &str, delivery_id: &str) {
    let mut other = TestOrg::new(&client().await).await;
    let stranger = other.user(OrganizationRole::Admin).await.rest;
    stranger
        .get(&format!("/notification-channels/{id}"))
        .await
        .error(404, "not_found");
    stranger
        .post(&format!("/notification-channels/{id}/test"), json!({}))
        .await
        .error(404, "not_found");
    stranger
        .get(&format!("/notification-deliveries/{delivery_id}"))
        .await
        .error(404, "not_found");
    assert!(s.listed(&stranger, "").await.is_empty());
    let deliveries = stranger.get("/notification-deliveries").await.ok();
    assert_eq!(deliveries["items"], json!([]), "{deliveries}");
}

/// Delete: members may not; an admin's answers delete/v1, then 404, and the Secret goes.
async fn delete(s: &Setup, id: &str) {
    let path = format!("/notification-channels/{id}");
    s.member
        .delete(&path, json!({}))
        .await
        .error(403, "forbidden");
    let deleted = s.admin.delete(&path, json!({})).await.ok();
    assert_eq!(deleted["schemaVersion"], "notification-channels.delete/v1");
    assert_eq!(
        (&deleted["channelId"], &deleted["status"]),
        (&json!(id), &json!("deleted"))
    );
    assert!(deleted["deletedAt"].is_string());
    s.member.get(&path).await.error(404, "not_found");
    let secrets = s.secrets().await;
    let name = format!("{id}-notification");
    eventually(GC_WAIT, "the deleted channel's Secret removed", || async {
        secrets
            .get_opt(&name)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn shim_notification_channel_is_created_tested_and_deleted_over_rest() {
    let s = setup().await;
    let id = create_webhook(&s).await;
    list_and_show(&s, &id).await;
    email_channel(&s).await;
    let delivery_id = test_message(&s, &id).await;
    hidden_from_others(&s, &id, &delivery_id).await;
    delete(&s, &id).await;
}

#[tokio::test]
async fn shim_notifications_cli_creates_tests_and_lists_channels() {
    let s = setup().await;
    let berth = Berth::new();
    berth.login(&s.admin_user).await;
    let refused = berth
        .run(&[
            "notify",
            "create-channel",
            "--name",
            "Ops",
            "--kind",
            "webhook",
            "--webhook-url",
            "ftp://hooks.example.com/x",
        ])
        .await;
    assert_eq!(refused.code, 2, "a usage error: {refused:?}");
    assert!(refused.stderr.contains("url"), "{refused:?}");
    assert!(s.listed(&s.member, "").await.is_empty(), "nothing was sent");

    let created = berth
        .run(&[
            "notify",
            "create-channel",
            "--name",
            "Chat",
            "--kind",
            "slack",
            "--webhook-url",
            HOOK,
            "--event",
            "deployment-failed",
            "--event",
            "resource-unhealthy",
            "--project",
            "Shop",
        ])
        .await
        .ok();
    assert!(
        created.contains("https://hooks.example.com/****"),
        "{created}"
    );
    assert!(!created.contains("very-secret-path"), "{created}");
    let id = created
        .split_whitespace()
        .find(|word| word.starts_with("ntf-"))
        .expect("the channel's id")
        .to_string();
    let webhook = berth
        .run(&[
            "notify",
            "create-channel",
            "--name",
            "Hook",
            "--kind",
            "webhook",
            "--webhook-url",
            HOOK,
        ])
        .await
        .ok();
    assert!(webhook.contains("Signing secret"), "{webhook}");

    let listed = berth
        .run(&["notify", "channels", "-o", "json"])
        .await
        .json();
    let channel = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id.as_str())
        .expect("the CLI's channel listed")
        .clone();
    assert_eq!(channel["kind"], "slack");
    assert_eq!(channel["projectId"], s.project.as_str());
    assert_eq!(
        channel["events"],
        json!(["deployment-failed", "resource-unhealthy"])
    );
    let table = berth.run(&["notify", "channels"]).await.ok();
    assert!(
        table.contains(&id) && table.contains("hooks.example.com"),
        "{table}"
    );
    let shown = berth.run(&["notify", "show-channel", &id]).await.ok();
    assert!(shown.contains("Chat"), "{shown}");

    let delivery = berth.run(&["notify", "test", &id, "-q"]).await.ok();
    let delivery = delivery.trim();
    assert!(delivery.starts_with(&format!("{id}-test-")), "{delivery}");
    let deliveries = berth
        .run(&["notify", "deliveries", "--channel", &id])
        .await
        .ok();
    assert!(
        deliveries.contains(delivery) && deliveries.contains("test"),
        "{deliveries}"
    );
    let help = berth.run(&["notify", "--help"]).await.ok();
    for command in [
        "channels",
        "create-channel",
        "test",
        "deliveries",
        "delete-channel",
    ] {
        assert!(help.contains(command), "{help}");
    }
    let deleted = berth.run(&["notify", "delete-channel", &id]).await.ok();
    assert!(deleted.contains(&id), "{deleted}");
    let left = s.listed(&s.member, "").await;
    assert!(left.iter().all(|c| c["id"] != id.as_str()), "{left:?}");
}
