//! The pure half of a Certificate's reconcile: from what was found (the binding, the stored key
//! pair, an attempt's outcome) and the time, the status, its conditions, the Event to send and
//! when to look again. No I/O; [`super::schedule`] decides which step comes next.

use std::time::Duration;

use berth_crds::certificate::{CertificateStatus, condition_type, reason};
use berth_crds::condition::{self, Condition, READY};
use berth_crds::notification::NotificationEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use super::schedule::retry_delay;
use super::{CertificateFacts, DEPENDENCY_RECHECK};
pub use crate::conditions::Stamp;

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

/// Something about the certificate a person should hear of (through notification channels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tell {
    pub event: NotificationEvent,
    pub summary: String,
}

/// The status to write, the Event to send after it, what to notify, and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub status: CertificateStatus,
    pub event: Option<Event>,
    pub tell: Vec<Tell>,
    pub requeue_after: Duration,
}

/// Fewer days than this left on a certificate whose renewal keeps failing: it is expiring.
pub const EXPIRING_WITHIN_DAYS: i64 = 14;

/// The certificate's own conditions, by name.
impl Stamp {
    /// `Issued=True`: a certificate is in use.
    fn issued(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.holds(condition_type::ISSUED, reason, message)
    }

    /// `Issued=False`: no usable certificate.
    fn not_issued(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.fails(condition_type::ISSUED, reason, message)
    }

    /// `Renewing=True`: an attempt is under way.
    fn renewing(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.holds(condition_type::RENEWING, reason, message)
    }

    /// `Renewing=False`: no attempt under way.
    fn idle(&self) -> Condition {
        self.fails(
            condition_type::RENEWING,
            reason::IDLE,
            "no attempt under way",
        )
    }

    /// `Failed=True`: the latest attempt failed.
    fn failed(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.holds(condition_type::FAILED, reason, message)
    }

    /// `Failed=False`: the latest attempt succeeded.
    fn not_failed(&self) -> Condition {
        let message = "the latest attempt succeeded";
        self.fails(condition_type::FAILED, reason::NOT_FAILED, message)
    }
}

/// Merges `condition` into the certificate's conditions.
fn set(status: &mut CertificateStatus, condition: Condition) {
    condition::merge(&mut status.conditions, condition);
}

/// The binding the certificate names does not exist.
pub fn binding_missing(mut status: CertificateStatus, binding_id: &str, stamp: Stamp) -> Decision {
    let message = format!("domain binding {binding_id} does not exist");
    let missing = condition::reason::DEPENDENCY_MISSING;
    set(&mut status, stamp.not_ready(missing, message));
    Decision {
        status,
        event: None,
        tell: Vec::new(),
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
            set(&mut status, stamp.not_issued(invalid, problem.clone()));
            set(&mut status, stamp.not_ready(invalid, problem));
            return Decision {
                status,
                event: None,
                tell: Vec::new(),
                requeue_after: DEPENDENCY_RECHECK,
            };
        }
    };
    record_stored(&mut status, Some(&facts), now);
    let (ready, why, message) = imported_readiness(&facts, &secret, now);
    let imported_from = format!("imported from Secret {secret}");
    set(&mut status, stamp.issued(reason::IMPORTED, imported_from));
    let warned_before = current
        .and_then(|c| condition::find(&c.conditions, READY))
        .is_some_and(|c| c.reason == why);
    set(
        &mut status,
        stamp.judged(READY, ready, why, message.clone()),
    );
    let warn = why != reason::IMPORTED && !warned_before;
    let tell = warn
        .then(|| Tell {
            event: NotificationEvent::CertificateExpiring,
            summary: message.clone(),
        })
        .into_iter()
        .collect();
    let event = warn.then_some(Event {
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
        tell,
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
    set(status, stamp.renewing(why, message.clone()));
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
        tell: Vec::new(),
        requeue_after: until(facts.renew_at(), now),
    }
}

