//! Which of a policy's backups its retention rules keep, decided without I/O. A ready backup is
//! kept when any rule keeps it, and the newest ready one always is (a policy never prunes its
//! last restore point); pending backups are never pruned; of the failed ones the newest
//! [`FAILED_KEPT`] stay as a record.

use berth_crds::backup::BackupStatus;
use berth_crds::backup_policy::{BackupRetention, FAILED_KEPT};

const DAY: i64 = 86_400;

/// A backup of the policy, as pruning sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub name: String,
    pub status: BackupStatus,
    /// When it was asked for (Unix seconds).
    pub taken_at: i64,
}

/// What pruning does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pruning {
    /// Backups to delete (their artifacts go with them).
    pub delete: Vec<String>,
    /// Ready backups kept.
    pub ready_kept: usize,
}

/// Decides which of `backups` `rules` delete at `now` (Unix seconds).
pub fn decide(backups: &[Kept], rules: &BackupRetention, now: i64) -> Pruning {
    let rules = rules.effective();
    let mut ready = newest_first(backups, BackupStatus::Ready);
    let keep: Vec<bool> = (0..ready.len())
        .map(|index| index == 0 || kept_by_rules(&ready, index, &rules, now))
        .collect();
    let ready_kept = keep.iter().filter(|kept| **kept).count();
    let mut delete: Vec<String> = ready
        .drain(..)
        .zip(keep)
        .filter(|(_, kept)| !kept)
        .map(|(backup, _)| backup.name.clone())
        .collect();
    let failed = newest_first(backups, BackupStatus::Failed);
    delete.extend(
        failed
            .iter()
            .skip(FAILED_KEPT)
            .map(|backup| backup.name.clone()),
    );
    Pruning { delete, ready_kept }
}

fn newest_first(backups: &[Kept], status: BackupStatus) -> Vec<&Kept> {
    let mut chosen: Vec<&Kept> = backups.iter().filter(|b| b.status == status).collect();
    chosen.sort_by(|a, b| (b.taken_at, &b.name).cmp(&(a.taken_at, &a.name)));
    chosen
}

/// Whether the backup at `index` of `ready` (newest first) is kept by a rule.
fn kept_by_rules(ready: &[&Kept], index: usize, rules: &BackupRetention, now: i64) -> bool {
    let backup = ready[index];
    let by_count = rules.keep_last.is_some_and(|n| (index as i64) < n);
    let by_age = rules
        .keep_days
        .is_some_and(|days| now - backup.taken_at < days * DAY);
    let daily = rules
        .keep_daily
        .is_some_and(|n| newest_of_period(ready, index, n, day_of));
    let weekly = rules
        .keep_weekly
        .is_some_and(|n| newest_of_period(ready, index, n, week_of));
    by_count || by_age || daily || weekly
}

/// Whether the backup at `index` is the newest of its period, and its period among the newest
/// `periods` that have a backup.
fn newest_of_period(ready: &[&Kept], index: usize, periods: i64, period: fn(i64) -> i64) -> bool {
    let mut seen = Vec::new();
    for (at, backup) in ready.iter().enumerate() {
        let this = period(backup.taken_at);
        if seen.last() == Some(&this) {
            continue;
        }
        seen.push(this);
        if seen.len() as i64 > periods {
            return false;
        }
        if at == index {
            return true;
        }
    }
    false
}

fn day_of(seconds: i64) -> i64 {
    seconds.div_euclid(DAY)
}

/// The ISO week (Monday to Sunday, UTC): 1970-01-01 was a Thursday.
fn week_of(seconds: i64) -> i64 {
    (day_of(seconds) + 3).div_euclid(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Monday 2026-11-30 00:00 UTC.
    const MONDAY: i64 = 1_795_996_800;

    fn ready(name: &str, taken_at: i64) -> Kept {
        Kept {
            name: name.into(),
            status: BackupStatus::Ready,
            taken_at,
        }
    }

    fn with_status(name: &str, status: BackupStatus, taken_at: i64) -> Kept {
        Kept {
            status,
            ..ready(name, taken_at)
        }
    }

    fn rules(
        keep_last: Option<i64>,
        keep_daily: Option<i64>,
        keep_weekly: Option<i64>,
    ) -> BackupRetention {
        BackupRetention {
            keep_last,
            keep_days: None,
            keep_daily,
            keep_weekly,
        }
    }

    #[test]
    fn keep_three_after_five_runs_deletes_the_two_oldest() {
        let backups: Vec<Kept> = (0..5)
            .map(|i| ready(&format!("b{i}"), MONDAY + i * 60))
            .collect();
        let pruning = decide(&backups, &rules(Some(3), None, None), MONDAY + 600);
        assert_eq!(pruning.delete, ["b1", "b0"]);
        assert_eq!(pruning.ready_kept, 3);
    }

    #[test]
    fn no_rule_keeps_the_newest_seven() {
        let backups: Vec<Kept> = (0..9)
            .map(|i| ready(&format!("b{i}"), MONDAY + i))
            .collect();
        let pruning = decide(&backups, &BackupRetention::default(), MONDAY + 600);
        assert_eq!(pruning.delete, ["b1", "b0"]);
    }

    #[test]
    fn seven_daily_and_four_weekly_keep_the_newest_of_each_period() {
        // Four backups a day (every 6 hours) for 35 days, from a Monday.
        let backups: Vec<Kept> = (0..35 * 4)
            .map(|i| ready(&format!("b{i:03}"), MONDAY + i * 6 * 3600))
            .collect();
        let now = MONDAY + 35 * DAY;
        let pruning = decide(&backups, &rules(None, Some(7), Some(4)), now);
        let kept: Vec<&Kept> = backups
            .iter()
            .filter(|b| !pruning.delete.contains(&b.name))
            .collect();
        // 7 newest days' last backups; the 4 newest weeks' last backups, the newest week's
        // being the newest day's: 7 + 3.
        assert_eq!(kept.len(), 10, "{kept:?}");
        let days: Vec<i64> = kept.iter().map(|b| day_of(b.taken_at)).collect();
        for day in day_of(now) - 7..day_of(now) {
            assert!(days.contains(&day), "day {day} has its backup");
        }
        // Each kept one is the last of its day.
        assert!(
            kept.iter()
                .all(|b| (b.taken_at - MONDAY) % DAY == 18 * 3600)
        );
    }

    #[test]
    fn the_newest_ready_backup_is_kept_whatever_the_rules_say() {
        let backups = [ready("old", MONDAY), ready("new", MONDAY + 60)];
        let rules = BackupRetention {
            keep_days: Some(1),
            ..BackupRetention::default()
        };
        let pruning = decide(&backups, &rules, MONDAY + 30 * DAY);
        assert_eq!(pruning.delete, ["old"]);
        assert_eq!(pruning.ready_kept, 1);
    }

    #[test]
    fn pending_backups_stay_and_only_the_newest_failed_ones_are_kept() {
        let mut backups = vec![with_status("taking", BackupStatus::Pending, MONDAY - DAY)];
        backups.extend(
            (0..8).map(|i| with_status(&format!("f{i}"), BackupStatus::Failed, MONDAY + i)),
        );
        let pruning = decide(&backups, &rules(Some(1), None, None), MONDAY + 60);
        assert_eq!(pruning.delete, ["f2", "f1", "f0"]);
        assert_eq!(pruning.ready_kept, 0);
    }
}
