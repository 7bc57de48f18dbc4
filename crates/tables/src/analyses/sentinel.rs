//! `sentinel.parquet`, written by the `sentinel` analysis: condition groups run
//! several times, and each repair's stress gain re-estimated over the repeats.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `sentinel`: one layer's sentinel pair (the no-repair arm and the layer's
/// repair on its stressed cells) at a completion cap, or `all` (every pair's groups).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentinelRow {
    /// Completion cap.
    pub completion_cap: u32,
    /// The layer (`V`, `W`, `D`, `R`) or `all`.
    pub scope: String,
    /// The layer's repair (`routed_menu`, …); null on `all`.
    pub repair: Option<String>,
    /// The stressed cells, `; `-separated.
    pub cells: String,
    /// Condition groups (configuration × family × cell × arm).
    pub n_groups: u32,
    /// Runs (episodes) of those groups.
    pub n_runs: u32,
    /// Families.
    pub n_families: u32,
    /// Configurations.
    pub n_configurations: u32,
    /// Fewest runs of a group.
    pub runs_min: u32,
    /// Most runs of a group.
    pub runs_max: u32,
    /// Success over runs (share).
    pub pass_at_1: f64,
    /// Share of groups succeeding on every run.
    pub all_runs: f64,
    /// Share of groups succeeding on some run.
    pub any_run: f64,
    /// Share of groups succeeding on some run but not every run.
    pub disagreement: f64,
    /// The no-repair arm's success over runs (share); null on `all`.
    pub no_repair_vts: Option<f64>,
    /// The repair's success over runs (share); null on `all`.
    pub repair_vts: Option<f64>,
    /// Γ = repair − no-repair success over every run, percentage points; null on
    /// `all`.
    pub gain_pp: Option<f64>,
    /// 95% family-cluster percentile interval of Γ, low end, pp; null on `all` or when
    /// not finite.
    pub gain_pp_ci_low: Option<f64>,
    /// High end of the same interval, pp.
    pub gain_pp_ci_high: Option<f64>,
    /// Bootstrap draws.
    pub draws: u32,
    /// Bootstrap seed.
    pub seed: u64,
    /// The layer's bootstrap stream seed (`["sentinel", cap, layer]`); null on `all`.
    pub draw_seed: Option<u64>,
}

impl TableRow for SentinelRow {
    const TABLE: &'static str = "sentinel";
}
