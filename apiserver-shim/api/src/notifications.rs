//! Notification channels and their deliveries (Berth's `/notification-channels` and
//! `/notification-deliveries` routes; Appaloft has none): where an organization (or one
//! project) hears of failures — a signed webhook, a Slack-compatible webhook or email — and
//! each message sent there. A channel's URL, signing secret and SMTP password live in its
//! Secret: a create answers the signing secret once, and reads show the target masked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{NAME_MAX, OBJECT_NAME_MAX, TEXT_MAX};
use crate::validate::{Checked, FieldError, bounded, in_range, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::notifications::{ChannelKind, DeliveryStatus, NotificationEvent};

/// Answer of `POST /notification-channels`.
pub const CHANNEL_COMMAND_SCHEMA: &str = "notification-channels.command/v1";
/// `GET /notification-channels`.
pub const CHANNEL_LIST_SCHEMA: &str = "notification-channels.list/v1";
/// `GET /notification-channels/{channelId}`.
pub const CHANNEL_SHOW_SCHEMA: &str = "notification-channels.show/v1";
/// `DELETE /notification-channels/{channelId}`.
pub const CHANNEL_DELETE_SCHEMA: &str = "notification-channels.delete/v1";
/// `POST /notification-channels/{channelId}/test`.
pub const CHANNEL_TEST_SCHEMA: &str = "notification-channels.test/v1";
/// `GET /notification-deliveries`.
pub const DELIVERY_LIST_SCHEMA: &str = "notification-deliveries.list/v1";
/// `GET /notification-deliveries/{deliveryId}`.
pub const DELIVERY_SHOW_SCHEMA: &str = "notification-deliveries.show/v1";
/// Most items of one page of a list; also the default.
pub const PAGE_LIMIT_MAX: u64 = 100;
/// Most recipients of an email channel (the CRD's limit).
pub const RECIPIENTS_MAX: usize = 20;
/// Longest email address (the CRD's limit).
pub const ADDRESS_MAX: usize = 320;
/// Longest SMTP host name.
pub const SMTP_HOST_MAX: usize = 253;
/// Longest SMTP password.
pub const SMTP_PASSWORD_MAX: usize = 1024;
/// Longest SMTP CA bundle (PEM).
pub const SMTP_CA_MAX: usize = 65_536;
/// The SMTP port when the request names none (submission with STARTTLS).
pub const DEFAULT_SMTP_PORT: i64 = 587;
/// What replaces the path of a target URL on reads.
pub const MASK: &str = "****";

/// `POST /notification-channels`: a channel of the caller's organization (admins).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateNotificationChannel {
    /// Display name.
    pub name: String,
    /// `webhook` (a JSON POST signed `X-Berth-Signature-256: sha256=<hex HMAC-SHA256>`),
    /// `slack` (a Slack-compatible incoming webhook) or `email`.
    pub kind: ChannelKind,
    /// Only this project's events; every project's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The events delivered; when absent or empty, every failure and recovery
    /// (`deployment-succeeded` must be named). `test` cannot be named: a test message is
    /// always delivered to the channel tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<NotificationEvent>>,
    /// The http(s) URL a `webhook` or `slack` channel posts to (required for those, refused
    /// for `email`). Kept in the channel's Secret; reads show only its scheme and host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Recipients and SMTP server of an `email` channel (required for it, refused for the
    /// others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<EmailChannelInput>,
}

/// The mail settings of an `email` channel.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EmailChannelInput {
    /// Recipients (1-20 addresses).
    pub to: Vec<String>,
    /// Sender address.
    pub from: String,
    /// SMTP server host name or address.
    pub smtp_host: String,
    /// SMTP port (1-65535, default 587).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_port: Option<i64>,
    /// SMTP user name, when the server asks for a login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_username: Option<String>,
    /// SMTP password (with `smtpUsername`). Kept in the channel's Secret, never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_password: Option<String>,
    /// Whether the connection is upgraded with STARTTLS (default true; false only for a relay
    /// on a trusted network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_tls: Option<bool>,
    /// A private mail server's CA (PEM certificates), trusted beside the built-in roots. Kept
    /// in the channel's Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_ca: Option<String>,
}

