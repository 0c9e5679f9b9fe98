//! The DomainBinding decision, case by case: the exact conditions and status fields each
//! observation produces (integration tests and users read these texts).

use std::net::{IpAddr, Ipv4Addr};

use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::domain_binding::{
    DomainBinding, DomainBindingSpec, DomainBindingStatus, HttpPolicy, condition_type,
};
use k8s_openapi::jiff::Timestamp;

use super::WAIT_RECHECK;
use super::decide::{Decision, Observed, Placed, Placement, Tls, Unplaced, decide, route};
use super::observe::usable;
use crate::reconcilers::certificate::CertificateFacts;
use crate::reconcilers::certificate::preflight::ResolutionFailure;
use crate::reconcilers::policy::RESYNC_AFTER;

const HOST: &str = "shop.example.com";
const ISSUED: &str = "aa11";

fn now() -> Timestamp {
    "2026-02-01T12:00:00Z".parse().unwrap()
}

fn binding(tls_mode: &str, status: Option<DomainBindingStatus>) -> DomainBinding {
    let mut binding = DomainBinding::new(
        "shop",
        DomainBindingSpec {
            resource_id: "web".into(),
            hostname: HOST.into(),
            path_prefix: "/".into(),
            tls_mode: tls_mode.into(),
            server_id: None,
            http_policy: HttpPolicy::Redirect,
        },
    );
    binding.metadata.generation = Some(3);
    binding.status = status;
    binding
}

fn facts() -> CertificateFacts {
    CertificateFacts {
        not_before: "2026-01-01T00:00:00Z".parse().unwrap(),
        not_after: "2026-04-01T00:00:00Z".parse().unwrap(),
        dns_names: vec![HOST.into()],
        sha256: ISSUED.into(),
        chain_digest: "c0ffee".into(),
    }
}

fn loaded(served: Result<&str, &str>) -> Tls {
    Tls::Loaded {
        certificate: "shop".into(),
        facts: facts(),
        served: served.map(String::from).map_err(String::from),
    }
}

fn placement() -> Placement {
    Placement {
        server: "s1".into(),
        resource: "web".into(),
        http_port: 80,
        https_port: 443,
    }
}

const ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7));

/// A binding on a connected server whose host name resolves to it and whose route applied.
fn placed(tls: Tls) -> Placed {
    Placed {
        placement: placement(),
        resolution: Ok(vec![ADDRESS]),
        route: Ok(()),
        tls,
    }
}

fn decide_placed(binding: &DomainBinding, placed: Placed) -> Decision {
    decide(binding, &Observed::Placed(Box::new(placed)), now())
}

/// The condition of `type_` as (status, reason, message).
fn condition_of<'a>(decision: &'a Decision, type_: &str) -> (ConditionStatus, &'a str, &'a str) {
    let c = condition::find(&decision.status.conditions, type_).expect(type_);
    (c.status, c.reason.as_str(), c.message.as_str())
}

fn types(decision: &Decision) -> Vec<&str> {
    let conditions = &decision.status.conditions;
    conditions.iter().map(|c| c.type_.as_str()).collect()
}

use ConditionStatus::{False, True};

