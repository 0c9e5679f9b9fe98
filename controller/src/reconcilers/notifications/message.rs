//! What a delivery says, decided without I/O: the signed JSON of a webhook, the text of a
//! Slack-compatible message, the subject and body of a mail. Each names the object, the cause
//! in one line and, when the console's address is known, a link to it.

use berth_crds::notification::{NotificationDelivery, NotificationEvent};
use hmac::{Hmac, Mac};
use kube::ResourceExt;
use serde_json::{Value, json};
use sha2::Sha256;

/// The version of the webhook body's shape.
pub const WEBHOOK_SCHEMA: &str = "berth.notification/v1";

/// A person's words for an event.
pub fn event_words(event: NotificationEvent) -> &'static str {
    match event {
        NotificationEvent::DeploymentFailed => "deployment failed",
        NotificationEvent::DeploymentSucceeded => "deployment succeeded",
        NotificationEvent::ResourceUnhealthy => "unhealthy",
        NotificationEvent::ResourceRecovered => "recovered",
        NotificationEvent::CrashLoop => "crashed and was restarted",
        NotificationEvent::ScheduledTaskFailed => "scheduled task failed",
        NotificationEvent::ScheduledTaskMissed => "scheduled task missed its slot",
        NotificationEvent::ServerUnreachable => "server unreachable",
        NotificationEvent::ThresholdCrossed => "threshold crossed",
        NotificationEvent::CertificateExpiring => "certificate expiring",
        NotificationEvent::CertificateFailed => "certificate not obtained",
        NotificationEvent::BackupFailed => "backup failed",
        NotificationEvent::BackupLate => "backup taken late",
        NotificationEvent::Test => "test message",
    }
}

/// One line naming the event and its object: `[Berth] deployment failed: Deployment dep-web-3`.
pub fn headline(delivery: &NotificationDelivery) -> String {
    let subject = &delivery.spec.subject;
    let name = subject.display_name.as_deref().unwrap_or(&subject.name);
    format!(
        "[Berth] {}: {} {name}",
        event_words(delivery.spec.event),
        subject.kind
    )
}

/// The JSON a webhook receives.
pub fn webhook_body(delivery: &NotificationDelivery) -> Vec<u8> {
    let spec = &delivery.spec;
    let body = json!({
        "schemaVersion": WEBHOOK_SCHEMA,
        "deliveryId": delivery.name_any(),
        "channelId": spec.channel_id,
        "event": spec.event.as_str(),
        "occurredAt": spec.occurred_at,
        "namespace": delivery.namespace(),
        "projectId": spec.project_id,
        "subject": spec.subject,
        "summary": spec.summary,
        "link": spec.link,
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// `sha256=<hex>`: the HMAC-SHA256 of `body` under the channel's signing secret.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A Slack incoming webhook's message (Mattermost and Discord's Slack endpoints take it too).
pub fn slack_body(delivery: &NotificationDelivery) -> Value {
    json!({ "text": text(delivery) })
}

/// The plain text of a message: headline, cause, link.
pub fn text(delivery: &NotificationDelivery) -> String {
    let mut text = format!("{}\n{}", headline(delivery), delivery.spec.summary);
    if let Some(link) = &delivery.spec.link {
        text.push('\n');
        text.push_str(link);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::notification::{NotificationDeliverySpec, Subject};

    fn delivery() -> NotificationDelivery {
        let mut delivery = NotificationDelivery::new(
            "ops-0011223344556677",
            NotificationDeliverySpec {
                channel_id: "ops".into(),
                event: NotificationEvent::DeploymentFailed,
                subject: Subject {
                    kind: "Deployment".into(),
                    name: "dep-web-3".into(),
                    display_name: None,
                },
                project_id: Some("shop".into()),
                summary: "HealthCheckFailed: /healthz answered 500".into(),
                occurred_at: "2026-12-03T02:00:00Z".into(),
                link: Some("https://berth.example/resources/web".into()),
            },
        );
        delivery.metadata.namespace = Some("org-acme".into());
        delivery
    }

    #[test]
    fn a_webhook_names_the_event_object_and_cause_and_is_signed_over_its_body() {
        let body = webhook_body(&delivery());
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["event"], "deployment-failed");
        assert_eq!(value["subject"]["name"], "dep-web-3");
        assert_eq!(value["summary"], "HealthCheckFailed: /healthz answered 500");
        // RFC 4231 test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_slack_message_is_one_headline_the_cause_and_the_link() {
        assert_eq!(
            slack_body(&delivery())["text"],
            "[Berth] deployment failed: Deployment dep-web-3\nHealthCheckFailed: /healthz \
             answered 500\nhttps://berth.example/resources/web"
        );
    }
}
