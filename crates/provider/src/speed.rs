//! The modelled speed of a simulated configuration: how long a request would take had a
//! served model answered it, from the request's token counts.
//!
//! A simulated agent answers in microseconds, so the host clock says nothing about the
//! configuration; comparisons on wall time (the switch comparison's Pareto check) need
//! a time that belongs to the configuration and is the same on every machine. The
//! latency of one request is the first-token time, plus the prompt tokens at
//! `prefill_tokens_per_second`, plus the completion tokens (reasoning included) at
//! `output_tokens_per_second`, rounded to whole milliseconds; an episode's is the sum
//! over its requests (tool execution in the sandbox costs nothing).
//!
//! Owns: the `[configuration.speed]` table and its defaults. Never: reads a clock. Live
//! routes have no modelled speed: their wall time is measured.

use serde::{Deserialize, Serialize};

/// The `[configuration.speed]` table of a simulated configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Speed {
    /// Time to the first token, whatever the request. Default 400.
    pub first_token_ms: f64,
    /// Prompt tokens processed per second. Default 5,000.
    pub prefill_tokens_per_second: f64,
    /// Completion tokens (reasoning included) generated per second. Default 100.
    pub output_tokens_per_second: f64,
}

impl Default for Speed {
    fn default() -> Self {
        Speed {
            first_token_ms: 400.0,
            prefill_tokens_per_second: 5_000.0,
            output_tokens_per_second: 100.0,
        }
    }
}

impl Speed {
    /// The modelled latency of one request, in whole milliseconds.
    pub fn latency_ms(&self, input_tokens: u64, output_tokens: u64) -> u64 {
        let ms = self.first_token_ms
            + 1000.0 * input_tokens as f64 / self.prefill_tokens_per_second
            + 1000.0 * output_tokens as f64 / self.output_tokens_per_second;
        ms.round() as u64
    }

    /// Every field out of range, as `(key, message)`: the time must be finite and
    /// non-negative, the rates finite and positive.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if !self.first_token_ms.is_finite() || self.first_token_ms < 0.0 {
            out.push((
                "first_token_ms",
                format!(
                    "speed first_token_ms = {} must be finite and non-negative",
                    self.first_token_ms
                ),
            ));
        }
        for (key, rate) in [
            ("prefill_tokens_per_second", self.prefill_tokens_per_second),
            ("output_tokens_per_second", self.output_tokens_per_second),
        ] {
            if !rate.is_finite() || rate <= 0.0 {
                out.push((
                    key,
                    format!("speed {key} = {rate} must be finite and positive"),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_first_token_plus_prefill_plus_generation() {
        let s = Speed {
            first_token_ms: 250.0,
            prefill_tokens_per_second: 4_000.0,
            output_tokens_per_second: 80.0,
        };
        // 250 + 1000 × 10,000 / 4,000 + 1000 × 200 / 80 = 250 + 2,500 + 2,500.
        assert_eq!(s.latency_ms(10_000, 200), 5_250);
        assert_eq!(s.latency_ms(0, 0), 250);
        // 400 + 1000 × 1,234 / 5,000 + 1000 × 7 / 100 = 400 + 246.8 + 70 = 716.8.
        assert_eq!(Speed::default().latency_ms(1_234, 7), 717);
    }

    #[test]
    fn rates_must_be_positive_and_times_finite() {
        let bad = Speed {
            first_token_ms: f64::NAN,
            prefill_tokens_per_second: 0.0,
            output_tokens_per_second: -1.0,
        };
        let keys: Vec<&str> = bad.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "first_token_ms",
                "prefill_tokens_per_second",
                "output_tokens_per_second"
            ]
        );
        assert!(Speed::default().problems().is_empty());
    }
}
