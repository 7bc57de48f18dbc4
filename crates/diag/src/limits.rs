//! The valid range of every limit a user sets — completion caps, the episode budget,
//! the call slack, repeats, retrieval sizes, concurrency, retries, timeouts, context
//! windows, lock waits — and the one check of a value against it.
//!
//! Owns: one [`Limit`] per limit, with its range and unit, and [`Limit::check`] /
//! [`Limit::check_seconds`], whose refusal ([`OutOfRange`]) reads the same wherever
//! the value was written: a command-line flag, a manifest key (or its `--set`), or a
//! catalogue key. The CLI, the manifest loader and the configuration catalogue all
//! check their limits here, so a value one of them refuses, all refuse, in one wording.
//!
//! Never: knows where a value came from (the caller places the error at its span or
//! flag), or clamps a value into range: out of range is refused, never repaired.

use std::fmt;

/// A limit: what it is called, its unit and its inclusive range.
#[derive(Debug, PartialEq, Eq)]
pub struct Limit {
    /// Its name in messages (`completion cap`).
    pub name: &'static str,
    /// The unit of its values, plural (`tokens`).
    pub unit: &'static str,
    /// The smallest valid value.
    pub min: u64,
    /// The largest valid value.
    pub max: u64,
    /// What the value is, for the help line of a refusal.
    pub help: &'static str,
}

/// Tokens one response may hold (`--cap`, `budgets.completion_caps`, an arm's
/// `completion_cap`).
pub const COMPLETION_CAP: Limit = Limit {
    name: "completion cap",
    unit: "tokens",
    min: 1,
    max: 1_000_000,
    help: "the most tokens one response may hold; the paper's frozen cap is 1024",
};

/// Tokens an episode may use in all (`budgets.episode_budget`).
pub const EPISODE_BUDGET: Limit = Limit {
    name: "episode budget",
    unit: "tokens",
    min: 1,
    max: 1_000_000_000,
    help: "the reported tokens an episode may use in all; the paper's frozen budget is 128000",
};

/// Calls beyond the certified minimum (`budgets.call_slack`): the compiler fixes it.
pub const CALL_SLACK: Limit = Limit {
    name: "call slack",
    unit: "calls",
    min: 2,
    max: 2,
    help: "the compiler fixes every variant's call limit at its certified minimum + 2; remove the key or set it to 2",
};

/// Repeats of each condition (`repeats`, a block's `repeats`, `TBB_REPEATS`).
pub const REPEATS: Limit = Limit {
    name: "repeats",
    unit: "repeats",
    min: 1,
    max: 10_000,
    help: "how many times each condition runs",
};

/// The index of a repeat (`--repeat`, a block's `first_repeat`).
pub const REPEAT_INDEX: Limit = Limit {
    name: "repeat index",
    unit: "",
    min: 0,
    max: 1_000_000,
    help: "repeats are numbered from 0",
};

/// Tool schemas a retrieval menu keeps (an arm's `k`).
pub const RETRIEVAL_K: Limit = Limit {
    name: "retrieval k",
    unit: "tool schemas",
    min: 1,
    max: 128,
    help: "how many tool schemas the retriever keeps, e.g. `k = 8`",
};

/// Requests in flight on a route (a configuration's `concurrency`).
pub const CONCURRENCY: Limit = Limit {
    name: "concurrency",
    unit: "requests in flight",
    min: 1,
    max: 1024,
    help: "how many requests a configuration's route may have in flight at once",
};

/// Attempts per request, retries included (`retry.max_attempts`).
pub const RETRY_ATTEMPTS: Limit = Limit {
    name: "retry.max_attempts",
    unit: "attempts",
    min: 1,
    max: 100,
    help: "attempts in all, the first included: 1 means no retry",
};

/// A retry's backoff (`retry.base_delay_ms`, `retry.max_delay_ms`).
pub const RETRY_DELAY_MS: Limit = Limit {
    name: "retry delay",
    unit: "ms",
    min: 0,
    max: 3_600_000,
    help: "milliseconds to wait before a retry (the first backoff doubles up to the longest)",
};

/// How long one request may take (a configuration's `timeout_ms`).
pub const TIMEOUT_MS: Limit = Limit {
    name: "timeout_ms",
    unit: "ms",
    min: 1,
    max: 86_400_000,
    help: "leave it out for the default: 900 s on a route on this machine, 120 s elsewhere",
};

/// The tokens a served model holds (a configuration's `context_window`).
pub const CONTEXT_WINDOW: Limit = Limit {
    name: "context_window",
    unit: "tokens",
    min: 1,
    max: 100_000_000,
    help: "the served model's context size (llama.cpp `-c`, vLLM `--max-model-len`); leave it out when unknown",
};

/// Seconds to wait for the outputs lock (`--lock-timeout`).
pub const LOCK_TIMEOUT_SECONDS: Limit = Limit {
    name: "lock timeout",
    unit: "seconds",
    min: 0,
    max: 604_800,
    help: "seconds to wait for another command holding the study's outputs (0: fail at once; leave it out to wait)",
};

