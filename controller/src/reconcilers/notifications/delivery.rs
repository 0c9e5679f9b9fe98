//! NotificationDelivery: sends one message to its channel, retried with backoff (2, 4, 8,
//! 16 s) up to [`ATTEMPTS`] times; each attempt's outcome is on the delivery, and the channel's
//! status says how its newest delivery went. A failing channel costs only its own retries.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::notification::{
    ChannelKind, DeliveryStatus, LastDelivery, NotificationChannel, NotificationChannelStatus,
    NotificationDelivery, NotificationDeliveryStatus, SIGNATURE_HEADER, SIGNING_SECRET_KEY,
    SMTP_CA_KEY, SMTP_PASSWORD_KEY, URL_KEY,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use super::message;
use super::send::{self, Mail};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::policy::{drain, error_policy};
use crate::status::StatusWriter;

const KIND: &str = "NotificationDelivery";
/// Attempts before a delivery is `failed`.
pub const ATTEMPTS: i64 = 5;

/// Runs the delivery controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<NotificationDelivery>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(delivery: Arc<NotificationDelivery>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    if delivery.delivery_status() != DeliveryStatus::Pending {
        return Ok(Action::await_change());
    }
    // A status write wakes the delivery at once: the next attempt waits for its backoff.
    if let Some(wait) = not_yet(&delivery, Timestamp::now()) {
        return Ok(Action::requeue(wait));
    }
    let namespace = delivery
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let client = context.client.clone();
    let channels = Api::<NotificationChannel>::namespaced(client.clone(), &namespace);
    let deliveries = Api::<NotificationDelivery>::namespaced(client.clone(), &namespace);
    let channel = channels.get_opt(&delivery.spec.channel_id).await?;
    let outcome = match &channel {
        Some(channel) => attempt(&context, &namespace, channel, &delivery).await,
        None => Err("its channel was deleted".to_string()),
    };
    let status = after_attempt(&delivery, outcome, Timestamp::now());
    StatusWriter::new(&deliveries, &delivery)
        .apply(delivery.status.as_ref(), &status)
        .await?;
    let state = status.status.unwrap_or(DeliveryStatus::Pending);
    if let Some(channel) = channel
        && state != DeliveryStatus::Pending
    {
        record_on_channel(&channels, &channel, &delivery, &status).await?;
    }
    Ok(match state {
        DeliveryStatus::Pending => Action::requeue(backoff(status.attempts)),
        _ => Action::await_change(),
    })
}

