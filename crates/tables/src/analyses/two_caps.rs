//! The columns and levels the two completion-cap studies' tables share (`cap_sweep`,
//! `cap_crossover` and their `_configurations` tables, written by the kinds of the
//! analyses' `cap` folder through their `two_caps` library).

use serde::{Deserialize, Serialize};

/// The columns both cap studies' main tables begin with (`cap_sweep` then adds its
/// margin's, `cap_crossover` its reading's): one stratum × cap (or their change) ×
/// statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapEstimate {
    /// The stratum (`B`, `M`, `N` in the sweep, `B`, `S`, `N` in the crossover: the
    /// strata tables' strata) or `all`.
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
}

/// One row of a cap study's `_configurations` table (`cap_sweep_configurations`,
/// `cap_crossover_configurations`, each a newtype of this): one configuration of the
/// episodes × cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapConfiguration {
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// Its stratum in the study's strata table (null: in none, or not listed).
    pub stratum: Option<String>,
    /// Whether the strata table selects it.
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

/// Which of the two completion caps a row speaks of, or their change: the `arm_role`
/// column (a name kept from the paper's tables; an arm of the harness is something
/// else, a prompt × menu × delivery × actor form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapRole {
    /// The lower cap.
    Low,
    /// The higher cap.
    High,
    /// High minus low.
    Change,
}

impl CapRole {
    /// The two caps, low first.
    pub const CAPS: [CapRole; 2] = [CapRole::Low, CapRole::High];

    /// `low`, `high`, `change` (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            CapRole::Low => "low",
            CapRole::High => "high",
            CapRole::Change => "change",
        }
    }
}

/// What a row of a cap study's main table measures: the `statistic` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapStatistic {
    /// The paired within-family menu contrast, V = 128 − V = 8 over the four endpoint
    /// W × D cells (on a change row: its change between the caps), in pp.
    VContrast,
    /// Share of kept V = 128 episodes truncated at the cap, in %.
    TruncatedShareV128,
    /// Share of conditions whose kept repeats disagree on success, in %.
    RepeatDisagreement,
}

impl CapStatistic {
    /// `v_contrast`, `truncated_share_v128`, `repeat_disagreement` (its serde name;
    /// also the last part of a row's bootstrap stream).
    pub fn name(self) -> &'static str {
        match self {
            CapStatistic::VContrast => "v_contrast",
            CapStatistic::TruncatedShareV128 => "truncated_share_v128",
            CapStatistic::RepeatDisagreement => "repeat_disagreement",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name()` feeds bootstrap streams and the tables hold the serde name: they
    /// must be one text.
    #[test]
    fn a_levels_name_is_its_serde_name() {
        for r in [CapRole::Low, CapRole::High, CapRole::Change] {
            assert_eq!(serde_json::to_value(r).ok(), Some(r.name().into()));
        }
        for s in [
            CapStatistic::VContrast,
            CapStatistic::TruncatedShareV128,
            CapStatistic::RepeatDisagreement,
        ] {
            assert_eq!(serde_json::to_value(s).ok(), Some(s.name().into()));
        }
    }
}