/// Seconds a claim or lease on a shared cache outlives its holder's last renewal
/// (`--claim-ttl`).
pub const CLAIM_TTL_SECONDS: Limit = Limit {
    name: "claim time to live",
    unit: "seconds",
    min: 3,
    max: 86_400,
    help: "seconds a claim on an episode, or the publishing lease, outlives its holder's last renewal on a shared cache (default 60)",
};

/// A value outside its limit's range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfRange {
    /// The limit.
    pub limit: &'static Limit,
    /// The value as given.
    pub value: String,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Limit {
            name,
            unit,
            min,
            max,
            ..
        } = self.limit;
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        if min == max {
            write!(
                f,
                "{name} {} is not supported: it must be {min}{unit}",
                self.value
            )
        } else {
            write!(
                f,
                "{name} {} is out of range: it must be from {min} to {max}{unit}",
                self.value
            )
        }
    }
}

impl std::error::Error for OutOfRange {}

impl Limit {
    /// `value` as a `T` when it is in range; [`OutOfRange`] otherwise.
    pub fn check<T: TryFrom<i128>>(&'static self, value: impl Into<i128>) -> Result<T, OutOfRange> {
        let value: i128 = value.into();
        let refuse = || OutOfRange {
            limit: self,
            value: value.to_string(),
        };
        if value < i128::from(self.min) || value > i128::from(self.max) {
            return Err(refuse());
        }
        // Every range fits the types its callers use; should one not, it is refused
        // like any other value out of range rather than wrapped.
        T::try_from(value).map_err(|_| refuse())
    }

    /// A number of seconds (fractions allowed), in range and finite.
    pub fn check_seconds(&'static self, value: f64) -> Result<f64, OutOfRange> {
        // NaN fails both comparisons, so it is refused with the infinities.
        if value >= self.min as f64 && value <= self.max as f64 {
            Ok(value)
        } else {
            Err(OutOfRange {
                limit: self,
                value: value.to_string(),
            })
        }
    }

    /// Parses a command-line value and checks it: the refusal reads as a manifest's or a
    /// catalogue's would.
    pub fn parse<T: TryFrom<i128>>(&'static self, text: &str) -> Result<T, String> {
        let value: i128 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{}` is not a whole number", text.escape_debug()))?;
        self.check(value).map_err(|e| e.to_string())
    }

    /// [`Limit::parse`] for a number of seconds.
    pub fn parse_seconds(&'static self, text: &str) -> Result<f64, String> {
        let value: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{}` is not a number of seconds", text.escape_debug()))?;
        self.check_seconds(value).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_range_pass_and_others_are_refused_in_one_wording() {
        assert_eq!(COMPLETION_CAP.check::<u32>(1024_i64), Ok(1024));
        assert_eq!(COMPLETION_CAP.check::<u32>(1_u32), Ok(1));
        let zero = COMPLETION_CAP
            .check::<u32>(0_i64)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            zero.as_deref(),
            Some("completion cap 0 is out of range: it must be from 1 to 1000000 tokens")
        );
        assert!(COMPLETION_CAP.check::<u32>(-5_i64).is_err());
        assert!(COMPLETION_CAP.check::<u32>(i64::MAX).is_err());
        assert!(EPISODE_BUDGET.check::<u64>(u64::MAX).is_err());
        assert_eq!(REPEAT_INDEX.check::<u32>(0_i64), Ok(0));
        let slack = CALL_SLACK.check::<u32>(3_i64).err().map(|e| e.to_string());
        assert_eq!(
            slack.as_deref(),
            Some("call slack 3 is not supported: it must be 2 calls")
        );
    }

    #[test]
    fn a_value_that_fits_the_range_but_not_the_type_is_refused() {
        assert!(EPISODE_BUDGET.check::<u8>(300_i64).is_err());
    }

    #[test]
    fn seconds_must_be_finite_and_in_range() {
        assert_eq!(LOCK_TIMEOUT_SECONDS.check_seconds(0.5), Ok(0.5));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e12] {
            assert!(LOCK_TIMEOUT_SECONDS.check_seconds(bad).is_err(), "{bad}");
        }
        assert!(LOCK_TIMEOUT_SECONDS.parse_seconds("inf").is_err());
        assert!(LOCK_TIMEOUT_SECONDS.parse_seconds("soon").is_err());
    }

    #[test]
    fn command_line_text_is_parsed_then_checked() {
        assert_eq!(COMPLETION_CAP.parse::<u32>("4096"), Ok(4096));
        assert_eq!(
            COMPLETION_CAP.parse::<u32>("0"),
            Err("completion cap 0 is out of range: it must be from 1 to 1000000 tokens".into())
        );
        assert!(COMPLETION_CAP
            .parse::<u32>("lots")
            .is_err_and(|e| e.contains("not a whole number")));
    }
}
