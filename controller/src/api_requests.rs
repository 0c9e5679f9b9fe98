//! Counts the requests berth-controller sends to the Kubernetes API server, so its own cost at
//! rest is measured exactly (`hack/bench.sh scale`), apart from every other client of the API
//! server.

use std::sync::LazyLock;

use http::Request;
use kube::Client;
use kube::client::{Body, ClientBuilder};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tower::util::MapRequestLayer;

/// One kind of request: the HTTP method (`WATCH` for a watch), whether it concerns a Lease
/// (leader election renews its Lease every few seconds whatever else happens), and the
/// collection it reads or writes (`scheduledtasks/status`), so a cost at rest names its source.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabel {
    pub verb: String,
    pub lease: bool,
    pub resource: String,
}

/// Requests sent to the API server, by kind, since the process started.
pub static API_REQUESTS: LazyLock<Family<RequestLabel, Counter>> = LazyLock::new(Family::default);

/// A client for the inferred configuration that counts every request it sends.
pub async fn counted_client() -> kube::Result<Client> {
    let config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&MapRequestLayer::new(count)).build())
}

fn count(request: Request<Body>) -> Request<Body> {
    let watch = request
        .uri()
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair == "watch=true"));
    let verb = if watch {
        "WATCH".to_string()
    } else {
        request.method().as_str().to_string()
    };
    let path = request.uri().path();
    let lease = path.contains("/leases");
    let resource = collection_of(path);
    API_REQUESTS
        .get_or_create(&RequestLabel {
            verb,
            lease,
            resource,
        })
        .inc();
    request
}

/// The collection a request path names, with its subresource: `/apis/berth.dev/v1alpha1/
/// namespaces/shop/resources/web/status` → `resources/status`; discovery paths → `discovery`.
fn collection_of(path: &str) -> String {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let after_version = match segments.first() {
        Some(&"api") => 2,
        Some(&"apis") => 3,
        _ => return "other".to_string(),
    };
    let mut rest = segments.get(after_version..).unwrap_or_default();
    if rest.first() == Some(&"namespaces") && rest.len() > 2 {
        rest = &rest[2..];
    }
    match rest {
        [] => "discovery".to_string(),
        [collection] | [collection, _] => collection.to_string(),
        [collection, _, sub, ..] => format!("{collection}/{sub}"),
    }
}

#[cfg(test)]
mod tests {
    use super::collection_of;

    #[test]
    fn a_path_is_counted_by_its_collection_and_subresource() {
        let cases = [
            (
                "/apis/berth.dev/v1alpha1/namespaces/shop/resources/web/status",
                "resources/status",
            ),
            (
                "/apis/berth.dev/v1alpha1/namespaces/shop/scheduledtasks",
                "scheduledtasks",
            ),
            ("/api/v1/namespaces/shop/secrets/db", "secrets"),
            ("/api/v1/namespaces/shop", "namespaces"),
            ("/api/v1/namespaces", "namespaces"),
            (
                "/apis/coordination.k8s.io/v1/namespaces/berth/leases/berth",
                "leases",
            ),
            ("/apis/events.k8s.io/v1/namespaces/shop/events", "events"),
            ("/apis/berth.dev/v1alpha1", "discovery"),
            ("/version", "other"),
        ];
        for (path, expected) in cases {
            assert_eq!(collection_of(path), expected, "{path}");
        }
    }
}
