//! `contrasts.parquet`, `contrasts_sign_flip.parquet` and
//! `contrasts_by_configuration.parquet`, written by the `contrasts` analysis, and the
//! two levels they share with other capacity tables: the weighting of units and the
//! resampled cluster unit.
//!
//! Every row is of one stratum: a menu `lane` at one `completion_cap`. A `contrast` is
//! one of the capacity factorial's eight, by its name in the analysis's design (`v`,
//! `w`, `d_linked`, `v_x_w`, `v_x_d`, `w_x_d`, `d_compact`, `d_typed`); `label` is its
//! readable label. Estimates and interval ends are differences in verified task
//! success, in percentage points.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// How the units of a contrast are weighted in its mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weighting {
    /// Every family × configuration unit once (the paper's estimates).
    Unit,
    /// Every organization once and, within it, every unit once (weights fixed at their
    /// full-sample values inside the bootstrap).
    OrganizationEqual,
}

impl Weighting {
    /// Both, unit first.
    pub const ALL: [Weighting; 2] = [Weighting::Unit, Weighting::OrganizationEqual];

    /// The name in tables (its serde name); it is also a part of the draw seeds.
    pub fn name(self) -> &'static str {
        match self {
            Weighting::Unit => "unit",
            Weighting::OrganizationEqual => "organization_equal",
        }
    }
}

/// Units a bootstrap resamples together (a manifest's `cluster_units`, a table's
/// `cluster_unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterUnit {
    /// Task family.
    Family,
    /// Intent.
    Intent,
    /// Record domain.
    Domain,
    /// Configuration.
    Configuration,
    /// Organization.
    Organization,
}

impl ClusterUnit {
    /// Every unit.
    pub const ALL: [ClusterUnit; 5] = [
        ClusterUnit::Family,
        ClusterUnit::Intent,
        ClusterUnit::Domain,
        ClusterUnit::Configuration,
        ClusterUnit::Organization,
    ];

    /// The name written in manifests and tables (its serde name); it is also a part
    /// of the draw seeds.
    pub fn name(self) -> &'static str {
        match self {
            ClusterUnit::Family => "family",
            ClusterUnit::Intent => "intent",
            ClusterUnit::Domain => "domain",
            ClusterUnit::Configuration => "configuration",
            ClusterUnit::Organization => "organization",
        }
    }
}

/// One row of `contrasts`: one contrast of one stratum, weighting and resampled
/// cluster unit, with its cluster-bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContrastsRow {
    /// Always `capacity`.
    pub analysis: String,
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// How units are weighted.
    pub weighting: Weighting,
    /// The contrast's name.
    pub contrast: String,
    /// The contrast's readable label.
    pub label: String,
    /// The resampled cluster unit.
    pub cluster_unit: ClusterUnit,
    /// Clusters of that unit.
    pub n_clusters: u32,
    /// Family × configuration units.
    pub n_units: u32,
    /// The estimate, pp (the same for every cluster unit).
    pub estimate_pp: f64,
    /// Lower end of the 95% percentile interval, pp.
    pub ci_low_pp: f64,
    /// Upper end of the 95% percentile interval, pp.
    pub ci_high_pp: f64,
    /// Centered bootstrap p-value.
    pub p_value: f64,
    /// `1 / draws`: a `p_value` equal to it means "at most this".
    pub p_floor: f64,
    /// Holm-adjusted p over the eight contrasts of the stratum, weighting and unit.
    pub p_holm: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's bootstrap seed.
    pub seed: u64,
    /// The row's own stream seed, derived from `seed` and the row's key.
    pub draw_seed: u64,
}

impl TableRow for ContrastsRow {
    const TABLE: &'static str = "contrasts";
}

/// One row of `contrasts_sign_flip`: the exact sign-flip test of one contrast over
/// the clusters of one unit (only units with few enough clusters to enumerate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContrastsSignFlipRow {
    /// Always `capacity`.
    pub analysis: String,
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// How units are weighted.
    pub weighting: Weighting,
    /// The contrast's name.
    pub contrast: String,
    /// Whose signs flip.
    pub cluster_unit: ClusterUnit,
    /// Clusters `n`.
    pub n_clusters: u32,
    /// Family × configuration units.
    pub n_units: u32,
    /// The estimate, pp.
    pub estimate_pp: f64,
    /// Sign assignments enumerated, `2^n`.
    pub assignments: u64,
    /// Exact p.
    pub p_value: f64,
    /// `2 / 2^n`, the smallest attainable p.
    pub p_floor: f64,
    /// Holm-adjusted p over the eight contrasts.
    pub p_holm: f64,
}

impl TableRow for ContrastsSignFlipRow {
    const TABLE: &'static str = "contrasts_sign_flip";
}

/// One row of `contrasts_by_configuration`: one configuration's contrast over its
/// families, with a family-cluster bootstrap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContrastsByConfigurationRow {
    /// Always `capacity`.
    pub analysis: String,
    /// Menu lane.
    pub lane: String,
    /// Completion cap per request, tokens.
    pub completion_cap: u32,
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// The contrast's name.
    pub contrast: String,
    /// The contrast's readable label.
    pub label: String,
    /// Always `family`.
    pub cluster_unit: ClusterUnit,
    /// The configuration's families.
    pub n_units: u32,
    /// The estimate, pp.
    pub estimate_pp: f64,
    /// Lower end of the 95% family-bootstrap interval, pp.
    pub ci_low_pp: f64,
    /// Upper end of the 95% family-bootstrap interval, pp.
    pub ci_high_pp: f64,
    /// Unadjusted bootstrap p (descriptive: 8 × configurations tests).
    pub p_value: f64,
    /// `1 / draws`.
    pub p_floor: f64,
    /// Bootstrap draws.
    pub draws: u32,
    /// The manifest's bootstrap seed.
    pub seed: u64,
    /// The row's own stream seed.
    pub draw_seed: u64,
}

impl TableRow for ContrastsByConfigurationRow {
    const TABLE: &'static str = "contrasts_by_configuration";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in seeds and messages are the names the tables and manifests hold.
    #[test]
    fn a_levels_name_is_its_serde_name() {
        for w in Weighting::ALL {
            assert_eq!(serde_json::to_value(w).ok(), Some(w.name().into()));
        }
        for u in ClusterUnit::ALL {
            assert_eq!(serde_json::to_value(u).ok(), Some(u.name().into()));
        }
    }
}
