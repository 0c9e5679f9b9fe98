//! The pure half of a Certificate's reconcile: from what was found (the binding, the stored key
//! pair, an attempt's outcome) and the time, the status, its conditions, the Event to send and
//! when to look again. No I/O; [`super::schedule`] decides which step comes next.

use std::time::Duration;

use berth_crds::certificate::{CertificateStatus, condition_type, reason};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use super::schedule::retry_delay;
use super::{CertificateFacts, DEPENDENCY_RECHECK};

/// The key pair stored in the certificate's Secret: `None` without a Secret, else the chain's
/// facts or why it cannot be read.
pub type Stored = Option<Result<CertificateFacts, String>>;

/// Why an attempt failed, sorted the way the status shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptFailure {
    pub reason: &'static str,
    pub message: String,
}

/// An Event about the certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub type_: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// The status to write, the Event to send after it, and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub status: CertificateStatus,
    pub event: Option<Event>,
    pub requeue_after: Duration,
}

/// The generation and time every condition of one decision carries.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    pub generation: Option<i64>,
    pub now: Timestamp,
}

impl Stamp {
    fn set(
        &self,
        status: &mut CertificateStatus,
        type_: &str,
        holds: bool,
        why: &str,
        message: impl Into<String>,
    ) {
        let value = if holds {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        let condition = Condition::new(type_, value, why, message, self.generation, self.now);
        condition::merge(&mut status.conditions, condition);
    }
}

/// The binding the certificate names does not exist.
pub fn binding_missing(mut status: CertificateStatus, binding_id: &str, stamp: Stamp) -> Decision {
    let message = format!("domain binding {binding_id} does not exist");
    let missing = condition::reason::DEPENDENCY_MISSING;
    stamp.set(&mut status, READY, false, missing, message);
    Decision {
        status,
        event: None,
        requeue_after: DEPENDENCY_RECHECK,
    }
}

/// An imported key pair: used as it is; its expiry is reported, and warned about once as it
/// nears or passes. `current` is the status as read.
pub fn imported(
    current: Option<&CertificateStatus>,
    mut status: CertificateStatus,
    stored: Stored,
    stamp: Stamp,
) -> Decision {
    let now = stamp.now;
    let secret = status.secret_name.clone().unwrap_or_default();
    let facts = match usable_import(
        stored,
        status.hostname.as_deref().unwrap_or_default(),
        &secret,
    ) {
        Ok(facts) => facts,
        Err(problem) => {
            record_stored(&mut status, None, now);
            let invalid = reason::INVALID_CERTIFICATE;
            stamp.set(
                &mut status,
                condition_type::ISSUED,
                false,
                invalid,
                problem.clone(),
            );
            stamp.set(&mut status, READY, false, invalid, problem);
            return Decision {
                status,
                event: None,
                requeue_after: DEPENDENCY_RECHECK,
            };
        }
    };
    record_stored(&mut status, Some(&facts), now);
    let (ready, why, message) = imported_readiness(&facts, &secret, now);
    let imported_from = format!("imported from Secret {secret}");
    stamp.set(
        &mut status,
        condition_type::ISSUED,
        true,
        reason::IMPORTED,
        imported_from,
    );
    let warned_before = current
        .and_then(|c| condition::find(&c.conditions, READY))
        .is_some_and(|c| c.reason == why);
    stamp.set(&mut status, READY, ready, why, message.clone());
    let event = (why != reason::IMPORTED && !warned_before).then_some(Event {
        type_: EventType::Warning,
        reason: why,
        message,
    });
    let next = if now < facts.renew_at() {
        facts.renew_at()
    } else {
        facts.not_after
    };
    Decision {
        status,
        event,
        requeue_after: until(next, now).max(DEPENDENCY_RECHECK),
    }
}

/// The imported key pair's facts, when it exists, parses and names `hostname`; else why not.
fn usable_import(stored: Stored, hostname: &str, secret: &str) -> Result<CertificateFacts, String> {
    match stored {
        None => Err(format!("Secret {secret} does not exist")),
        Some(Err(problem)) => Err(problem),
        Some(Ok(facts)) if !facts.covers(hostname) => Err(format!(
            "the certificate in Secret {secret} does not name {hostname} (it names {})",
            facts.dns_names.join(", ")
        )),
        Some(Ok(facts)) => Ok(facts),
    }
}

/// `Ready` of an imported certificate: valid, expiring soon (after its renewal point), or
/// expired.
fn imported_readiness(
    facts: &CertificateFacts,
    secret: &str,
    now: Timestamp,
) -> (bool, &'static str, String) {
    if facts.not_after <= now {
        let message = format!("imported certificate expired at {}", facts.not_after);
        (false, reason::EXPIRED, message)
    } else if now >= facts.renew_at() {
        let message = format!(
            "imported certificate expires at {} ({} days); replace the key pair in Secret {secret}",
            facts.not_after,
            facts.days_until_expiry(now)
        );
        (true, reason::EXPIRING_SOON, message)
    } else {
        let message = format!("imported certificate valid until {}", facts.not_after);
        (true, reason::IMPORTED, message)
    }
}

/// An attempt starts: its id and the `Renewing` condition; the Event announcing it.
pub fn attempt_started(
    status: &mut CertificateStatus,
    attempt: &str,
    renewal: bool,
    stamp: Stamp,
) -> Event {
    status.attempt_id = Some(attempt.to_string());
    let (why, what) = if renewal {
        (reason::RENEWAL_DUE, "renewing")
    } else {
        (reason::ORDERING, "obtaining")
    };
    let hostname = status.hostname.clone().unwrap_or_default();
    let message = format!("attempt {attempt}: {what} a certificate for {hostname}");
    stamp.set(status, condition_type::RENEWING, true, why, message.clone());
    Event {
        type_: EventType::Normal,
        reason: why,
        message,
    }
}

/// The attempt issued the certificate with `facts` (its key pair is stored by now).
pub fn issued(mut status: CertificateStatus, facts: &CertificateFacts, stamp: Stamp) -> Decision {
    let now = stamp.now;
    let hostname = status.hostname.clone().unwrap_or_default();
    let attempt = status.attempt_id.clone().unwrap_or_default();
    status.issued_at = Some(Time(now));
    status.failed_attempts = 0;
    status.next_retry_at = None;
    record_stored(&mut status, Some(facts), now);
    settle(&mut status, Some(facts), stamp);
    let message = format!(
        "attempt {attempt}: certificate for {hostname} issued, valid until {}, renewal at {}",
        facts.not_after,
        facts.renew_at()
    );
    Decision {
        status,
        event: Some(Event {
            type_: EventType::Normal,
            reason: reason::ISSUED,
            message,
        }),
        requeue_after: until(facts.renew_at(), now),
    }
}

/// The attempt failed: backoff, `Failed`, and `Ready` only while `previous` (the certificate
/// in use before) is still valid.
pub fn attempt_failed(
    mut status: CertificateStatus,
    failure: &AttemptFailure,
    previous: Option<&CertificateFacts>,
    stamp: Stamp,
) -> Decision {
    let now = stamp.now;
    let attempt = status.attempt_id.clone().unwrap_or_default();
    status.failed_attempts = status.failed_attempts.saturating_add(1);
    let delay = retry_delay(status.failed_attempts);
    let retry_at = Timestamp::from_second(now.as_second() + delay.as_secs() as i64).unwrap_or(now);
    status.next_retry_at = Some(Time(retry_at));
    let message = format!(
        "attempt {attempt} failed ({} in a row): {}; next attempt at {retry_at}",
        status.failed_attempts, failure.message
    );
    let why = failure.reason;
    stamp.set(
        &mut status,
        condition_type::FAILED,
        true,
        why,
        message.clone(),
    );
    let idle = "no attempt under way";
    stamp.set(
        &mut status,
        condition_type::RENEWING,
        false,
        reason::IDLE,
        idle,
    );
    match previous {
        Some(facts) if facts.not_after > now => {
            let stays = format!(
                "the previous certificate stays in use until {}",
                facts.not_after
            );
            stamp.set(
                &mut status,
                condition_type::ISSUED,
                true,
                reason::ISSUED,
                stays,
            );
            let valid = format!(
                "certificate valid until {}; renewal failing",
                facts.not_after
            );
            stamp.set(&mut status, READY, true, reason::ISSUED, valid);
        }
        _ => {
            stamp.set(
                &mut status,
                condition_type::ISSUED,
                false,
                why,
                message.clone(),
            );
            stamp.set(&mut status, READY, false, why, message.clone());
        }
    }
    Decision {
        status,
        event: Some(Event {
            type_: EventType::Warning,
            reason: why,
            message,
        }),
        requeue_after: delay,
    }
}

/// Expiry facts of the certificate in use (or their absence).
pub fn record_stored(
    status: &mut CertificateStatus,
    facts: Option<&CertificateFacts>,
    now: Timestamp,
) {
    status.not_after = facts.map(|f| Time(f.not_after));
    status.renew_at = facts.map(|f| Time(f.renew_at()));
    status.days_until_expiry = facts.map(|f| f.days_until_expiry(now));
    status.sha256_fingerprint = facts.map(|f| f.sha256.clone());
    if status.issued_at.is_none() {
        status.issued_at = facts.map(|f| Time(f.not_before));
    }
}

/// Conditions of a certificate in use with nothing under way.
pub fn settle(status: &mut CertificateStatus, facts: Option<&CertificateFacts>, stamp: Stamp) {
    let Some(facts) = facts else { return };
    let hostname = status.hostname.clone().unwrap_or_default();
    let message = format!(
        "certificate for {hostname} valid until {}; renewal at {}",
        facts.not_after,
        facts.renew_at()
    );
    let issued = reason::ISSUED;
    stamp.set(
        status,
        condition_type::ISSUED,
        true,
        issued,
        message.clone(),
    );
    let idle = "no attempt under way";
    stamp.set(status, condition_type::RENEWING, false, reason::IDLE, idle);
    if status.failed_attempts == 0 {
        let succeeded = "the latest attempt succeeded";
        stamp.set(
            status,
            condition_type::FAILED,
            false,
            reason::NOT_FAILED,
            succeeded,
        );
    }
    stamp.set(status, READY, true, issued, message);
}

/// Time from `now` until `at`, at least a second.
pub fn until(at: Timestamp, now: Timestamp) -> Duration {
    Duration::from_secs(
        u64::try_from(at.as_second() - now.as_second())
            .unwrap_or(0)
            .max(1),
    )
}
