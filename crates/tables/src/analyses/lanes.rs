//! `lanes.parquet`, written by the `lanes` analysis: routed versus fixed menu lanes,
//! paired episode by episode.

use serde::{Deserialize, Serialize};

use super::contrasts::ClusterUnit;
use crate::TableRow;

/// One row of `lanes`: one completion cap, scope and resampled cluster unit. A pair is
/// the same family, configuration, cell (V, W, D), cap and repeat in both lanes; the
/// estimate is routed − fixed success, in percentage points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LanesRow {
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// `all` (every paired cell) or `v=<size>` (one menu size).
    pub scope: String,
    /// The resampled cluster unit.
    pub cluster_unit: ClusterUnit,
    /// Clusters of that unit.
    pub n_clusters: u32,
    /// Family × configuration units.
    pub n_units: u32,
    /// Routed/fixed pairs.
    pub pairs: u32,
    /// Routed episodes in scope without a fixed partner.
    pub unpaired_routed: u32,
    /// Fixed episodes in scope without a routed partner.
    pub unpaired_fixed: u32,
    /// Routed success rate over the pairs.
    pub routed_vts: f64,
    /// Fixed success rate over the pairs.
    pub fixed_vts: f64,
    /// Routed − fixed, pp (a mean over units of each unit's mean paired difference).
    pub estimate_pp: f64,
    /// Lower end of the 95% percentile interval, pp.
    pub ci_low_pp: f64,
    /// Upper end of the 95% percentile interval, pp.
    pub ci_high_pp: f64,
    /// Centered bootstrap p, unadjusted.
    pub p_value: f64,
    /// `1 / draws`.
    pub p_floor: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's bootstrap seed.
    pub seed: u64,
    /// The row's own stream seed.
    pub draw_seed: u64,
    /// Mean total tokens per routed episode of the pairs.
    pub routed_tokens_per_episode: f64,
    /// Mean total tokens per fixed episode of the pairs.
    pub fixed_tokens_per_episode: f64,
    /// `fixed_tokens_per_episode − routed_tokens_per_episode`.
    pub fixed_extra_tokens_per_episode: f64,
    /// Mean schema exposures (tool schemas sent, summed over requests) per routed
    /// episode.
    pub routed_schema_exposures_per_episode: f64,
    /// Mean schema exposures per fixed episode.
    pub fixed_schema_exposures_per_episode: f64,
    /// `fixed_schema_exposures_per_episode − routed_schema_exposures_per_episode`.
    pub fixed_extra_schema_exposures_per_episode: f64,
}

impl TableRow for LanesRow {
    const TABLE: &'static str = "lanes";
}
