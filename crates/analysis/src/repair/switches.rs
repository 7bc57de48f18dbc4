//! The `switches` analysis kind: a repair against switching the configuration (the
//! paper's repair-versus-switch comparison, Section 4.3).
//!
//! For each repair the manifest names — an arm, the no-repair arm it is compared with,
//! and the stressed cells of its layer — every configuration that ran the repair on
//! those cells is an *incumbent*, and every other configuration that ran the no-repair
//! arm on them is a *switch*. For each incumbent × switch the units are the conditions
//! (variant × repeat × completion cap) both ran; each unit's difference is the
//! incumbent-with-repair episode minus the switch's no-repair episode, in success (pp),
//! cost (USD), tokens and wall time. The switch is re-executed, never replayed: both
//! sides are rows of this study.
//!
//! - **Intervals**: the mean difference with a percentile family-cluster bootstrap
//!   (units of a family resampled together, [`stats::cluster_bootstrap`]), for success
//!   and for cost; a row's stream hashes `[switches, repair, incumbent, switch,
//!   statistic]` with the seed.
//! - **Success-superior**: every switch's success interval lies above zero.
//!   **Cost-superior**: every switch's cost interval lies below zero.
//! - **Pareto-nondominated** (point estimates): no switch is at least as good on
//!   success (higher), tokens, wall time and cost (lower), over the units it shares with
//!   the incumbent, and strictly better on one. The *frontier* of an incumbent is the
//!   nondominated set among its repaired self and its switches.
//!
//! Success is the harness's verdict with infrastructure failures counted as failures
//! ([`design::success`]), as the paper keeps them.
//!
//! Tables: `switches` ([`SwitchesRow`], one row per repair × incumbent × switch),
//! `switch_incumbents` ([`SwitchIncumbentsRow`], per repair × incumbent: the three
//! verdicts and the frontier) and `switch_summary` ([`SwitchSummaryRow`], per repair:
//! how many incumbents are success-superior, nondominated, cost-superior).
//!
//! Never: reads files or the clock (a simulated configuration's wall time is modelled
//! from its tokens, so these tables are deterministic on the sim panel), or pairs rows
//! of different conditions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::common::design;
use crate::common::stats::{self, ClusterTotals, Interval};
use crate::{
    AnalysisError, BlockShape, Context, Design, Names, Output, ParamProblem, Produced, Typed,
};
use tbb_tables::analyses::switches::{SwitchIncumbentsRow, SwitchSummaryRow, SwitchesRow};
use tbb_tables::levels::{level_name, Cell};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

const KIND: &str = "switches";
/// Default bootstrap draws, as for every other interval of the studies: with 2,000, four
/// router incumbents sat on the border of the switch comparison, where the Monte Carlo
/// error of an interval's end decides the verdict.
pub const DEFAULT_DRAWS: u32 = stats::DEFAULT_DRAWS;

/// The `switches` analysis kind.
pub struct Switches;

/// Its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bootstrap draws (default [`DEFAULT_DRAWS`]).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default [`stats::DEFAULT_SEED`]).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The repairs compared with switching.
    pub repairs: Vec<Repair>,
}

/// One repair: its arm, the no-repair arm its switches run, and the stressed cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repair {
    /// The repair's arm.
    pub arm: String,
    /// The no-repair arm (what a switch runs).
    pub baseline: String,
    /// The stressed cells: each level given must match (none given: every cell).
    #[serde(default)]
    pub stressed: Cells,
}

/// A filter on cells by level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cells {
    /// Menu size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v: Option<u32>,
    /// Workflow level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<String>,
    /// Encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<String>,
    /// Routing difficulty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r: Option<String>,
    /// Frontier depth in required calls (the frontier and holdout cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
}

impl Cells {
    fn matches(&self, row: &EpisodeRow) -> bool {
        self.matches_levels(row.v, row.w.name(), row.d.name(), row.r.name())
            && self.depth.is_none_or(|x| row.depth == Some(x))
    }

