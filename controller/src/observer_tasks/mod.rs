//! The tasks of a server's observer ([`crate::observer`]): the Docker events follower that keeps
//! its index (`events`), the edge proxy's access-log follower (`access_log`) and the monitoring
//! collector ([`usage`]). They reach the server, the caches, the observation store and
//! the API through the context, so they live apart from the registry the context holds.

mod access_log;
mod events;
pub mod usage;

use std::sync::Arc;

use berth_remote::ServerId;

use crate::context::Context;

/// Starts the server's observer unless it runs (the Server reconciler, once the server
/// answers).
pub fn start(context: &Arc<Context>, id: &ServerId) {
    let monitoring = context.observers.monitoring();
    context.observers.ensure(id, |observed| {
        // The followers share the task, so stopping the observer stops them all.
        let events = events::observe(Arc::clone(context), id.clone(), Arc::clone(&observed));
        let access_log =
            access_log::follow_access_log(Arc::clone(context), id.clone(), Arc::clone(&observed));
        let samples = usage::collect(Arc::clone(context), id.clone(), observed, monitoring);
        async move {
            tokio::join!(events, access_log, samples);
        }
    });
}
