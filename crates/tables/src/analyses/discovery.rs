//! `discovery.parquet`, written by the `discovery` analysis (pressure R: availability,
//! intention-to-treat success and the R contrast per arm).

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// What a row of `discovery` estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// Share of episodes whose offered menu held every required tool (`ok_a`).
    Availability,
    /// VTS over every assigned episode: an unavailable or infrastructure-failed
    /// episode counts as a failure.
    IttSuccess,
    /// VTS among the available episodes only (descriptive, not randomised).
    SuccessIfAvailable,
}

impl Statistic {
    /// Every statistic, in table order.
    pub const ALL: [Statistic; 3] = [
        Statistic::Availability,
        Statistic::IttSuccess,
        Statistic::SuccessIfAvailable,
    ];
}

/// The R level of a row: one routing level, or the paired contrast between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RLevel {
    /// R low (no near-miss connectors in the catalogue).
    Low,
    /// R high.
    High,
    /// The paired contrast, R high − R low.
    HighMinusLow,
}

/// The unit whose clusters a row's bootstrap resamples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterUnit {
    /// The set of tools a variant's reference program calls (the primary unit).
    RequiredTools,
    /// The task family.
    Family,
    /// The family's intent.
    Intent,
}

impl ClusterUnit {
    /// Every unit, primary first (table order).
    pub const ALL: [ClusterUnit; 3] = [
        ClusterUnit::RequiredTools,
        ClusterUnit::Family,
        ClusterUnit::Intent,
    ];
}

/// One row of `discovery`: one arm × statistic × R level × cluster unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveryRow {
    /// Arm name.
    pub arm: String,
    /// The arm's menu (`fixed`, `router`, `retrieval_k8`, ...).
    pub lane: String,
    /// What the row estimates.
    pub statistic: Statistic,
    /// `low`, `high`, or `high_minus_low` (contrasts: availability and ITT only).
    pub r: RLevel,
    /// The resampled unit.
    pub cluster_unit: ClusterUnit,
    /// Clusters of `cluster_unit` among the row's observations.
    pub n_clusters: u32,
    /// Episodes (a rate) or R-low / R-high pairs (a contrast).
    pub n: u32,
    /// Episodes counted 1; null on a contrast.
    pub hits: Option<u64>,
    /// The estimate, in pp (a rate × 100, or the mean paired difference).
    pub estimate_pp: f64,
    /// 95% percentile cluster-bootstrap interval, low end, pp.
    pub ci_low_pp: f64,
    /// ... high end, pp.
    pub ci_high_pp: f64,
    /// Centered two-sided bootstrap p-value; null on a rate.
    pub p_value: Option<f64>,
    /// The smallest p-value the draws can show (1 / draws).
    pub p_floor: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's seed.
    pub seed: u64,
    /// The row's stream: `["discovery", arm, statistic, r, cluster_unit]` hashed with
    /// `seed`.
    pub draw_seed: u64,
    /// Episodes that stopped for lack of availability; on `availability` rows at one R
    /// level only, null elsewhere.
    pub unavailable: Option<u64>,
    /// Provider requests those episodes sent (0 by construction); null as `unavailable`.
    pub unavailable_requests: Option<u64>,
    /// Reported tokens those episodes used (0 by construction); null as `unavailable`.
    pub unavailable_tokens: Option<u64>,
}

impl TableRow for DiscoveryRow {
    const TABLE: &'static str = "discovery";
}
