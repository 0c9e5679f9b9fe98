//! The connection Secret of a managed dependency, owned by the DependencyResource so it goes
//! with it: a password generated once (never chosen by a caller), and the full URL on the
//! private network, published only once the database first answers its health check. Bound
//! apps deploy when the URL appears, so they never start before the network they join exists.

use std::collections::BTreeMap;

use berth_crds::dependency_resource::{
    DependencyResource, PASSWORD_KEY, URL_KEY, connection_url, current_user,
};
use berth_crds::{IMPORTED_CONNECTION_LABEL, MANAGED_LABEL};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource as _, ResourceExt};

use super::plan::{DEPENDENCY_LABEL, Names, generate_password};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};

/// The dependency's password: read from its Secret, or generated into a new one.
pub async fn ensure(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
) -> Result<String> {
    let namespace = dependency.namespace().unwrap_or_default();
    if let Some(secret) = Caches::get(&context.caches.secrets, &namespace, &names.secret) {
        return password_of(dependency, &secret, names);
    }
    let api = Api::<Secret>::namespaced(context.client.clone(), &namespace);
    // The cache may lag behind a Secret created a moment ago.
    if let Some(secret) = api.get_opt(&names.secret).await? {
        return password_of(dependency, &secret, names);
    }
    let password = generate_password();
    let secret = secret(dependency, names, [(PASSWORD_KEY, password.as_str())])?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(password),
        // Created by a reconcile that overtook this one: use its password.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let secret = api.get(&names.secret).await?;
            password_of(dependency, &secret, names)
        }
        Err(error) => Err(error.into()),
    }
}

/// The dependency's connection Secret holding `data`, owned by the object.
fn secret<const N: usize>(
    dependency: &DependencyResource,
    names: &Names,
    data: [(&str, &str); N],
) -> Result<Secret> {
    let owner = dependency
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(names.secret.clone()),
            namespace: dependency.namespace(),
            labels: Some(BTreeMap::from([
                (MANAGED_LABEL.to_string(), "true".to_string()),
                (DEPENDENCY_LABEL.to_string(), dependency.name_any()),
            ])),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(
            data.into_iter()
                .map(|(key, value)| (key.to_string(), ByteString(value.into())))
                .collect(),
        ),
        ..Default::default()
    })
}

/// Adds the connection URL to the dependency's Secret unless it is there already: called once
/// the database answers, so a binding never hands an app a URL it cannot reach yet. A URL from
/// before Berth served TLS gets the TLS parameters (its login kept: a rotation may have
/// changed it), once the server serves TLS.
pub async fn publish_url(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
    password: &str,
) -> Result<()> {
    let namespace = dependency.namespace().unwrap_or_default();
    let cached = Caches::get(&context.caches.secrets, &namespace, &names.secret);
    let url = match cached.as_deref().and_then(url_in) {
        Some(url) if url_is_current(dependency, &url) => return Ok(()),
        Some(url) => with_current_parameters(dependency, &url),
        None => {
            let user = current_user(dependency.status.as_ref());
            connection_url(dependency.spec.kind, &names.container, user, password)
        }
    };
    patch_data(context, &namespace, names, [(URL_KEY, url)]).await
}

/// Whether the cached Secret holds a URL of the form this Berth writes (a PostgreSQL's asks
/// for verified TLS): until it does, a ready dependency is looked at over the tunnel.
pub fn published_url_is_current(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
) -> bool {
    let namespace = dependency.namespace().unwrap_or_default();
    let cached = Caches::get(&context.caches.secrets, &namespace, &names.secret);
    cached
        .as_deref()
        .and_then(url_in)
        .is_some_and(|url| url_is_current(dependency, &url))
}

fn url_is_current(dependency: &DependencyResource, url: &str) -> bool {
    url == with_current_parameters(dependency, url)
}

/// `url` with the query this Berth writes for the dependency's kind, its login unchanged.
fn with_current_parameters(dependency: &DependencyResource, url: &str) -> String {
    let base = url.split_once('?').map_or(url, |(base, _)| base);
    let current = connection_url(dependency.spec.kind, "h", "u", "p");
    match current.split_once('?') {
        Some((_, query)) => format!("{base}?{query}"),
        None => base.to_string(),
    }
}

/// Publishes an imported dependency's checked URL in its connection Secret (made here, owned
/// by the object), where bound apps read it; written only when it changed.
pub async fn publish_imported_url(
    dependency: &DependencyResource,
    context: &Context,
    url: &str,
) -> Result<()> {
    let namespace = dependency.namespace().unwrap_or_default();
    let names = Names::of(dependency);
    let cached = Caches::get(&context.caches.secrets, &namespace, &names.secret);
    if cached.as_deref().and_then(url_in) == Some(url.to_string()) {
        return Ok(());
    }
    let api = Api::<Secret>::namespaced(context.client.clone(), &namespace);
    match api.get_opt(&names.secret).await? {
        Some(secret) if !owned_by(dependency, &secret) => Err(not_ours(&names)),
        Some(_) => patch_data(context, &namespace, &names, [(URL_KEY, url.to_string())]).await,
        None => {
            let mut secret = secret(dependency, &names, [(URL_KEY, url)])?;
            secret
                .labels_mut()
                .insert(IMPORTED_CONNECTION_LABEL.to_string(), "true".to_string());
            match api.create(&PostParams::default(), &secret).await {
                // Made by a reconcile that overtook this one: the next one compares it.
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                other => other.map(drop).map_err(Into::into),
            }
        }
    }
}

