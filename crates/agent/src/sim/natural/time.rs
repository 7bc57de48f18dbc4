//! Times a request names, and the calendar arithmetic a person does in their head.
//!
//! [`When::read`] finds a time expression: a holiday (`Christmas`), a day relative to
//! today (`today`, `tomorrow`, `the day after tomorrow`, `next Friday`), a date
//! (`March 22`, `22 March 2024`), a clock time (`5PM`, `5:30 pm`, `17:00`, `noon`) and a
//! shift from now (`in 2 hours`, `3 days ago`). What it cannot do is know today's date:
//! that comes from a tool's result (a current timestamp, then its date information), and
//! only then does [`When::resolve`] add days and set the clock.
//!
//! Never: reads a clock of its own; "now" is always what a tool said.

/// A time the request names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct When {
    /// A holiday as written (`Christmas`, `Independence Day`).
    pub holiday: Option<String>,
    /// Days after today.
    pub day_offset: Option<i64>,
    /// An ISO weekday (1 Monday … 7 Sunday): its next occurrence after today.
    pub weekday: Option<u32>,
    /// `(year, month, day)`, the year when written.
    pub date: Option<(Option<i64>, u32, u32)>,
    /// Hour and minute.
    pub clock: Option<(u32, u32)>,
    /// A shift from now without a clock time: `(unit, amount)`, unit one of `weeks`,
    /// `days`, `hours`, `minutes`, `seconds`.
    pub shift: Option<(&'static str, i64)>,
    /// The request counts towards the time (`until`), not from it (`since`, `ago`).
    pub later: bool,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Today as a tool reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Today {
    /// Year.
    pub year: i64,
    /// Month 1–12.
    pub month: u32,
    /// Day 1–31.
    pub day: u32,
    /// ISO weekday 1–7.
    pub weekday: u32,
}

impl When {
    /// Whether the text names any time.
    pub fn is_some(&self) -> bool {
        self.holiday.is_some()
            || self.day_offset.is_some()
            || self.weekday.is_some()
            || self.date.is_some()
            || self.clock.is_some()
            || self.shift.is_some()
    }

    /// Reads the time expression of a text.
    pub fn read(text: &str) -> When {
        let lower = text.to_lowercase();
        let tokens: Vec<String> = lower
            .split_whitespace()
            .map(|t| {
                t.trim_matches(|c: char| !(c.is_alphanumeric() || c == ':'))
                    .to_string()
            })
            .collect();
        let mut w = When {
            later: !(lower.contains(" since ") || lower.contains(" ago")),
            ..When::default()
        };
        let num = |t: &str| -> Option<i64> {
            let digits = t.trim_end_matches(|c: char| c.is_alphabetic());
            digits.parse().ok().or(match t {
                "a" | "an" | "one" => Some(1),
                "two" => Some(2),
                "three" => Some(3),
                "four" => Some(4),
                "five" => Some(5),
                "six" => Some(6),
                "seven" => Some(7),
                "ten" => Some(10),
                _ => None,
            })
        };
        for (i, t) in tokens.iter().enumerate() {
            let prev = |k: usize| {
                i.checked_sub(k)
                    .and_then(|j| tokens.get(j))
                    .map(String::as_str)
            };
            let next = |k: usize| tokens.get(i + k).map(String::as_str);
            match t.as_str() {
                "today" | "tonight" => w.day_offset = Some(0),
                "tomorrow" if prev(1) == Some("after") => w.day_offset = Some(2),
                "tomorrow" => w.day_offset = Some(1),
                "yesterday" => w.day_offset = Some(-1),
                "noon" | "midday" => w.clock = Some((12, 0)),
                "midnight" => w.clock = Some((0, 0)),
                _ => {}
            }
            if let Some(d) = WEEKDAYS.iter().position(|d| d == t) {
                w.weekday = Some(d as u32 + 1);
            }
            if let Some(m) = MONTHS.iter().position(|m| m == t) {
                let day = next(1).and_then(num).or_else(|| prev(1).and_then(num));
                if let Some(day) = day.filter(|d| (1..=31).contains(d)) {
                    let year = [next(2), next(3)]
                        .into_iter()
                        .flatten()
                        .find_map(|y| y.parse::<i64>().ok().filter(|y| *y > 1000));
                    w.date = Some((year, m as u32 + 1, day as u32));
                }
            }
            if let Some(c) = clock(t, next(1), prev(1)) {
                w.clock = Some(c);
            }
            let unit = |u: &str| -> Option<&'static str> {
                Some(match u.trim_end_matches('s') {
                    "week" => "weeks",
                    "day" => "days",
                    "hour" => "hours",
                    "minute" | "min" => "minutes",
                    "second" | "sec" => "seconds",
                    _ => return None,
                })
            };
            if let (Some(n), Some(u)) = (num(t), next(1).and_then(unit)) {
                let ago = next(2) == Some("ago");
                if ago
                    || prev(1) == Some("in")
                    || next(2) == Some("from")
                    || next(2) == Some("later")
                {
                    w.shift = Some((u, if ago { -n } else { n }));
                }
            }
        }
        w.holiday = holiday(text);
        // A shift of whole days with a clock time is a day, then the time.
        if let (Some((u, n)), Some(_)) = (w.shift, w.clock) {
            if u == "days" || u == "weeks" {
                w.day_offset = Some(if u == "weeks" { 7 * n } else { n });
                w.shift = None;
            }
        }
        w
    }

    /// The date and time meant, given today: `(year, month, day, hour, minute)`; `None`
    /// when the text names no day or no clock time.
    pub fn resolve(&self, today: Today) -> Option<(i64, u32, u32, u32, u32)> {
        let (h, m) = self.clock?;
        let base = days_from_civil(today.year, today.month, today.day);
        let day = if let Some((y, mo, d)) = self.date {
            days_from_civil(y.unwrap_or(today.year), mo, d)
        } else if let Some(off) = self.day_offset {
            base + off
        } else if let Some(wd) = self.weekday {
            let ahead = (i64::from(wd) - i64::from(today.weekday)).rem_euclid(7);
            base + if ahead == 0 { 7 } else { ahead }
        } else {
            base
        };
        let (y, mo, d) = civil_from_days(day);
        Some((y, mo, d, h, m))
    }
}

