//! What a Certificate needs next. Pure: the stored certificate, the status, a requested
//! attempt and the time are inputs.

use std::time::Duration;

use berth_crds::certificate::CertificateStatus;
use k8s_openapi::jiff::Timestamp;

use super::CertificateFacts;

/// First retry after a failed attempt; doubled per failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(10);
const MAX_RETRY: Duration = Duration::from_secs(30 * 60);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The certificate in use is good; look again at `renew_at`.
    Keep { renew_at: Timestamp },
    /// Order one now; `renewal` when one is in use.
    Issue { renewal: bool },
    /// The latest attempt failed; the next one is due at `at`.
    RetryLater { at: Timestamp },
}

/// `valid` is the stored certificate when it names the binding's host name.
pub fn next_step(
    valid: Option<&CertificateFacts>,
    status: &CertificateStatus,
    requested_attempt: Option<&str>,
    now: Timestamp,
) -> Step {
    // A request through the REST API (`issue-or-renew`) acts at once, once per attempt id.
    if let Some(requested) = requested_attempt
        && status.attempt_id.as_deref() != Some(requested)
    {
        return Step::Issue {
            renewal: valid.is_some(),
        };
    }
    if let Some(facts) = valid
        && now < facts.renew_at()
    {
        return Step::Keep {
            renew_at: facts.renew_at(),
        };
    }
    if let Some(at) = status.next_retry_at.as_ref().map(|t| t.0)
        && now < at
    {
        return Step::RetryLater { at };
    }
    Step::Issue {
        renewal: valid.is_some(),
    }
}

/// Backoff after `failures` failed attempts in a row: 10 s, 20 s, 40 s … at most 30 min.
pub fn retry_delay(failures: u32) -> Duration {
    let doubled = FIRST_RETRY.saturating_mul(1 << failures.saturating_sub(1).min(16));
    doubled.min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    fn facts(not_before: i64, not_after: i64) -> CertificateFacts {
        CertificateFacts {
            not_before: at(not_before),
            not_after: at(not_after),
            dns_names: vec!["shop.example".into()],
            sha256: "00".into(),
            chain_digest: "00".into(),
        }
    }

    #[test]
    fn renewal_is_due_two_thirds_into_the_lifetime() {
        let cert = facts(0, 90);
        assert_eq!(cert.renew_at(), at(60));
        let status = CertificateStatus::default();
        assert_eq!(
            next_step(Some(&cert), &status, None, at(59)),
            Step::Keep { renew_at: at(60) }
        );
        assert_eq!(
            next_step(Some(&cert), &status, None, at(60)),
            Step::Issue { renewal: true }
        );
        assert_eq!(
            next_step(None, &status, None, at(0)),
            Step::Issue { renewal: false }
        );
    }

    #[test]
    fn a_failure_waits_for_its_retry_and_a_request_acts_once() {
        let status = CertificateStatus {
            next_retry_at: Some(Time(at(30))),
            attempt_id: Some("att-1".into()),
            ..Default::default()
        };
        assert_eq!(
            next_step(None, &status, None, at(10)),
            Step::RetryLater { at: at(30) }
        );
        assert_eq!(
            next_step(None, &status, Some("att-1"), at(10)),
            Step::RetryLater { at: at(30) }
        );
        assert_eq!(
            next_step(None, &status, Some("att-2"), at(10)),
            Step::Issue { renewal: false }
        );
    }

    #[test]
    fn backoff_doubles_up_to_half_an_hour() {
        assert_eq!(retry_delay(1), Duration::from_secs(10));
        assert_eq!(retry_delay(2), Duration::from_secs(20));
        assert_eq!(retry_delay(40), Duration::from_secs(1800));
    }

    #[test]
    fn a_wildcard_covers_one_label() {
        let mut cert = facts(0, 1);
        cert.dns_names = vec!["*.example".into()];
        assert!(cert.covers("shop.example"));
        assert!(!cert.covers("a.shop.example"));
        assert!(!cert.covers("example"));
    }
}
