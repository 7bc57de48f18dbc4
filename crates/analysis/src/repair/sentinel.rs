//! Sentinel repeats (paper Section 4.3, last paragraphs): condition groups run several
//! times — pass@1, success on every run, on any run, disagreement between runs — and
//! each repair's stress gain Γ re-estimated over the repeats with a family-cluster
//! interval.
//!
//! Owns: the `sentinel` table's rows ([`SentinelRow`]).
//!
//! # Which episodes
//! Arms are read as [`super::repairs`] reads them (the no-repair arm is the fixed menu
//! with the base prompt; a layer's repair changes its one component). A layer's
//! *sentinel pair* is its no-repair arm and its repair on the layer's stressed cells
//! (V = 128, W high, D linked, R high), on the (configuration, family, cell) where both
//! run. A *condition group* is one (configuration, family, cell, arm, completion cap);
//! its runs are its repeats. Other rows are not read.
//!
//! # Rows
//! Per completion cap: one row per layer with a sentinel pair (`scope` = the layer),
//! then `all`, the distinct groups of every pair. `pass_at_1` is the success rate over
//! runs; `all_runs`, `any_run` and `disagreement` (some runs succeed and some fail) are
//! shares of groups. On a layer's row, `gain_pp` is Γ = repair − no-repair success over
//! every run, with a 95% family-cluster percentile interval
//! ([`super::repair_stats::bootstrap`], stream `["sentinel", cap, layer]`); null on
//! `all`.
//!
//! Never: runs episodes or reads files.

use std::collections::{BTreeMap, BTreeSet};

use super::repair_stats::{self, FamilyTallies, Tally};
use super::repairs::{arm_of, needs_a_repair_design, Params, LAYERS};
use crate::common::stats::{self, check_draws};
use crate::{AnalysisError, Context, Design, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::sentinel::SentinelRow;
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

/// Name in error messages.
const KIND: &str = "sentinel";

/// The `sentinel` analysis kind.
pub struct Sentinel;

impl Typed for Sentinel {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "sentinel/1";
    const OUTPUTS: &'static [&'static str] = &[SentinelRow::TABLE];

    fn check(params: &Params) -> Vec<ParamProblem> {
        check_draws(params.draws).into_iter().collect()
    }

    fn needs(design: &Design) -> Option<String> {
        needs_a_repair_design(design)
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let (draws, seed) = params.resolved();
        let rows = rows(input.episodes, draws, seed)?;
        Ok(vec![Output::of(&rows)?].into())
    }
}

/// A condition group: (configuration, family, cell label, arm).
type Group<'a> = (&'a str, &'a str, String, Option<usize>);

