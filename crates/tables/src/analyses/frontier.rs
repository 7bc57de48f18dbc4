//! `frontier.parquet` and `frontier_paths.parquet`, written by the `frontier` analysis
//! (VTS as the hand-off chain grows, and which limit each episode reaches first).

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `frontier`: one completion cap × depth, of the study's baseline episodes
/// (actor `model`, delivery `native`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierRow {
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Required calls (the hand-off chain's length).
    pub depth: u32,
    /// The largest call limit of the depth's variants (certified minimum + 2).
    pub call_limit: u32,
    /// The episode budget the limits are measured against, reported tokens.
    pub episode_budget: u64,
    /// Episodes.
    pub n_episodes: u64,
    /// Families.
    pub n_families: u64,
    /// Share of episodes that succeed (0..=1).
    pub vts: f64,
    /// Episodes paired with their depth-2 partner; null on the depth-2 row.
    pub n_pairs: Option<u64>,
    /// Mean paired change in VTS from depth 2, pp; null on the depth-2 row (or when
    /// not finite).
    pub contrast_pp: Option<f64>,
    /// 95% family-cluster percentile interval, low end, pp; null as `contrast_pp`.
    pub ci_low_pp: Option<f64>,
    /// ... high end, pp; null as `contrast_pp`.
    pub ci_high_pp: Option<f64>,
    /// Centered two-sided bootstrap p-value; null as `contrast_pp`.
    pub p_value: Option<f64>,
    /// `1 / draws`; null as `contrast_pp`.
    pub p_floor: Option<f64>,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's seed.
    pub seed: u64,
    /// The contrast's stream, `["frontier", cap, depth]` hashed with `seed`; null on
    /// the depth-2 row.
    pub draw_seed: Option<u64>,
    /// Episodes with terminal flag `infra_failure`.
    pub flag_infra_failure: u64,
    /// ... `truncation`.
    pub flag_truncation: u64,
    /// ... `budget_or_call_limit`.
    pub flag_budget_or_call_limit: u64,
    /// ... `turn_limit`.
    pub flag_turn_limit: u64,
    /// ... `infeasibility`.
    pub flag_infeasibility: u64,
    /// ... `wrong_conclusion`.
    pub flag_wrong_conclusion: u64,
    /// ... `contract_break` (the seven add up to the failures).
    pub flag_contract_break: u64,
    /// Executed calls, median (quantiles interpolate between order statistics); null
    /// when not finite.
    pub calls_median: Option<f64>,
    /// ... 25% quantile.
    pub calls_q1: Option<f64>,
    /// ... 75% quantile.
    pub calls_q3: Option<f64>,
    /// Total reported tokens per episode, median; null when not finite.
    pub total_tokens_median: Option<f64>,
    /// ... 25% quantile.
    pub total_tokens_q1: Option<f64>,
    /// ... 75% quantile.
    pub total_tokens_q3: Option<f64>,
    /// Prompt tokens per episode (summed over its requests), median; null when not
    /// finite.
    pub prompt_tokens_median: Option<f64>,
    /// Episodes with `total_tokens ≤ episode_budget`.
    pub within_budget: u64,
    /// ... of which failed.
    pub within_budget_failed: u64,
    /// ... of which ended at an `infeasibility` stop.
    pub within_budget_infeasibility: u64,
    /// Episodes that reach the episode budget first (or at the same request as the
    /// call limit).
    pub budget_first: u64,
    /// Episodes that reach the call limit first.
    pub call_limit_first: u64,
    /// Episodes that reach neither (the three add up to `n_episodes`).
    pub neither_limit: u64,
}

impl FrontierRow {
    /// The terminal-flag counts in the grader's precedence order (infrastructure
    /// first): the order of the `flag_*` columns.
    pub fn flag_counts(&self) -> [u64; 7] {
        [
            self.flag_infra_failure,
            self.flag_truncation,
            self.flag_budget_or_call_limit,
            self.flag_turn_limit,
            self.flag_infeasibility,
            self.flag_wrong_conclusion,
            self.flag_contract_break,
        ]
    }
}

impl TableRow for FrontierRow {
    const TABLE: &'static str = "frontier";
}

/// Which limit an episode reaches first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstLimit {
    /// The episode budget (also when it is reached at the same request as the call
    /// limit: the harness checks the budget first).
    Budget,
    /// The call limit.
    CallLimit,
    /// Neither: the episode answered, was cut, or stopped earlier.
    Neither,
}

/// One row of `frontier_paths`: one provider request of a baseline frontier episode
/// (the report's Figure 9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierPathsRow {
    /// The episode's content key.
    pub episode_key: String,
    /// Configuration.
    pub configuration: String,
    /// Family.
    pub family: String,
    /// Arm.
    pub arm: String,
    /// Repeat.
    pub repeat: u32,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Required calls.
    pub depth: u32,
    /// The request's index in the episode, from 0.
    pub request: u32,
    /// Executed calls so far, this response's included.
    pub calls: u32,
    /// Reported prompt + completion tokens so far, this request's included.
    pub cumulative_tokens: u64,
    /// The episode's call limit.
    pub call_limit: u32,
    /// The study's episode budget, reported tokens.
    pub episode_budget: u64,
    /// Which limit the episode reaches first.
    pub first_limit: FirstLimit,
    /// Whether the episode succeeded.
    pub vts: bool,
}

impl TableRow for FrontierPathsRow {
    const TABLE: &'static str = "frontier_paths";
}
