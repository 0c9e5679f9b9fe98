//! The Certificate decisions, case by case: the exact conditions, status fields, Events and
//! requeue each produces (integration tests and users read these texts).

use std::time::Duration;

use berth_crds::certificate::{CertificateStatus, condition_type, reason};
use berth_crds::condition::{self, ConditionStatus, READY};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use super::CertificateFacts;
use super::acme::AcmeFailure;
use super::decide::{self, AttemptFailure, Decision, Event, Stamp, Tell};
use berth_crds::notification::NotificationEvent::{self, CertificateExpiring, CertificateFailed};

use ConditionStatus::{False, True};

const HOST: &str = "api.example.com";

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

/// 90 days from 2026-01-01: renewal at 2026-03-02, expiry 2026-04-01.
fn facts() -> CertificateFacts {
    CertificateFacts {
        not_before: at("2026-01-01T00:00:00Z"),
        not_after: at("2026-04-01T00:00:00Z"),
        dns_names: vec![HOST.into()],
        sha256: "aa11".into(),
        chain_digest: "c0ffee".into(),
    }
}

fn stamp(now: &str) -> Stamp {
    Stamp {
        generation: Some(2),
        now: at(now),
    }
}

/// The status as the reconcile hands it to a decision: secret and host name known.
fn status() -> CertificateStatus {
    CertificateStatus {
        hostname: Some(HOST.into()),
        secret_name: Some("api-tls".into()),
        attempt_id: Some("att-1".into()),
        ..Default::default()
    }
}

fn condition_of<'a>(decision: &'a Decision, type_: &str) -> (ConditionStatus, &'a str, &'a str) {
    condition_in(&decision.status, type_)
}

fn condition_in<'a>(
    status: &'a CertificateStatus,
    type_: &str,
) -> (ConditionStatus, &'a str, &'a str) {
    let c = condition::find(&status.conditions, type_).expect(type_);
    (c.status, c.reason.as_str(), c.message.as_str())
}

fn warning(reason: &'static str, message: &str) -> Option<Event> {
    Some(Event {
        type_: EventType::Warning,
        reason,
        message: message.into(),
    })
}

#[test]
fn a_missing_binding_is_a_missing_dependency() {
    let decision = decide::binding_missing(status(), "api", stamp("2026-01-10T00:00:00Z"));
    let missing = "domain binding api does not exist";
    let ready = condition_of(&decision, READY);
    assert_eq!(ready, (False, "DependencyMissing", missing));
    assert_eq!(decision.status.conditions.len(), 1);
    assert_eq!(decision.event, None);
    assert_eq!(decision.requeue_after, Duration::from_secs(30));
}

#[test]
fn a_valid_import_is_ready_until_its_renewal_point() {
    let now = stamp("2026-03-01T00:00:00Z");
    let decision = decide::imported(None, status(), Some(Ok(facts())), now);
    let issued = condition_of(&decision, condition_type::ISSUED);
    assert_eq!(issued, (True, "Imported", "imported from Secret api-tls"));
    let valid = "imported certificate valid until 2026-04-01T00:00:00Z";
    assert_eq!(condition_of(&decision, READY), (True, "Imported", valid));
    assert_eq!(decision.event, None);
    let status = &decision.status;
    assert_eq!(status.sha256_fingerprint.as_deref(), Some("aa11"));
    assert_eq!(status.not_after, Some(Time(at("2026-04-01T00:00:00Z"))));
    assert_eq!(status.renew_at, Some(Time(facts().renew_at())));
    assert_eq!(status.issued_at, Some(Time(at("2026-01-01T00:00:00Z"))));
    assert_eq!(status.days_until_expiry, Some(31));
    let until_renewal = facts().renew_at().as_second() - now.now.as_second();
    assert_eq!(decision.requeue_after.as_secs() as i64, until_renewal);
}

#[test]
fn an_import_past_its_renewal_point_warns_once() {
    let now = stamp("2026-03-20T00:00:00Z");
    let decision = decide::imported(None, status(), Some(Ok(facts())), now);
    let soon = "imported certificate expires at 2026-04-01T00:00:00Z (12 days); replace the key \
                pair in Secret api-tls";
    assert_eq!(condition_of(&decision, READY), (True, "ExpiringSoon", soon));
    assert_eq!(decision.event, warning(reason::EXPIRING_SOON, soon));
    assert_eq!(decision.requeue_after, Duration::from_secs(12 * 86_400));
    assert_eq!(decision.tell, vec![tell(CertificateExpiring, soon)]);
    let current = decision.status.clone();
    let again = decide::imported(Some(&current), status(), Some(Ok(facts())), now);
    assert_eq!(again.event, None);
    assert_eq!(again.tell, vec![]);
}

fn tell(event: NotificationEvent, summary: &str) -> Tell {
    Tell {
        event,
        summary: summary.into(),
    }
}