/// The attempt failed: backoff, `Failed`, and `Ready` only while `previous` (the certificate
/// in use before) is still valid. A person is told of the first failure in a row, and once
/// when a failing renewal leaves fewer than [`EXPIRING_WITHIN_DAYS`].
pub fn attempt_failed(
    mut status: CertificateStatus,
    failure: &AttemptFailure,
    previous: Option<&CertificateFacts>,
    stamp: Stamp,
) -> Decision {
    let now = stamp.now;
    let attempt = status.attempt_id.clone().unwrap_or_default();
    let ready_before = condition::find(&status.conditions, READY).map(|c| c.reason.clone());
    status.failed_attempts = status.failed_attempts.saturating_add(1);
    let delay = retry_delay(status.failed_attempts);
    let retry_at = Timestamp::from_second(now.as_second() + delay.as_secs() as i64).unwrap_or(now);
    status.next_retry_at = Some(Time(retry_at));
    let message = format!(
        "attempt {attempt} failed ({} in a row): {}; next attempt at {retry_at}",
        status.failed_attempts, failure.message
    );
    let why = failure.reason;
    set(&mut status, stamp.failed(why, message.clone()));
    set(&mut status, stamp.idle());
    let mut tell = Vec::new();
    if status.failed_attempts == 1 {
        let hostname = status.hostname.clone().unwrap_or_default();
        tell.push(Tell {
            event: NotificationEvent::CertificateFailed,
            summary: format!("certificate for {hostname}: {message}"),
        });
    }
    match previous {
        Some(facts) if facts.not_after > now => {
            let stays = format!(
                "the previous certificate stays in use until {}",
                facts.not_after
            );
            set(&mut status, stamp.issued(reason::ISSUED, stays));
            let (ready, valid) = renewal_failing(facts, failure, now);
            if ready == reason::EXPIRING_SOON && ready_before.as_deref() != Some(ready) {
                tell.push(Tell {
                    event: NotificationEvent::CertificateExpiring,
                    summary: valid.clone(),
                });
            }
            set(&mut status, stamp.ready(ready, valid));
        }
        _ => {
            set(&mut status, stamp.not_issued(why, message.clone()));
            set(&mut status, stamp.not_ready(why, message.clone()));
        }
    }
    Decision {
        status,
        event: Some(Event {
            type_: EventType::Warning,
            reason: why,
            message,
        }),
        tell,
        requeue_after: delay,
    }
}

/// `Ready`'s reason and message while a certificate still in use fails to renew: `ExpiringSoon`
/// once fewer than [`EXPIRING_WITHIN_DAYS`] are left.
fn renewal_failing(
    facts: &CertificateFacts,
    failure: &AttemptFailure,
    now: Timestamp,
) -> (&'static str, String) {
    let days = facts.days_until_expiry(now);
    if days < EXPIRING_WITHIN_DAYS {
        let message = format!(
            "certificate expires at {} ({days} days) and renewal keeps failing: {}",
            facts.not_after, failure.message
        );
        return (reason::EXPIRING_SOON, message);
    }
    let message = format!(
        "certificate valid until {}; renewal failing",
        facts.not_after
    );
    (reason::ISSUED, message)
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
    set(status, stamp.issued(reason::ISSUED, message.clone()));
    set(status, stamp.idle());
    if status.failed_attempts == 0 {
        set(status, stamp.not_failed());
    }
    set(status, stamp.ready(reason::ISSUED, message));
}

/// Time from `now` until `at`, at least a second.
pub fn until(at: Timestamp, now: Timestamp) -> Duration {
    Duration::from_secs(
        u64::try_from(at.as_second() - now.as_second())
            .unwrap_or(0)
            .max(1),
    )
}

#[cfg(test)]
mod condition_tests {
    use crate::conditions::testing::{assert_builds, stamp};
    use berth_crds::condition::ConditionStatus::{False, True};

    #[test]
    fn certificate_conditions_by_name() {
        let s = stamp();
        let idle = "no attempt under way";
        let succeeded = "the latest attempt succeeded";
        assert_builds(&[
            (s.issued("Issued", "m"), ("Issued", True, "Issued", "m")),
            (s.not_issued("Bad", "m"), ("Issued", False, "Bad", "m")),
            (s.renewing("Due", "m"), ("Renewing", True, "Due", "m")),
        ]);
        assert_builds(&[(s.idle(), ("Renewing", False, "Idle", idle))]);
        assert_builds(&[(s.failed("Dns", "m"), ("Failed", True, "Dns", "m"))]);
        let not_failed = ("Failed", False, "NotFailed", succeeded);
        assert_builds(&[(s.not_failed(), not_failed)]);
    }
}
