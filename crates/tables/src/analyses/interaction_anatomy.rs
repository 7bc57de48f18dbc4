//! `interaction_anatomy.parquet`, written by the `interaction_anatomy` analysis: where
//! the capacity factorial's V × W interaction comes from (the paper's Appendix D).

use serde::{Deserialize, Serialize};

use crate::analyses::contrasts::ClusterUnit;
use crate::TableRow;

/// One row of `interaction_anatomy`: one stratum (a menu `lane` at one
/// `completion_cap`) and one resampled cluster unit. Every column but the interval's
/// is the same in the rows of one stratum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractionAnatomyRow {
    /// Menu lane.
    pub lane: String,
    /// Completion cap.
    pub completion_cap: u32,
    /// Units: family × configuration × encoding (raw, linked), one
    /// difference-in-differences each.
    pub n_units: u32,
    /// The V × W coefficient over every unit (the `contrasts` table's `v_x_w`), pp.
    pub observed_pp: f64,
    /// The interaction expected if each pressure removed the same share of the
    /// successes the other leaves (success rates multiply), pp; null when the baseline
    /// cells never succeed.
    pub expected_independent_pp: Option<f64>,
    /// Units in which every stressed cell fails while the baseline succeeds.
    pub all_stressed_fail_units: u32,
    /// Their share of the observed coefficient; null when it is 0.
    pub all_stressed_fail_share: Option<f64>,
    /// Units whose sign the single-stress cells force (both succeed, or both fail).
    pub forced_units: u32,
    /// The other units.
    pub unforced_units: u32,
    /// The units resampled together.
    pub cluster_unit: ClusterUnit,
    /// Clusters among the unforced units.
    pub n_clusters: u32,
    /// The V × W coefficient over the unforced units, pp.
    pub unforced_pp: f64,
    /// 2.5 % quantile of its cluster bootstrap, pp.
    pub ci_low_pp: f64,
    /// 97.5 % quantile, pp.
    pub ci_high_pp: f64,
    /// Units in which the joint-stress cell succeeds while a single-stress cell fails.
    pub joint_rescue_units: u32,
    /// Their share of the units.
    pub joint_rescue_share: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's seed.
    pub seed: u64,
    /// The stream seed of this row's bootstrap.
    pub draw_seed: u64,
}

impl TableRow for InteractionAnatomyRow {
    const TABLE: &'static str = "interaction_anatomy";
}