#[test]
fn ready_when_resolving_routed_and_serving_the_issued_certificate() {
    let decision = decide_placed(&binding("auto", None), placed(loaded(Ok(ISSUED))));
    let expected_types = [
        condition_type::VERIFIED,
        condition_type::ROUTE_APPLIED,
        condition_type::CERTIFICATE_SERVED,
        READY,
    ];
    assert_eq!(types(&decision), expected_types);
    let verified = condition_of(&decision, condition_type::VERIFIED);
    let resolves = "shop.example.com resolves to server s1";
    assert_eq!(verified, (True, "ResolvesToServer", resolves));
    let routes = "edge proxy of server s1 routes shop.example.com/ to resource web";
    let route_applied = condition_of(&decision, condition_type::ROUTE_APPLIED);
    assert_eq!(route_applied, (True, "Applied", routes));
    let presents = "port 443 presents the issued certificate for shop.example.com \
                    (valid until 2026-04-01T00:00:00Z)";
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    assert_eq!(served, (True, "Served", presents));
    let is_served = "https://shop.example.com/ is served";
    assert_eq!(
        condition_of(&decision, READY),
        (True, "Reconciled", is_served)
    );
    let status = &decision.status;
    assert_eq!(status.observed_generation, Some(3));
    assert_eq!(status.server_id.as_deref(), Some("s1"));
    assert_eq!(status.certificate_id.as_deref(), Some("shop"));
    assert_eq!(status.route_status.as_deref(), Some("ready"));
    assert_eq!(status.url.as_deref(), Some("https://shop.example.com/"));
    assert_eq!(status.resolved_addresses, ["203.0.113.7"]);
    assert_eq!(status.served_certificate_sha256.as_deref(), Some(ISSUED));
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.observed_generation == Some(3))
    );
    assert_eq!(decision.served_event.as_deref(), Some(is_served));
    assert_eq!(decision.recheck_after, RESYNC_AFTER);
}

#[test]
fn staying_ready_sends_no_event_again() {
    let first = decide_placed(&binding("auto", None), placed(loaded(Ok(ISSUED))));
    let again = binding("auto", Some(first.status.clone()));
    let second = decide_placed(&again, placed(loaded(Ok(ISSUED))));
    assert_eq!(second.status, first.status);
    assert_eq!(second.served_event, None);
}

#[test]
fn a_host_name_resolving_elsewhere_is_not_verified() {
    let previous = DomainBindingStatus {
        resolved_addresses: vec!["203.0.113.7".into()],
        ..Default::default()
    };
    let elsewhere = "shop.example.com resolves to 198.51.100.1, not to server s1 (203.0.113.7); \
                     the CA would reach another machine";
    let mut found = placed(loaded(Ok(ISSUED)));
    found.resolution = Err(ResolutionFailure::Elsewhere(elsewhere.into()));
    let decision = decide_placed(&binding("auto", Some(previous)), found);
    let verified = condition_of(&decision, condition_type::VERIFIED);
    assert_eq!(verified, (False, "ResolvesElsewhere", elsewhere));
    assert!(decision.status.resolved_addresses.is_empty());
    let not_yet = (False, "DependencyMissing", "not yet: Verified");
    assert_eq!(condition_of(&decision, READY), not_yet);
    assert_eq!(decision.served_event, None);
    assert_eq!(decision.recheck_after, WAIT_RECHECK);
}

#[test]
fn a_host_name_resolving_nowhere_does_not_resolve() {
    let cases = [
        (
            ResolutionFailure::Nowhere("no A record".into()),
            "DoesNotResolve",
        ),
        (
            ResolutionFailure::ServerAddressUnknown("server address h does not resolve".into()),
            "DoesNotResolve",
        ),
        // A failed DNS question has always been reported as resolving elsewhere.
        (
            ResolutionFailure::Lookup("DNS server 10.0.0.2:53 did not answer".into()),
            "ResolvesElsewhere",
        ),
    ];
    for (failure, reason) in cases {
        let message = failure.message().to_string();
        let mut found = placed(Tls::Disabled);
        found.resolution = Err(failure);
        let decision = decide_placed(&binding("disabled", None), found);
        let verified = condition_of(&decision, condition_type::VERIFIED);
        assert_eq!(verified, (False, reason, message.as_str()));
    }
}

#[test]
fn no_certificate_naming_the_binding_leaves_it_on_plain_http() {
    let tls = Tls::Waiting { certificate: None };
    let decision = decide_placed(&binding("manual", None), placed(tls));
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    let none = "no Certificate names this binding";
    assert_eq!(served, (False, "WaitingForCertificate", none));
    assert_eq!(decision.status.certificate_id, None);
    assert_eq!(
        decision.status.url.as_deref(),
        Some("http://shop.example.com/")
    );
    let not_yet = (False, "DependencyMissing", "not yet: CertificateServed");
    assert_eq!(condition_of(&decision, READY), not_yet);
}

