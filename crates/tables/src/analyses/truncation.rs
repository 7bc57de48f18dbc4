//! `truncation.parquet`, `truncation_pairs.parquet` and
//! `truncation_correlation.parquet`, written by the `truncation` analysis.
//!
//! Every row is of one stratum: a menu `lane` at one `completion_cap`. Rows with
//! `configuration = "all"` (and `organization = "all"`) pool the panel; the others
//! follow, sorted by configuration.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `truncation`: how many episodes of one group at one menu size ended at
/// the completion cap, over every capacity cell at that size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruncationRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Menu size.
    pub v: u32,
    /// Capacity cells at that size (V = 8 has seven, V = 32 one, V = 128 four).
    pub n_cells: u32,
    /// Episodes.
    pub episodes: u32,
    /// Verified successes (infrastructure failures count as failures).
    pub successes: u32,
    /// `successes / episodes`.
    pub vts_rate: f64,
    /// Episodes truncated at the cap.
    pub truncated: u32,
    /// `truncated / episodes`.
    pub truncated_share: f64,
    /// Truncated before any executed call.
    pub truncated_before_first_call: u32,
    /// `truncated_before_first_call / truncated`; null when none was truncated.
    pub truncated_before_first_call_share: Option<f64>,
}

impl TableRow for TruncationRow {
    const TABLE: &'static str = "truncation";
}

/// One row of `truncation_pairs`: the matched V = 8 / V = 128 pairs of one group
/// (same family, configuration, W, D, repeat; the four endpoint W × D cells).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruncationPairsRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Pairs.
    pub pairs: u32,
    /// Pairs with a success at V = 8 and a failure at V = 128.
    pub lost: u32,
    /// Pairs with a failure at V = 8 and a success at V = 128.
    pub gained: u32,
    /// `(gained − lost) / pairs`, pp: the V contrast over the pairs.
    pub v_effect_pp: f64,
    /// `lost / pairs`, pp.
    pub lost_pp: f64,
    /// `gained / pairs`, pp.
    pub gained_pp: f64,
    /// Lost pairs whose V = 128 episode was truncated.
    pub lost_truncated_128: u32,
    /// `lost_truncated_128 / pairs`, pp: the part of `lost_pp` they carry.
    pub lost_truncated_pp: f64,
    /// `lost_truncated_128 / lost`; null with no loss.
    pub loss_share_truncated: Option<f64>,
    /// Pairs whose V = 8 episode was truncated.
    pub truncated_8: u32,
    /// Pairs whose V = 128 episode was truncated.
    pub truncated_128: u32,
    /// `truncated_128 / pairs`.
    pub truncation_rate_128: f64,
    /// Pairs whose V = 128 episode was truncated before any executed call.
    pub truncated_128_before_first_call: u32,
}

impl TableRow for TruncationPairsRow {
    const TABLE: &'static str = "truncation_pairs";
}

/// One row of `truncation_correlation`: across the configurations of one stratum,
/// the V effect (`v_effect_pp` of `truncation_pairs`) against the V = 128 truncation
/// rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruncationCorrelationRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configurations correlated.
    pub n_configurations: u32,
    /// Pearson's r; null when either variable is constant or there are fewer than two
    /// configurations.
    pub pearson_r: Option<f64>,
    /// Spearman's ρ (average ranks for ties); null as `pearson_r`.
    pub spearman_rho: Option<f64>,
    /// Configurations with no truncated V = 128 pair episode.
    pub never_truncating: u32,
    /// Their smallest V effect, pp; null when there is none.
    pub never_truncating_v_effect_min_pp: Option<f64>,
    /// Their largest V effect, pp; null when there is none.
    pub never_truncating_v_effect_max_pp: Option<f64>,
}

impl TableRow for TruncationCorrelationRow {
    const TABLE: &'static str = "truncation_correlation";
}
