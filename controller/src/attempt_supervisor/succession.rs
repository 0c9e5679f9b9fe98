//! Which attempt's container serves a resource during and right after a rollout. An attempt
//! that verified its container and switched the route takes over before it retires the older
//! containers; the Resource reconciler's copy of the attempts may still name the old attempt
//! as serving (read before the success was written, or a cache a moment behind). Reading that
//! old container's planned exit as the runtime's state would record a redeploy as the resource
//! failing. The takeover is kept here until the cache shows the successor serving. Pure.

use std::collections::HashMap;

use berth_crds::deployment::AttemptOrder;

/// An attempt that took over serving a resource: its container serves from now on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Successor {
    pub order: AttemptOrder,
    /// The Server its container runs on (a redeploy may move the resource).
    pub server: String,
}

impl Successor {
    pub fn deployment(&self) -> &str {
        &self.order.2
    }
}

/// The attempt whose container serves the resource, as (deployment, server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    pub deployment: String,
    pub server: String,
}

/// The successors of resources whose cache has not caught up yet, by (namespace, resource).
#[derive(Debug, Default)]
pub struct Successions {
    taken_over: HashMap<(String, String), Successor>,
}

impl Successions {
    /// `successor` serves `resource` from now on; an older successor is forgotten, a newer one
    /// stays (attempts of one resource may end in any order).
    pub fn take_over(&mut self, namespace: &str, resource: &str, successor: Successor) {
        let key = (namespace.to_string(), resource.to_string());
        match self.taken_over.get(&key) {
            Some(newer) if newer.order > successor.order => {}
            _ => {
                self.taken_over.insert(key, successor);
            }
        }
    }

    /// The attempt that serves, given the one the caller's cache says serves (`cached`, with
    /// its order and server); the takeover is forgotten once the cache shows it.
    pub fn serving(
        &mut self,
        namespace: &str,
        resource: &str,
        cached: Option<(&AttemptOrder, &str)>,
    ) -> Option<Serving> {
        let key = (namespace.to_string(), resource.to_string());
        let successor = self.taken_over.get(&key);
        let (serving, settled) = serving_attempt(cached, successor);
        if settled {
            self.taken_over.remove(&key);
        }
        serving
    }

    /// Forgets the resource (it is being deleted).
    pub fn forget(&mut self, namespace: &str, resource: &str) {
        self.taken_over
            .remove(&(namespace.to_string(), resource.to_string()));
    }
}

/// The serving attempt: the successor when the cached serving attempt is older than it (or
/// there is none), else the cached one. The second value says the cache caught up with the
/// successor (it serves, or a newer attempt does), so the takeover can be forgotten.
pub fn serving_attempt(
    cached: Option<(&AttemptOrder, &str)>,
    successor: Option<&Successor>,
) -> (Option<Serving>, bool) {
    let from_cache = cached.map(|(order, server)| Serving {
        deployment: order.2.clone(),
        server: server.to_string(),
    });
    let Some(successor) = successor else {
        return (from_cache, false);
    };
    match cached {
        Some((order, _)) if *order >= successor.order => (from_cache, true),
        _ => (
            Some(Serving {
                deployment: successor.deployment().to_string(),
                server: successor.server.clone(),
            }),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn order(name: &str, second: i64) -> AttemptOrder {
        (
            Some(Timestamp::from_second(second).unwrap()),
            None,
            name.into(),
        )
    }

    fn successor(name: &str, second: i64) -> Successor {
        Successor {
            order: order(name, second),
            server: "local".into(),
        }
    }

    fn serving(deployment: &str) -> Option<Serving> {
        Some(Serving {
            deployment: deployment.into(),
            server: "local".into(),
        })
    }

    #[test]
    fn a_successor_serves_while_the_cache_still_names_the_retired_attempt() {
        let old = order("dep-web-1", 1);
        let new = successor("dep-web-2", 2);
        assert_eq!(
            serving_attempt(Some((&old, "local")), Some(&new)),
            (serving("dep-web-2"), false)
        );
        // The first deploy's success, not yet in the cache.
        assert_eq!(
            serving_attempt(None, Some(&new)),
            (serving("dep-web-2"), false)
        );
    }

    #[test]
    fn the_cache_decides_once_it_caught_up_or_without_a_takeover() {
        let old = order("dep-web-1", 1);
        let new = successor("dep-web-2", 2);
        assert_eq!(
            serving_attempt(Some((&old, "local")), None),
            (serving("dep-web-1"), false)
        );
        let caught_up = order("dep-web-2", 2);
        assert_eq!(
            serving_attempt(Some((&caught_up, "local")), Some(&new)),
            (serving("dep-web-2"), true)
        );
        let newer = order("dep-web-3", 3);
        assert_eq!(
            serving_attempt(Some((&newer, "local")), Some(&new)),
            (serving("dep-web-3"), true)
        );
    }

    #[test]
    fn a_takeover_moves_servers_and_is_forgotten_when_the_cache_shows_it() {
        let mut successions = Successions::default();
        let mut moved = successor("dep-web-2", 2);
        moved.server = "other".into();
        successions.take_over("org-a", "web", moved);
        // An older attempt ending later does not take over from a newer one.
        successions.take_over("org-a", "web", successor("dep-web-1", 1));
        let old = order("dep-web-1", 1);
        let taken = successions.serving("org-a", "web", Some((&old, "local")));
        assert_eq!(
            taken,
            Some(Serving {
                deployment: "dep-web-2".into(),
                server: "other".into()
            })
        );
        assert_eq!(
            successions.serving("org-a", "api", None),
            None,
            "another resource"
        );
        let caught_up = order("dep-web-2", 2);
        successions.serving("org-a", "web", Some((&caught_up, "other")));
        assert!(successions.taken_over.is_empty());
        successions.take_over("org-a", "web", successor("dep-web-3", 3));
        successions.forget("org-a", "web");
        assert!(successions.taken_over.is_empty());
    }
}