impl CreateNotificationChannel {
    /// Every rule the request can be checked by without the cluster; a refusal names the
    /// field (`url`, `email.to[1]`, …).
    pub fn validate(&self) -> Checked {
        bounded("name", &self.name, NAME_MAX)?;
        optional_text("projectId", self.project_id.as_ref(), OBJECT_NAME_MAX)?;
        if let Some(events) = &self.events
            && let Some(index) = events.iter().position(|e| *e == NotificationEvent::Test)
        {
            return Err(FieldError::new(
                &format!("events[{index}]"),
                "events cannot name test: a test message is always delivered to the channel tested",
            ));
        }
        match self.kind {
            ChannelKind::Webhook | ChannelKind::Slack => {
                if self.email.is_some() {
                    return Err(FieldError::new(
                        "email",
                        "email is only for an email channel",
                    ));
                }
                let Some(url) = &self.url else {
                    return Err(FieldError::new(
                        "url",
                        format!("url is required for a {} channel", kind_name(self.kind)),
                    ));
                };
                http_url("url", url)
            }
            ChannelKind::Email => {
                if self.url.is_some() {
                    return Err(FieldError::new(
                        "url",
                        "url is only for a webhook or slack channel",
                    ));
                }
                match &self.email {
                    Some(email) => email.validate(),
                    None => Err(FieldError::new(
                        "email",
                        "email (to, from, smtpHost) is required for an email channel",
                    )),
                }
            }
        }
    }

    /// The events as stored: in the order given, each once.
    pub fn events(&self) -> Vec<NotificationEvent> {
        let mut events: Vec<NotificationEvent> = Vec::new();
        for event in self.events.iter().flatten() {
            if !events.contains(event) {
                events.push(*event);
            }
        }
        events
    }
}

impl EmailChannelInput {
    pub fn validate(&self) -> Checked {
        if self.to.is_empty() || self.to.len() > RECIPIENTS_MAX {
            return Err(FieldError {
                min: Some(1),
                max: Some(RECIPIENTS_MAX as i64),
                ..FieldError::new(
                    "email.to",
                    format!("email.to must hold 1 to {RECIPIENTS_MAX} addresses"),
                )
            });
        }
        for (index, address) in self.to.iter().enumerate() {
            email_address(&format!("email.to[{index}]"), address)?;
        }
        email_address("email.from", &self.from)?;
        smtp_host("email.smtpHost", &self.smtp_host)?;
        in_range("email.smtpPort", self.smtp_port, 1, 65_535)?;
        optional_text(
            "email.smtpUsername",
            self.smtp_username.as_ref(),
            ADDRESS_MAX,
        )?;
        if let Some(password) = &self.smtp_password {
            if self.smtp_username.is_none() {
                return Err(FieldError::new(
                    "email.smtpPassword",
                    "email.smtpPassword needs email.smtpUsername (the login it belongs to)",
                ));
            }
            if password.is_empty() || password.chars().count() > SMTP_PASSWORD_MAX {
                return Err(FieldError::new(
                    "email.smtpPassword",
                    format!("email.smtpPassword must be 1 to {SMTP_PASSWORD_MAX} characters"),
                ));
            }
        }
        if let Some(ca) = &self.smtp_ca
            && (ca.len() > SMTP_CA_MAX || !ca.contains("-----BEGIN CERTIFICATE-----"))
        {
            return Err(FieldError::new(
                "email.smtpCa",
                format!(
                    "email.smtpCa must be PEM certificates (-----BEGIN CERTIFICATE-----), at most {SMTP_CA_MAX} bytes"
                ),
            ));
        }
        Ok(())
    }
}

/// `DELETE /notification-channels/{channelId}` (an empty body is accepted). Its Secret and
/// the deliveries it owns go with it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteNotificationChannel {}

/// `POST /notification-channels/{channelId}/test` (an empty body is accepted): a test message
/// to the channel, whatever events it follows.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestNotificationChannel {}

/// The API's word for a channel kind.
pub fn kind_name(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::Webhook => "webhook",
        ChannelKind::Slack => "slack",
        ChannelKind::Email => "email",
    }
}

/// An http(s) URL with a host, no spaces, at most [`TEXT_MAX`] characters.
pub fn http_url(field: &str, value: &str) -> Checked {
    let refused = || {
        FieldError::new(
            field,
            format!(
                "{field} must be an http:// or https:// URL with a host, such as https://hooks.example.com/T0/B0/x"
            ),
        )
    };
    if value.chars().count() > TEXT_MAX {
        return Err(FieldError::new(
            field,
            format!("{field} must be at most {TEXT_MAX} characters"),
        ));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(refused());
    }
    match split_url(value) {
        Some((_, host)) if valid_host(host) => Ok(()),
        _ => Err(refused()),
    }
}

/// Scheme and host (no user info, port kept) of an http(s) URL.
fn split_url(value: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = value.split_once("://")?;
    let scheme = ["http", "https"]
        .into_iter()
        .find(|s| s.eq_ignore_ascii_case(scheme))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    Some((scheme, host))
}

fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with(':')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'))
}

