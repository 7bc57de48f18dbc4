//! `cap_sweep.parquet` and `cap_sweep_configurations.parquet`, written by the
//! `cap_sweep` analysis (the completion-cap sweep, paper Appendix E.1).

use serde::{Deserialize, Serialize};

use super::two_caps::{CapRole, CapStatistic};
use crate::TableRow;

/// One row of `cap_sweep`: one stratum × cap (or their change) × statistic. Strata
/// come in the order B, M, N (menu contrast, truncation, repeat disagreement), then
/// `all` (every configuration in a stratum; truncation and repeat disagreement only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapSweepRow {
    /// `B`, `M`, `N` (the `sweep_strata` table's strata) or `all`.
    pub stratum: String,
    /// The cap's label: `cap_1024`, `cap_16384`, or the change
    /// `cap_16384_minus_cap_1024` (not the harness's arm).
    pub arm: String,
    /// Low cap, high cap or their change.
    pub arm_role: CapRole,
    /// The cap, in tokens; null on change rows.
    pub completion_cap: Option<u32>,
    /// What the row measures.
    pub statistic: CapStatistic,
    /// Configurations the row pools.
    pub n_configurations: u32,
    /// Family × configuration units averaged (menu contrast rows; null otherwise).
    pub n_units: Option<u32>,
    /// Units left out for lacking a kept row in an endpoint cell (menu contrast rows).
    pub units_incomplete: Option<u32>,
    /// Families, the bootstrap's clusters (menu contrast rows).
    pub n_clusters: Option<u32>,
    /// Truncated V = 128 episodes or disagreeing conditions (share rows).
    pub n_events: Option<u32>,
    /// Kept V = 128 episodes or conditions counted (share rows).
    pub n_total: Option<u32>,
    /// The estimate: contrast in pp, or share in %; null when nothing was counted.
    pub estimate_pp: Option<f64>,
    /// 2.5 % quantile of the bootstrap draws, pp (menu contrast rows with units).
    pub ci_low_pp: Option<f64>,
    /// 97.5 % quantile of the bootstrap draws, pp.
    pub ci_high_pp: Option<f64>,
    /// Centered bootstrap p.
    pub p_value: Option<f64>,
    /// Rows excluded for a provider failure, of the row's configurations and cap(s).
    pub excluded_provider_failure: u32,
    /// Rows excluded for missing or invalid usage (`bad_usage`).
    pub excluded_missing_usage: u32,
    /// The smallest change over every outcome of the excluded rows, pp (change rows
    /// of the menu contrast; null when a unit lacks an endpoint cell even then).
    pub bound_low_pp: Option<f64>,
    /// The largest such change, pp.
    pub bound_high_pp: Option<f64>,
    /// Bootstrap draws (menu contrast rows).
    pub draws: Option<u32>,
    /// The analysis's seed.
    pub seed: u64,
    /// The row's bootstrap stream seed (menu contrast rows).
    pub draw_seed: Option<u64>,
    /// The pre-specified margin, pp (change rows of the menu contrast only).
    pub margin_pp: Option<f64>,
    /// The change's interval lies wholly above the margin (change rows of the menu
    /// contrast with an interval).
    pub clears_margin: Option<bool>,
    /// The change's interval lies wholly inside (−margin, margin).
    pub within_margin: Option<bool>,
}

impl TableRow for CapSweepRow {
    const TABLE: &'static str = "cap_sweep";
}

/// One row of `cap_sweep_configurations`: one configuration of the episodes × cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapSweepConfigurationsRow {
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// Its stratum in `sweep_strata` (null: in none, or not listed).
    pub stratum: Option<String>,
    /// Whether `sweep_strata` selects it.
    pub selected: bool,
    /// The cap's label (`cap_1024`).
    pub arm: String,
    /// Low or high (never the change).
    pub arm_role: CapRole,
    /// The cap, in tokens (null only on a change row, which this table has none of).
    pub completion_cap: Option<u32>,
    /// Kept V = 128 episodes.
    pub episodes_v128: u32,
    /// Truncated among them.
    pub truncated_v128: u32,
    /// `truncated_v128 / episodes_v128`; null with no kept V = 128 episode.
    pub truncated_share_v128: Option<f64>,
    /// Rows excluded for a provider failure.
    pub excluded_provider_failure: u32,
    /// Rows excluded for missing or invalid usage.
    pub excluded_missing_usage: u32,
    /// At most the ceiling's share of its kept V = 128 episodes truncated at the high
    /// cap; set for stratum-B configurations only, repeated on both caps' rows.
    pub manipulation_check_passed: Option<bool>,
    /// Whether its units enter its stratum's pooled contrast (a B configuration
    /// failing the manipulation check does not).
    pub in_pooled_estimate: bool,
}

impl TableRow for CapSweepConfigurationsRow {
    const TABLE: &'static str = "cap_sweep_configurations";
}
