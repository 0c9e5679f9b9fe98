//! Which slots of a schedule are due, decided without I/O, for scheduled tasks and backup
//! policies: the newest slot runs when it is at most [`ON_TIME_WITHIN`] old; older ones (the
//! controller or its Lease was away) are recorded missed, and the newest of them runs late when
//! asked.

use std::time::Duration;

use berth_crds::scheduled_task::Schedule;
use k8s_openapi::jiff::Timestamp;

/// A slot started within this many seconds of its time is on time; later, it was missed.
pub const ON_TIME_WITHIN: i64 = 30;
/// Missed slots recorded one by one, the newest; older ones are counted in a summary.
pub const MISSED_RECORDED: usize = 5;
/// How far back missed slots are looked for (a week of minutes is 10 080 slots).
const LOOK_BACK: i64 = 7 * 24 * 3600;

/// What a schedule's owner does at `now`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotDecision {
    /// The slot to run now, on time.
    pub run: Option<i64>,
    /// The newest missed slot, run late because the task asks to.
    pub run_late: Option<i64>,
    /// Missed slots recorded one by one, oldest first (at most [`MISSED_RECORDED`]).
    pub missed: Vec<i64>,
    /// Missed slots older than those recorded.
    pub missed_uncounted: usize,
    /// The newest slot handled: the status's `lastSlot` after this.
    pub handled_through: i64,
    /// When the next slot is due.
    pub next: Option<i64>,
}

/// Decides the slots in (`handled_through`, `now`] of `schedule`.
pub fn decide(
    schedule: &Schedule,
    enabled: bool,
    run_missed: bool,
    handled_through: i64,
    now: i64,
) -> SlotDecision {
    let slots = due_slots(schedule, handled_through.max(now - LOOK_BACK), now);
    let next = schedule.next_after(now.max(handled_through));
    let Some(&newest) = slots.last() else {
        return SlotDecision {
            run: None,
            run_late: None,
            missed: Vec::new(),
            missed_uncounted: 0,
            handled_through,
            next,
        };
    };
    let on_time = now - newest <= ON_TIME_WITHIN;
    let mut missed: Vec<i64> = if on_time {
        slots[..slots.len() - 1].to_vec()
    } else {
        slots
    };
    if !enabled {
        // A disabled schedule's slots pass without a record.
        missed.clear();
    }
    let missed_uncounted = missed.len().saturating_sub(MISSED_RECORDED);
    missed.drain(..missed_uncounted);
    SlotDecision {
        run: (enabled && on_time).then_some(newest),
        run_late: (enabled && !on_time && run_missed).then_some(newest),
        missed,
        missed_uncounted,
        handled_through: newest,
        next,
    }
}

/// What an owner's status recorded of its slots, for [`handled_through`].
pub struct SlotRecord<'a> {
    /// The status's last slot handled (RFC 3339).
    pub last_slot: Option<&'a str>,
    /// Whether the status was written for the spec's current generation.
    pub same_spec: bool,
    /// When the owner was created.
    pub created: Option<Timestamp>,
}

/// The newest slot already handled: the status's, unless the spec changed since (a changed
/// schedule starts from now, with nothing missed) or the owner is new (from its creation).
pub fn handled_through(record: SlotRecord<'_>, now: Timestamp) -> i64 {
    let recorded = record
        .last_slot
        .and_then(|slot| slot.parse::<Timestamp>().ok());
    match (recorded, record.same_spec) {
        (Some(slot), true) => slot.as_second(),
        (Some(_), false) => now.as_second(),
        (None, _) => record.created.map_or(now.as_second(), |t| t.as_second()),
    }
}

/// Time until `slot`, a little after it so the slot is due when the timer fires.
pub fn until(slot: i64, now: Timestamp) -> Duration {
    let millis = slot * 1000 - now.as_millisecond() + 50;
    Duration::from_millis(u64::try_from(millis).unwrap_or(0).max(50))
}

/// A slot (Unix seconds) as RFC 3339.
pub fn rfc3339(seconds: i64) -> String {
    Timestamp::from_second(seconds).map_or_else(|_| seconds.to_string(), |t| t.to_string())
}

fn due_slots(schedule: &Schedule, after: i64, until: i64) -> Vec<i64> {
    let mut slots = Vec::new();
    let mut cursor = after;
    while let Some(slot) = schedule.next_after(cursor).filter(|slot| *slot <= until) {
        slots.push(slot);
        cursor = slot;
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_796_263_200; // a whole minute

    fn minutely() -> Schedule {
        Schedule::parse("* * * * *", "UTC").unwrap()
    }

    #[test]
    fn nothing_is_due_before_the_next_slot() {
        let decision = decide(&minutely(), true, false, T0, T0 + 59);
        assert_eq!(decision.run, None);
        assert!(decision.missed.is_empty());
        assert_eq!(decision.handled_through, T0);
        assert_eq!(decision.next, Some(T0 + 60));
    }

    #[test]
    fn a_slot_reached_on_time_runs_once() {
        let decision = decide(&minutely(), true, false, T0, T0 + 61);
        assert_eq!(decision.run, Some(T0 + 60));
        assert_eq!(decision.handled_through, T0 + 60);
        assert_eq!(decision.next, Some(T0 + 120));
        // Looked at again (a restart, another wake): the slot is handled already.
        let again = decide(&minutely(), true, false, T0 + 60, T0 + 62);
        assert_eq!(again.run, None);
    }

    #[test]
    fn slots_passed_while_away_are_missed_and_the_newest_runs_late_only_when_asked() {
        let away = decide(&minutely(), true, false, T0, T0 + 155);
        assert_eq!(away.run, None);
        assert_eq!(away.run_late, None);
        assert_eq!(away.missed, [T0 + 60, T0 + 120]);
        let asked = decide(&minutely(), true, true, T0, T0 + 155);
        assert_eq!(asked.run_late, Some(T0 + 120));
        // Back within the grace of the newest slot: it runs; the older one was missed.
        let back = decide(&minutely(), true, false, T0, T0 + 125);
        assert_eq!(back.run, Some(T0 + 120));
        assert_eq!(back.missed, [T0 + 60]);
    }

    #[test]
    fn many_missed_slots_are_recorded_newest_first_and_the_rest_counted() {
        let decision = decide(&minutely(), true, false, T0, T0 + 3600 + 45);
        assert_eq!(decision.missed.len(), MISSED_RECORDED);
        assert_eq!(decision.missed.last(), Some(&(T0 + 3600)));
        assert_eq!(decision.missed_uncounted, 60 - MISSED_RECORDED);
    }

    #[test]
    fn a_disabled_task_lets_its_slots_pass_without_a_record() {
        let decision = decide(&minutely(), false, true, T0, T0 + 150);
        assert_eq!((decision.run, decision.run_late), (None, None));
        assert!(decision.missed.is_empty());
        assert_eq!(decision.handled_through, T0 + 120);
    }
}