/// Every row, by cap (see the module doc).
pub fn rows(
    episodes: &[EpisodeRow],
    draws: u32,
    seed: u64,
) -> Result<Vec<SentinelRow>, AnalysisError> {
    // cap -> group -> outcomes by repeat.
    let mut by_cap: BTreeMap<u32, BTreeMap<Group<'_>, BTreeMap<u32, bool>>> = BTreeMap::new();
    // Each cell's level on every layer's axis (1: stressed).
    let mut levels: BTreeMap<String, [Option<usize>; LAYERS.len()]> = BTreeMap::new();
    for row in episodes {
        let Some(arm) = arm_of(row) else { continue };
        let cell = format!("({}, {}, {}, {})", row.v, row.w, row.d, row.r)
            + &row.depth.map(|d| format!(" depth {d}")).unwrap_or_default();
        levels
            .entry(cell.clone())
            .or_insert_with(|| LAYERS.map(|l| l.level(row)));
        let key = (row.configuration.as_str(), row.family.as_str(), cell, arm);
        let runs = by_cap
            .entry(row.completion_cap)
            .or_default()
            .entry(key)
            .or_default();
        if runs
            .insert(row.repeat, crate::common::design::success(row))
            .is_some()
        {
            return Err(AnalysisError::Inconsistent {
                analysis: KIND,
                detail: format!(
                    "two episodes of arm {} for family {} × configuration {} at ({}, {}, {}, {}), \
                     repeat {}, cap {}",
                    row.arm,
                    row.family,
                    row.configuration,
                    row.v,
                    row.w,
                    row.d,
                    row.r,
                    row.repeat,
                    row.completion_cap
                ),
            });
        }
    }
    let mut out = Vec::new();
    for (cap, groups) in &by_cap {
        let mut every: BTreeSet<&Group<'_>> = BTreeSet::new();
        let mut all_cells: BTreeSet<&str> = BTreeSet::new();
        for (li, layer) in LAYERS.iter().enumerate() {
            // Stressed groups of the no-repair arm whose repair partner exists.
            let pairs: Vec<(&Group<'_>, &Group<'_>)> = groups
                .keys()
                .filter(|g| g.3.is_none() && levels.get(&g.2).is_some_and(|l| l[li] == Some(1)))
                .filter_map(|g| {
                    let partner = (g.0, g.1, g.2.clone(), Some(li));
                    groups.get_key_value(&partner).map(|(k, _)| (g, k))
                })
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let members: Vec<&Group<'_>> = pairs.iter().flat_map(|(a, b)| [*a, *b]).collect();
            every.extend(members.iter().copied());
            let cells: BTreeSet<&str> = pairs.iter().map(|(g, _)| g.2.as_str()).collect();
            all_cells.extend(cells.iter().copied());
            let mut row = summary(*cap, layer.name, &members, groups, &cells, (draws, seed));
            row.repair = Some(layer.repair.into());
            // Γ over the runs, families as clusters: [no repair, repair][z = 1].
            let mut fams: BTreeMap<&str, FamilyTallies> = BTreeMap::new();
            for (g, r) in &pairs {
                let t = fams
                    .entry(g.1)
                    .or_insert_with(|| vec![[Tally::default(); 2]; 2]);
                for &ok in groups[*g].values() {
                    t[0][1].add(ok);
                }
                for &ok in groups[*r].values() {
                    t[1][1].add(ok);
                }
            }
            let tallies: Vec<FamilyTallies> = fams.into_values().collect();
            let draw_seed = stats::derive_seed(seed, &[KIND, &cap.to_string(), layer.name]);
            let (full, boot) = repair_stats::bootstrap(&tallies, draws, draw_seed);
            let gains: Vec<f64> = boot.iter().map(|e| e.gamma[1]).collect();
            let m = repair_stats::means(&tallies, 0..tallies.len());
            (row.no_repair_vts, row.repair_vts) = (Some(m[0][1]), Some(m[1][1]));
            let gain = repair_stats::summarize(full.gamma[1], &gains);
            let finite = |x: f64| x.is_finite().then_some(x);
            (row.gain_pp, row.gain_pp_ci_low, row.gain_pp_ci_high) =
                (finite(gain.estimate), finite(gain.low), finite(gain.high));
            row.draw_seed = Some(draw_seed);
            out.push(row);
        }
        if !every.is_empty() {
            let members: Vec<&Group<'_>> = every.into_iter().collect();
            out.push(summary(
                *cap,
                "all",
                &members,
                groups,
                &all_cells,
                (draws, seed),
            ));
        }
    }
    if out.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no sentinel pair: no layer's repair runs beside the no-repair arm (fixed \
                     menu, base prompt) on that layer's stressed cells"
                .into(),
        });
    }
    Ok(out)
}

