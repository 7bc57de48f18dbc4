//! `sweep_strata.parquet` and `crossover_strata.parquet`, written by the
//! `sweep_strata` and `crossover_strata` analyses: which configurations the cap
//! studies run, chosen by rule from the capacity panel's tables. The two tables share
//! one layout and differ in their strata, so one generic row names both.

use serde::{Deserialize, Serialize};

use super::truncation_strata::TruncationStratum;
use crate::TableRow;

/// A configuration's stratum in the crossover (paper Appendix E).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CrossoverStratum {
    /// Truncation-heavy: V = 128 truncation ≥ 20 %.
    B,
    /// Small truncation with a loss: truncation ≤ 15 % and a V effect at or below
    /// minus the rule's loss.
    S,
    /// Null: no truncation and a V effect within the rule's margin of zero.
    N,
}

impl CrossoverStratum {
    /// Its name in tables (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            CrossoverStratum::B => "B",
            CrossoverStratum::S => "S",
            CrossoverStratum::N => "N",
        }
    }
}

/// One row of a cap study's strata table: one configuration of the upstream tables
/// (sorted by name), read on the routed menu at the rule's completion cap and V = 128.
/// `S` is the table's stratum level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapStrataRow<S> {
    /// Configuration.
    pub configuration: String,
    /// Upstream V = 128 episodes.
    pub upstream_episodes: u32,
    /// Upstream V = 128 episodes truncated at the cap.
    pub upstream_truncated: u32,
    /// `upstream_truncated / upstream_episodes`; null with no upstream episode.
    pub truncated_share: Option<f64>,
    /// The upstream V contrast (V = 128 − 8), pp; null when the upstream
    /// `contrasts_by_configuration` has none for the configuration.
    pub v_effect_pp: Option<f64>,
    /// The rule's stratum; null: in none.
    pub stratum: Option<S>,
    /// Its place in its stratum's draw, from 1; null outside every stratum.
    pub candidate_rank: Option<u32>,
    /// Whether the rule runs it.
    pub selected: bool,
    /// Whether this study ran it.
    pub in_study: bool,
}

/// A row of `sweep_strata` (strata `B`, `M`, `N`).
pub type SweepStrataRow = CapStrataRow<TruncationStratum>;
/// A row of `crossover_strata` (strata `B`, `S`, `N`).
pub type CrossoverStrataRow = CapStrataRow<CrossoverStratum>;

impl TableRow for SweepStrataRow {
    const TABLE: &'static str = "sweep_strata";
}

impl TableRow for CrossoverStrataRow {
    const TABLE: &'static str = "crossover_strata";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stratums_name_is_its_serde_name() {
        for s in [
            CrossoverStratum::B,
            CrossoverStratum::S,
            CrossoverStratum::N,
        ] {
            assert_eq!(serde_json::to_value(s).ok(), Some(s.name().into()));
        }
    }
}
