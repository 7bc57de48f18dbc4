//! The `sweep_strata` analysis kind: which configurations the sixteenfold cap sweep
//! runs (paper Appendix E.1), by the rule of [`super::strata_rule`] — `B` truncation
//! ≥ 20 %; `M` 5 % ≤ truncation < 20 %; `N` no truncation and a V effect within
//! `null_margin_pp` (3) of zero. Every B configuration is run, and `m` (1) of M and
//! `n` (1) of N.
//!
//! Owns: the `sweep_strata` table (its columns are [`super::strata_rule`]'s).
//!
//! Never: reads files (the pipeline hands it the upstream tables).

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use super::strata_rule::{is_null, preflight, run, Rule, INPUTS, SEED};
use super::truncation_strata::stratum;
use crate::{AnalysisError, Context, Input, Produced, Typed};

/// The sweep's strata.
pub struct SweepStrata;

/// `sweep_strata`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepParams {
    /// M configurations run (default 1).
    #[serde(default)]
    pub m: Option<u32>,
    /// N configurations run (default 1).
    #[serde(default)]
    pub n: Option<u32>,
    /// How close to zero N's V effect must be, in pp (default 3).
    #[serde(default)]
    pub null_margin_pp: Option<f64>,
    /// The cap the strata are read at (default the frozen 1,024).
    #[serde(default)]
    pub completion_cap: Option<u32>,
    /// Seed of the draw among a stratum's candidates.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The sweep's rule.
pub fn rule(p: &SweepParams) -> Rule {
    let margin = p.null_margin_pp.unwrap_or(3.0);
    Rule {
        // The truncation strata are `truncation_strata`'s; N also asks for a V
        // effect near zero.
        classify: Box::new(move |f| match stratum(f.episodes, f.truncated) {
            Some("N") => is_null(f, margin).then_some("N"),
            other => other,
        }),
        takes: vec![
            ("B", None),
            ("M", Some(p.m.unwrap_or(1))),
            ("N", Some(p.n.unwrap_or(1))),
        ],
        seed: p.seed.unwrap_or(SEED),
    }
}

impl Typed for SweepStrata {
    type Params = SweepParams;
    const NAME: &'static str = "sweep_strata";
    const VERSION: &'static str = "sweep_strata/1";
    const INPUTS: &'static [Input] = INPUTS;
    const OUTPUTS: &'static [&'static str] = &["sweep_strata"];

    fn preflight(
        params: &SweepParams,
        upstream: &BTreeMap<String, RecordBatch>,
        configurations: &BTreeSet<String>,
    ) -> Option<String> {
        let rule = rule(params);
        preflight(
            Self::NAME,
            &rule,
            params.completion_cap,
            upstream,
            configurations,
        )
    }

    fn run(params: &SweepParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(Self::NAME, &rule(params), params.completion_cap, input)
    }
}

#[cfg(test)]
mod tests {
    use super::super::strata_rule::{draw, testing::facts};
    use super::*;

    /// The sweep's strata on a hand-built table: B at exactly 20 %, M at exactly 5 %,
    /// N only without truncation and within 3 pp; every B runs, one M and one N.
    #[test]
    fn the_sweep_rule_on_a_hand_built_table() {
        let f = facts(&[
            ("b-edge", 100, 20, Some(-30.0)),
            ("b-heavy", 100, 60, Some(-45.0)),
            ("m-edge", 100, 5, Some(-10.0)),
            ("m-mid", 100, 12, Some(-8.0)),
            ("low", 100, 4, Some(0.0)),
            ("n-zero", 100, 0, Some(0.0)),
            ("n-edge", 100, 0, Some(-3.0)),
            ("loses", 100, 0, Some(-3.5)),
            ("unknown", 100, 0, None),
            ("none", 0, 0, Some(0.0)),
        ]);
        let placed = rule(&SweepParams::default()).place(&f);
        let strata: Vec<Option<&str>> = placed.iter().map(|p| p.0).collect();
        assert_eq!(
            strata,
            [
                Some("B"),
                Some("B"),
                Some("M"),
                Some("M"),
                None,
                Some("N"),
                Some("N"),
                None,
                None,
                None
            ]
        );
        let runs: Vec<&str> = f
            .iter()
            .zip(&placed)
            .filter(|(_, p)| p.2)
            .map(|(f, _)| f.configuration.as_str())
            .collect();
        assert_eq!(runs.len(), 4, "{runs:?}");
        assert!(runs.contains(&"b-edge") && runs.contains(&"b-heavy"));
        assert_eq!(runs.iter().filter(|c| c.starts_with("m-")).count(), 1);
        assert_eq!(runs.iter().filter(|c| c.starts_with("n-")).count(), 1);
        // The draw is the documented one: the lower blake3(seed, name) wins.
        let m_winner = if draw(SEED, "m-edge") < draw(SEED, "m-mid") {
            "m-edge"
        } else {
            "m-mid"
        };
        assert!(runs.contains(&m_winner));
        // Another seed may draw otherwise, and taking more takes more.
        let all = rule(&SweepParams {
            m: Some(5),
            n: Some(5),
            ..SweepParams::default()
        })
        .place(&f);
        assert_eq!(all.iter().filter(|p| p.2).count(), 6);
    }
}