/// The status after one attempt: delivered, pending (tried again later) or failed.
fn after_attempt(
    delivery: &NotificationDelivery,
    outcome: std::result::Result<(), String>,
    now: Timestamp,
) -> NotificationDeliveryStatus {
    let previous = delivery.status.clone().unwrap_or_default();
    let attempts = previous.attempts + 1;
    let at = Some(now.to_string());
    let mut status = match outcome {
        Ok(()) => NotificationDeliveryStatus {
            status: Some(DeliveryStatus::Delivered),
            attempts,
            last_attempt_at: at.clone(),
            delivered_at: at,
            last_error: None,
            conditions: previous.conditions,
        },
        Err(error) => NotificationDeliveryStatus {
            status: Some(if attempts >= ATTEMPTS {
                DeliveryStatus::Failed
            } else {
                DeliveryStatus::Pending
            }),
            attempts,
            last_attempt_at: at,
            delivered_at: None,
            last_error: Some(error),
            conditions: previous.conditions,
        },
    };
    let (ready, reason, message) = match status.status {
        Some(DeliveryStatus::Delivered) => (ConditionStatus::True, "Delivered", "delivered".into()),
        Some(DeliveryStatus::Failed) => (
            ConditionStatus::False,
            "DeliveryFailed",
            format!("failed after {attempts} attempts: {}", last_error(&status)),
        ),
        _ => (
            ConditionStatus::Unknown,
            "Retrying",
            format!(
                "attempt {attempts} of {ATTEMPTS} failed: {}",
                last_error(&status)
            ),
        ),
    };
    let generation = delivery.metadata.generation;
    condition::merge(
        &mut status.conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    status
}

fn last_error(status: &NotificationDeliveryStatus) -> &str {
    status.last_error.as_deref().unwrap_or_default()
}

/// How long until the next attempt of a pending delivery is due; `None` when it is.
fn not_yet(delivery: &NotificationDelivery, now: Timestamp) -> Option<Duration> {
    let status = delivery.status.as_ref()?;
    let last: Timestamp = status.last_attempt_at.as_deref()?.parse().ok()?;
    let due = last + backoff(status.attempts);
    let wait = now.duration_until(due);
    (wait.is_positive()).then(|| Duration::try_from(wait).unwrap_or_default())
}

/// How long after attempt `attempts` the next one comes: 2, 4, 8, 16 s.
fn backoff(attempts: i64) -> Duration {
    let exponent = u32::try_from(attempts.clamp(1, 4)).unwrap_or(4);
    Duration::from_secs(2u64.pow(exponent))
}

/// One attempt to deliver, with what the channel's Secret holds.
async fn attempt(
    context: &Context,
    namespace: &str,
    channel: &NotificationChannel,
    delivery: &NotificationDelivery,
) -> std::result::Result<(), String> {
    if let Some(problem) = channel.spec.problem() {
        return Err(problem);
    }
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let secret_name = &channel.spec.secret_ref;
    let secret = secrets
        .get_opt(secret_name)
        .await
        .map_err(|error| format!("its Secret {secret_name} could not be read: {error}"))?
        .ok_or_else(|| format!("its Secret {secret_name} does not exist"))?;
    let value = |key: &str| {
        secret
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .map(|bytes| bytes.0.clone())
    };
    let text = |key: &str| value(key).and_then(|bytes| String::from_utf8(bytes).ok());
    let url = || text(URL_KEY).ok_or_else(|| format!("its Secret {secret_name} has no `url`"));
    match channel.spec.kind {
        ChannelKind::Webhook => {
            let body = message::webhook_body(delivery);
            let mut headers = Vec::new();
            if let Some(secret) = value(SIGNING_SECRET_KEY) {
                headers.push((SIGNATURE_HEADER, message::signature(&secret, &body)));
            }
            send::post(&url()?, body, &headers).await
        }
        ChannelKind::Slack => {
            let body = serde_json::to_vec(&message::slack_body(delivery)).unwrap_or_default();
            send::post(&url()?, body, &[]).await
        }
        ChannelKind::Email => {
            let settings = channel.spec.email.as_ref().ok_or("spec.email is missing")?;
            send::send_mail(Mail {
                settings,
                password: text(SMTP_PASSWORD_KEY),
                extra_ca: value(SMTP_CA_KEY),
                subject: message::headline(delivery),
                body: message::text(delivery),
            })
            .await
        }
    }
}

/// Puts the delivery's outcome on its channel: `lastDelivery`, and `Ready` false while the
/// newest delivery failed.
async fn record_on_channel(
    channels: &Api<NotificationChannel>,
    channel: &NotificationChannel,
    delivery: &NotificationDelivery,
    outcome: &NotificationDeliveryStatus,
) -> Result<()> {
    let mut status: NotificationChannelStatus = channel.status.clone().unwrap_or_default();
    let state = outcome.status.unwrap_or(DeliveryStatus::Pending);
    status.last_delivery = Some(LastDelivery {
        name: delivery.name_any(),
        status: state,
        at: outcome.last_attempt_at.clone(),
    });
    let (ready, reason, message) = match state {
        DeliveryStatus::Failed => (
            ConditionStatus::False,
            "DeliveryFailed",
            format!(
                "the newest delivery failed after {} attempts: {}",
                outcome.attempts,
                outcome.last_error.clone().unwrap_or_default()
            ),
        ),
        _ => (
            ConditionStatus::True,
            "Delivering",
            "the newest delivery arrived".to_string(),
        ),
    };
    let generation = channel.metadata.generation;
    condition::merge(
        &mut status.conditions,
        Condition::new(READY, ready, reason, message, generation, Timestamp::now()),
    );
    status.observed_generation = generation;
    StatusWriter::new(channels, channel)
        .apply(channel.status.as_ref(), &status)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::notification::{NotificationDeliverySpec, NotificationEvent, Subject};

    fn delivery(attempts: i64) -> NotificationDelivery {
        let mut delivery = NotificationDelivery::new(
            "ops-1",
            NotificationDeliverySpec {
                channel_id: "ops".into(),
                event: NotificationEvent::Test,
                subject: Subject {
                    kind: "NotificationChannel".into(),
                    name: "ops".into(),
                    display_name: None,
                },
                project_id: None,
                summary: "Test message from Berth".into(),
                occurred_at: "2026-12-03T02:00:00Z".into(),
                link: None,
            },
        );
        delivery.status = Some(NotificationDeliveryStatus {
            attempts,
            ..Default::default()
        });
        delivery
    }

    #[test]
    fn the_next_attempt_waits_for_its_backoff() {
        let mut pending = delivery(2);
        pending.status.as_mut().unwrap().last_attempt_at = Some("2026-12-03T02:00:00Z".into());
        let soon: Timestamp = "2026-12-03T02:00:01Z".parse().unwrap();
        assert_eq!(not_yet(&pending, soon), Some(Duration::from_secs(3)));
        let later: Timestamp = "2026-12-03T02:00:04Z".parse().unwrap();
        assert_eq!(not_yet(&pending, later), None);
        assert_eq!(not_yet(&delivery(0), soon), None);
    }

    #[test]
    fn a_failed_attempt_is_retried_with_backoff_until_the_last_then_failed() {
        let now: Timestamp = "2026-12-03T02:00:00Z".parse().unwrap();
        let retried = after_attempt(&delivery(0), Err("the receiver answered 500".into()), now);
        assert_eq!(retried.status, Some(DeliveryStatus::Pending));
        assert_eq!(retried.attempts, 1);
        assert_eq!(backoff(retried.attempts), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(16));
        let last = after_attempt(&delivery(ATTEMPTS - 1), Err("down".into()), now);
        assert_eq!(last.status, Some(DeliveryStatus::Failed));
        assert_eq!(last.last_error.as_deref(), Some("down"));
        let delivered = after_attempt(&delivery(2), Ok(()), now);
        assert_eq!(delivered.status, Some(DeliveryStatus::Delivered));
        assert_eq!(delivered.attempts, 3);
    }
}
