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

/// One kind of request: the HTTP method (`WATCH` for a watch), and whether it concerns a Lease
/// (leader election renews its Lease every few seconds whatever else happens).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabel {
    pub verb: String,
    pub lease: bool,
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
    let lease = request.uri().path().contains("/leases");
    API_REQUESTS
        .get_or_create(&RequestLabel { verb, lease })
        .inc();
    request
}
