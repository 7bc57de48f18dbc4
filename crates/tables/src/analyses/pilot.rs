//! `pilot.parquet` and `trace_selector.parquet`, written by the `pilot` analysis (the
//! policy pilot: what to do after a probe episode, and the trace selector's rules).

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `pilot`: the probe, one action, or the trace selector, over the blocks
/// (conditions where the probe and every action ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PilotRow {
    /// `probe`, `retry`, a restart arm's name, `switch` or `trace_selector`.
    pub action: String,
    /// Blocks.
    pub n_blocks: u32,
    /// Blocks whose probe failed.
    pub n_failed_probe: u32,
    /// Success share over the blocks (0..=1).
    pub success: f64,
    /// Success share over the blocks whose probe failed; null when no probe failed.
    pub success_after_failed_probe: Option<f64>,
    /// Share of blocks the policy succeeds on (keep a successful probe, take the
    /// action only after a failure).
    pub policy_success: f64,
    /// The probe plus the action, USD per 1,000 conditions at the frozen prices (the
    /// probe alone on the `probe` row).
    pub cost_per_1000_usd: f64,
    /// The action alone, USD per 1,000 conditions.
    pub action_cost_per_1000_usd: f64,
    /// The probe, plus the action only after a failed probe, USD per 1,000 conditions.
    pub policy_cost_per_1000_usd: f64,
    /// The trace selector's success minus the switch's, pp, paired by block; on the
    /// `trace_selector` row only, null elsewhere.
    pub vs_switch_pp: Option<f64>,
    /// Its 95% intent-cluster percentile interval (the fitted rules held fixed), low
    /// end, pp; null as `vs_switch_pp`.
    pub vs_switch_ci_low_pp: Option<f64>,
    /// ... high end, pp; null as `vs_switch_pp`.
    pub vs_switch_ci_high_pp: Option<f64>,
    /// Bootstrap draws.
    pub draws: u32,
    /// The bootstrap seed.
    pub seed: u64,
}

impl TableRow for PilotRow {
    const TABLE: &'static str = "pilot";
}

/// A public numeric feature of the probe episode the trace selector may split on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeFeature {
    /// Prompt tokens.
    PromptTokens,
    /// Completion tokens.
    CompletionTokens,
    /// Reasoning tokens.
    ReasoningTokens,
    /// Executed calls.
    Calls,
    /// Provider requests.
    Requests,
    /// Whether a response hit the completion cap (0 or 1).
    HitCap,
}

/// One row of `trace_selector`: the depth-one rule fitted with one intent held out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSelectorRow {
    /// The held-out intent (the rule's blocks of this intent take its action).
    pub held_out_intent: String,
    /// The feature split on; null when no split beats a single action.
    pub feature: Option<ProbeFeature>,
    /// The split: `feature ≤ threshold` takes `action_at_or_below`; null with
    /// `feature`.
    pub threshold: Option<f64>,
    /// The action at or below the threshold (every block's, without a feature).
    pub action_at_or_below: String,
    /// The action above it.
    pub action_above: String,
    /// The rule's successes on its training blocks.
    pub training_successes: u32,
}

impl TableRow for TraceSelectorRow {
    const TABLE: &'static str = "trace_selector";
}
