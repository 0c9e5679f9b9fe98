//! The DomainBinding's API-server side on a scripted API server: a binding that is served costs
//! no request — its Certificate and key pair come from the caches, and an unchanged status is not
//! written again. (Its proxy route and TLS handshake are observations over SSH, made on every
//! recheck by design: the integration tests cover them.)

use berth_crds::certificate::Certificate;
use berth_crds::domain_binding::DomainBinding;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use serde_json::json;

use super::decide::{Observed, Placed, Placement, Tls, decide};
use super::{observe, write};
use crate::context::Context;
use crate::reconcilers::certificate::{CertificateFacts, TLS_CERT_KEY, TLS_KEY_KEY};
use crate::reconcilers::policy::RESYNC_AFTER;

const NAMESPACE: &str = "org-acme";
/// Self-signed for api.example.com, valid for 100 years from 2026-11-27.
const CHAIN: &str = include_str!("../certificate/testdata/api.example.com.pem");

fn now() -> Timestamp {
    "2026-12-01T12:00:00Z".parse().unwrap()
}

fn binding() -> DomainBinding {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
        "metadata": { "name": "api", "namespace": NAMESPACE, "generation": 1 },
        "spec": { "resourceId": "web", "hostname": "api.example.com" },
    }))
    .unwrap()
}

fn certificate() -> Certificate {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Certificate",
        "metadata": { "name": "api", "namespace": NAMESPACE, "generation": 1 },
        "spec": { "domainBindingId": "api" },
    }))
    .unwrap()
}

fn key_pair() -> Secret {
    let mut secret = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [
                (TLS_CERT_KEY.to_string(), ByteString(CHAIN.into())),
                (TLS_KEY_KEY.to_string(), ByteString(b"unused".to_vec())),
            ]
            .into(),
        ),
        ..Default::default()
    };
    secret.metadata.name = Some("api-tls".into());
    secret.metadata.namespace = Some(NAMESPACE.into());
    secret
}

#[tokio::test]
async fn a_served_binding_reads_its_certificate_and_key_pair_from_the_caches() {
    let (context, api, mut feeds) = Context::test();
    feeds.certificates.put(certificate());
    feeds.secrets.put(key_pair());
    let script = api.expect_nothing();
    let (certificate, key_pair) = observe::tls(&context, NAMESPACE, &binding(), now())
        .await
        .unwrap();
    assert_eq!(certificate.as_deref(), Some("api"));
    assert_eq!(key_pair.unwrap().facts.dns_names, ["api.example.com"]);
    script.finish().await;
}

#[tokio::test]
async fn a_binding_still_served_writes_nothing() {
    let (context, api, _feeds) = Context::test();
    let facts = CertificateFacts::of_chain(CHAIN.as_bytes()).unwrap();
    let observed = || {
        Observed::Placed(Box::new(Placed {
            placement: Placement {
                server: "s1".into(),
                resource: "web".into(),
                http_port: 80,
                https_port: 443,
            },
            resolution: Ok(vec!["198.18.0.7".parse().unwrap()]),
            route: Ok(()),
            tls: Tls::Loaded {
                certificate: "api".into(),
                facts: facts.clone(),
                served: Ok(facts.sha256.clone()),
            },
        }))
    };
    let mut binding = binding();
    binding.status = Some(decide(&binding, &observed(), now()).status);
    let script = api.expect_nothing();
    let decision = decide(&binding, &observed(), now());
    let action = write(&context, NAMESPACE, &binding, decision)
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(RESYNC_AFTER));
    script.finish().await;
}