    /// Whether a cell of the design is stressed.
    pub fn matches_cell(&self, cell: &Cell) -> bool {
        self.matches_levels(
            u32::from(cell.v),
            &level_name(&cell.w),
            &level_name(&cell.d),
            &level_name(&cell.r),
        ) && self
            .depth
            .is_none_or(|x| cell.depth.map(u32::from) == Some(x))
    }

    /// The filter as the manifest writes it (`{ v = 128, r = "low" }`).
    fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.v {
            parts.push(format!("v = {v}"));
        }
        for (axis, level) in [("w", &self.w), ("d", &self.d), ("r", &self.r)] {
            if let Some(level) = level {
                parts.push(format!("{axis} = \"{level}\""));
            }
        }
        if let Some(depth) = self.depth {
            parts.push(format!("depth = {depth}"));
        }
        format!("{{ {} }}", parts.join(", "))
    }

    fn matches_levels(&self, v: u32, w: &str, d: &str, r: &str) -> bool {
        self.v.is_none_or(|x| x == v)
            && self.w.as_ref().is_none_or(|x| x == w)
            && self.d.as_ref().is_none_or(|x| x == d)
            && self.r.as_ref().is_none_or(|x| x == r)
    }

    fn problems(&self, at: &str) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        let mut level = |axis: &str, value: Option<&str>, allowed: &[&str]| {
            if let Some(v) = value {
                if !allowed.contains(&v) {
                    out.push(ParamProblem {
                        path: format!("{at}.{axis}"),
                        message: format!("`{v}` is not a level of {axis}"),
                        help: Some(format!("one of {}", allowed.join(", "))),
                    });
                }
            }
        };
        let v = self.v.map(|v| v.to_string());
        level("v", v.as_deref(), &["8", "32", "128"]);
        level("w", self.w.as_deref(), &["low", "medium", "high"]);
        level(
            "d",
            self.d.as_deref(),
            &["raw", "compact", "typed", "linked"],
        );
        level("r", self.r.as_deref(), &["low", "high"]);
        out
    }
}

impl Typed for Switches {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "switches/3";
    const OUTPUTS: &'static [&'static str] = &[
        SwitchesRow::TABLE,
        SwitchIncumbentsRow::TABLE,
        SwitchSummaryRow::TABLE,
    ];

    fn check(params: &Params) -> Vec<ParamProblem> {
        let mut out: Vec<ParamProblem> = stats::check_draws(params.draws).into_iter().collect();
        if params.repairs.is_empty() {
            out.push(ParamProblem {
                path: "repairs".into(),
                message: "no repair to compare with switching".into(),
                help: Some(
                    "add `repairs = [{ arm = \"<repair arm>\", baseline = \"<no-repair arm>\", stressed = { v = 128 } }]`"
                        .into(),
                ),
            });
        }
        for (i, r) in params.repairs.iter().enumerate() {
            if r.arm == r.baseline {
                out.push(ParamProblem {
                    path: format!("repairs.{i}.baseline"),
                    message: format!("repair `{}` is its own no-repair arm", r.arm),
                    help: None,
                });
            }
            if params.repairs[..i].iter().any(|o| o.arm == r.arm) {
                out.push(ParamProblem {
                    path: format!("repairs.{i}.arm"),
                    message: format!("repair `{}` is listed twice", r.arm),
                    help: None,
                });
            }
            out.extend(r.stressed.problems(&format!("repairs.{i}.stressed")));
        }
        out
    }

    fn check_names(params: &Params, names: &Names<'_>) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        for (i, r) in params.repairs.iter().enumerate() {
            out.extend(names.arm(&format!("repairs.{i}.arm"), &r.arm));
            out.extend(names.arm(&format!("repairs.{i}.baseline"), &r.baseline));
        }
        out
    }

    fn needs_with(params: &Params, design: &Design) -> Option<String> {
        params
            .repairs
            .iter()
            .find(|r| !design.cells.iter().any(|c| r.stressed.matches_cell(c)))
            .map(|r| {
                format!(
                    "the stressed cells {} of repair `{}` match no cell of the study",
                    r.stressed.label(),
                    r.arm
                )
            })
    }

    fn units(params: &Params, design: &Design) -> Vec<String> {
        params
            .repairs
            .iter()
            .map(|r| {
                let (mut cells, mut conditions) = (0usize, 0u64);
                let both =
                    |b: &&BlockShape| b.arms.contains(&r.arm) && b.arms.contains(&r.baseline);
                for b in design.blocks.iter().filter(both) {
                    let stressed = b
                        .cells
                        .iter()
                        .filter(|c| r.stressed.matches_cell(c))
                        .count();
                    cells += stressed;
                    conditions += (stressed * b.families) as u64 * u64::from(b.repeats);
                }
                format!(
                    "repair `{}` against switches from `{}`: {conditions} conditions per \
                     configuration pair ({cells} stressed cells {})",
                    r.arm,
                    r.baseline,
                    r.stressed.label()
                )
            })
            .collect()
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let draws = params.draws.unwrap_or(DEFAULT_DRAWS);
        let seed = params.seed.unwrap_or(stats::DEFAULT_SEED);
        let rows = compare(input.episodes, &params.repairs, draws, seed)?;
        tables(&rows, draws, seed).map(Produced::from)
    }
}

