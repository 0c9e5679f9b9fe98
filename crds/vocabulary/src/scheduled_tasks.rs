//! Scheduled tasks (Appaloft's words): a command run on a schedule in a fresh container of a
//! resource's image. When a task is due — a five-field cron pattern or an `@hourly`-style name,
//! read in an IANA time zone with its daylight-saving changes — and the words a run's record
//! uses.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happens when a run is due while another run of the task still runs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ConcurrencyPolicy {
    /// The new run is recorded `skipped` (`concurrency-forbidden`); the running one goes on.
    #[default]
    Forbid,
    /// The running one is stopped (recorded `failed`, replaced) and the new one starts.
    Replace,
    /// Both run.
    Allow,
}

/// Whether a task's schedule starts runs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    #[default]
    Enabled,
    /// Slots pass without a run; a run asked for by hand still runs.
    Disabled,
}

/// Where a run stands.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TaskRunStatus {
    /// Recorded, its container not started yet.
    Accepted,
    Running,
    /// The command exited 0.
    Succeeded,
    /// The command exited non-zero, ran past its timeout, or could not be started.
    Failed,
    /// Not run, for `skippedReason`.
    Skipped,
    /// Its slot passed while Berth could not run it (the controller or the server was down).
    Missed,
}

impl TaskRunStatus {
    /// The status as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Missed => "missed",
        }
    }

    /// Whether the run has ended and will not change again.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Accepted | Self::Running)
    }
}

/// What asked for a run.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerKind {
    /// `POST /scheduled-tasks/{id}/runs` or `berth tasks run`.
    Manual,
    /// The task's schedule.
    Scheduled,
}

/// Why a run was skipped.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SkippedReason {
    /// Another run of the task still ran and its policy is `forbid`.
    ConcurrencyForbidden,
    /// The resource is archived.
    ResourceArchived,
    /// The task is disabled.
    TaskDisabled,
}

/// Which output a run's log line came from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TaskLogStream {
    Stdout,
    Stderr,
    /// Berth's own line about the run (started, timed out, exit code).
    System,
}

/// The shortest and longest time a run may be given.
pub const TIMEOUT_SECONDS_MIN: i64 = 1;
pub const TIMEOUT_SECONDS_MAX: i64 = 86_400;
/// How often a failed run may be tried again.
pub const RETRY_LIMIT_MAX: i64 = 10;

/// A schedule that parsed: a cron pattern and the zone it is read in, or a fixed interval.
#[derive(Clone, Debug)]
pub struct Schedule {
    cadence: Cadence,
}

#[derive(Clone, Debug)]
enum Cadence {
    Cron {
        cron: Box<Cron>,
        zone: Tz,
    },
    /// Every this many seconds, counted from the Unix epoch (so every 6 hours is at 00:00,
    /// 06:00, 12:00 and 18:00 UTC).
    Every {
        seconds: i64,
    },
}

/// The longest interval a schedule may be given in hours (a year).
pub const INTERVAL_HOURS_MAX: i64 = 8_760;

/// Why a schedule cannot be used, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleProblem {
    /// `schedule` or `timezone`.
    pub field: &'static str,
    pub message: String,
}

