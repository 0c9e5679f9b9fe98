//! What an ACME attempt does outside the cluster and in it: the pre-flight on the binding's
//! server, the order (with a fresh account when the CA forgot ours), and storing the key pair.

use std::net::IpAddr;

use berth_crds::certificate::{Certificate, reason};
use berth_crds::domain_binding::DomainBinding;
use berth_remote::edge_tls::challenge_route_prefix;
use berth_remote::{EdgeProxy, ServerId};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::decide::AttemptFailure;
use super::{TLS_CERT_KEY, TLS_KEY_KEY, acme, preflight, secret_name, serving_server};
use crate::context::{Context, FIELD_MANAGER};
use crate::error::Result;

/// Pre-flight, then the order; the key pair on success.
pub async fn obtain(
    context: &Context,
    namespace: &str,
    certificate: &Certificate,
    binding: &DomainBinding,
) -> std::result::Result<acme::Issued, AttemptFailure> {
    let preflight_failed = |message: String| AttemptFailure {
        reason: reason::PREFLIGHT_FAILED,
        message,
    };
    let order_failed = |failure: acme::AcmeFailure| AttemptFailure {
        reason: reason::ORDER_FAILED,
        message: failure.message,
    };
    let (_, server) =
        serving_server(&context.caches, namespace, binding).map_err(preflight_failed)?;
    let id = ServerId {
        namespace: namespace.to_string(),
        name: server.name_any(),
    };
    let connection = context
        .servers
        .current(&id)
        .await
        .ok_or_else(|| preflight_failed(format!("server {} is not connected yet", id.name)))?;
    let proxy = EdgeProxy::new(connection, &server.spec.docker_socket_path, &id);
    let hostname = &binding.spec.hostname;
    let expected = preflight::Expected {
        hostname,
        server_name: &id.name,
        server_host: &server.spec.host,
        http_port: u16::try_from(server.spec.proxy.http_port).unwrap_or(80),
        dns_server: context.acme.dns_server,
    };
    let resolved = preflight::host_name_resolves_to_server(&expected)
        .await
        .map_err(preflight_failed)?;
    let prefix = challenge_route_prefix(namespace, &certificate.name_any());
    let address: IpAddr = resolved[0];
    preflight::challenge_path_answers(&expected, address, &proxy, &prefix)
        .await
        .map_err(|m| preflight_failed(format!("pre-flight: {m}")))?;
    let outcome = order_with_account(context, namespace, hostname, &proxy, &prefix).await;
    acme::remove_answers(&proxy, &prefix).await;
    outcome.map_err(order_failed)
}

/// The namespace's account, then the order; once more with a new account when the CA forgot
/// the old one (a test CA restarted).
async fn order_with_account(
    context: &Context,
    namespace: &str,
    hostname: &str,
    proxy: &EdgeProxy,
    prefix: &str,
) -> std::result::Result<acme::Issued, acme::AcmeFailure> {
    let account = acme::account(&context.client, namespace, &context.acme).await?;
    match acme::issue(&account, hostname, proxy, prefix).await {
        Err(failure) if failure.unknown_account => {
            let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
            let account = acme::create_account(&secrets, &context.acme).await?;
            acme::issue(&account, hostname, proxy, prefix).await
        }
        other => other,
    }
}

/// Writes the key pair into the certificate's `kubernetes.io/tls` Secret, owned by the
/// Certificate so it goes with it.
pub async fn store_key_pair(
    secrets: &Api<Secret>,
    certificate: &Certificate,
    issued: &acme::Issued,
) -> Result<()> {
    let name = secret_name(certificate);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(berth_crds::MANAGED_LABEL.to_string(), "true".to_string())].into()),
            owner_references: certificate.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [
                (
                    TLS_CERT_KEY.to_string(),
                    ByteString(issued.chain_pem.clone().into_bytes()),
                ),
                (
                    TLS_KEY_KEY.to_string(),
                    ByteString(issued.key_pem.clone().into_bytes()),
                ),
            ]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await?;
    Ok(())
}
