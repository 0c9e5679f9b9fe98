//! What a DomainBinding's reconcile changes on the edge proxy of its server: the key pair's
//! files and the binding's route (put on, or taken off).

use berth_remote::EdgeProxy;
use berth_remote::edge_tls::{
    CertificateFiles, DomainRoute, TLS_DIR_IN_CONTAINER, TlsParts, http_route,
};

use super::decide::KeyPair;
use crate::error::Result;

/// Puts `route` (and its key pair's files, when it has TLS) on the proxy. An upload that fails
/// is an error; a route update the proxy refuses is an outcome, with the proxy's words.
pub async fn serve(
    proxy: &EdgeProxy,
    route: &DomainRoute,
    key_pair: Option<&KeyPair>,
) -> Result<std::result::Result<(), String>> {
    if let (Some(tls), Some(key_pair)) = (&route.tls, key_pair) {
        put_key_pair_files(proxy, &tls.files, &key_pair.chain, &key_pair.key).await?;
    }
    let applied = proxy
        .update_routes(|routes, tls_parts| {
            routes.retain(|r| r["@id"] != route.id.as_str());
            routes.push(http_route(route));
            tls_parts.set(&route.id, Some(route));
        })
        .await;
    Ok(applied.map_err(|error| error.to_string()))
}

/// Takes the route `id` and its certificate off the proxy.
pub async fn unserve(proxy: &EdgeProxy, id: &str) -> Result<()> {
    proxy
        .update_routes(|routes, tls| {
            routes.retain(|r| r["@id"] != id);
            tls.set(id, None);
        })
        .await?;
    Ok(())
}

/// Uploads the key pair unless the proxy already loads these very files.
async fn put_key_pair_files(
    proxy: &EdgeProxy,
    files: &CertificateFiles,
    chain: &[u8],
    key: &[u8],
) -> Result<()> {
    let config = proxy.config().await?;
    let loaded = TlsParts::of(&config)
        .files
        .iter()
        .any(|f| f["certificate"] == files.certificate.as_str());
    if loaded {
        return Ok(());
    }
    let relative = |path: &str| {
        path.trim_start_matches(TLS_DIR_IN_CONTAINER)
            .trim_start_matches('/')
            .to_string()
    };
    let certificate = format!("tls/{}", relative(&files.certificate));
    let key_file = format!("tls/{}", relative(&files.key));
    proxy
        .put_files(&[(certificate.as_str(), chain), (key_file.as_str(), key)])
        .await?;
    Ok(())
}
