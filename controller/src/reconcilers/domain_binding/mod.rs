//! DomainBinding: routes a host name (and path prefix) to a Resource on the edge proxy of the
//! server it runs on, with TLS from its Certificate (DESIGN §5b). Status says whether the host
//! name resolves to that server, whether the route is applied, and whether the proxy serves
//! the issued certificate, checked by a TLS handshake with SNI through the tunnel; only then
//! is it Ready.

mod act;
mod decide;
mod observe;
mod served_certificate;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::certificate::Certificate;
use berth_crds::domain_binding::{DomainBinding, TLS_MODE_DISABLED};
use berth_remote::edge_tls::domain_route_id;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};

use self::decide::{Decision, Observed, Placed, SERVED_EVENT, Tls, decide};
use self::observe::Edge;
use crate::cache::Subscription;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::policy::{drain, error_policy};
use crate::status::StatusWriter;

const KIND: &str = "DomainBinding";
/// Removes the binding's routes from the edge proxy before the object goes.
pub const FINALIZER: &str = "berth.dev/domain-binding-route";
/// How soon a binding waiting for its server, resource or certificate looks again (a change
/// of its Certificate wakes it sooner).
const WAIT_RECHECK: Duration = Duration::from_secs(15);

/// What the DomainBinding controller reacts to.
pub struct Inputs {
    pub bindings: Subscription<DomainBinding>,
    pub certificates: Subscription<Certificate>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let bindings = context.caches.domain_bindings.clone();
    let stream = Controller::for_shared_stream(inputs.bindings, bindings)
        .watches_shared_stream(inputs.certificates, |certificate| {
            certificate.namespace().map(|namespace| {
                ObjectRef::new(&certificate.spec.domain_binding_id).within(&namespace)
            })
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(binding: Arc<DomainBinding>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = binding
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<DomainBinding>::namespaced(context.client.clone(), &namespace);
    let ctx = context.clone();
    finalizer(&api, FINALIZER, binding, |event| async move {
        match event {
            FinalizerEvent::Apply(binding) => apply(&ctx, &namespace, &binding).await,
            FinalizerEvent::Cleanup(binding) => {
                remove_routes(&ctx, &namespace, &binding).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// One reconcile: observe (routing the binding on its way, since whether the proxy takes the
/// route and which certificate it then presents are observations too), decide, write.
async fn apply(context: &Context, namespace: &str, binding: &DomainBinding) -> Result<Action> {
    let now = Timestamp::now();
    let observed = match observe::edge(context, namespace, binding).await {
        Ok(edge) => Observed::Placed(Box::new(
            route(context, namespace, binding, &edge, now).await?,
        )),
        Err(unplaced) => Observed::Unplaced(unplaced),
    };
    let decision = decide(binding, &observed, now);
    write(context, namespace, binding, decision).await
}

/// Observes DNS and the key pair, puts the route on the proxy, then asks the proxy which
/// certificate it presents.
async fn route(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
    edge: &Edge,
    now: Timestamp,
) -> Result<Placed> {
    let resolution = observe::resolution(context, binding, edge).await;
    let (certificate, key_pair) = observe::tls(context, namespace, binding, now).await?;
    let port = observe::upstream_port(binding, edge)?;
    let facts = key_pair.as_ref().map(|k| &k.facts);
    let route = decide::route(namespace, binding, &edge.placement, port, facts);
    let applied = act::serve(&edge.proxy, &route, key_pair.as_ref()).await?;
    let tls = match (certificate, key_pair) {
        _ if binding.spec.tls_mode == TLS_MODE_DISABLED => Tls::Disabled,
        (Some(certificate), Some(key_pair)) => {
            let https_port = edge.placement.https_port;
            let hostname = &binding.spec.hostname;
            let served =
                served_certificate::served_leaf_sha256(&edge.connection, https_port, hostname)
                    .await;
            Tls::Loaded {
                certificate,
                facts: key_pair.facts,
                served,
            }
        }
        (certificate, _) => Tls::Waiting { certificate },
    };
    Ok(Placed {
        placement: edge.placement.clone(),
        resolution,
        route: applied,
        tls,
    })
}

/// Writes the decided status, then sends the `Served` Event if the binding just became ready.
async fn write(
    context: &Context,
    namespace: &str,
    binding: &DomainBinding,
    decision: Decision,
) -> Result<Action> {
    let api = Api::<DomainBinding>::namespaced(context.client.clone(), namespace);
    StatusWriter::new(&api, binding)
        .apply(binding.status.as_ref(), &decision.status)
        .await?;
    if let Some(message) = decision.served_event {
        let reference = binding.object_ref(&());
        context
            .publish_event(&reference, EventType::Normal, SERVED_EVENT, message)
            .await;
    }
    Ok(Action::requeue(decision.recheck_after))
}

/// Takes the binding's routes and certificate off its server's edge proxy.
async fn remove_routes(context: &Context, namespace: &str, binding: &DomainBinding) -> Result<()> {
    let Ok(edge) = observe::edge(context, namespace, binding).await else {
        // No server (any more) or not connected: nothing Berth could still reach to clean.
        return Ok(());
    };
    act::unserve(
        &edge.proxy,
        &domain_route_id(namespace, &binding.name_any()),
    )
    .await
}

// Declared last: hack/lib/largest_functions.py skips everything after `#[cfg(test)]`.
#[cfg(test)]
mod reconcile_tests;
#[cfg(test)]
mod tests;
