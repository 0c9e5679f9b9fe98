//! The Certificate reconcile on a scripted API server: a certificate in use costs one read (its
//! key pair, which it must not take from a cache that may not have seen its own renewal yet)
//! and no write, and wakes next at its renewal time.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::certificate::Certificate;
use berth_crds::domain_binding::DomainBinding;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use serde_json::json;

use super::{CertificateFacts, TLS_CERT_KEY, reconcile};
use crate::context::Context;
use crate::context::fixtures::Exchange;

/// Self-signed for api.example.com, valid for 100 years from 2026-11-27; only the chain is
/// read, so its key was not kept.
const CHAIN: &str = include_str!("testdata/api.example.com.pem");
const KEY_PAIR: &str = "/api/v1/namespaces/org-acme/secrets/api-tls";
const STATUS: &str = "/apis/berth.dev/v1alpha1/namespaces/org-acme/certificates/api/status";

fn certificate() -> Certificate {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Certificate",
        "metadata": { "name": "api", "namespace": "org-acme", "generation": 1 },
        "spec": { "domainBindingId": "api" },
    }))
    .unwrap()
}

fn binding() -> DomainBinding {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
        "metadata": { "name": "api", "namespace": "org-acme" },
        "spec": { "resourceId": "web", "hostname": "api.example.com" },
    }))
    .unwrap()
}

fn key_pair() -> Secret {
    let mut secret = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [(
                TLS_CERT_KEY.to_string(),
                ByteString(CHAIN.as_bytes().to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secret.metadata.name = Some("api-tls".into());
    secret
}

#[tokio::test]
async fn a_certificate_in_use_is_only_read_and_wakes_at_its_renewal() {
    let (context, api, mut feeds) = Context::test();
    feeds.domain_bindings.put(binding());
    let mut certificate = certificate();
    let reads = || [Exchange::get(KEY_PAIR).returns(&key_pair())];
    // The first reconcile records the stored certificate in the status…
    let script = api.serve(
        reads()
            .into_iter()
            .chain([Exchange::patch(STATUS).returns(&certificate)]),
    );
    reconcile(Arc::new(certificate.clone()), context.clone())
        .await
        .unwrap();
    let sent = script.finish().await;
    certificate.status = Some(serde_json::from_value(sent[1].body["status"].clone()).unwrap());
    // …which the next one finds up to date.
    let script = api.serve(reads());
    let before = Timestamp::now().as_second();
    let action = reconcile(Arc::new(certificate), context.clone())
        .await
        .unwrap();
    let after = Timestamp::now().as_second();
    script.finish().await;
    let renew_at = CertificateFacts::of_chain(CHAIN.as_bytes())
        .unwrap()
        .renew_at();
    let at_renewal = (before..=after).any(|now| {
        let wait = u64::try_from(renew_at.as_second() - now).unwrap();
        action == Action::requeue(Duration::from_secs(wait))
    });
    assert!(at_renewal, "{action:?} is not a wake-up at {renew_at}");
    assert_eq!(context.servers.connections_opened(), 0);
}