#[test]
fn a_pending_certificate_is_waited_for() {
    let previous = DomainBindingStatus {
        served_certificate_sha256: Some("old".into()),
        ..Default::default()
    };
    let tls = Tls::Waiting {
        certificate: Some("shop".into()),
    };
    let decision = decide_placed(&binding("auto", Some(previous)), placed(tls));
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    let waiting = "waiting for certificate shop";
    assert_eq!(served, (False, "WaitingForCertificate", waiting));
    assert_eq!(decision.status.certificate_id.as_deref(), Some("shop"));
    // Not cleared while waiting: the last handshake's answer stays.
    let sha = decision.status.served_certificate_sha256.as_deref();
    assert_eq!(sha, Some("old"));
    assert_eq!(
        decision.status.url.as_deref(),
        Some("http://shop.example.com/")
    );
    assert_eq!(decision.recheck_after, WAIT_RECHECK);
}

#[test]
fn an_expired_or_foreign_key_pair_is_not_used() {
    let expired = CertificateFacts {
        not_after: "2026-02-01T11:59:59Z".parse().unwrap(),
        ..facts()
    };
    assert!(usable(&facts(), HOST, now()));
    assert!(!usable(&expired, HOST, now()));
    assert!(!usable(&facts(), "other.example.com", now()));
    let wildcard = CertificateFacts {
        dns_names: vec!["*.example.com".into()],
        ..facts()
    };
    assert!(usable(&wildcard, HOST, now()));
}

#[test]
fn another_served_certificate_is_reported_with_both_fingerprints() {
    let decision = decide_placed(&binding("auto", None), placed(loaded(Ok("bb22"))));
    let differs = "port 443 presents certificate bb22 for shop.example.com, not the issued aa11";
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    assert_eq!(served, (False, "ServedCertificateDiffers", differs));
    let sha = decision.status.served_certificate_sha256.as_deref();
    assert_eq!(sha, Some("bb22"));
    assert_eq!(
        decision.status.url.as_deref(),
        Some("https://shop.example.com/")
    );
    let not_yet = (False, "DependencyMissing", "not yet: CertificateServed");
    assert_eq!(condition_of(&decision, READY), not_yet);
}

#[test]
fn a_failed_handshake_is_reported_in_its_own_words() {
    let failed = "TLS handshake for shop.example.com failed: received fatal alert";
    let previous = DomainBindingStatus {
        served_certificate_sha256: Some(ISSUED.into()),
        ..Default::default()
    };
    let decision = decide_placed(
        &binding("auto", Some(previous)),
        placed(loaded(Err(failed))),
    );
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    assert_eq!(served, (False, "ServedCertificateDiffers", failed));
    assert_eq!(decision.status.served_certificate_sha256, None);
}

#[test]
fn a_route_the_proxy_refuses_is_not_applied() {
    let refused = "edge proxy admin API: POST /load returned 400";
    let mut found = placed(Tls::Disabled);
    found.route = Err(refused.into());
    let decision = decide_placed(&binding("disabled", None), found);
    let route_applied = condition_of(&decision, condition_type::ROUTE_APPLIED);
    assert_eq!(route_applied, (False, "NotApplied", refused));
    assert_eq!(decision.status.route_status.as_deref(), Some("failed"));
    let not_yet = (False, "DependencyMissing", "not yet: RouteApplied");
    assert_eq!(condition_of(&decision, READY), not_yet);
}