/// Means of one side over shared units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Side {
    /// Success share.
    pub success: f64,
    /// Cost per episode, USD.
    pub cost_usd: f64,
    /// Tokens per episode.
    pub tokens: f64,
    /// Wall time per episode, ms.
    pub wall_ms: f64,
}

impl Side {
    /// Whether `self` is at least as good as `other` everywhere and better somewhere.
    pub fn dominates(&self, other: &Side) -> bool {
        let at_least = self.success >= other.success
            && self.cost_usd <= other.cost_usd
            && self.tokens <= other.tokens
            && self.wall_ms <= other.wall_ms;
        let better = self.success > other.success
            || self.cost_usd < other.cost_usd
            || self.tokens < other.tokens
            || self.wall_ms < other.wall_ms;
        at_least && better
    }
}

/// One repair × incumbent × switch comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The repair's arm.
    pub repair: String,
    /// Its no-repair arm.
    pub baseline: String,
    /// What the repair changes from its no-repair arm, as `component=value` pairs
    /// (`menu=router`, `prompt=workflow_prompt`), joined by `, `.
    pub component: String,
    /// The configuration repaired.
    pub incumbent: String,
    /// The configuration switched to.
    pub switch: String,
    /// Shared conditions.
    pub n_units: usize,
    /// Families among them.
    pub n_clusters: usize,
    /// The incumbent with the repair.
    pub repaired: Side,
    /// The switch without it.
    pub switched: Side,
    /// Success difference, pp (repaired − switched).
    pub success_pp: Interval,
    /// Cost difference per episode, USD (repaired − switched).
    pub cost_usd: Interval,
}

/// (configuration, variant, repeat, completion cap): a condition of one arm.
type Key<'a> = (&'a str, &'a str, u32, u32);

