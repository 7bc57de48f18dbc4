//! Dates and times as upstream's tools compute them, and the US holidays they search.
//!
//! Upstream's time tools use Python's naive `datetime` in the machine's local time
//! zone. The export shows that zone was UTC (a milestone's "22 March 2024, 5 PM" is
//! 1711126800.0, 17:00 UTC), so here every conversion is UTC, exactly: `fromtimestamp`
//! splits a timestamp into whole seconds and microseconds rounded half to even, as
//! CPython does, and `timestamp()` adds the microseconds back as `µs / 1e6`.
//!
//! The holidays are those `holidays.country_holidays("US", years=y)` (holidays 0.51,
//! upstream's pin) lists: the federal holidays with their historical rules and the
//! Saturday-to-Friday / Sunday-to-Monday "(observed)" days.
//!
//! Never: reads the clock or a time-zone database.

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count from 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// ISO weekday (Monday 1 … Sunday 7) of a day count from 1970-01-01 (a Thursday).
pub fn iso_weekday(days: i64) -> u32 {
    ((days + 3).rem_euclid(7) + 1) as u32
}

/// Whether `year` is a leap year.
pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// The number of days in a month.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 31,
    }
}

/// A naive date and time, as Python's `datetime` holds one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    /// Whole seconds since the epoch (UTC).
    pub seconds: i64,
    /// Microseconds past `seconds`, 0..1_000_000.
    pub micros: i64,
}

/// Why a time could not be represented (Python's `ValueError` texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Beyond `datetime`'s years 1..=9999.
    #[error("year {0} is out of range")]
    YearOutOfRange(i64),
    /// Not a finite number.
    #[error("Invalid value NaN (not a number)")]
    NotFinite,
}

const MIN_SECONDS: i64 = -62_135_596_800; // 0001-01-01
const MAX_SECONDS: i64 = 253_402_300_799; // 9999-12-31 23:59:59

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

impl DateTime {
    /// `datetime.fromtimestamp(t)` in UTC.
    pub fn from_timestamp(t: f64) -> Result<DateTime, TimeError> {
        if !t.is_finite() {
            return Err(TimeError::NotFinite);
        }
        let mut whole = t.trunc();
        let mut micros = round_half_even((t - whole) * 1e6);
        if micros >= 1e6 {
            micros -= 1e6;
            whole += 1.0;
        } else if micros < 0.0 {
            micros += 1e6;
            whole -= 1.0;
        }
        if !(MIN_SECONDS as f64..=MAX_SECONDS as f64).contains(&whole) {
            let year = 1970 + (whole / 31_556_952.0) as i64;
            return Err(TimeError::YearOutOfRange(year));
        }
        DateTime::checked(whole as i64, micros as i64)
    }

    fn checked(seconds: i64, micros: i64) -> Result<DateTime, TimeError> {
        let dt = DateTime { seconds, micros };
        let year = dt.date().0;
        if (1..=9999).contains(&year) {
            Ok(dt)
        } else {
            Err(TimeError::YearOutOfRange(year))
        }
    }

    /// Midnight of a civil date.
    pub fn from_date(year: i64, month: u32, day: u32) -> DateTime {
        DateTime {
            seconds: days_from_civil(year, month, day) * 86_400,
            micros: 0,
        }
    }

    /// `datetime.timestamp()` of a naive datetime in UTC.
    pub fn timestamp(self) -> f64 {
        self.seconds as f64 + self.micros as f64 / 1e6
    }

    /// The datetime shifted by whole seconds (a `timedelta` without microseconds).
    pub fn shifted(self, seconds: i64) -> Result<DateTime, TimeError> {
        let s = self.seconds.checked_add(seconds).unwrap_or(i64::MAX);
        if !(MIN_SECONDS..=MAX_SECONDS).contains(&s) {
            let year = 1970 + s / 31_556_952;
            return Err(TimeError::YearOutOfRange(year));
        }
        DateTime::checked(s, self.micros)
    }

    /// Days since the epoch.
    pub fn days(self) -> i64 {
        self.seconds.div_euclid(86_400)
    }