/// `5pm`, `5:30pm`, `5 pm`, `17:00`, `at 5`.
fn clock(t: &str, next: Option<&str>, prev: Option<&str>) -> Option<(u32, u32)> {
    let (body, suffix) = if let Some(b) = t.strip_suffix("pm") {
        (b, Some(12))
    } else if let Some(b) = t.strip_suffix("am") {
        (b, Some(0))
    } else {
        match next {
            Some("pm" | "p.m") => (t, Some(12)),
            Some("am" | "a.m") => (t, Some(0)),
            _ => (t, None),
        }
    };
    if body.is_empty() || !body.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None if suffix.is_some() || prev == Some("at") => (body.parse::<u32>().ok()?, 0),
        None => return None,
    };
    let h = match suffix {
        Some(add) if h <= 12 => h % 12 + add,
        _ => h,
    };
    (h < 24 && m < 60).then_some((h, m))
}

/// The holiday a text names, as written, with the capitalised words around its word
/// (`New Year's Day`, `Independence Day`).
fn holiday(text: &str) -> Option<String> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let is_holiday = |t: &str| {
        let w = super::words::words(t);
        w.iter().any(|w| {
            super::words::LEXICON
                .iter()
                .any(|(k, more, _)| k == w && more.contains(&"holiday"))
        }) || t.to_lowercase().trim_end_matches(['?', '.', '!', ',']) == "new"
            && tokens.iter().any(|x| x.to_lowercase().starts_with("year"))
    };
    let at = tokens.iter().position(|t| is_holiday(t))?;
    let clean = |t: &str| {
        t.trim_matches(|c: char| !(c.is_alphanumeric() || c == '\''))
            .to_string()
    };
    let capital = |t: &str| t.chars().next().is_some_and(char::is_uppercase);
    let mut start = at;
    while start > 0 && capital(tokens[start - 1]) && start > 1 {
        start -= 1;
    }
    let mut end = at + 1;
    while end < tokens.len() && capital(tokens[end]) {
        end += 1;
    }
    Some(
        tokens[start..end]
            .iter()
            .map(|t| clean(t))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SATURDAY: Today = Today {
        year: 2026,
        month: 12,
        day: 5,
        weekday: 6,
    };

    #[test]
    fn time_expressions_are_read() {
        let w = When::read("Add a reminder to buy chocolate milk tomorrow 5PM");
        assert_eq!((w.day_offset, w.clock), (Some(1), Some((17, 0))));
        assert_eq!(w.resolve(SATURDAY), Some((2026, 12, 6, 17, 0)));
        let w = When::read("How many days until Christmas?");
        assert_eq!(w.holiday.as_deref(), Some("Christmas"));
        assert!(w.later);
        let w = When::read("Remind me at 5:30 pm next Friday");
        assert_eq!(w.resolve(SATURDAY), Some((2026, 12, 11, 17, 30)));
        let w = When::read("Set it for March 22, 2024 at 5 PM");
        assert_eq!(w.resolve(SATURDAY), Some((2024, 3, 22, 17, 0)));
        let w = When::read("in 2 hours");
        assert_eq!(w.shift, Some(("hours", 2)));
        assert_eq!(
            When::read("Turn off wifi"),
            When {
                later: true,
                ..When::default()
            }
        );
        assert_eq!(
            When::read("days until New Year's Day?").holiday.as_deref(),
            Some("New Year's Day")
        );
    }

    #[test]
    fn the_calendar_rolls_over_months_and_years() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 12, 5), 1_796_455_147 / 86_400);
        assert_eq!(
            civil_from_days(days_from_civil(2026, 12, 31) + 1),
            (2027, 1, 1)
        );
        assert_eq!(
            civil_from_days(days_from_civil(2024, 2, 28) + 1),
            (2024, 2, 29)
        );
    }
}