/// A target URL as reads show it: scheme and host, the rest masked
/// (`https://hooks.example.com/****`). User info, path, query and fragment are never shown.
pub fn masked_url(value: &str) -> String {
    match split_url(value.trim()) {
        Some((scheme, host)) if valid_host(host) => format!("{scheme}://{host}/{MASK}"),
        _ => MASK.to_string(),
    }
}

/// A plain address `name@example.com`.
pub fn email_address(field: &str, value: &str) -> Checked {
    let valid = value.chars().count() <= ADDRESS_MAX
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        && !value.contains(['<', '>', ',', ';'])
        && value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.contains('@')
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        });
    if valid {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!("{field} must be an email address like name@example.com"),
        ))
    }
}

/// A host name or IP address, without scheme or port.
pub fn smtp_host(field: &str, value: &str) -> Checked {
    bounded(field, value, SMTP_HOST_MAX)?;
    let valid = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        && !value.starts_with(['.', '-']);
    if valid {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!(
                "{field} must be a host name or IP address such as smtp.example.com (the port goes in smtpPort)"
            ),
        ))
    }
}

/// The newest delivery of a channel.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastDeliverySummary {
    pub delivery_id: String,
    /// `pending`, `delivered` or `failed`.
    pub status: DeliveryStatus,
    /// When it was delivered, or last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A channel as reads show it: never its URL's path, signing secret or SMTP password.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelSummary {
    pub id: String,
    pub name: String,
    /// `webhook`, `slack` or `email`.
    pub kind: ChannelKind,
    /// Only this project's events; every project's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The events delivered (the default set spelled out when the channel names none).
    pub events: Vec<NotificationEvent>,
    /// Where messages go, masked: a URL's scheme and host (`https://hooks.example.com/****`),
    /// an email channel's recipients. Absent when the channel's Secret holds no URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The newest delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivery: Option<LastDeliverySummary>,
    pub created_at: String,
    /// Whether berth-controller found what the channel needs and its last delivery did not
    /// fail (its `Ready` condition).
    pub ready: bool,
    /// The `Ready` condition's message; absent until berth-controller checked the channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Answer of `POST /notification-channels` (201).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelCommandResponse {
    /// `notification-channels.command/v1`.
    pub schema_version: String,
    pub channel: NotificationChannelSummary,
    /// A webhook channel's signing secret (64 hex digits): shown in this answer only, never
    /// again. A receiver checks `X-Berth-Signature-256: sha256=<hex HMAC-SHA256 of the body>`
    /// with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
}

/// `GET /notification-channels`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelList {
    /// `notification-channels.list/v1`.
    pub schema_version: String,
    pub items: Vec<NotificationChannelSummary>,
    pub generated_at: String,
}

/// `GET /notification-channels/{channelId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NotificationChannelShow {
    /// `notification-channels.show/v1`.
    pub schema_version: String,
    pub channel: NotificationChannelSummary,
    pub generated_at: String,
}

/// Answer of `DELETE /notification-channels/{channelId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteNotificationChannelResponse {
    /// `notification-channels.delete/v1`.
    pub schema_version: String,
    pub channel_id: String,
    /// `deleted`.
    pub status: String,
    pub deleted_at: String,
}

/// The object an event is about.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeliverySubject {
    /// Its kind, such as `Resource`, `Deployment`, `ScheduledTaskRun`, `Server`,
    /// `NotificationChannel` (a test).
    pub kind: String,
    /// Its id.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// One message of an event for one channel.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDeliverySummary {
    pub id: String,
    pub channel_id: String,
    pub event: NotificationEvent,
    pub subject: DeliverySubject,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The cause in one line.
    pub summary: String,
    pub occurred_at: String,
    /// `pending` (until delivered; retried with backoff), `delivered` or `failed`.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    /// Why the last attempt failed (never the target URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Where in the console the subject is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    pub created_at: String,
}

/// Answer of `POST /notification-channels/{channelId}/test` (202): the delivery, `pending`
/// until berth-controller sends it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TestNotificationChannelResponse {
    /// `notification-channels.test/v1`.
    pub schema_version: String,
    pub delivery: NotificationDeliverySummary,
}

/// `GET /notification-deliveries`, newest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDeliveryList {
    /// `notification-deliveries.list/v1`.
    pub schema_version: String,
    pub items: Vec<NotificationDeliverySummary>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub generated_at: String,
}

