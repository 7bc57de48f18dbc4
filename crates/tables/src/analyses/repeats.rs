//! `repeats.parquet`, written by the `repeats` analysis: how often a configuration
//! succeeds on one run of a condition, on every one of k runs, and how often its runs
//! disagree.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `repeats`: a configuration (or `all`) at a completion cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatsRow {
    /// Completion cap.
    pub completion_cap: u32,
    /// The configuration, or `all` (every configuration's groups pooled).
    pub configuration: String,
    /// Its organization; null on `all`.
    pub organization: Option<String>,
    /// Condition groups: (block, arm, variant) run more than once, or once.
    pub n_groups: u32,
    /// Runs (episodes) of those groups.
    pub n_runs: u32,
    /// Fewest runs of a group.
    pub runs_min: u32,
    /// Most runs of a group.
    pub runs_max: u32,
    /// Success over runs (share): pass@1.
    pub pass_at_1: f64,
    /// pass^k for k = 1, 2, …, `runs_min`: the chance that k runs of a group, drawn
    /// without replacement from its runs, all succeed (`C(c, k) / C(n, k)` for a group
    /// of n runs with c successes), averaged over groups.
    pub pass_hat_k: Vec<f64>,
    /// Share of the groups run more than once whose runs both succeed and fail; null
    /// when no group ran twice.
    pub disagreement: Option<f64>,
}

impl TableRow for RepeatsRow {
    const TABLE: &'static str = "repeats";
}
