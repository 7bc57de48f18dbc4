//! `repairs.parquet`, written by the `repairs` analysis: each layer's repair against
//! its own pressure and against the other layers' repairs on the same cells (L, Γ, Σ,
//! Δ, activation, equivalence margins), and the generic-rescue benchmark. The
//! `holdout` table ([`super::holdout`]) has the same columns after its population.

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// What a row of `repairs` (or `holdout`) estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The layer's own repair against the no-repair arm (tested for activation).
    Repair,
    /// Another layer's repair on the same cells (not tested for activation).
    WrongLayerControl,
    /// The paper's generic-rescue check, (p₀, p₁, r) = (0.8, 0.4, 0.5), by the same
    /// formulas.
    GenericRescueBenchmark,
}

/// One row of `repairs`: at one completion cap, one layer's own repair or one of its
/// wrong-layer controls; the last row is the generic-rescue benchmark. Effects are in
/// percentage points; an interval is the 95% family-cluster percentile bootstrap, and
/// any value that is not finite is null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairsRow {
    /// Completion cap; null on the benchmark row.
    pub completion_cap: Option<u32>,
    /// The layer: `V`, `W`, `D`, `R` (`depth`, `D` in `holdout`); `generic` on the
    /// benchmark row.
    pub layer: String,
    /// The layer's pressure, its axis from unstressed to stressed level ("v 8→128").
    pub pressure: String,
    /// The repair (`routed_menu`, `workflow_prompt`, `interface_guide`, `router`, …).
    pub repair: String,
    /// What the row estimates.
    pub role: Role,
    /// The repair arm's names in the manifest (`+`-joined); null when not estimable.
    pub repair_arm: Option<String>,
    /// The no-repair arm's names in the manifest; null when not estimable.
    pub no_repair_arm: Option<String>,
    /// The pooled strata (cells without the layer's axis); empty when not estimable.
    pub cells: String,
    /// Cells (strata × 2 levels).
    pub n_cells: u32,
    /// Families (the bootstrap's clusters).
    pub n_families: u32,
    /// Configurations.
    pub n_configurations: u32,
    /// Episodes per arm (the conditions both arms run).
    pub n_episodes_per_arm: u32,
    /// Whether the numbers exist.
    pub estimable: bool,
    /// Why the layer is not estimable, or which repairs were left out as controls.
    pub note: Option<String>,
    /// μ⁰₀: the no-repair arm's success unstressed (share).
    pub no_repair_unstressed_vts: Option<f64>,
    /// μ⁰₁: the no-repair arm's success stressed.
    pub no_repair_stressed_vts: Option<f64>,
    /// μᵃ₀: the repair's success unstressed.
    pub repair_unstressed_vts: Option<f64>,
    /// μᵃ₁: the repair's success stressed.
    pub repair_stressed_vts: Option<f64>,
    /// L = μ⁰₀ − μ⁰₁, the loss under the pressure.
    pub l_pp: Option<f64>,
    /// Its interval, low end.
    pub l_pp_ci_low: Option<f64>,
    /// Its interval, high end.
    pub l_pp_ci_high: Option<f64>,
    /// Γ = μᵃ₁ − μ⁰₁, the stress gain.
    pub gamma_pp: Option<f64>,
    /// Its interval, low end.
    pub gamma_pp_ci_low: Option<f64>,
    /// Its interval, high end.
    pub gamma_pp_ci_high: Option<f64>,
    /// Σ = Γ − (μᵃ₀ − μ⁰₀), the selectivity.
    pub sigma_pp: Option<f64>,
    /// Its interval, low end.
    pub sigma_pp_ci_low: Option<f64>,
    /// Its interval, high end.
    pub sigma_pp_ci_high: Option<f64>,
    /// Δ = the own repair's Σ minus the best wrong-layer control's; own repairs with a
    /// control only.
    pub delta_pp: Option<f64>,
    /// Its interval, low end.
    pub delta_pp_ci_low: Option<f64>,
    /// Its interval, high end.
    pub delta_pp_ci_high: Option<f64>,
    /// One-sided p of L > 0 (centered bootstrap).
    pub p_l_positive: Option<f64>,
    /// One-sided p of Γ > 0.
    pub p_gamma_positive: Option<f64>,
    /// One-sided p of Σ > 0.
    pub p_sigma_positive: Option<f64>,
    /// Intersection-union p: the largest of the parts' (with Δ's where the layer
    /// needs it).
    pub p_iut: Option<f64>,
    /// Holm over the estimable own repairs of a cap (and population); own repairs only.
    pub p_holm: Option<f64>,
    /// The smallest p the draws can show, `1 / draws`.
    pub p_floor: f64,
    /// `p_holm ≤ 0.05`; own repairs only.
    pub activates: Option<bool>,
    /// Smallest symmetric equivalence margin on Γ at which two one-sided tests reject
    /// at 5%, pp; on estimable rows that do not activate.
    pub tost_margin_pp: Option<f64>,
    /// The same margin on Σ, pp.
    pub tost_margin_sigma_pp: Option<f64>,
    /// Bootstrap draws.
    pub draws: u32,
    /// Bootstrap seed.
    pub seed: u64,
    /// The layer's bootstrap stream seed (`[kind, cap, layer]`, shared by its rows);
    /// null when not estimable and on the benchmark row.
    pub draw_seed: Option<u64>,
}

impl TableRow for RepairsRow {
    const TABLE: &'static str = "repairs";
}
