//! `switches.parquet`, `switch_incumbents.parquet` and `switch_summary.parquet`,
//! written by the `switches` analysis (a repair against switching the configuration,
//! the paper's Section 4.3).

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// One row of `switches`: one repair × incumbent × switch, over the conditions
/// (variant × repeat × completion cap) of the repair's stressed cells both ran.
/// Differences are the incumbent with the repair minus the switch without it, paired
/// by condition, with family-cluster percentile bootstraps; infrastructure failures
/// count as failures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchesRow {
    /// The repair's arm.
    pub repair: String,
    /// The no-repair arm a switch runs.
    pub baseline: String,
    /// What the repair changes from its no-repair arm, `component=value` pairs joined
    /// by `, ` (`menu=routed`).
    pub component: String,
    /// The configuration repaired.
    pub incumbent: String,
    /// The configuration switched to.
    pub switch: String,
    /// Conditions both ran on the stressed cells.
    pub n_units: u64,
    /// Families among them (the bootstrap's clusters).
    pub n_clusters: u64,
    /// The incumbent's success share with the repair.
    pub success_repair: f64,
    /// The switch's success share without it.
    pub success_switch: f64,
    /// Mean success difference, pp.
    pub success_diff_pp: f64,
    /// 2.5 % quantile of its bootstrap, pp.
    pub success_ci_low_pp: f64,
    /// 97.5 % quantile of its bootstrap, pp.
    pub success_ci_high_pp: f64,
    /// The incumbent's cost per episode with the repair, USD.
    pub cost_repair_usd: f64,
    /// The switch's cost per episode, USD.
    pub cost_switch_usd: f64,
    /// Mean cost difference per episode, USD.
    pub cost_diff_usd: f64,
    /// 2.5 % quantile of its bootstrap, USD.
    pub cost_ci_low_usd: f64,
    /// 97.5 % quantile of its bootstrap, USD.
    pub cost_ci_high_usd: f64,
    /// The incumbent's tokens per episode with the repair.
    pub tokens_repair: f64,
    /// The switch's tokens per episode.
    pub tokens_switch: f64,
    /// The incumbent's wall time per episode with the repair, ms.
    pub wall_ms_repair: f64,
    /// The switch's wall time per episode, ms.
    pub wall_ms_switch: f64,
    /// The switch is at least as good on success, cost, tokens and wall time and
    /// better on one (point estimates).
    pub switch_dominates: bool,
    /// Bootstrap draws.
    pub draws: u32,
    /// The analysis's seed.
    pub seed: u64,
}

impl TableRow for SwitchesRow {
    const TABLE: &'static str = "switches";
}

/// One row of `switch_incumbents`: one repair × incumbent, its verdicts against
/// every switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchIncumbentsRow {
    /// The repair's arm.
    pub repair: String,
    /// The configuration repaired.
    pub incumbent: String,
    /// Switches compared.
    pub n_switches: u64,
    /// Every switch's success interval lies above zero.
    pub success_superior: bool,
    /// No switch dominates the repaired incumbent (point estimates).
    pub pareto_nondominated: bool,
    /// Every switch's cost interval lies below zero.
    pub cost_superior: bool,
    /// The nondominated set among the repaired incumbent (`<incumbent>+<repair>`) and
    /// its switches, in that order then by name, joined by `, `.
    pub frontier: String,
}

impl TableRow for SwitchIncumbentsRow {
    const TABLE: &'static str = "switch_incumbents";
}

/// One row of `switch_summary`: one repair, counts of its incumbents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchSummaryRow {
    /// The repair's arm.
    pub repair: String,
    /// The no-repair arm.
    pub baseline: String,
    /// What the repair changes (as in `switches`).
    pub component: String,
    /// Incumbents (configurations that ran the repair).
    pub n_incumbents: u64,
    /// Incumbents for which the repair is success-superior.
    pub success_superior: u64,
    /// Incumbents the repair leaves Pareto-nondominated.
    pub pareto_nondominated: u64,
    /// Incumbents for which the repair is cost-superior.
    pub cost_superior: u64,
}

impl TableRow for SwitchSummaryRow {
    const TABLE: &'static str = "switch_summary";
}
