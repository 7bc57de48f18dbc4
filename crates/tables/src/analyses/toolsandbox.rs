//! `toolsandbox_contrasts.parquet`, `toolsandbox_categories.parquet` and
//! `toolsandbox_levels.parquet`, written by the `toolsandbox` analysis: what adding
//! distraction tools to a ToolSandbox scenario's menu does to its grade and its tokens
//! (the definitions are in `docs/toolsandbox.md`, "The study's analysis").

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// The subset of the scenarios with `insufficient_information` (declining is right, so
/// an agent that does nothing scores), reported apart.
pub const SUBSET_INSUFFICIENT: &str = "insufficient_information";
/// The other scenarios: the headline subset.
pub const SUBSET_SUFFICIENT: &str = "sufficient";

/// The measures of `toolsandbox_contrasts`, in the table's order: ToolSandbox's
/// similarity (0–1), success (pp: 100 × the share with similarity 1) and prompt tokens
/// per episode.
pub const MEASURES: [&str; 3] = ["similarity", "success", "prompt_tokens"];

/// One row of `toolsandbox_contrasts`: one subset, one configuration (or `all`), one
/// distraction level against none, one measure. Pairs are the (configuration,
/// base scenario, completion cap, repeat) played both without distraction tools and
/// with `distraction_tools` of them, neither an infrastructure failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsandboxContrastsRow {
    /// `sufficient` or `insufficient_information` (the scenario's category).
    pub subset: String,
    /// The configuration, or `all` (every configuration's pairs pooled).
    pub configuration: String,
    /// Its organization; null on `all`.
    pub organization: Option<String>,
    /// The higher distraction level (3 or 10): the contrast is it minus 0.
    pub distraction_tools: u32,
    /// `similarity` (ToolSandbox's similarity, 0–1), `success` (pp) or `prompt_tokens`
    /// (tokens per episode).
    pub measure: String,
    /// Pairs with both rows scored.
    pub n_pairs: u32,
    /// Base scenarios among them: the clusters the bootstrap resamples.
    pub n_scenarios: u32,
    /// Pairs lost because one of their rows (or both) is an infrastructure failure.
    pub excluded_infra: u32,
    /// Rows of either level whose partner was not played (a missing row, not a
    /// failure).
    pub unpaired: u32,
    /// The measure's mean over the pairs without distraction tools; null without pairs.
    pub mean_at_zero: Option<f64>,
    /// Its mean over the pairs at `distraction_tools`; null without pairs.
    pub mean_at_level: Option<f64>,
    /// The mean paired difference (level − 0), in the measure's unit; null without
    /// pairs.
    pub estimate: Option<f64>,
    /// 2.5 % quantile of the cluster bootstrap over base scenarios; null without pairs.
    pub ci_low: Option<f64>,
    /// 97.5 % quantile; null without pairs.
    pub ci_high: Option<f64>,
    /// Centered two-sided bootstrap p, at least `p_floor`; null without pairs.
    pub p_value: Option<f64>,
    /// `1 / draws`.
    pub p_floor: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's seed.
    pub seed: u64,
    /// The stream seed of this row's bootstrap (the three measures of a subset,
    /// configuration and level share it, so they resample the same scenarios).
    pub draw_seed: u64,
}

impl TableRow for ToolsandboxContrastsRow {
    const TABLE: &'static str = "toolsandbox_contrasts";
}

/// One row of `toolsandbox_categories`: one of upstream's categories (a scenario counts
/// in each of its categories), one configuration (or `all`), one distraction level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsandboxCategoriesRow {
    /// The category, snake case (`multiple_user_turn`, `insufficient_information`, …).
    pub category: String,
    /// The configuration, or `all`.
    pub configuration: String,
    /// Its organization; null on `all`.
    pub organization: Option<String>,
    /// Distraction tools (0, 3 or 10).
    pub distraction_tools: u32,
    /// Played rows of the category.
    pub episodes: u32,
    /// Of them, infrastructure failures (left out of the means).
    pub infra_failures: u32,
    /// Base scenarios of the category played.
    pub base_scenarios: u32,
    /// Mean similarity (0–1) over the scored rows; null when none is scored.
    pub mean_similarity: Option<f64>,
    /// Share of the scored rows with similarity 1; null when none is scored.
    pub success_rate: Option<f64>,
    /// Mean prompt tokens per scored row; null when none is scored.
    pub mean_prompt_tokens: Option<f64>,
}

impl TableRow for ToolsandboxCategoriesRow {
    const TABLE: &'static str = "toolsandbox_categories";
}

/// One row of `toolsandbox_levels`: one configuration (or `all`) at one distraction
/// level, every scenario of both subsets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsandboxLevelsRow {
    /// The configuration, or `all`.
    pub configuration: String,
    /// Its organization; null on `all`.
    pub organization: Option<String>,
    /// Distraction tools (0, 3 or 10).
    pub distraction_tools: u32,
    /// Played rows.
    pub episodes: u32,
    /// Base scenarios played.
    pub base_scenarios: u32,
    /// Of them (the played rows), scenarios with `insufficient_information`.
    pub insufficient_information_episodes: u32,
    /// Infrastructure failures (left out of every mean and count below).
    pub infra_failures: u32,
    /// Mean tool schemas offered; null when none is scored.
    pub mean_menu_size: Option<f64>,
    /// Mean similarity (0–1); null when none is scored.
    pub mean_similarity: Option<f64>,
    /// Share with similarity 1; null when none is scored.
    pub success_rate: Option<f64>,
    /// Mean prompt tokens per episode; null when none is scored.
    pub mean_prompt_tokens: Option<f64>,
    /// Mean completion tokens per episode; null when none is scored.
    pub mean_completion_tokens: Option<f64>,
    /// Scored rows that hit a minefield.
    pub minefield_hits: u32,
    /// Scored rows whose episode ended at the completion cap (`stop_reason` truncated).
    pub truncated: u32,
    /// Cost of the scored rows at frozen prices, USD.
    pub cost_usd: f64,
}

impl TableRow for ToolsandboxLevelsRow {
    const TABLE: &'static str = "toolsandbox_levels";
}
