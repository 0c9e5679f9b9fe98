//! Containers Berth stops on purpose for a while: the users of a volume restored in place, or
//! of a volume a quiesced backup copies. While held, drift repair leaves them stopped and their
//! runtime reads `stopped` with the reason, not `exited`; once released, the exit their stop
//! caused is not taken for a restart. Kept in memory: only the leader reconciles, and an
//! operation cut short by a restart starts its containers again on its next attempt.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a released hold still explains its containers' exit: until drift repair has seen
/// them running again.
const EXPLAINS_FOR: Duration = Duration::from_secs(300);

#[derive(Debug)]
enum Hold {
    Held(String),
    Released(Instant),
}

/// The held containers, by name.
#[derive(Debug, Default)]
pub struct Holds(Mutex<HashMap<String, Hold>>);

impl Holds {
    /// Holds the containers `names` for `why` (said on their runtime) until the guard goes.
    pub fn hold<'a>(&'a self, names: &[String], why: &str) -> HoldGuard<'a> {
        let mut holds = self.lock();
        for name in names {
            holds.insert(name.clone(), Hold::Held(why.to_string()));
        }
        HoldGuard {
            holds: self,
            names: names.to_vec(),
        }
    }

    /// Why the container `name` is stopped, while it is held.
    pub fn held(&self, name: &str) -> Option<String> {
        match self.lock().get(name) {
            Some(Hold::Held(why)) => Some(why.clone()),
            _ => None,
        }
    }

    /// Whether the last exit of the container `name`, now running again, was Berth's own
    /// stop; a released hold is forgotten once it has explained it.
    pub fn explains_exit(&self, name: &str) -> bool {
        let mut holds = self.lock();
        holds.retain(|_, hold| !matches!(hold, Hold::Released(at) if at.elapsed() > EXPLAINS_FOR));
        match holds.get(name) {
            Some(Hold::Held(_)) => true,
            Some(Hold::Released(_)) => {
                holds.remove(name);
                true
            }
            None => false,
        }
    }

    fn release(&self, names: &[String]) {
        let mut holds = self.lock();
        for name in names {
            holds.insert(name.clone(), Hold::Released(Instant::now()));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hold>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Releases its containers when dropped, however the operation ended.
pub struct HoldGuard<'a> {
    holds: &'a Holds,
    names: Vec<String>,
}

impl Drop for HoldGuard<'_> {
    fn drop(&mut self) {
        self.holds.release(&self.names);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_says_why_until_released_then_explains_one_exit() {
        let holds = Holds::default();
        let names = ["berth-app-web-d1".to_string()];
        {
            let _guard = holds.hold(&names, "storage volume data is restored in place");
            assert_eq!(
                holds.held("berth-app-web-d1").as_deref(),
                Some("storage volume data is restored in place")
            );
            assert_eq!(holds.held("berth-app-other"), None);
        }
        assert_eq!(holds.held("berth-app-web-d1"), None, "released");
        assert!(holds.explains_exit("berth-app-web-d1"));
        assert!(!holds.explains_exit("berth-app-web-d1"), "only once");
        assert!(!holds.explains_exit("berth-app-other"));
    }
}