impl Schedule {
    /// Parses a five-field cron pattern (minute hour day-of-month month day-of-week) or one of
    /// `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly`, read in IANA zone `timezone`.
    pub fn parse(schedule: &str, timezone: &str) -> Result<Self, ScheduleProblem> {
        let zone = Tz::from_str(timezone).map_err(|_| ScheduleProblem {
            field: "timezone",
            message: format!(
                "timezone {timezone:?} is not an IANA time zone name (such as UTC or \
                 Europe/Berlin)"
            ),
        })?;
        let problem = |why: &str| ScheduleProblem {
            field: "schedule",
            message: format!(
                "schedule {schedule:?} {why}: use five fields (minute hour day-of-month month \
                 day-of-week, such as \"*/15 * * * *\") or @hourly, @daily, @weekly, @monthly, \
                 @yearly"
            ),
        };
        let trimmed = schedule.trim();
        if !trimmed.starts_with('@') && trimmed.split_whitespace().count() != 5 {
            return Err(problem("does not have five fields"));
        }
        if trimmed.eq_ignore_ascii_case("@reboot") {
            return Err(problem("is not a time"));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .build()
            .parse(trimmed)
            .map_err(|error| problem(&format!("is not a cron pattern ({error})")))?;
        Ok(Self {
            cadence: Cadence::Cron {
                cron: Box::new(cron),
                zone,
            },
        })
    }

    /// Every `hours` hours (1 to [`INTERVAL_HOURS_MAX`]), counted from the Unix epoch; the
    /// field named in a problem is `intervalHours`.
    pub fn every_hours(hours: i64) -> Result<Self, ScheduleProblem> {
        if !(1..=INTERVAL_HOURS_MAX).contains(&hours) {
            return Err(ScheduleProblem {
                field: "intervalHours",
                message: format!(
                    "intervalHours {hours} is out of range: use 1 to {INTERVAL_HOURS_MAX}"
                ),
            });
        }
        Ok(Self {
            cadence: Cadence::Every {
                seconds: hours * 3600,
            },
        })
    }

    /// The first slot strictly after `after` (Unix seconds), if the pattern ever matches again.
    pub fn next_after(&self, after: i64) -> Option<i64> {
        match &self.cadence {
            Cadence::Cron { cron, zone } => {
                let start = zone.from_utc_datetime(&utc(after)?.naive_utc());
                cron.find_next_occurrence(&start, false)
                    .ok()
                    .map(|slot| slot.timestamp())
            }
            Cadence::Every { seconds } => Some((after.div_euclid(*seconds) + 1) * seconds),
        }
    }

    /// The slots in (`after`, `until`], oldest first, at most `limit` of them (the newest).
    pub fn slots_between(&self, after: i64, until: i64, limit: usize) -> Vec<i64> {
        let mut slots = Vec::new();
        let mut cursor = after;
        while let Some(slot) = self.next_after(cursor).filter(|slot| *slot <= until) {
            slots.push(slot);
            if slots.len() > limit {
                slots.remove(0);
            }
            cursor = slot;
        }
        slots
    }
}

fn utc(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    fn iso(seconds: i64) -> String {
        utc(seconds).unwrap().to_rfc3339()
    }

    #[test]
    fn five_fields_and_names_parse_and_the_rest_is_refused_naming_the_field() {
        for good in [
            "* * * * *",
            "*/15 2 * * 1-5",
            "@hourly",
            "@daily",
            "0 3 1 * *",
        ] {
            assert!(Schedule::parse(good, "UTC").is_ok(), "{good}");
        }
        for bad in [
            "* * * *",
            "0 * * * * *",
            "61 * * * *",
            "every day",
            "",
            "@reboot",
        ] {
            let problem = Schedule::parse(bad, "UTC").unwrap_err();
            assert_eq!(problem.field, "schedule", "{bad}");
        }
        let zone = Schedule::parse("* * * * *", "Mars/Olympus").unwrap_err();
        assert_eq!(zone.field, "timezone");
        assert!(zone.message.contains("IANA"), "{}", zone.message);
    }

    #[test]
    fn the_next_slot_is_read_in_the_tasks_zone() {
        let daily = Schedule::parse("0 3 * * *", "Europe/Berlin").unwrap();
        // 03:00 in Berlin in winter is 02:00 UTC.
        let next = daily.next_after(at("2026-12-03T01:30:00Z")).unwrap();
        assert_eq!(iso(next), "2026-12-03T02:00:00+00:00");
        let minutely = Schedule::parse("* * * * *", "UTC").unwrap();
        let next = minutely.next_after(at("2026-12-03T01:30:00Z")).unwrap();
        assert_eq!(iso(next), "2026-12-03T01:31:00+00:00");
    }

    #[test]
    fn a_daylight_saving_change_neither_doubles_nor_drops_a_daily_run() {
        // New York falls back on 2026-11-01: 01:30 happens twice that night.
        let twice = Schedule::parse("30 1 * * *", "America/New_York").unwrap();
        let slots = twice.slots_between(at("2026-10-31T12:00:00Z"), at("2026-11-02T12:00:00Z"), 10);
        assert_eq!(
            slots.len(),
            2,
            "{:?}",
            slots.iter().map(|s| iso(*s)).collect::<Vec<_>>()
        );
        // Berlin springs forward on 2026-03-29: 02:30 does not exist that night.
        let missing = Schedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let slots =
            missing.slots_between(at("2026-03-28T12:00:00Z"), at("2026-03-30T12:00:00Z"), 10);
        assert_eq!(
            slots.len(),
            2,
            "{:?}",
            slots.iter().map(|s| iso(*s)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_interval_counts_from_the_epoch_and_refuses_a_length_out_of_range() {
        let six = Schedule::every_hours(6).unwrap();
        let next = six.next_after(at("2026-12-03T01:30:00Z")).unwrap();
        assert_eq!(iso(next), "2026-12-03T06:00:00+00:00");
        assert_eq!(
            iso(six.next_after(next).unwrap()),
            "2026-12-03T12:00:00+00:00"
        );
        for bad in [0, -1, INTERVAL_HOURS_MAX + 1] {
            let problem = Schedule::every_hours(bad).unwrap_err();
            assert_eq!(problem.field, "intervalHours", "{bad}");
        }
    }

    #[test]
    fn slots_between_keeps_the_newest_within_the_limit() {
        let minutely = Schedule::parse("* * * * *", "UTC").unwrap();
        let slots =
            minutely.slots_between(at("2026-12-03T01:00:00Z"), at("2026-12-03T01:10:00Z"), 3);
        let slots: Vec<String> = slots.into_iter().map(iso).collect();
        assert_eq!(
            slots,
            [
                "2026-12-03T01:08:00+00:00",
                "2026-12-03T01:09:00+00:00",
                "2026-12-03T01:10:00+00:00"
            ]
        );
        assert!(minutely.slots_between(10, 10, 3).is_empty());
    }
}
