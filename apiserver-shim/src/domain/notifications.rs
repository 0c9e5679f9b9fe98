//! Notification channels and deliveries as the routes reach them: who may read and write them
//! (channels are organization settings: members read, admins and owners write), the spec and
//! Secret a create writes, the delivery a test makes, and the summaries reads answer with —
//! never a URL's path, a signing secret or an SMTP password.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_api::notifications::{
    CreateNotificationChannel, DEFAULT_SMTP_PORT, DeliverySubject, LastDeliverySummary,
    NotificationChannelSummary, NotificationDeliverySummary, masked_url,
};
use berth_crds::ConditionStatus;
use berth_crds::member::OrganizationRole;
use berth_crds::notification::{
    CHANNEL_LABEL, ChannelKind, EmailSettings, NotificationChannel, NotificationChannelSpec,
    NotificationDelivery, NotificationDeliverySpec, NotificationEvent, SIGNING_SECRET_KEY,
    SMTP_CA_KEY, SMTP_PASSWORD_KEY, Subject, URL_KEY,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::{Resource as _, ResourceExt};
use rand::RngCore;

use crate::auth::{Caller, CallerOrganization, ScopeDimension};
use crate::domain::objects::{find_in, owned_secret};
use crate::domain::time::created_at;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::token::new_id;

/// Prefix of a channel's id.
pub const CHANNEL_PREFIX: &str = "ntf";
/// Kind of a test delivery's subject.
pub const TEST_SUBJECT_KIND: &str = "NotificationChannel";
/// The one line a test delivery carries.
pub const TEST_SUMMARY: &str = "Test message from Berth";

/// Reads need a member (a deploy token limited to part of the organization sees only the
/// channels of its projects).
pub fn reader(caller: &Caller) -> ApiResult<&CallerOrganization> {
    caller.require_role(OrganizationRole::Member)
}

/// Writes need an admin or owner: channels are organization settings, as thresholds and
/// retention are (deploy tokens act as members and are refused).
pub fn writer(caller: &Caller) -> ApiResult<&CallerOrganization> {
    caller.require_role(OrganizationRole::Admin)
}

/// Whether the caller sees a channel limited to `project_id` (or the whole organization).
pub fn sees_channel(caller: &Caller, project_id: Option<&str>) -> bool {
    match project_id {
        Some(project) => caller.sees(ScopeDimension::Project, project),
        None => !caller.is_limited(),
    }
}

/// A channel of the caller's organization the caller may see, or 404.
pub fn lookup_channel(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<Arc<NotificationChannel>> {
    let organization = reader(caller)?;
    let channel = find_in(
        &state.caches.notification_channels,
        &organization.namespace,
        id,
        "notification channel",
    )?;
    if channel.metadata.deletion_timestamp.is_some()
        || !sees_channel(caller, channel.spec.project_id.as_deref())
    {
        return Err(ApiError::not_found("notification channel", id));
    }
    Ok(channel)
}

/// A delivery of the caller's organization the caller may see, or 404.
pub fn lookup_delivery(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<Arc<NotificationDelivery>> {
    let organization = reader(caller)?;
    let delivery = find_in(
        &state.caches.notification_deliveries,
        &organization.namespace,
        id,
        "notification delivery",
    )?;
    if !sees_delivery(state, caller, &organization.namespace, &delivery) {
        return Err(ApiError::not_found("notification delivery", id));
    }
    Ok(delivery)
}

/// A delivery is seen by whoever sees its channel (its own project when the channel is gone).
pub fn sees_delivery(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    delivery: &NotificationDelivery,
) -> bool {
    if !caller.is_limited() {
        return true;
    }
    match find_in(
        &state.caches.notification_channels,
        namespace,
        &delivery.spec.channel_id,
        "notification channel",
    ) {
        Ok(channel) => sees_channel(caller, channel.spec.project_id.as_deref()),
        Err(_) => sees_channel(caller, delivery.spec.project_id.as_deref()),
    }
}

/// The Secret a channel names: `<channel>-notification`.
pub fn secret_name(channel_id: &str) -> String {
    format!("{channel_id}-notification")
}

/// A new webhook signing secret: 32 random bytes, hex.
pub fn new_signing_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The spec a create writes (the body checked before).
pub fn new_channel_spec(id: &str, body: &CreateNotificationChannel) -> NotificationChannelSpec {
    NotificationChannelSpec {
        name: body.name.trim().to_string(),
        kind: body.kind,
        project_id: body.project_id.clone(),
        events: body.events(),
        secret_ref: secret_name(id),
        email: body.email.as_ref().map(|email| EmailSettings {
            to: email.to.clone(),
            from: email.from.clone(),
            smtp_host: email.smtp_host.clone(),
            smtp_port: email.smtp_port.unwrap_or(DEFAULT_SMTP_PORT),
            smtp_username: email.smtp_username.clone(),
            start_tls: email.start_tls.unwrap_or(true),
        }),
    }
}

/// The channel's Secret, owned by it (so it goes with it): the URL, a webhook's signing
/// secret, the SMTP password and CA — whichever the body has.
pub fn channel_secret(
    channel: &NotificationChannel,
    body: &CreateNotificationChannel,
    signing_secret: Option<&str>,
) -> Secret {
    let mut data = BTreeMap::new();
    let mut put = |key: &str, value: &str| {
        data.insert(key.to_string(), ByteString(value.as_bytes().to_vec()));
    };
    if let Some(url) = &body.url {
        put(URL_KEY, url.trim());
    }
    if let Some(secret) = signing_secret {
        put(SIGNING_SECRET_KEY, secret);
    }
    if let Some(email) = &body.email {
        if let Some(password) = &email.smtp_password {
            put(SMTP_PASSWORD_KEY, password);
        }
        if let Some(ca) = &email.smtp_ca {
            put(SMTP_CA_KEY, ca);
        }
    }
    Secret {
        data: Some(data),
        ..owned_secret(channel, CHANNEL_LABEL, &channel.spec.secret_ref, "Opaque")
    }
}

/// The events a channel delivers: those it names, else the default set.
pub fn effective_events(spec: &NotificationChannelSpec) -> Vec<NotificationEvent> {
    if spec.events.is_empty() {
        NotificationEvent::ALL
            .into_iter()
            .filter(|e| e.followed_by_default())
            .collect()
    } else {
        spec.events.clone()
    }
}

/// Where a channel's messages go, masked: a URL's scheme and host (from its Secret's `url`),
/// an email channel's recipients.
pub fn target(spec: &NotificationChannelSpec, url: Option<&str>) -> Option<String> {
    match spec.kind {
        ChannelKind::Email => spec.email.as_ref().map(|email| email.to.join(", ")),
        ChannelKind::Webhook | ChannelKind::Slack => url.map(masked_url),
    }
}

/// The `url` a channel's Secret holds, if it can be read.
pub fn secret_url(secret: Option<&Secret>) -> Option<String> {
    let bytes = secret?.data.as_ref()?.get(URL_KEY)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// Newest first: by creation, then by name.
pub fn sort_newest_first(deliveries: &mut [Arc<NotificationDelivery>]) {
    deliveries.sort_by(|a, b| {
        let key = |d: &NotificationDelivery| {
            (
                d.metadata.creation_timestamp.clone().map(|t| t.0),
                d.name_any(),
            )
        };
        key(b).cmp(&key(a))
    });
}

/// A channel's summary; its last delivery is the newest of `deliveries` that is its own, else
/// what berth-controller recorded.
pub fn channel_summary(
    channel: &NotificationChannel,
    url: Option<&str>,
    deliveries: &[Arc<NotificationDelivery>],
) -> NotificationChannelSummary {
    let id = channel.name_any();
    let mut own: Vec<Arc<NotificationDelivery>> = deliveries
        .iter()
        .filter(|d| d.spec.channel_id == id)
        .cloned()
        .collect();
    sort_newest_first(&mut own);
    let status = channel.status.clone().unwrap_or_default();
    let last_delivery = match own.first() {
        Some(newest) => {
            let written = newest.status.clone().unwrap_or_default();
            Some(LastDeliverySummary {
                delivery_id: newest.name_any(),
                status: newest.delivery_status(),
                at: written.delivered_at.or(written.last_attempt_at),
            })
        }
        None => status.last_delivery.map(|last| LastDeliverySummary {
            delivery_id: last.name,
            status: last.status,
            at: last.at,
        }),
    };
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
    NotificationChannelSummary {
        id,
        name: channel.spec.name.clone(),
        kind: channel.spec.kind,
        project_id: channel.spec.project_id.clone(),
        events: effective_events(&channel.spec),
        target: target(&channel.spec, url),
        last_delivery,
        created_at: created_at(&channel.metadata),
        ready: ready.is_some_and(|c| c.status == ConditionStatus::True),
        message: ready.map(|c| c.message.clone()).filter(|m| !m.is_empty()),
    }
}

/// A delivery's summary.
pub fn delivery_summary(delivery: &NotificationDelivery) -> NotificationDeliverySummary {
    let spec = &delivery.spec;
    let status = delivery.status.clone().unwrap_or_default();
    NotificationDeliverySummary {
        id: delivery.name_any(),
        channel_id: spec.channel_id.clone(),
        event: spec.event,
        subject: DeliverySubject {
            kind: spec.subject.kind.clone(),
            name: spec.subject.name.clone(),
            display_name: spec.subject.display_name.clone(),
        },
        project_id: spec.project_id.clone(),
        summary: spec.summary.clone(),
        occurred_at: spec.occurred_at.clone(),
        status: delivery.delivery_status(),
        attempts: status.attempts,
        last_attempt_at: status.last_attempt_at,
        delivered_at: status.delivered_at,
        last_error: status.last_error,
        link: spec.link.clone(),
        created_at: created_at(&delivery.metadata),
    }
}

/// A test delivery's name: `<channel>-test-<random>`, so repeated tests are not merged as
/// reports of one event are.
pub fn test_delivery_name(channel_id: &str) -> String {
    // Room for "-test-" and the random tail within an object name.
    let prefix: String = channel_id.chars().take(200).collect();
    new_id(&format!("{prefix}-test"))
}

/// The delivery a test makes: event `test` about the channel itself, labelled with it and
/// controlled by it (so it goes with it).
pub fn test_delivery(
    channel: &NotificationChannel,
    name: &str,
    now: Timestamp,
) -> NotificationDelivery {
    let id = channel.name_any();
    let mut delivery = NotificationDelivery::new(
        name,
        NotificationDeliverySpec {
            channel_id: id.clone(),
            event: NotificationEvent::Test,
            subject: Subject {
                kind: TEST_SUBJECT_KIND.into(),
                name: id.clone(),
                display_name: Some(channel.spec.name.clone()),
            },
            project_id: channel.spec.project_id.clone(),
            summary: TEST_SUMMARY.into(),
            occurred_at: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            link: None,
        },
    );
    delivery.metadata.namespace = channel.namespace();
    delivery.metadata.labels = Some(
        [
            (CHANNEL_LABEL.to_string(), id),
            (berth_crds::MANAGED_LABEL.to_string(), "true".to_string()),
        ]
        .into(),
    );
    delivery.metadata.owner_references = channel.controller_owner_ref(&()).map(|o| vec![o]);
    delivery
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::notification::{DeliveryStatus, NotificationDeliveryStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn body(value: serde_json::Value) -> CreateNotificationChannel {
        serde_json::from_value(value).unwrap()
    }

    fn channel(spec: NotificationChannelSpec) -> NotificationChannel {
        let mut channel = NotificationChannel::new("ntf-1", spec);
        channel.metadata.namespace = Some("org-a".into());
        channel.metadata.uid = Some("uid-1".into());
        channel
    }

    fn webhook() -> CreateNotificationChannel {
        body(json!({
            "name": " Ops ", "kind": "webhook", "url": "https://hooks.example.com/T0/B0/xyz",
            "events": ["deployment-failed", "deployment-succeeded", "deployment-failed"],
            "projectId": "prj-1",
        }))
    }

    #[test]
    fn a_webhook_channel_keeps_url_and_signing_secret_in_its_owned_secret() {
        let spec = new_channel_spec("ntf-1", &webhook());
        assert_eq!(spec.name, "Ops");
        assert_eq!(spec.secret_ref, "ntf-1-notification");
        assert_eq!(
            spec.events,
            [
                NotificationEvent::DeploymentFailed,
                NotificationEvent::DeploymentSucceeded
            ]
        );
        assert_eq!(spec.problem(), None);
        let channel = channel(spec);
        let signing = new_signing_secret();
        assert_eq!(signing.len(), 64);
        assert_ne!(signing, new_signing_secret());
        let secret = channel_secret(&channel, &webhook(), Some(&signing));
        assert_eq!(secret.metadata.name.as_deref(), Some("ntf-1-notification"));
        let data = secret.data.clone().unwrap();
        assert_eq!(data[URL_KEY].0, b"https://hooks.example.com/T0/B0/xyz");
        assert_eq!(data[SIGNING_SECRET_KEY].0, signing.as_bytes());
        assert!(!data.contains_key(SMTP_PASSWORD_KEY));
        let owner = &secret.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("NotificationChannel", "uid-1")
        );
        assert_eq!(secret.metadata.labels.unwrap()[CHANNEL_LABEL], "ntf-1");
    }

    #[test]
    fn an_email_channel_gets_defaults_and_only_its_password_in_the_secret() {
        let mail = body(json!({
            "name": "Mail", "kind": "email", "email": {
                "to": ["ops@example.com"], "from": "berth@example.com",
                "smtpHost": "smtp.example.com", "smtpUsername": "berth", "smtpPassword": "pw",
                "smtpCa": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            },
        }));
        let spec = new_channel_spec("ntf-2", &mail);
        let email = spec.email.clone().unwrap();
        assert_eq!((email.smtp_port, email.start_tls), (587, true));
        assert_eq!(spec.problem(), None);
        let channel = channel(spec);
        let data = channel_secret(&channel, &mail, None).data.unwrap();
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            [SMTP_CA_KEY, SMTP_PASSWORD_KEY]
        );
        let summary = channel_summary(&channel, None, &[]);
        assert_eq!(summary.target.as_deref(), Some("ops@example.com"));
        assert!(!summary.ready && summary.message.is_none());
    }

    #[test]
    fn a_summary_masks_the_url_and_spells_out_default_events() {
        let mut spec = new_channel_spec("ntf-1", &webhook());
        spec.events.clear();
        let channel = channel(spec);
        let summary = channel_summary(&channel, Some("https://hooks.example.com/T0/B0/xyz"), &[]);
        assert_eq!(
            summary.target.as_deref(),
            Some("https://hooks.example.com/****")
        );
        assert!(
            summary
                .events
                .contains(&NotificationEvent::DeploymentFailed)
        );
        assert!(
            !summary
                .events
                .contains(&NotificationEvent::DeploymentSucceeded)
        );
        assert!(!summary.events.contains(&NotificationEvent::Test));
        let text = serde_json::to_string(&summary).unwrap();
        assert!(!text.contains("T0/B0"), "{text}");
        assert_eq!(channel_summary(&channel, None, &[]).target, None);
    }

    #[test]
    fn a_test_delivery_is_about_its_channel_and_goes_with_it() {
        let channel = channel(new_channel_spec("ntf-1", &webhook()));
        let name = test_delivery_name("ntf-1");
        assert!(name.starts_with("ntf-1-test-"), "{name}");
        assert_ne!(name, test_delivery_name("ntf-1"));
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let delivery = test_delivery(&channel, &name, now);
        assert_eq!(delivery.spec.event, NotificationEvent::Test);
        assert_eq!(delivery.spec.subject.kind, "NotificationChannel");
        assert_eq!(delivery.spec.subject.name, "ntf-1");
        assert_eq!(delivery.spec.occurred_at, "2027-01-15T08:00:00Z");
        assert_eq!(delivery.spec.project_id.as_deref(), Some("prj-1"));
        assert_eq!(
            delivery.metadata.labels.clone().unwrap()[CHANNEL_LABEL],
            "ntf-1"
        );
        let owner = &delivery.metadata.owner_references.clone().unwrap()[0];
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.kind, "NotificationChannel");
        let summary = delivery_summary(&delivery);
        assert_eq!(summary.status, DeliveryStatus::Pending);
        assert_eq!(summary.summary, TEST_SUMMARY);
    }

    #[test]
    fn the_last_delivery_is_the_newest_and_shows_its_outcome() {
        let channel = channel(new_channel_spec("ntf-1", &webhook()));
        let at = |name: &str, second: i64, status: Option<DeliveryStatus>| {
            let mut d = test_delivery(&channel, name, Timestamp::from_second(0).unwrap());
            d.metadata.creation_timestamp = Some(Time(
                Timestamp::from_second(1_800_000_000 + second).unwrap(),
            ));
            d.status = status.map(|s| NotificationDeliveryStatus {
                status: Some(s),
                attempts: 1,
                delivered_at: Some("2027-01-15T08:00:01Z".into()),
                ..Default::default()
            });
            Arc::new(d)
        };
        let deliveries = vec![
            at("ntf-1-test-a", 1, Some(DeliveryStatus::Failed)),
            at("ntf-1-test-b", 9, Some(DeliveryStatus::Delivered)),
            at("ntf-1-test-c", 5, None),
        ];
        let last = channel_summary(&channel, None, &deliveries)
            .last_delivery
            .unwrap();
        assert_eq!(last.delivery_id, "ntf-1-test-b");
        assert_eq!(last.status, DeliveryStatus::Delivered);
        assert_eq!(last.at.as_deref(), Some("2027-01-15T08:00:01Z"));
    }
}