fn url_in(secret: &Secret) -> Option<String> {
    let value = secret.data.as_ref()?.get(URL_KEY)?;
    String::from_utf8(value.0.clone()).ok()
}

/// Puts a new login into the Secret: its password and the URL that logs in with it. Bound apps
/// that auto-deploy redeploy on it (their configuration changed).
pub async fn replace_login(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
    user: &str,
    password: &str,
) -> Result<()> {
    let namespace = dependency.namespace().unwrap_or_default();
    let url = connection_url(dependency.spec.kind, &names.container, user, password);
    let data = [(PASSWORD_KEY, password.to_string()), (URL_KEY, url)];
    patch_data(context, &namespace, names, data).await
}

/// The password of login `user` when the Secret already holds it: a rotation step tried again
/// (its status not written, or the cache not showing it yet) must not give the same login a
/// second password, or the apps that deployed with the first would be refused. Read from the
/// API server, not the cache, which may lag behind the first try's write.
pub async fn issued_password(
    dependency: &DependencyResource,
    context: &Context,
    names: &Names,
    user: &str,
) -> Result<Option<String>> {
    let namespace = dependency.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(context.client.clone(), &namespace);
    let Some(secret) = api.get_opt(&names.secret).await? else {
        return Ok(None);
    };
    let url = secret
        .data
        .as_ref()
        .and_then(|data| data.get(URL_KEY))
        .and_then(|value| String::from_utf8(value.0.clone()).ok());
    if url.as_deref().and_then(url_user) != Some(user) {
        return Ok(None);
    }
    password_of(dependency, &secret, names).map(Some)
}

/// The login a connection URL names (`postgres://<user>:<password>@…`).
fn url_user(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let (user, _) = rest.split_once(':')?;
    (!user.is_empty()).then_some(user)
}

async fn patch_data<const N: usize>(
    context: &Context,
    namespace: &str,
    names: &Names,
    data: [(&str, String); N],
) -> Result<()> {
    let data = data
        .into_iter()
        .map(|(key, value)| (key.to_string(), ByteString(value.into())))
        .collect();
    let patch = Secret {
        data: Some(data),
        ..Default::default()
    };
    Api::<Secret>::namespaced(context.client.clone(), namespace)
        .patch(
            &names.secret,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

fn owned_by(dependency: &DependencyResource, secret: &Secret) -> bool {
    dependency.uid().is_some_and(|uid| {
        secret
            .owner_references()
            .iter()
            .any(|owner| owner.uid == uid)
    })
}

fn not_ours(names: &Names) -> Error {
    Error::InvalidSpec(format!(
        "Secret {} exists and does not belong to this dependency: rename or remove it, and \
         Berth writes the connection there",
        names.secret
    ))
}

/// The password in the dependency's own Secret; a Secret of that name someone else made is
/// never read (its password was not generated here).
fn password_of(dependency: &DependencyResource, secret: &Secret, names: &Names) -> Result<String> {
    if !owned_by(dependency, secret) {
        return Err(not_ours(names));
    }
    secret
        .data
        .as_ref()
        .and_then(|data| data.get(PASSWORD_KEY))
        .and_then(|value| String::from_utf8(value.0.clone()).ok())
        .filter(|password| !password.is_empty())
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "Secret {} has no `{PASSWORD_KEY}` key: delete it and Berth generates a new one \
                 (the database keeps the password it was initialised with)",
                names.secret
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::dependency_resource::DependencyKind;

    #[test]
    fn a_url_from_before_tls_gets_its_parameters_and_keeps_its_login() {
        let db: DependencyResource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": { "name": "db", "namespace": "org-a" },
            "spec": { "kind": "postgres", "projectId": "p", "environmentId": "e",
                      "serverId": "s", "name": "DB" },
        }))
        .unwrap();
        let old = "postgres://berth_r2:s3cret@db:5432/app";
        assert!(!url_is_current(&db, old));
        let upgraded = with_current_parameters(&db, old);
        assert_eq!(
            upgraded,
            "postgres://berth_r2:s3cret@db:5432/app\
             ?sslmode=verify-full&sslrootcert=/etc/berth/database-ca.crt"
        );
        assert!(url_is_current(&db, &upgraded));
    }

    #[test]
    fn the_login_a_url_names_is_read_back() {
        let url = connection_url(DependencyKind::Postgres, "db", "berth_r2", "s3cret");
        assert_eq!(url_user(&url), Some("berth_r2"));
        let redis = connection_url(DependencyKind::Redis, "cache", "", "s3cret");
        assert_eq!(url_user(&redis), None);
    }
}