#[test]
fn an_expired_import_is_not_ready() {
    let now = stamp("2026-04-02T00:00:00Z");
    let decision = decide::imported(None, status(), Some(Ok(facts())), now);
    let expired = "imported certificate expired at 2026-04-01T00:00:00Z";
    assert_eq!(condition_of(&decision, READY), (False, "Expired", expired));
    assert_eq!(decision.event, warning(reason::EXPIRED, expired));
    assert_eq!(decision.status.days_until_expiry, Some(-1));
    assert_eq!(decision.requeue_after, Duration::from_secs(30));
}

#[test]
fn an_import_that_is_missing_or_names_another_host_is_invalid() {
    let now = stamp("2026-03-01T00:00:00Z");
    let mut previous = status();
    previous.sha256_fingerprint = Some("old".into());
    let other = CertificateFacts {
        dns_names: vec!["www.example.com".into(), "example.com".into()],
        ..facts()
    };
    let cases = [
        (None, "Secret api-tls does not exist"),
        (
            Some(Err("the chain is not PEM: x".to_string())),
            "the chain is not PEM: x",
        ),
        (
            Some(Ok(other)),
            "the certificate in Secret api-tls does not name api.example.com (it names \
             www.example.com, example.com)",
        ),
    ];
    for (stored, problem) in cases {
        let decision = decide::imported(None, previous.clone(), stored, now);
        let issued = condition_of(&decision, condition_type::ISSUED);
        assert_eq!(issued, (False, "InvalidCertificate", problem));
        let ready = condition_of(&decision, READY);
        assert_eq!(ready, (False, "InvalidCertificate", problem));
        assert_eq!(decision.status.sha256_fingerprint, None);
        assert_eq!(decision.status.not_after, None);
        assert_eq!(decision.event, None);
        assert_eq!(decision.requeue_after, Duration::from_secs(30));
    }
}

#[test]
fn an_attempt_announces_itself() {
    let now = stamp("2026-03-01T00:00:00Z");
    let mut first = status();
    let event = decide::attempt_started(&mut first, "att-2", false, now);
    let obtaining = "attempt att-2: obtaining a certificate for api.example.com";
    let renewing = condition_in(&first, condition_type::RENEWING);
    assert_eq!(renewing, (True, "Ordering", obtaining));
    assert_eq!(first.attempt_id.as_deref(), Some("att-2"));
    assert_eq!(event.type_, EventType::Normal);
    assert_eq!(
        (event.reason, event.message.as_str()),
        ("Ordering", obtaining)
    );
    let mut renewal = status();
    let event = decide::attempt_started(&mut renewal, "att-3", true, now);
    let message = "attempt att-3: renewing a certificate for api.example.com";
    let renewing = condition_in(&renewal, condition_type::RENEWING);
    assert_eq!(renewing, (True, "RenewalDue", message));
    assert_eq!(event.reason, "RenewalDue");
}

#[test]
fn an_issued_certificate_settles_every_condition() {
    let now = stamp("2026-01-01T00:10:00Z");
    let mut before = status();
    before.failed_attempts = 2;
    before.next_retry_at = Some(Time(at("2026-01-01T00:05:00Z")));
    let decision = decide::issued(before, &facts(), now);
    let status = &decision.status;
    assert_eq!(status.issued_at, Some(Time(now.now)));
    assert_eq!(status.failed_attempts, 0);
    assert_eq!(status.next_retry_at, None);
    assert_eq!(status.sha256_fingerprint.as_deref(), Some("aa11"));
    let renew_at = facts().renew_at();
    let valid = format!(
        "certificate for api.example.com valid until 2026-04-01T00:00:00Z; renewal at {renew_at}"
    );
    let issued = condition_of(&decision, condition_type::ISSUED);
    assert_eq!(issued, (True, "Issued", valid.as_str()));
    let renewing = condition_of(&decision, condition_type::RENEWING);
    assert_eq!(renewing, (False, "Idle", "no attempt under way"));
    let failed = condition_of(&decision, condition_type::FAILED);
    assert_eq!(failed, (False, "NotFailed", "the latest attempt succeeded"));
    assert_eq!(
        condition_of(&decision, READY),
        (True, "Issued", valid.as_str())
    );
    let note = format!(
        "attempt att-1: certificate for api.example.com issued, valid until \
         2026-04-01T00:00:00Z, renewal at {renew_at}"
    );
    let expected = Event {
        type_: EventType::Normal,
        reason: "Issued",
        message: note,
    };
    assert_eq!(decision.event, Some(expected));
    let until_renewal = renew_at.as_second() - now.now.as_second();
    assert_eq!(decision.requeue_after.as_secs() as i64, until_renewal);
}

fn preflight_failure() -> AttemptFailure {
    AttemptFailure {
        reason: reason::PREFLIGHT_FAILED,
        message: "api.example.com does not resolve to any address".into(),
    }
}

