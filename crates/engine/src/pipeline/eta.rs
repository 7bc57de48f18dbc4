//! The remaining time and the rates a progress bar shows, from a stage's own start and
//! progress.
//!
//! Owns: when a remaining time is worth showing, and how times and rates are written.
//!
//! Never: guesses before there is a basis. indicatif's own `{eta}` extrapolates from
//! its first steps, which are the slowest (families load, the first variants compile,
//! connections open), so a 38-second run opened at "ETA 3h"; here a remaining time
//! appears once the stage is 2 % done and 2 seconds old, and is the stage's average
//! pace so far applied to what is left.

use std::time::Duration;

/// The smallest part of a stage done, and the shortest time spent, before its remaining
/// time is estimated (below either, the pace is mostly start-up).
const BASIS_PARTS_PER_HUNDRED: u64 = 2;
const BASIS_SECONDS: f64 = 2.0;

/// What is left of a stage at its average pace so far, or `None` before there is a
/// basis for it.
pub fn remaining(elapsed: Duration, done: u64, total: u64) -> Option<Duration> {
    let seconds = elapsed.as_secs_f64();
    if done == 0 || seconds < BASIS_SECONDS || done * 100 < total * BASIS_PARTS_PER_HUNDRED {
        return None;
    }
    let left = total.saturating_sub(done) as f64;
    Some(Duration::from_secs_f64(seconds * left / done as f64))
}

/// `ETA 42s`, `ETA 3m 05s`, `ETA 1h 02m`, `ETA …` before there is a basis, and
/// `took 3s` once the stage is done.
pub fn eta_text(elapsed: Duration, done: u64, total: u64) -> String {
    if total > 0 && done >= total {
        return format!("took {}", duration_text(elapsed));
    }
    match remaining(elapsed, done, total) {
        None => "ETA …".to_string(),
        Some(left) => format!("ETA {}", duration_text(left)),
    }
}

/// A duration to the second, in its two largest units.
pub fn duration_text(duration: Duration) -> String {
    let s = duration.as_secs_f64().round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// A rate with as many digits as it has meaning: `1,234/s`, `56.7/s`, `0.42/s`.
pub fn rate_text(per_second: f64, unit: &str) -> String {
    let per_second = if per_second.is_finite() {
        per_second.max(0.0)
    } else {
        0.0
    };
    let number = if per_second >= 100.0 {
        tbb_report::format::count(per_second.round() as u64)
    } else if per_second >= 10.0 {
        format!("{per_second:.1}")
    } else {
        format!("{per_second:.2}")
    };
    format!("{number} {unit}/s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_remaining_time_before_two_percent_and_two_seconds() {
        let s = Duration::from_secs;
        assert_eq!(remaining(s(10), 0, 100), None);
        // 1 of 100 done after 10 s: start-up, not pace.
        assert_eq!(remaining(s(10), 1, 100), None);
        // 50 of 100 done after a second: too soon.
        assert_eq!(remaining(Duration::from_millis(1_500), 50, 100), None);
        // 2 of 100 after 4 s: 98 left at 2 s each.
        assert_eq!(remaining(s(4), 2, 100), Some(s(196)));
        // 30 of 40 after 30 s: 10 left at 1 s each.
        assert_eq!(remaining(s(30), 30, 40), Some(s(10)));
        // Past the estimate (a grown requests bar): nothing left.
        assert_eq!(remaining(s(30), 50, 40), Some(s(0)));
    }

    #[test]
    fn times_are_written_in_their_two_largest_units() {
        let s = Duration::from_secs;
        assert_eq!(duration_text(s(0)), "0s");
        assert_eq!(duration_text(s(59)), "59s");
        assert_eq!(duration_text(s(65)), "1m 05s");
        assert_eq!(duration_text(s(3_599)), "59m 59s");
        assert_eq!(duration_text(s(3_720)), "1h 02m");
        assert_eq!(duration_text(s(100_000)), "27h 46m");
        assert_eq!(eta_text(s(1), 1, 1_000), "ETA …");
        assert_eq!(eta_text(s(30), 30, 40), "ETA 10s");
        assert_eq!(eta_text(s(3), 40, 40), "took 3s");
    }

    #[test]
    fn rates_keep_the_digits_that_mean_something() {
        assert_eq!(rate_text(12_345.678, "episodes"), "12,346 episodes/s");
        assert_eq!(rate_text(100.0, "tok"), "100 tok/s");
        assert_eq!(rate_text(56.749, "tok"), "56.7 tok/s");
        assert_eq!(rate_text(0.4249, "requests"), "0.42 requests/s");
        assert_eq!(rate_text(f64::NAN, "tok"), "0.00 tok/s");
        assert_eq!(rate_text(-1.0, "tok"), "0.00 tok/s");
    }
}