/// The repeat statistics of some groups (a row without a gain), for the table's
/// bootstrap `(draws, seed)`.
fn summary(
    cap: u32,
    scope: &str,
    members: &[&Group<'_>],
    groups: &BTreeMap<Group<'_>, BTreeMap<u32, bool>>,
    cells: &BTreeSet<&str>,
    (draws, seed): (u32, u64),
) -> SentinelRow {
    let (mut runs, mut wins, mut all, mut any) = (0u32, 0u32, 0u32, 0u32);
    let (mut fewest, mut most) = (u32::MAX, 0u32);
    let mut families = BTreeSet::new();
    let mut configurations = BTreeSet::new();
    for g in members {
        let outcomes = &groups[*g];
        let n = outcomes.len() as u32;
        let k = outcomes.values().filter(|&&ok| ok).count() as u32;
        runs += n;
        wins += k;
        all += u32::from(k == n);
        any += u32::from(k > 0);
        fewest = fewest.min(n);
        most = most.max(n);
        families.insert(g.1);
        configurations.insert(g.0);
    }
    let n = members.len() as f64;
    SentinelRow {
        completion_cap: cap,
        scope: scope.into(),
        repair: None,
        cells: cells.iter().copied().collect::<Vec<_>>().join("; "),
        n_groups: members.len() as u32,
        n_runs: runs,
        n_families: families.len() as u32,
        n_configurations: configurations.len() as u32,
        runs_min: fewest.min(most),
        runs_max: most,
        pass_at_1: f64::from(wins) / f64::from(runs.max(1)),
        all_runs: f64::from(all) / n,
        any_run: f64::from(any) / n,
        disagreement: f64::from(any - all) / n,
        no_repair_vts: None,
        repair_vts: None,
        gain_pp: None,
        gain_pp_ci_low: None,
        gain_pp_ci_high: None,
        draws,
        seed,
        draw_seed: None,
    }
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests {
    #![cfg_attr(not(test), allow(dead_code, unused_imports))]
    use super::*;
    use crate::common::design::testing::row;
    use tbb_tables::levels::{Menu, PromptVariant};

    /// One episode: arm (name, lane, repair) at a cell, in a repeat.
    #[allow(clippy::too_many_arguments)]
    fn ep(
        family: &str,
        arm: ArmCols,
        v: u32,
        w: &str,
        d: &str,
        repeat: u32,
        ok: bool,
    ) -> EpisodeRow {
        let mut r = row("a", "O", family, family, v, w, d, ok);
        (r.arm, r.lane, r.repair) = (arm.0.into(), arm.1, arm.2);
        r.repeat = repeat;
        r
    }

    /// An arm's (name, lane, repair).
    type ArmCols = (&'static str, Menu, PromptVariant);
    /// A group's family, arm, V, W and outcomes per run.
    type Runs = (&'static str, ArmCols, u32, &'static str, [bool; 3]);

    const FIXED: ArmCols = ("fixed", Menu::Fixed, PromptVariant::Base);
    const ROUTED: ArmCols = ("routed", Menu::Routed, PromptVariant::Base);
    const WORKFLOW: ArmCols = ("workflow", Menu::Fixed, PromptVariant::Workflow);

    /// Two families, three runs each of: the V pair at (128, low, raw) and the W pair
    /// at (8, high, raw). Outcomes per run, listed per group below.
    pub fn panel() -> Vec<EpisodeRow> {
        let runs: [Runs; 8] = [
            ("f1", FIXED, 128, "low", [false, false, false]),
            ("f1", ROUTED, 128, "low", [true, true, true]),
            ("f2", FIXED, 128, "low", [true, false, true]),
            ("f2", ROUTED, 128, "low", [true, true, true]),
            ("f1", FIXED, 8, "high", [true, true, true]),
            ("f1", WORKFLOW, 8, "high", [true, true, false]),
            ("f2", FIXED, 8, "high", [true, true, true]),
            ("f2", WORKFLOW, 8, "high", [true, true, true]),
        ];
        let mut rows = Vec::new();
        for (family, arm, v, w, outcomes) in runs {
            for (k, ok) in outcomes.into_iter().enumerate() {
                rows.push(ep(family, arm, v, w, "raw", k as u32, ok));
            }
        }
        // A row of another arm is not read.
        rows.push(ep(
            "f1",
            ("other", Menu::Routed, PromptVariant::Workflow),
            8,
            "high",
            "raw",
            0,
            false,
        ));
        rows
    }

    #[test]
    fn repeat_statistics_and_gains_by_hand() {
        let rows = rows(&panel(), 200, 3).unwrap_or_else(|e| panic!("{e}"));
        let scopes: Vec<&str> = rows.iter().map(|r| r.scope.as_str()).collect();
        assert_eq!(scopes, ["V", "W", "all"]);
        let (v, w, all) = (&rows[0], &rows[1], &rows[2]);
        // V: 4 groups, 12 runs, 8 successes (0 + 3 + 2 + 3): pass@1 = 2/3; all runs:
        // the two routed groups (2/4); any: all but f1 fixed (3/4); disagreement: f2
        // fixed (1/4). Γ = routed 6/6 − fixed 2/6 = 66.7 pp.
        assert_eq!(
            (v.n_groups, v.n_runs, v.runs_min, v.runs_max),
            (4, 12, 3, 3)
        );
        assert!((v.pass_at_1 - 8.0 / 12.0).abs() < 1e-12);
        assert_eq!((v.all_runs, v.any_run, v.disagreement), (0.5, 0.75, 0.25));
        let [estimate, low, high] =
            [v.gain_pp, v.gain_pp_ci_low, v.gain_pp_ci_high].map(|x| x.unwrap_or(f64::NAN));
        assert!((estimate - 200.0 / 3.0).abs() < 1e-9);
        // Family draws: both f1 (+100), both f2 (+33.3) or one of each (+66.7): the
        // interval spans exactly those.
        assert!((low - 100.0 / 3.0).abs() < 1e-9 && (high - 100.0).abs() < 1e-9);
        // W: 11 of 12 succeed; f1's workflow group disagrees. Γ = 5/6 − 1 = −16.7 pp.
        assert_eq!((w.all_runs, w.any_run, w.disagreement), (0.75, 1.0, 0.25));
        assert!((w.gain_pp.unwrap_or(f64::NAN) + 100.0 / 6.0).abs() < 1e-9);
        // All: 8 groups, 24 runs, 19 successes; 5 of 8 on every run, 7 of 8 on some.
        assert_eq!((all.n_groups, all.n_runs), (8, 24));
        assert!((all.pass_at_1 - 19.0 / 24.0).abs() < 1e-12);
        assert_eq!(
            (all.all_runs, all.any_run, all.disagreement),
            (0.625, 0.875, 0.25)
        );
        assert_eq!(
            (all.gain_pp, all.no_repair_vts, all.draw_seed),
            (None, None, None)
        );
        assert!(rows.iter().all(|r| r.draws == 200 && r.seed == 3));
    }

    #[test]
    fn no_pair_is_missing_data() {
        let only_fixed: Vec<EpisodeRow> =
            panel().into_iter().filter(|r| r.arm == "fixed").collect();
        assert!(matches!(
            rows(&only_fixed, 10, 1),
            Err(AnalysisError::MissingData { .. })
        ));
    }
}
