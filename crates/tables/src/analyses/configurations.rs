//! `configurations.parquet`, written by the `configurations` analysis: the paper's
//! Appendix C table as one table — per configuration, its baseline success, every
//! per-configuration effect of the capacity factorial, its truncation at V = 128 and
//! its cost.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `configurations`: one configuration in one stratum (a menu `lane` at one
/// `completion_cap`) of the capacity cells' no-repair episodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationsRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap.
    pub completion_cap: u32,
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// Episodes over the capacity cells.
    pub episodes: u32,
    /// Success over them (share; infrastructure failures count as failures).
    pub vts: f64,
    /// Episodes at the baseline cell (8, low, raw).
    pub baseline_episodes: u32,
    /// Success at the baseline cell (share); null when it has none.
    pub baseline_vts: Option<f64>,
    /// The per-configuration contrasts (`contrasts_by_configuration`, families
    /// resampled), pp; null where that table has none.
    pub v_pp: Option<f64>,
    /// W high − low.
    pub w_pp: Option<f64>,
    /// Linked − raw.
    pub d_linked_pp: Option<f64>,
    /// V × W interaction.
    pub v_x_w_pp: Option<f64>,
    /// V × D interaction.
    pub v_x_d_pp: Option<f64>,
    /// W × D interaction.
    pub w_x_d_pp: Option<f64>,
    /// Compact − raw at (8, low).
    pub d_compact_pp: Option<f64>,
    /// Typed − raw at (8, low).
    pub d_typed_pp: Option<f64>,
    /// Share of its V = 128 episodes truncated at the cap; null when it has none.
    pub truncated_share_v128: Option<f64>,
    /// Prompt + completion tokens per episode.
    pub tokens_per_episode: f64,
    /// Tokens at its frozen prices, in USD.
    pub cost_usd: f64,
    /// `cost_usd / episodes`.
    pub cost_per_episode_usd: f64,
}

impl TableRow for ConfigurationsRow {
    const TABLE: &'static str = "configurations";
}