/// Every comparison, by repair, incumbent and switch (sorted).
pub fn compare(
    episodes: &[EpisodeRow],
    repairs: &[Repair],
    draws: u32,
    seed: u64,
) -> Result<Vec<Comparison>, AnalysisError> {
    let mut out = Vec::new();
    for repair in repairs {
        let index = |arm: &str| -> Result<BTreeMap<Key<'_>, &EpisodeRow>, AnalysisError> {
            let mut m = BTreeMap::new();
            for row in episodes
                .iter()
                .filter(|r| r.arm == arm && repair.stressed.matches(r))
            {
                let key = (
                    row.configuration.as_str(),
                    row.variant_id.as_str(),
                    row.repeat,
                    row.completion_cap,
                );
                if m.insert(key, row).is_some() {
                    return Err(AnalysisError::Inconsistent {
                        analysis: KIND,
                        detail: format!(
                            "two episodes of arm `{arm}` for configuration {}, variant {}, repeat {}, cap {}",
                            key.0, key.1, key.2, key.3
                        ),
                    });
                }
            }
            if m.is_empty() {
                let arms: BTreeSet<&str> = episodes.iter().map(|r| r.arm.as_str()).collect();
                return Err(AnalysisError::MissingData {
                    analysis: KIND,
                    detail: format!(
                        "no episode of arm `{arm}` on the stressed cells of repair `{}` (arms run: {})",
                        repair.arm,
                        arms.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            Ok(m)
        };
        let repaired = index(&repair.arm)?;
        let unrepaired = index(&repair.baseline)?;
        let component = match (repaired.values().next(), unrepaired.values().next()) {
            (Some(a), Some(b)) => changed_components(a, b),
            _ => String::new(),
        };
        let incumbents: BTreeSet<&str> = repaired.keys().map(|k| k.0).collect();
        let switches: BTreeSet<&str> = unrepaired.keys().map(|k| k.0).collect();
        for &incumbent in &incumbents {
            for &switch in switches.iter().filter(|&&s| s != incumbent) {
                let pairs: Vec<(&EpisodeRow, &EpisodeRow)> = repaired
                    .range((incumbent, "", 0, 0)..)
                    .take_while(|(k, _)| k.0 == incumbent)
                    .filter_map(|(k, a)| unrepaired.get(&(switch, k.1, k.2, k.3)).map(|b| (*a, *b)))
                    .collect();
                if pairs.is_empty() {
                    continue;
                }
                let mut c = one(repair, incumbent, switch, &pairs, draws, seed);
                c.component.clone_from(&component);
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// The arm components in which `repaired` differs from `baseline`.
fn changed_components(repaired: &EpisodeRow, baseline: &EpisodeRow) -> String {
    let (a, b) = (repaired, baseline);
    [
        ("menu", a.lane != b.lane, a.lane.name()),
        (
            "prompt",
            a.repair != b.repair,
            a.repair.repair_name().to_string(),
        ),
        ("delivery", a.delivery != b.delivery, a.delivery.to_string()),
        ("actor", a.actor != b.actor, a.actor.to_string()),
    ]
    .into_iter()
    .filter(|(_, changed, _)| *changed)
    .map(|(name, _, value)| format!("{name}={value}"))
    .collect::<Vec<_>>()
    .join(", ")
}

fn one(
    repair: &Repair,
    incumbent: &str,
    switch: &str,
    pairs: &[(&EpisodeRow, &EpisodeRow)],
    draws: u32,
    seed: u64,
) -> Comparison {
    let families: Vec<&str> = pairs.iter().map(|(a, _)| a.family.as_str()).collect();
    let (clusters, names) = stats::cluster_ids(&families);
    let ones = vec![1.0; pairs.len()];
    let side = |repaired: bool| {
        let chosen: Vec<&EpisodeRow> = pairs
            .iter()
            .map(|&(a, b)| if repaired { a } else { b })
            .collect();
        let n = pairs.len() as f64;
        let mean = |f: fn(&EpisodeRow) -> f64| {
            let mut v: Vec<f64> = chosen.iter().map(|r| f(r)).collect();
            v.sort_by(f64::total_cmp);
            v.iter().sum::<f64>() / n
        };
        Side {
            success: mean(|r| f64::from(u8::from(design::success(r)))),
            cost_usd: mean(|r| r.cost_usd),
            tokens: mean(|r| r.total_tokens as f64),
            wall_ms: mean(|r| r.wall_ms as f64),
        }
    };
    let interval = |statistic: &str, diff: &dyn Fn(&EpisodeRow, &EpisodeRow) -> f64| {
        let values: Vec<f64> = pairs.iter().map(|(a, b)| diff(a, b)).collect();
        let totals = ClusterTotals::new(&values, &ones, &clusters, names.len());
        let draw_seed =
            stats::derive_seed(seed, &[KIND, &repair.arm, incumbent, switch, statistic]);
        stats::cluster_bootstrap(&totals, draws, draw_seed)
    };
    let success = |r: &EpisodeRow| 100.0 * f64::from(u8::from(design::success(r)));
    Comparison {
        repair: repair.arm.clone(),
        baseline: repair.baseline.clone(),
        component: String::new(),
        incumbent: incumbent.to_string(),
        switch: switch.to_string(),
        n_units: pairs.len(),
        n_clusters: names.len(),
        repaired: side(true),
        switched: side(false),
        success_pp: interval("success", &|a, b| success(a) - success(b)),
        cost_usd: interval("cost", &|a, b| a.cost_usd - b.cost_usd),
    }
}

/// The verdicts per repair and incumbent, from the comparisons of [`compare`]. The
/// repaired incumbent and a switch are compared on the units they share; two switches
/// on their sides as measured against the incumbent (the same units whenever the
/// design is complete, as a manifest's is).
pub fn verdicts(rows: &[Comparison]) -> Vec<SwitchIncumbentsRow> {
    let mut groups: BTreeMap<(&str, &str), Vec<&Comparison>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((r.repair.as_str(), r.incumbent.as_str()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((repair, incumbent), group)| {
            let dominated = group.iter().any(|c| c.switched.dominates(&c.repaired));
            let mut frontier = Vec::new();
            if !dominated {
                frontier.push(format!("{incumbent}+{repair}"));
            }
            for c in &group {
                let beaten = c.repaired.dominates(&c.switched)
                    || group.iter().any(|o| o.switched.dominates(&c.switched));
                if !beaten {
                    frontier.push(c.switch.clone());
                }
            }
            SwitchIncumbentsRow {
                repair: repair.to_string(),
                incumbent: incumbent.to_string(),
                n_switches: group.len() as u64,
                success_superior: group.iter().all(|c| c.success_pp.low > 0.0),
                pareto_nondominated: !dominated,
                cost_superior: group.iter().all(|c| c.cost_usd.high < 0.0),
                frontier: frontier.join(", "),
            }
        })
        .collect()
}

/// A comparison as a row of `switches`.
fn switches_row(c: &Comparison, draws: u32, seed: u64) -> SwitchesRow {
    SwitchesRow {
        repair: c.repair.clone(),
        baseline: c.baseline.clone(),
        component: c.component.clone(),
        incumbent: c.incumbent.clone(),
        switch: c.switch.clone(),
        n_units: c.n_units as u64,
        n_clusters: c.n_clusters as u64,
        success_repair: c.repaired.success,
        success_switch: c.switched.success,
        success_diff_pp: c.success_pp.estimate,
        success_ci_low_pp: c.success_pp.low,
        success_ci_high_pp: c.success_pp.high,
        cost_repair_usd: c.repaired.cost_usd,
        cost_switch_usd: c.switched.cost_usd,
        cost_diff_usd: c.cost_usd.estimate,
        cost_ci_low_usd: c.cost_usd.low,
        cost_ci_high_usd: c.cost_usd.high,
        tokens_repair: c.repaired.tokens,
        tokens_switch: c.switched.tokens,
        wall_ms_repair: c.repaired.wall_ms,
        wall_ms_switch: c.switched.wall_ms,
        switch_dominates: c.switched.dominates(&c.repaired),
        draws,
        seed,
    }
}

/// Per repair (sorted), how many of its incumbents earn each verdict.
fn summary(rows: &[Comparison], verdicts: &[SwitchIncumbentsRow]) -> Vec<SwitchSummaryRow> {
    let mut summary: BTreeMap<&str, SwitchSummaryRow> = BTreeMap::new();
    for v in verdicts {
        let e = summary.entry(v.repair.as_str()).or_insert_with(|| {
            let (baseline, component) = rows
                .iter()
                .find(|c| c.repair == v.repair)
                .map_or(("", ""), |c| (c.baseline.as_str(), c.component.as_str()));
            SwitchSummaryRow {
                repair: v.repair.clone(),
                baseline: baseline.to_string(),
                component: component.to_string(),
                n_incumbents: 0,
                success_superior: 0,
                pareto_nondominated: 0,
                cost_superior: 0,
            }
        });
        e.n_incumbents += 1;
        e.success_superior += u64::from(v.success_superior);
        e.pareto_nondominated += u64::from(v.pareto_nondominated);
        e.cost_superior += u64::from(v.cost_superior);
    }
    summary.into_values().collect()
}

fn tables(rows: &[Comparison], draws: u32, seed: u64) -> Result<Vec<Output>, AnalysisError> {
    let switches: Vec<SwitchesRow> = rows.iter().map(|c| switches_row(c, draws, seed)).collect();
    let incumbents = verdicts(rows);
    let summary = summary(rows, &incumbents);
    Ok(vec![
        Output::of(&switches)?,
        Output::of(&incumbents)?,
        Output::of(&summary)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::row;

    /// One episode: configuration, arm, family, success, cost, tokens, wall.
    fn ep(config: &str, arm: &str, family: &str, ok: bool, cost: f64, tokens: u64) -> EpisodeRow {
        EpisodeRow {
            arm: arm.into(),
            lane: arm.parse().unwrap_or_else(|e| panic!("{e}")),
            cost_usd: cost,
            total_tokens: tokens,
            wall_ms: tokens,
            ..row(config, "org", family, "i", 128, "low", "raw", ok)
        }
    }

    fn repair() -> Repair {
        Repair {
            arm: "routed".into(),
            baseline: "fixed".into(),
            stressed: Cells {
                v: Some(128),
                ..Cells::default()
            },
        }
    }

    fn side(success: f64, cost_usd: f64, tokens: f64, wall_ms: f64) -> Side {
        Side {
            success,
            cost_usd,
            tokens,
            wall_ms,
        }
    }

    #[test]
    fn dominance_needs_as_good_everywhere_and_better_somewhere() {
        let a = side(0.8, 1.0, 100.0, 10.0);
        assert!(side(0.9, 1.0, 100.0, 10.0).dominates(&a));
        assert!(side(0.8, 0.5, 100.0, 10.0).dominates(&a));
        assert!(!a.dominates(&a), "equal is not dominance");
        assert!(!side(0.9, 2.0, 50.0, 5.0).dominates(&a), "dearer");
        assert!(!side(0.7, 0.1, 1.0, 1.0).dominates(&a), "worse success");
    }

    /// Hand-computed: two families, A repaired succeeds 2 of 2, B (switch) 1 of 2 and
    /// C 2 of 2 at a lower cost. Differences against B: +50 pp, cost −0.5 USD − 0; against
    /// C: 0 pp. Only the repaired A and C are on the frontier; B is beaten by both.
    #[test]
    fn comparisons_pair_conditions_and_the_frontier_is_hand_computed() {
        let episodes = vec![
            ep("A", "routed", "f1", true, 1.0, 100),
            ep("A", "routed", "f2", true, 1.0, 100),
            ep("A", "fixed", "f1", false, 9.0, 900),
            ep("A", "fixed", "f2", false, 9.0, 900),
            ep("B", "fixed", "f1", true, 1.0, 100),
            ep("B", "fixed", "f2", false, 1.0, 100),
            ep("C", "fixed", "f1", true, 0.5, 50),
            ep("C", "fixed", "f2", true, 0.5, 50),
            // Outside the stressed cells: never paired.
            EpisodeRow {
                v: 8,
                variant_id: "f1-8".into(),
                ..ep("B", "fixed", "f1", true, 0.0, 1)
            },
        ];
        let rows = compare(&episodes, &[repair()], 200, 7).unwrap_or_default();
        let a: Vec<&Comparison> = rows.iter().filter(|c| c.incumbent == "A").collect();
        assert_eq!(a.len(), 2, "A against B and C (only A ran the repair)");
        assert_eq!(rows.len(), 2);
        let (b, c) = (a[0], a[1]);
        assert_eq!((b.switch.as_str(), c.switch.as_str()), ("B", "C"));
        assert_eq!((b.n_units, b.n_clusters), (2, 2));
        assert_eq!(b.component, "menu=routed");
        assert_eq!(b.repaired, side(1.0, 1.0, 100.0, 100.0));
        assert_eq!(b.switched, side(0.5, 1.0, 100.0, 100.0));
        assert!((b.success_pp.estimate - 50.0).abs() < 1e-12);
        assert!((c.success_pp.estimate).abs() < 1e-12);
        assert!((c.cost_usd.estimate - 0.5).abs() < 1e-12);
        let v = verdicts(&rows);
        assert_eq!(v.len(), 1);
        let v = &v[0];
        assert!(!v.success_superior, "no better than C");
        assert!(!v.pareto_nondominated, "C is as good and cheaper");
        assert!(!v.cost_superior);
        assert_eq!(v.frontier, "C");
    }

    #[test]
    fn a_repair_better_than_every_switch_is_success_superior_and_on_the_frontier() {
        let mut episodes = Vec::new();
        for f in ["f1", "f2", "f3", "f4"] {
            episodes.push(ep("A", "routed", f, true, 0.1, 10));
            episodes.push(ep("B", "fixed", f, false, 1.0, 100));
            episodes.push(ep("C", "fixed", f, false, 2.0, 100));
        }
        let rows = compare(&episodes, &[repair()], 200, 7).unwrap_or_default();
        let v = verdicts(&rows);
        assert_eq!(v.len(), 1);
        assert!(v[0].success_superior && v[0].pareto_nondominated && v[0].cost_superior);
        assert_eq!(v[0].frontier, "A+routed");
        // Every resample of identical differences gives the same interval.
        assert_eq!(
            (rows[0].success_pp.low, rows[0].success_pp.high),
            (100.0, 100.0)
        );
    }

    #[test]
    fn conditions_pair_within_their_completion_cap() {
        let at = |cap: u32, row: EpisodeRow| EpisodeRow {
            completion_cap: cap,
            ..row
        };
        let mut episodes = Vec::new();
        for cap in [1024, 4096] {
            // At 1,024 the repair wins; at 4,096 the switch does.
            let win = cap == 1024;
            episodes.push(at(cap, ep("A", "routed", "f1", win, 1.0, 1)));
            episodes.push(at(cap, ep("B", "fixed", "f1", !win, 1.0, 1)));
        }
        let rows = compare(&episodes, &[repair()], 50, 1).unwrap_or_default();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].n_units, 2, "one condition per cap, never crossed");
        assert!(rows[0].success_pp.estimate.abs() < 1e-12, "+100 and −100");
    }

    #[test]
    fn a_missing_arm_or_a_bad_level_is_named() {
        let episodes = vec![ep("A", "routed", "f1", true, 1.0, 1)];
        let e = compare(&episodes, &[repair()], 10, 1)
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("no episode of arm `fixed`") && e.contains("routed")),
            "{e:?}"
        );
        let params = Params {
            draws: Some(0),
            seed: None,
            repairs: vec![Repair {
                arm: "x".into(),
                baseline: "x".into(),
                stressed: Cells {
                    w: Some("hgh".into()),
                    ..Cells::default()
                },
            }],
        };
        let paths: Vec<String> = Switches::check(&params)
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(
            paths,
            ["draws", "repairs.0.baseline", "repairs.0.stressed.w"]
        );
    }

    /// The controller against switching (the paper's holdout): the stressed cells are
    /// named by frontier depth; rows at another depth are never paired.
    #[test]
    fn stressed_cells_can_be_named_by_depth() {
        let at = |depth: u32, row: EpisodeRow| EpisodeRow {
            depth: Some(depth),
            ..row
        };
        let mut episodes = Vec::new();
        for depth in [2, 30] {
            // At 30 calls the repair wins; at 2 the switch does.
            let win = depth == 30;
            // The arms' names; both run the fixed menu.
            let named = |arm: &str, row: EpisodeRow| EpisodeRow {
                arm: arm.into(),
                ..row
            };
            episodes.push(at(
                depth,
                named("controller", ep("A", "fixed", "f1", win, 1.0, 1)),
            ));
            episodes.push(at(
                depth,
                named("baseline", ep("B", "fixed", "f1", !win, 1.0, 1)),
            ));
        }
        let controller = Repair {
            arm: "controller".into(),
            baseline: "baseline".into(),
            stressed: Cells {
                depth: Some(30),
                ..Cells::default()
            },
        };
        let rows = compare(&episodes, std::slice::from_ref(&controller), 50, 1).unwrap_or_default();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].n_units, 1, "only the depth-30 condition");
        assert!((rows[0].success_pp.estimate - 100.0).abs() < 1e-12);
        assert_eq!(controller.stressed.label(), "{ depth = 30 }");
        let parsed: Cells = serde_json::from_str(r#"{"depth": 30}"#).unwrap_or_default();
        assert_eq!(parsed.depth, Some(30));
    }
}