    /// (year, month, day).
    pub fn date(self) -> (i64, u32, u32) {
        civil_from_days(self.days())
    }

    /// (hour, minute, second).
    pub fn time(self) -> (u32, u32, u32) {
        let s = self.seconds.rem_euclid(86_400) as u32;
        (s / 3600, s / 60 % 60, s % 60)
    }

    /// ISO weekday, Monday 1.
    pub fn iso_weekday(self) -> u32 {
        iso_weekday(self.days())
    }

    /// Total microseconds since the epoch (for differences).
    pub fn total_micros(self) -> i128 {
        i128::from(self.seconds) * 1_000_000 + i128::from(self.micros)
    }
}

/// The day of the `n`th `weekday` (ISO) of a month; `n = 0` means the last.
fn nth_weekday(year: i64, month: u32, weekday: u32, n: u32) -> (i64, u32, u32) {
    if n == 0 {
        let last = days_from_civil(year, month, days_in_month(year, month));
        let back = (i64::from(iso_weekday(last)) - i64::from(weekday)).rem_euclid(7);
        return civil_from_days(last - back);
    }
    let first = days_from_civil(year, month, 1);
    let ahead = (i64::from(weekday) - i64::from(iso_weekday(first))).rem_euclid(7);
    civil_from_days(first + ahead + 7 * i64::from(n - 1))
}

const MON: u32 = 1;
const THU: u32 = 4;

