//! `strata.parquet`, written by the `strata` analysis: the menu effect within the
//! pairs that neither menu truncated, and worst-case bounds on the total menu effect
//! when every truncated failure could have gone either way.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `strata`: the matched V = 8 / V = 128 pairs of one stratum (a menu
/// `lane` at one `completion_cap`), pooled (`configuration = "all"`) or of one
/// configuration. Effects and bounds are in percentage points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrataRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Pairs `N`.
    pub pairs: u32,
    /// Observed mean of `y128 − y8`, pp.
    pub total_effect_pp: f64,
    /// Pairs with neither episode truncated.
    pub pairs_neither_truncated: u32,
    /// The mean of `y128 − y8` within them, pp; null when there is none.
    pub neither_truncated_effect_pp: Option<f64>,
    /// Pairs whose V = 8 episode is a truncated failure (`T8`).
    pub truncated_failures_8: u32,
    /// Pairs whose V = 128 episode is a truncated failure (`T128`).
    pub truncated_failures_128: u32,
    /// Pairs with both.
    pub truncated_failures_both: u32,
    /// Lowest total effect with the arms resolving independently: `observed − T8 / N`.
    pub bound_independent_low_pp: f64,
    /// Highest total effect with the arms resolving independently:
    /// `observed + T128 / N`.
    pub bound_independent_high_pp: f64,
    /// Lower end with every truncated failure resolving alike: the smaller of the
    /// observed effect and `observed + (T128 − T8) / N`.
    pub bound_alike_low_pp: f64,
    /// Upper end with every truncated failure resolving alike: the larger of the two.
    pub bound_alike_high_pp: f64,
}

impl TableRow for StrataRow {
    const TABLE: &'static str = "strata";
}
