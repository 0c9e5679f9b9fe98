//! The Secrets behind a managed PostgreSQL's TLS: the organization's certificate authority
//! (`berth-database-ca` in its namespace), made on first use and kept for every database after,
//! and each database's server certificate (`<name>-tls`, owned by the dependency so it goes
//! with it). Read from the cache, then the API server (a Secret made a moment ago), made last.

use std::collections::BTreeMap;

use berth_crds::dependency_resource::{
    CA_CERT_KEY, CA_PRIVATE_KEY_KEY, DATABASE_CA_SECRET, DependencyKind, DependencyResource,
    tls_secret_name,
};
use berth_crds::{DEPENDENCY_LABEL, MANAGED_LABEL};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::{Api, Resource as _, ResourceExt};

use super::tls::{self, Pem};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};

/// Keys of a server certificate's Secret (a `kubernetes.io/tls` one).
const CERT_KEY: &str = "tls.crt";
const KEY_KEY: &str = "tls.key";

/// The TLS a managed dependency's server runs with: a PostgreSQL's certificate for the host
/// name of its connection (`host`), issued by its organization's authority; none for Redis.
pub async fn of_server(
    dependency: &DependencyResource,
    context: &Context,
    host: &str,
) -> Result<Option<Pem>> {
    if dependency.spec.kind != DependencyKind::Postgres {
        return Ok(None);
    }
    let namespace = dependency.namespace().unwrap_or_default();
    let authority = authority(context, &namespace).await?;
    server(dependency, context, &authority, host)
        .await
        .map(Some)
}

/// The organization's authority, made now if it has none.
pub async fn authority(context: &Context, namespace: &str) -> Result<Pem> {
    let keys = (CA_CERT_KEY, CA_PRIVATE_KEY_KEY);
    get_or_make(context, namespace, DATABASE_CA_SECRET, keys, || {
        let pem = tls::new_authority(namespace).map_err(issuing)?;
        Ok((secret(DATABASE_CA_SECRET, keys, &pem, None), pem))
    })
    .await
}

/// `dependency`'s server certificate for `host`, issued by `authority` now if it has none.
async fn server(
    dependency: &DependencyResource,
    context: &Context,
    authority: &Pem,
    host: &str,
) -> Result<Pem> {
    let namespace = dependency.namespace().unwrap_or_default();
    let name = tls_secret_name(&dependency.name_any());
    let owner = dependency
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    get_or_make(context, &namespace, &name, (CERT_KEY, KEY_KEY), || {
        let pem = tls::new_server_certificate(authority, host).map_err(issuing)?;
        let mut made = secret(&name, (CERT_KEY, KEY_KEY), &pem, Some(owner));
        made.type_ = Some("kubernetes.io/tls".to_string());
        made.labels_mut()
            .insert(DEPENDENCY_LABEL.to_string(), dependency.name_any());
        Ok((made, pem))
    })
    .await
}

/// The PEM pair Secret `name` holds under `keys`, or the one `make` gives, stored first. Two
/// reconciles making it at once keep the first one stored.
async fn get_or_make(
    context: &Context,
    namespace: &str,
    name: &str,
    keys: (&str, &str),
    make: impl FnOnce() -> Result<(Secret, Pem)>,
) -> Result<Pem> {
    if let Some(secret) = Caches::get(&context.caches.secrets, namespace, name) {
        return pem_of(&secret, name, keys);
    }
    let api = Api::<Secret>::namespaced(context.client.clone(), namespace);
    if let Some(secret) = api.get_opt(name).await? {
        return pem_of(&secret, name, keys);
    }
    let (secret, pem) = make()?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(pem),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            pem_of(&api.get(name).await?, name, keys)
        }
        Err(error) => Err(error.into()),
    }
}

fn secret(
    name: &str,
    (cert_key, key_key): (&str, &str),
    pem: &Pem,
    owner: Option<OwnerReference>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            owner_references: owner.map(|owner| vec![owner]),
            ..Default::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(BTreeMap::from([
            (cert_key.to_string(), ByteString(pem.cert.clone().into())),
            (key_key.to_string(), ByteString(pem.key.clone().into())),
        ])),
        ..Default::default()
    }
}

fn pem_of(secret: &Secret, name: &str, (cert_key, key_key): (&str, &str)) -> Result<Pem> {
    let text = |key: &str| {
        secret
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .and_then(|value| String::from_utf8(value.0.clone()).ok())
            .filter(|value| value.contains("-----BEGIN"))
            .ok_or_else(|| {
                Error::InvalidSpec(format!(
                    "Secret {name} has no PEM `{key}`: delete it, and Berth makes a new one"
                ))
            })
    };
    Ok(Pem {
        cert: text(cert_key)?,
        key: text(key_key)?,
    })
}

fn issuing(error: rcgen::Error) -> Error {
    Error::InvalidSpec(format!("issuing a database certificate failed: {error}"))
}