/// The holidays of `year` (date, name), as holidays 0.51 lists the US's.
pub fn us_holidays(year: i64) -> Vec<((i64, u32, u32), String)> {
    let mut out: Vec<((i64, u32, u32), String)> = Vec::new();
    // Saturday is observed the Friday before, Sunday the Monday after; the observed
    // day counts only in its own year (New Year's Day of the next year can land on
    // 31 December).
    let observed = |out: &mut Vec<((i64, u32, u32), String)>, date: (i64, u32, u32), name: &str| {
        let days = days_from_civil(date.0, date.1, date.2);
        let shift = match iso_weekday(days) {
            6 => -1,
            7 => 1,
            _ => 0,
        };
        if shift != 0 {
            let d = civil_from_days(days + shift);
            if d.0 == year {
                out.push((d, format!("{name} (observed)")));
            }
        }
    };
    let fixed =
        |out: &mut Vec<((i64, u32, u32), String)>, m: u32, d: u32, name: &str, obs: bool| {
            out.push(((year, m, d), name.to_owned()));
            if obs {
                observed(out, (year, m, d), name);
            }
        };
    if year >= 1871 {
        fixed(&mut out, 1, 1, "New Year's Day", true);
        observed(&mut out, (year + 1, 1, 1), "New Year's Day");
    }
    if year >= 1888 {
        let date = if year >= 1971 {
            nth_weekday(year, 5, MON, 0)
        } else {
            (year, 5, 30)
        };
        out.push((date, "Memorial Day".into()));
    }
    if year >= 2021 {
        fixed(
            &mut out,
            6,
            19,
            "Juneteenth National Independence Day",
            true,
        );
    }
    if year >= 1871 {
        fixed(&mut out, 7, 4, "Independence Day", true);
    }
    if year >= 1894 {
        out.push((nth_weekday(year, 9, MON, 1), "Labor Day".into()));
    }
    if year >= 1938 {
        let name = if year >= 1954 {
            "Veterans Day"
        } else {
            "Armistice Day"
        };
        if (1971..=1977).contains(&year) {
            out.push((nth_weekday(year, 10, MON, 4), name.into()));
        } else {
            fixed(&mut out, 11, 11, name, true);
        }
    }
    if year >= 1871 {
        out.push((nth_weekday(year, 11, THU, 4), "Thanksgiving".into()));
        fixed(&mut out, 12, 25, "Christmas Day", true);
    }
    if year >= 1986 {
        out.push((
            nth_weekday(year, 1, MON, 3),
            "Martin Luther King Jr. Day".into(),
        ));
    }
    if year >= 1879 {
        let date = if year >= 1971 {
            nth_weekday(year, 2, MON, 3)
        } else {
            (year, 2, 22)
        };
        out.push((date, "Washington's Birthday".into()));
    }
    if year >= 1937 {
        let date = if year >= 1971 {
            nth_weekday(year, 10, MON, 2)
        } else {
            (year, 10, 12)
        };
        out.push((date, "Columbus Day".into()));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(days_from_civil(2026, 12, 5)), (2026, 12, 5));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(
            days_from_civil(2024, 3, 22) * 86_400 + 17 * 3600,
            1_711_126_800
        );
        // 2024-03-25 was a Monday.
        assert_eq!(iso_weekday(days_from_civil(2024, 3, 25)), 1);
    }

    #[test]
    fn fromtimestamp_rounds_microseconds_half_to_even() {
        let dt = DateTime::from_timestamp(1_796_455_147.0).unwrap();
        assert_eq!(dt.date(), (2026, 12, 5));
        assert_eq!(dt.time(), (7, 19, 7));
        assert_eq!(dt.iso_weekday(), 6);
        let dt = DateTime::from_timestamp(1796181239.741119).unwrap();
        assert_eq!(dt.micros, 741_119);
        assert_eq!(dt.timestamp(), 1796181239.741119);
        let dt = DateTime::from_timestamp(-0.5).unwrap();
        assert_eq!((dt.seconds, dt.micros), (-1, 500_000));
        assert!(matches!(
            DateTime::from_timestamp(1e15),
            Err(TimeError::YearOutOfRange(y)) if y > 9999
        ));
    }

    // holidays 0.51, `country_holidays("US", years=y)`, sorted by date.
    #[test]
    fn us_holidays_match_the_holidays_package() {
        let names = |y| -> Vec<String> {
            us_holidays(y)
                .into_iter()
                .map(|((y, m, d), n)| format!("{y:04}-{m:02}-{d:02} {n}"))
                .collect()
        };
        assert_eq!(
            names(2026),
            [
                "2026-01-01 New Year's Day",
                "2026-01-19 Martin Luther King Jr. Day",
                "2026-02-16 Washington's Birthday",
                "2026-05-25 Memorial Day",
                "2026-06-19 Juneteenth National Independence Day",
                "2026-07-03 Independence Day (observed)",
                "2026-07-04 Independence Day",
                "2026-09-07 Labor Day",
                "2026-10-12 Columbus Day",
                "2026-11-11 Veterans Day",
                "2026-11-26 Thanksgiving",
                "2026-12-25 Christmas Day",
            ]
        );
        let y2021 = names(2021);
        assert!(
            y2021.contains(&"2021-06-18 Juneteenth National Independence Day (observed)".into())
        );
        assert!(y2021.contains(&"2021-12-24 Christmas Day (observed)".into()));
        assert!(y2021.contains(&"2021-12-31 New Year's Day (observed)".into()));
        assert!(!names(2022).iter().any(|n| n.starts_with("2021")));
        assert!(names(1975).contains(&"1975-10-27 Veterans Day".into()));
        assert!(names(1950).contains(&"1950-02-22 Washington's Birthday".into()));
        assert!(names(1950).contains(&"1950-11-10 Armistice Day (observed)".into()));
    }

    /// Every year 1871..=2100 as `YYYY-MM-DD name` lines, hashed; the hash is of the same
    /// text printed from holidays 0.51.
    #[test]
    fn every_year_since_1871_matches_the_holidays_package() {
        let mut text = String::new();
        for y in 1871..=2100 {
            for ((y, m, d), n) in us_holidays(y) {
                text.push_str(&format!("{y:04}-{m:02}-{d:02} {n}\n"));
            }
        }
        assert_eq!(text.len(), 66_866);
        assert_eq!(
            blake3::hash(text.as_bytes()).to_hex().as_str(),
            "bea0a8e764b9e4752f3c2543db049688b3553132c7a2500062d40406a95c27b6"
        );
    }
}
