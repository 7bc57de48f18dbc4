//! The `crossover_strata` analysis kind: which configurations the cap crossover runs
//! (paper Appendix E), by the rule of [`super::strata_rule`] — `B` truncation ≥ 20 %;
//! `S` truncation ≤ 15 % with a loss of at least `loss_pp` (8: a V effect ≤ −8 pp);
//! `N` no truncation and a V effect within `null_margin_pp` (3) of zero. `b` (2) of B,
//! `s` (1) of S and `n` (1) of N are run.
//!
//! Owns: the `crossover_strata` table (its columns are [`super::strata_rule`]'s).
//!
//! Never: reads files (the pipeline hands it the upstream tables).

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use super::strata_rule::{is_null, preflight, run, Rule, INPUTS, SEED};
use crate::{AnalysisError, Context, Input, Produced, Typed};

/// The crossover's strata.
pub struct CrossoverStrata;

/// `crossover_strata`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossoverParams {
    /// B configurations run (default 2).
    #[serde(default)]
    pub b: Option<u32>,
    /// S configurations run (default 1).
    #[serde(default)]
    pub s: Option<u32>,
    /// N configurations run (default 1).
    #[serde(default)]
    pub n: Option<u32>,
    /// The loss S must show, in pp (default 8).
    #[serde(default)]
    pub loss_pp: Option<f64>,
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

/// The crossover's rule.
pub fn rule(p: &CrossoverParams) -> Rule {
    let margin = p.null_margin_pp.unwrap_or(3.0);
    let loss = p.loss_pp.unwrap_or(8.0);
    Rule {
        classify: Box::new(move |f| {
            let (e, t) = (u64::from(f.episodes), u64::from(f.truncated));
            if e == 0 {
                None
            } else if 5 * t >= e {
                Some("B")
            } else if 20 * t <= 3 * e && f.v_effect_pp.is_some_and(|v| v <= -loss) {
                Some("S")
            } else if is_null(f, margin) {
                Some("N")
            } else {
                None
            }
        }),
        takes: vec![
            ("B", Some(p.b.unwrap_or(2))),
            ("S", Some(p.s.unwrap_or(1))),
            ("N", Some(p.n.unwrap_or(1))),
        ],
        seed: p.seed.unwrap_or(SEED),
    }
}

impl Typed for CrossoverStrata {
    type Params = CrossoverParams;
    const NAME: &'static str = "crossover_strata";
    const VERSION: &'static str = "crossover_strata/1";
    const INPUTS: &'static [Input] = INPUTS;
    const OUTPUTS: &'static [&'static str] = &["crossover_strata"];

    fn preflight(
        params: &CrossoverParams,
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

    fn run(params: &CrossoverParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let rule = rule(params);
        run(Self::NAME, &rule, params.completion_cap, input)
    }
}

#[cfg(test)]
mod tests {
    use super::super::strata_rule::testing::facts;
    use super::*;

    /// The crossover's strata: S needs at most 15 % truncation and a loss of at least
    /// 8 pp; two of B run.
    #[test]
    fn the_crossover_rule_on_a_hand_built_table() {
        let f = facts(&[
            ("b1", 100, 30, Some(-40.0)),
            ("b2", 100, 25, Some(-35.0)),
            ("b3", 100, 50, Some(-50.0)),
            ("s-edge", 100, 15, Some(-8.0)),
            ("s-clean", 100, 0, Some(-12.0)),
            ("too-much", 100, 16, Some(-20.0)),
            ("small-loss", 100, 10, Some(-7.9)),
            ("n", 100, 0, Some(1.0)),
        ]);
        let placed = rule(&CrossoverParams::default()).place(&f);
        let strata: Vec<Option<&str>> = placed.iter().map(|p| p.0).collect();
        assert_eq!(
            strata,
            [
                Some("B"),
                Some("B"),
                Some("B"),
                Some("S"),
                Some("S"),
                None,
                None,
                Some("N")
            ]
        );
        let count = |s: &str| placed.iter().filter(|p| p.0 == Some(s) && p.2).count();
        assert_eq!((count("B"), count("S"), count("N")), (2, 1, 1));
        // Ranks run 1.. within each stratum.
        let mut b_ranks: Vec<u32> = placed
            .iter()
            .filter(|p| p.0 == Some("B"))
            .filter_map(|p| p.1)
            .collect();
        b_ranks.sort_unstable();
        assert_eq!(b_ranks, [1, 2, 3]);
    }
}
