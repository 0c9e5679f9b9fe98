//! NotificationChannel and NotificationDelivery: where an organization hears of failures, and
//! each message sent there. A channel's target URL, signing secret and SMTP password live in a
//! Secret it names, never in its spec or status. A delivery's name carries its channel, event,
//! subject and time window, so one event makes one message per channel even when several
//! reconciles report it, and a flapping app does not flood.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Condition;
use crate::limits::{NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};

pub use berth_vocabulary::notifications::{ChannelKind, DeliveryStatus, NotificationEvent};

/// Label on a delivery naming its channel.
pub const CHANNEL_LABEL: &str = "berth.dev/notification-channel";
/// Key of the channel Secret holding the webhook or Slack URL.
pub const URL_KEY: &str = "url";
/// Key of the channel Secret holding a webhook's signing secret.
pub const SIGNING_SECRET_KEY: &str = "signingSecret";
/// Key of the channel Secret holding the SMTP password.
pub const SMTP_PASSWORD_KEY: &str = "smtpPassword";
/// Key of the channel Secret holding a PEM CA trusted for the mail server beside the built-in
/// roots (a private mail server's).
pub const SMTP_CA_KEY: &str = "smtpCa";
/// The same event about the same object reaches a channel once within this many seconds.
pub const DEDUPLICATION_WINDOW_SECONDS: i64 = 600;
/// The header a webhook's signature travels in: `sha256=<hex HMAC-SHA256 of the body>`.
pub const SIGNATURE_HEADER: &str = "X-Berth-Signature-256";

/// Where an organization (or one project) hears of failures.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "NotificationChannel",
    namespaced,
    shortname = "bnotify",
    category = "berth",
    doc = "Where an organization hears of failures: a signed webhook, a Slack-compatible webhook or email.",
    status = "NotificationChannelStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Last Delivery","type":"string","jsonPath":".status.lastDelivery.status"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelSpec {
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// `webhook`, `slack` or `email`.
    pub kind: ChannelKind,
    /// Only events of this Project (its id); every project's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub project_id: Option<String>,
    /// The events delivered; when empty, every failure and recovery (not
    /// `deployment-succeeded`, which must be named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<NotificationEvent>,
    /// The Secret (same namespace) holding `url` (webhook, slack), `signingSecret` (webhook)
    /// and `smtpPassword` and `smtpCa` (email, when the server asks for a login or has a private
    /// CA).
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub secret_ref: String,
    /// For `email`: the recipients and the SMTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<EmailSettings>,
}

/// Mail settings of an `email` channel.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailSettings {
    /// Recipients.
    #[schemars(length(min = 1, max = 20), inner(length(min = 3, max = 320)))]
    pub to: Vec<String>,
    /// Sender address.
    #[schemars(length(min = 3, max = 320))]
    pub from: String,
    /// SMTP server host.
    #[schemars(length(min = 1, max = 253))]
    pub smtp_host: String,
    /// SMTP port (default 587).
    #[serde(default = "default_smtp_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub smtp_port: i64,
    /// SMTP user name, when the server asks for a login (its password: `smtpPassword`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 320))]
    pub smtp_username: Option<String>,
    /// Whether the connection is upgraded with STARTTLS (default true; false only for a relay
    /// on a trusted network).
    #[serde(default = "crate::common::default_true")]
    pub start_tls: bool,
}

fn default_smtp_port() -> i64 {
    587
}

impl NotificationChannelSpec {
    /// Whether the channel delivers `event`.
    pub fn follows(&self, event: NotificationEvent) -> bool {
        if event == NotificationEvent::Test {
            return true;
        }
        if self.events.is_empty() {
            return event.followed_by_default();
        }
        self.events.contains(&event)
    }

    /// What the schema cannot refuse, naming the field.
    pub fn problem(&self) -> Option<String> {
        match (self.kind, &self.email) {
            (ChannelKind::Email, None) => {
                Some("spec.email is required for an email channel".to_string())
            }
            (ChannelKind::Webhook | ChannelKind::Slack, Some(_)) => {
                Some("spec.email is only for an email channel".to_string())
            }
            _ => None,
        }
    }
}

