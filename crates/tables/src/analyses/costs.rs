//! `costs.parquet`, written by the `costs` analysis.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `costs`: one configuration (or `all`, pooled) in one lane (or `all`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostsRow {
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Lane or `all`.
    pub lane: String,
    /// Episodes.
    pub episodes: u64,
    /// Verified successes.
    pub successes: u64,
    /// `successes / episodes`.
    pub vts_rate: f64,
    /// Infrastructure failures.
    pub infra_failures: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Reasoning tokens (where reported).
    pub reasoning_tokens: u64,
    /// Prompt + completion tokens.
    pub total_tokens: u64,
    /// `total_tokens / episodes`.
    pub tokens_per_episode: f64,
    /// Tokens at the configuration's frozen prices, in USD.
    pub cost_usd: f64,
    /// `cost_usd / episodes`.
    pub cost_per_episode_usd: f64,
    /// `1000 × cost_per_episode_usd`.
    pub cost_per_1000_episodes_usd: f64,
    /// `cost_usd / successes`; null when nothing succeeded.
    pub cost_per_success_usd: Option<f64>,
}

impl TableRow for CostsRow {
    const TABLE: &'static str = "costs";
}