#[test]
fn a_first_failed_attempt_is_not_ready_and_retried_with_backoff() {
    let now = stamp("2026-01-01T00:00:00Z");
    let decision = decide::attempt_failed(status(), &preflight_failure(), None, now);
    let message = "attempt att-1 failed (1 in a row): api.example.com does not resolve to any \
                   address; next attempt at 2026-01-01T00:00:10Z";
    let failed = condition_of(&decision, condition_type::FAILED);
    assert_eq!(failed, (True, "PreflightFailed", message));
    let renewing = condition_of(&decision, condition_type::RENEWING);
    assert_eq!(renewing, (False, "Idle", "no attempt under way"));
    let issued = condition_of(&decision, condition_type::ISSUED);
    assert_eq!(issued, (False, "PreflightFailed", message));
    assert_eq!(
        condition_of(&decision, READY),
        (False, "PreflightFailed", message)
    );
    assert_eq!(decision.status.failed_attempts, 1);
    let retry_at = Some(Time(at("2026-01-01T00:00:10Z")));
    assert_eq!(decision.status.next_retry_at, retry_at);
    assert_eq!(decision.event, warning(reason::PREFLIGHT_FAILED, message));
    assert_eq!(decision.requeue_after, Duration::from_secs(10));
    let told = format!("certificate for api.example.com: {message}");
    assert_eq!(decision.tell, vec![tell(CertificateFailed, &told)]);
    let again = decide::attempt_failed(decision.status, &preflight_failure(), None, now);
    assert_eq!(again.tell, vec![], "told once per run of failures");
}

#[test]
fn a_failed_renewal_keeps_the_previous_certificate_ready() {
    let now = stamp("2026-03-10T00:00:00Z");
    let mut before = status();
    before.failed_attempts = 1;
    let failure = AttemptFailure {
        reason: reason::ORDER_FAILED,
        message: "the CA refused the order: rejectedIdentifier".into(),
    };
    let decision = decide::attempt_failed(before, &failure, Some(&facts()), now);
    let stays = "the previous certificate stays in use until 2026-04-01T00:00:00Z";
    let issued = condition_of(&decision, condition_type::ISSUED);
    assert_eq!(issued, (True, "Issued", stays));
    let failing = "certificate valid until 2026-04-01T00:00:00Z; renewal failing";
    assert_eq!(condition_of(&decision, READY), (True, "Issued", failing));
    let failed = condition_of(&decision, condition_type::FAILED);
    assert_eq!(failed.1, "OrderFailed");
    assert!(
        failed
            .2
            .starts_with("attempt att-1 failed (2 in a row): the CA refused")
    );
    assert_eq!(decision.requeue_after, Duration::from_secs(20));
    assert_eq!(decision.tell, vec![], "30 days left: not expiring yet");
}

#[test]
fn a_renewal_failing_two_weeks_before_expiry_is_told_once_as_expiring() {
    let now = stamp("2026-03-20T00:00:00Z");
    let mut before = status();
    before.failed_attempts = 5;
    let failure = AttemptFailure {
        reason: reason::ORDER_FAILED,
        message: "the CA refused the order: rejectedIdentifier".into(),
    };
    let decision = decide::attempt_failed(before, &failure, Some(&facts()), now);
    let expiring = "certificate expires at 2026-04-01T00:00:00Z (12 days) and renewal keeps \
                    failing: the CA refused the order: rejectedIdentifier";
    assert_eq!(
        condition_of(&decision, READY),
        (True, "ExpiringSoon", expiring)
    );
    assert_eq!(decision.tell, vec![tell(CertificateExpiring, expiring)]);
    let again = decide::attempt_failed(decision.status, &failure, Some(&facts()), now);
    assert_eq!(again.tell, vec![]);
}

#[test]
fn a_kept_certificate_after_failures_leaves_failed_alone() {
    let now = stamp("2026-01-10T00:00:00Z");
    let mut failing = decide::attempt_failed(status(), &preflight_failure(), None, now).status;
    decide::settle(&mut failing, Some(&facts()), now);
    let failed = condition_in(&failing, condition_type::FAILED);
    assert_eq!((failed.0, failed.1), (True, "PreflightFailed"));
    assert_eq!(condition_in(&failing, READY).0, True);
    let mut settled = status();
    decide::settle(&mut settled, None, now);
    assert!(settled.conditions.is_empty());
}

#[test]
fn only_the_cas_account_does_not_exist_problem_means_a_new_account() {
    let problem = |type_: &str| {
        let json =
            serde_json::json!({ "type": type_, "detail": "unable to find account", "status": 400 });
        instant_acme::Error::Api(serde_json::from_value(json).unwrap())
    };
    let forgotten = problem("urn:ietf:params:acme:error:accountDoesNotExist");
    let failure = AcmeFailure::from_ca("the CA refused the order", forgotten);
    assert!(failure.unknown_account);
    assert_eq!(
        failure.message,
        "the CA refused the order: API error: unable to find account \
         (urn:ietf:params:acme:error:accountDoesNotExist)"
    );
    let refused = problem("urn:ietf:params:acme:error:rejectedIdentifier");
    assert!(!AcmeFailure::from_ca("the CA refused the order", refused).unknown_account);
}
