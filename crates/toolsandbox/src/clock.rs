//! The frozen clock the tools read instead of the wall clock.
//!
//! Upstream's tools call `datetime.now()`: `get_current_timestamp` returns it, new
//! messages and reminders are stamped with it, and `search_holiday` takes its year.
//! The scenarios' own timestamps were made the same way, relative to the moment the
//! export built each scenario: the latest seeded message is "now − 62 s", the reminders
//! "now − 1 day", "now + 1 hour", and so on. Across the 387 scenarios that moment runs
//! from 1796455145.74 to 1796455146.91 (2026-12-05 07:19:05–07:19:06 UTC), and the
//! milestones that depend on it ("tomorrow at 5 PM" = 1796576400.0) were computed from
//! it in UTC.
//!
//! The clock here is frozen at [`Clock::EXPORT`], 1796455147.0 (2026-12-05 07:19:07 UTC,
//! a Saturday): the first whole second after every scenario was built, so every seeded
//! row lies in its past exactly as it lay in the past of the episode upstream would have
//! run right after building it, and every relative milestone (tomorrow, next Friday,
//! Christmas of this year) resolves to the date the export's milestones hold. It does
//! not advance: rows written during an episode share one timestamp.
//!
//! Never: reads the system time.

/// A frozen "now", in POSIX seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    now: f64,
}

impl Clock {
    /// The export's moment: 2026-12-05 07:19:07 UTC.
    pub const EXPORT: Clock = Clock {
        now: 1_796_455_147.0,
    };

    /// A clock frozen at `now`.
    pub fn frozen_at(now: f64) -> Clock {
        Clock { now }
    }

    /// The time it shows.
    pub fn now(self) -> f64 {
        self.now
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::EXPORT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Namespace;
    use crate::scenario::Scenarios;

    /// Every timestamp the scenarios seed is behind the clock, except reminders set for
    /// later, which are at most a day ahead.
    #[test]
    fn every_seeded_timestamp_is_consistent_with_the_clock() {
        let now = Clock::EXPORT.now();
        let scenarios = Scenarios::builtin().unwrap();
        for s in scenarios.all() {
            for ns in [Namespace::Messaging, Namespace::Reminder] {
                for row in s.starting_context.tables()[&ns].iter() {
                    if let Some(t) = row.get("creation_timestamp").and_then(|v| v.as_f64()) {
                        assert!(t < now && now - t < 4.0 * 86_400.0, "{}: {t}", s.name);
                    }
                    if let Some(t) = row.get("reminder_timestamp").and_then(|v| v.as_f64()) {
                        assert!((t - now).abs() < 4.0 * 86_400.0, "{}: {t}", s.name);
                    }
                }
            }
        }
    }
}