#[test]
fn a_missing_resource_or_unconnected_server_only_sets_ready() {
    let previous = DomainBindingStatus {
        server_id: Some("s0".into()),
        ..Default::default()
    };
    let missing = Unplaced::Missing("resource web does not exist".into());
    let observed = Observed::Unplaced(missing);
    let decision = decide(&binding("auto", Some(previous.clone())), &observed, now());
    assert_eq!(types(&decision), [READY]);
    let ready = (False, "DependencyMissing", "resource web does not exist");
    assert_eq!(condition_of(&decision, READY), ready);
    assert_eq!(decision.status.server_id.as_deref(), Some("s0"));
    assert_eq!(decision.status.observed_generation, Some(3));
    assert_eq!(decision.served_event, None);
    assert_eq!(decision.recheck_after, WAIT_RECHECK);

    let observed = Observed::Unplaced(Unplaced::NotConnected("s1".into()));
    let decision = decide(&binding("auto", Some(previous)), &observed, now());
    let ready = (False, "ServerNotReady", "server s1 is not connected yet");
    assert_eq!(condition_of(&decision, READY), ready);
}

#[test]
fn with_tls_disabled_plain_http_is_ready() {
    let previous = DomainBindingStatus {
        certificate_id: Some("shop".into()),
        served_certificate_sha256: Some(ISSUED.into()),
        ..Default::default()
    };
    let mut found = placed(Tls::Disabled);
    found.placement.http_port = 8080;
    let decision = decide_placed(&binding("disabled", Some(previous)), found);
    let served = condition_of(&decision, condition_type::CERTIFICATE_SERVED);
    assert_eq!(served, (False, "TlsDisabled", "tlsMode is disabled"));
    let url = "http://shop.example.com:8080/";
    let ready = format!("{url} is served");
    assert_eq!(
        condition_of(&decision, READY),
        (True, "Reconciled", ready.as_str())
    );
    assert_eq!(decision.status.url.as_deref(), Some(url));
    assert_eq!(decision.status.certificate_id, None);
    assert_eq!(decision.status.served_certificate_sha256, None);
    assert_eq!(decision.served_event.as_deref(), Some(ready.as_str()));
}

#[test]
fn a_failing_binding_lists_what_it_waits_for_but_not_disabled_tls() {
    let mut found = placed(Tls::Disabled);
    found.resolution = Err(ResolutionFailure::Nowhere("no A record".into()));
    found.route = Err("refused".into());
    let decision = decide_placed(&binding("disabled", None), found);
    let not_yet = (
        False,
        "DependencyMissing",
        "not yet: Verified, RouteApplied",
    );
    assert_eq!(condition_of(&decision, READY), not_yet);
}

#[test]
fn an_unchanged_condition_keeps_its_transition_time() {
    let before: Timestamp = "2026-01-15T00:00:00Z".parse().unwrap();
    let ready_before = Condition::new(READY, False, "DependencyMissing", "x", Some(3), before);
    let previous = DomainBindingStatus {
        conditions: vec![ready_before],
        ..Default::default()
    };
    let tls = Tls::Waiting { certificate: None };
    let decision = decide_placed(&binding("manual", Some(previous)), placed(tls));
    let ready = condition::find(&decision.status.conditions, READY).unwrap();
    assert_eq!(ready.last_transition_time.0, before);
    assert_eq!(ready.message, "not yet: CertificateServed");
}

#[test]
fn the_route_carries_tls_and_the_redirect_once_a_key_pair_is_at_hand() {
    let mut placement = placement();
    placement.https_port = 8443;
    let plain = route("team", &binding("auto", None), &placement, 3000, None);
    assert_eq!(plain.id, "berth-domain.team.shop");
    assert_eq!(plain.tls, None);
    let secured = route(
        "team",
        &binding("auto", None),
        &placement,
        3000,
        Some(&facts()),
    );
    let tls = secured.tls.expect("tls");
    assert_eq!(tls.redirect_to_port, Some(8443));
    assert!(
        tls.files
            .certificate
            .ends_with("berth-domain.team.shop.tls-c0ffee.crt")
    );
    let mut serve = binding("auto", None);
    serve.spec.http_policy = HttpPolicy::Serve;
    let served = route("team", &serve, &placement, 3000, Some(&facts()));
    assert_eq!(served.tls.expect("tls").redirect_to_port, None);
    assert_eq!(served.hostname, HOST);
    assert!(served.dial.ends_with(":3000"), "{}", served.dial);
}
