//! `holdout.parquet` and `holdout_arms.parquet`, written by the `holdout` analysis:
//! the public-handoff controller against the model-run baseline on the held-out
//! intents, with canonical delivery as its wrong-layer control.

use arrow_schema::FieldRef;
use serde::{Deserialize, Serialize};

use super::repairs::RepairsRow;
use crate::{StoreError, TableRow};

/// The configurations a `holdout` row pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Population {
    /// Every configuration of the study.
    All,
    /// The manifest's confirmatory set.
    Confirmatory,
}

/// One row of `holdout`: the `repairs` columns over the layers `depth` (2 → 30
/// required calls, repair `actor = controller`) and `D` (raw → compact, repair
/// `delivery = canonical`), each the other's wrong-layer control, after the population
/// they pool. The controller's `p_iut` also takes Δ's one-sided p; `p_holm` is Holm over
/// the two repairs of a population and cap. There is no benchmark row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldoutRow {
    /// The configurations the row pools (never null; the column is nullable).
    pub population: Option<Population>,
    /// The effects, as in `repairs`.
    #[serde(flatten)]
    pub effects: RepairsRow,
}

impl TableRow for HoldoutRow {
    const TABLE: &'static str = "holdout";

    /// `population`, then the `repairs` columns. Written out because serde_arrow cannot
    /// trace a flattened struct from its type (it writes and reads one against given
    /// columns).
    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        let mut fields = PopulationColumn::fields()?;
        fields.extend(RepairsRow::fields()?);
        Ok(fields)
    }
}

/// The `population` column alone, so that its type is derived like every other
/// column's.
#[derive(Serialize, Deserialize)]
struct PopulationColumn {
    population: Option<Population>,
}

impl TableRow for PopulationColumn {
    const TABLE: &'static str = "holdout";
}

/// The role of an arm of the holdout design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArmRole {
    /// The model-run baseline (fixed menu, base prompt, native delivery, the model
    /// acting).
    Baseline,
    /// The public-handoff controller (`actor = controller`).
    Controller,
    /// Canonical delivery (`delivery = canonical`), the controller's control.
    CanonicalDelivery,
}

/// One row of `holdout_arms`: an arm at a completion cap and depth, pooled over
/// encodings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldoutArmsRow {
    /// Completion cap.
    pub completion_cap: u32,
    /// The arm's role in the design.
    pub role: ArmRole,
    /// The arm's names in the manifest (`+`-joined).
    pub arm: String,
    /// Required calls (the chain's depth).
    pub depth: u32,
    /// Episodes.
    pub n_episodes: u32,
    /// Configurations.
    pub n_configurations: u32,
    /// Share of verified successes.
    pub vts: f64,
    /// Executed calls per episode.
    pub calls_per_episode: f64,
    /// Of which the controller issued, per episode.
    pub controller_calls_per_episode: f64,
    /// Model requests per episode.
    pub requests_per_episode: f64,
    /// Reported tokens per episode.
    pub tokens_per_episode: f64,
    /// Episodes stopped at the episode budget or the call limit.
    pub n_budget_or_call_limit: u32,
}

impl TableRow for HoldoutArmsRow {
    const TABLE: &'static str = "holdout_arms";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::repairs::Role;

    fn effects(layer: &str, role: Role) -> RepairsRow {
        RepairsRow {
            completion_cap: Some(1024),
            layer: layer.into(),
            pressure: "depth 2→30".into(),
            repair: "controller".into(),
            role,
            repair_arm: Some("controller".into()),
            no_repair_arm: None,
            cells: "depth 2→30 at d=raw".into(),
            n_cells: 2,
            n_families: 3,
            n_configurations: 1,
            n_episodes_per_arm: 6,
            estimable: true,
            note: None,
            no_repair_unstressed_vts: Some(1.0),
            no_repair_stressed_vts: Some(0.0),
            repair_unstressed_vts: Some(1.0),
            repair_stressed_vts: Some(1.0),
            l_pp: Some(100.0),
            l_pp_ci_low: Some(90.0),
            l_pp_ci_high: None,
            gamma_pp: Some(100.0),
            gamma_pp_ci_low: None,
            gamma_pp_ci_high: None,
            sigma_pp: None,
            sigma_pp_ci_low: None,
            sigma_pp_ci_high: None,
            delta_pp: Some(-3.5),
            delta_pp_ci_low: None,
            delta_pp_ci_high: None,
            p_l_positive: Some(0.01),
            p_gamma_positive: None,
            p_sigma_positive: None,
            p_iut: Some(0.01),
            p_holm: Some(0.02),
            p_floor: 0.01,
            activates: Some(true),
            tost_margin_pp: None,
            tost_margin_sigma_pp: None,
            draws: 100,
            seed: 7,
            draw_seed: Some(u64::MAX),
        }
    }

    /// The flattened row writes `population` and then exactly the `repairs` batch, and
    /// reads back what it wrote (serde_arrow reads a flattened struct through its
    /// self-describing path, so every column type is exercised here).
    #[test]
    fn a_holdout_batch_is_the_population_then_the_repairs_batch() {
        let rows = [
            HoldoutRow {
                population: Some(Population::All),
                effects: effects("depth", Role::Repair),
            },
            HoldoutRow {
                population: Some(Population::Confirmatory),
                effects: effects("D", Role::WrongLayerControl),
            },
        ];
        let batch = HoldoutRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
        let repairs: Vec<RepairsRow> = rows.iter().map(|r| r.effects.clone()).collect();
        let alone = RepairsRow::to_batch(&repairs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(batch.num_columns(), alone.num_columns() + 1);
        assert_eq!(batch.schema().field(0).name(), "population");
        for (k, column) in alone.columns().iter().enumerate() {
            assert_eq!(
                batch.column(k + 1).to_data(),
                column.to_data(),
                "column {k}"
            );
            assert_eq!(batch.schema().field(k + 1), alone.schema().field(k));
        }
        let back = HoldoutRow::from_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, rows);
        let empty = HoldoutRow::to_batch(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(empty.num_columns(), batch.num_columns());
    }
}