/// `GET /notification-deliveries/{deliveryId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDeliveryShow {
    /// `notification-deliveries.show/v1`.
    pub schema_version: String,
    pub delivery: NotificationDeliverySummary,
    pub generated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn create(base: Value, patch: Value) -> CreateNotificationChannel {
        let mut body = base;
        for (key, value) in patch.as_object().unwrap() {
            match value {
                Value::Null => body.as_object_mut().unwrap().remove(key),
                value => body
                    .as_object_mut()
                    .unwrap()
                    .insert(key.clone(), value.clone()),
            };
        }
        serde_json::from_value(body).unwrap()
    }

    fn webhook(patch: Value) -> CreateNotificationChannel {
        let base =
            json!({"name": "Ops", "kind": "webhook", "url": "https://hooks.example.com/a/b?c=d"});
        create(base, patch)
    }

    fn email(patch: Value) -> CreateNotificationChannel {
        let base = json!({"name": "Mail", "kind": "email", "email": {
            "to": ["ops@example.com", "dev@example.org"], "from": "berth@example.com",
            "smtpHost": "smtp.example.com",
        }});
        create(base, patch)
    }

    #[test]
    fn a_create_request_names_the_field_it_breaks() {
        assert!(webhook(json!({})).validate().is_ok());
        assert!(webhook(json!({"kind": "slack"})).validate().is_ok());
        assert!(email(json!({})).validate().is_ok());
        let mail = |settings: Value| email(json!({"email": settings}));
        let base = json!({"to": ["a@example.com"], "from": "b@example.com", "smtpHost": "smtp.example.com"});
        let with = |patch: Value| {
            let mut settings = base.clone();
            for (key, value) in patch.as_object().unwrap() {
                settings[key] = value.clone();
            }
            mail(settings)
        };
        for (body, field) in [
            (webhook(json!({"url": null})), "url"),
            (webhook(json!({"url": "ftp://hooks.example.com/x"})), "url"),
            (webhook(json!({"url": "https://"})), "url"),
            (webhook(json!({"url": "https:///path"})), "url"),
            (webhook(json!({"url": "hooks.example.com/x"})), "url"),
            (
                webhook(json!({"url": "https://hooks.example.com/a b"})),
                "url",
            ),
            (webhook(json!({"name": " "})), "name"),
            (webhook(json!({"projectId": ""})), "projectId"),
            (
                webhook(json!({"events": ["deployment-failed", "test"]})),
                "events[1]",
            ),
            (webhook(json!({"email": base.clone()})), "email"),
            (email(json!({"email": null})), "email"),
            (email(json!({"url": "https://hooks.example.com/x"})), "url"),
            (with(json!({"to": []})), "email.to"),
            (
                with(json!({"to": ["a@example.com", "not-an-address"]})),
                "email.to[1]",
            ),
            (with(json!({"from": "Berth <b@example.com>"})), "email.from"),
            (
                with(json!({"smtpHost": "smtp://mail.example.com"})),
                "email.smtpHost",
            ),
            (with(json!({"smtpHost": ""})), "email.smtpHost"),
            (with(json!({"smtpPort": 0})), "email.smtpPort"),
            (with(json!({"smtpPort": 70_000})), "email.smtpPort"),
            (with(json!({"smtpPassword": "pw"})), "email.smtpPassword"),
            (with(json!({"smtpCa": "not a certificate"})), "email.smtpCa"),
        ] {
            let error = body.validate().unwrap_err();
            assert_eq!(error.field, field, "{body:?}: {error}");
        }
        let login = with(json!({"smtpUsername": "berth", "smtpPassword": "pw", "smtpPort": 465}));
        assert!(login.validate().is_ok());
    }

    #[test]
    fn unknown_events_and_kinds_are_refused_when_read() {
        let body = json!({"name": "x", "kind": "webhook", "url": "https://h.example.com", "events": ["deploy-failed"]});
        assert!(serde_json::from_value::<CreateNotificationChannel>(body).is_err());
        let body = json!({"name": "x", "kind": "sms"});
        assert!(serde_json::from_value::<CreateNotificationChannel>(body).is_err());
        let body = webhook(json!({"events": ["crash-loop", "deployment-failed", "crash-loop"]}));
        assert_eq!(
            body.events(),
            [
                NotificationEvent::CrashLoop,
                NotificationEvent::DeploymentFailed
            ]
        );
    }

    #[test]
    fn a_masked_url_keeps_only_scheme_and_host() {
        assert_eq!(
            masked_url("https://hooks.example.com/services/T0/B0/secret?x=1"),
            "https://hooks.example.com/****"
        );
        assert_eq!(
            masked_url("http://user:pw@10.0.0.5:8080/hook"),
            "http://10.0.0.5:8080/****"
        );
        assert_eq!(
            masked_url("HTTPS://Hooks.example.com"),
            "https://Hooks.example.com/****"
        );
        assert_eq!(masked_url("not a url"), "****");
    }
}