/// What the controller observed about a channel.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelStatus {
    /// The spec generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The newest delivery's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivery: Option<LastDelivery>,
    /// `Ready` while its Secret holds what its kind needs and the last delivery did not fail.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The newest delivery of a channel.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastDelivery {
    /// Name of the NotificationDelivery.
    pub name: String,
    pub status: DeliveryStatus,
    /// When it ended or was last tried (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// One message for one channel.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "NotificationDelivery",
    namespaced,
    shortname = "bdelivery",
    category = "berth",
    doc = "One message of an event for one notification channel, retried with backoff until delivered.",
    status = "NotificationDeliveryStatus",
    printcolumn = r#"{"name":"Channel","type":"string","jsonPath":".spec.channelId"}"#,
    printcolumn = r#"{"name":"Event","type":"string","jsonPath":".spec.event"}"#,
    printcolumn = r#"{"name":"Subject","type":"string","jsonPath":".spec.subject.name"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Attempts","type":"integer","jsonPath":".status.attempts"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDeliverySpec {
    /// Id (object name) of the NotificationChannel.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub channel_id: String,
    pub event: NotificationEvent,
    /// The object the event is about.
    pub subject: Subject,
    /// Project of the subject, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The cause in one line (no secret).
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub summary: String,
    /// When the event happened (RFC 3339).
    pub occurred_at: String,
    /// Where in the console the subject is, when the controller knows the console's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = TEXT_MAX))]
    pub link: Option<String>,
}

/// The object an event is about.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// Its kind, such as `Resource`, `Deployment`, `ScheduledTaskRun`, `Server`.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
    /// Its id (object name).
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub name: String,
    /// Its display name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = NAME_MAX))]
    pub display_name: Option<String>,
}

/// How a delivery went.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDeliveryStatus {
    /// `pending`, `delivered` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeliveryStatus>,
    /// Attempts made.
    #[serde(default)]
    pub attempts: i64,
    /// When the last attempt was made (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<String>,
    /// When it was delivered (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    /// Why the last attempt failed (no secret: the target URL is not in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// `Ready` is True once delivered, False once failed, Unknown while attempts remain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl NotificationDelivery {
    /// Where the delivery stands (`pending` until the controller wrote a status).
    pub fn delivery_status(&self) -> DeliveryStatus {
        self.status
            .as_ref()
            .and_then(|s| s.status)
            .unwrap_or(DeliveryStatus::Pending)
    }
}

/// Name of the delivery of `event` about `subject` to `channel` at `occurred_unix`: the same
/// for every report of it within [`DEDUPLICATION_WINDOW_SECONDS`].
pub fn delivery_name(
    channel: &str,
    event: NotificationEvent,
    subject: &Subject,
    occurred_unix: i64,
) -> String {
    let window = occurred_unix.div_euclid(DEDUPLICATION_WINDOW_SECONDS);
    let key = format!(
        "{channel}\n{}\n{}\n{}\n{window}",
        event.as_str(),
        subject.kind,
        subject.name
    );
    let digest = hex::encode(&Sha256::digest(key.as_bytes())[..8]);
    let prefix: String = channel.chars().take(OBJECT_NAME_MAX - 17).collect();
    format!("{prefix}-{digest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(name: &str) -> Subject {
        Subject {
            kind: "Resource".into(),
            name: name.into(),
            display_name: None,
        }
    }

    #[test]
    fn one_event_about_one_object_is_one_delivery_per_window() {
        let event = NotificationEvent::ResourceUnhealthy;
        let first = delivery_name("ops", event, &subject("web"), 1_200);
        assert_eq!(first, delivery_name("ops", event, &subject("web"), 1_799));
        assert_ne!(first, delivery_name("ops", event, &subject("web"), 1_800));
        assert_ne!(first, delivery_name("ops", event, &subject("api"), 1_200));
        let recovered = NotificationEvent::ResourceRecovered;
        assert_ne!(
            first,
            delivery_name("ops", recovered, &subject("web"), 1_200)
        );
        assert!(first.starts_with("ops-"));
    }

    #[test]
    fn a_channel_without_events_hears_failures_not_successes() {
        let spec: NotificationChannelSpec = serde_json::from_value(serde_json::json!({
            "name": "Ops", "kind": "webhook", "secretRef": "ops-notification"
        }))
        .unwrap();
        assert!(spec.follows(NotificationEvent::DeploymentFailed));
        assert!(!spec.follows(NotificationEvent::DeploymentSucceeded));
        assert!(spec.follows(NotificationEvent::Test));
        assert_eq!(spec.problem(), None);
    }
}
