//! The repairs study (paper Section 4.3): each layer's repair against its own pressure
//! and against the other layers' repairs run on the same cells — L, Γ, Σ, Δ with
//! family-cluster intervals, "activates" by an intersection-union test with Holm's
//! correction over the layers, and the smallest equivalence margins of the repairs that
//! do not activate. The formulas are [`super::repair_stats`].
//!
//! Owns: the `repairs` table's rows ([`RepairsRow`]). The design it reads — the [`LAYERS`] (which axis each
//! layer stresses, its unstressed and stressed levels, the arm component its repair
//! changes) and which arm a row belongs to ([`arm_of`]) — is in `repairs/layers.rs`,
//! shared with [`super::sentinel`].
//!
//! # Which episodes
//! Arms are read from the rows' component columns, not their names. The no-repair arm
//! is the fixed menu with the base prompt (`lane = fixed`, `repair = none`, native
//! delivery, the model acting); a layer's repair is that arm with the layer's component
//! changed (V: `lane = routed`; W: `repair = workflow_prompt`; D:
//! `repair = interface_guide`; R: `lane = router`). Rows of any other arm are not read.
//! Per completion cap and layer, a row's pressure is its cell's level on the layer's
//! axis (other levels are not read) and its *stratum* is the rest of its cell. The
//! layer's cells are the strata where both the no-repair arm and the own repair run at
//! both levels; its conditions are the (configuration, family, stratum, level, repeat)
//! that both run there. Another layer's repair is a wrong-layer control of this layer
//! only when it runs on every one of those conditions (and is read on exactly them);
//! one that does not is named in the own row's `note`.
//!
//! A layer whose repair arm the study lacks, or whose arms never meet at both levels,
//! gets one row with `estimable = false`, its reason in `note` and no numbers: the
//! R layer stays there until the connector-first router (`menu = router`) exists.
//!
//! # Rows
//! Per completion cap, per layer: the own repair (`role = repair`), then each control
//! (`role = wrong_layer_control`) in layer order; then one `generic_rescue_benchmark`
//! row, the paper's check (p₀, p₁, r) = (0.8, 0.4, 0.5) computed by the same formulas.
//! `p_holm` is Holm over the estimable own-repair rows of a cap; `activates` is
//! `p_holm ≤ 0.05` on those rows and null on the others. `tost_margin_pp` (on Γ, the
//! paper's "stress gain") and `tost_margin_sigma_pp` (on Σ) are filled on every
//! estimable row that does not activate. Each layer has one bootstrap stream,
//! `["repairs", cap, layer]`, shared by its rows (Δ needs the controls' draws).
//!
//! Never: runs episodes, reads files, or names an arm by its manifest name.

mod layers;

use std::collections::{BTreeMap, BTreeSet};

use super::repair_stats::{self, Effects, FamilyTallies, Summary, Tally, ALPHA};
use crate::common::stats::{self, check_draws};
use crate::{AnalysisError, Context, Design, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::repairs::{RepairsRow, Role};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

pub use layers::{arm_in, arm_of, needs_a_repair_design, Axis, Component, Layer, Params};
pub use layers::{HOLDOUT_LAYERS, LAYERS};
pub use layers::{NO_REPAIR, NO_REPAIR_LANE, NO_REPAIR_PROMPT};

/// Name in error messages.
const KIND: &str = "repairs";

/// The `repairs` analysis kind.
pub struct Repairs;

impl Typed for Repairs {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "repairs/1";
    const OUTPUTS: &'static [&'static str] = &[RepairsRow::TABLE];

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

/// A row of no numbers: a layer that is not estimable, before its note (and before a
/// layer's numbers are filled in).
fn empty_row(cap: Option<u32>, layer: &Layer, role: Role, draws: u32, seed: u64) -> RepairsRow {
    RepairsRow {
        completion_cap: cap,
        layer: layer.name.into(),
        pressure: layer.pressure(),
        repair: layer.repair.into(),
        role,
        repair_arm: None,
        no_repair_arm: None,
        cells: String::new(),
        n_cells: 0,
        n_families: 0,
        n_configurations: 0,
        n_episodes_per_arm: 0,
        estimable: false,
        note: None,
        no_repair_unstressed_vts: None,
        no_repair_stressed_vts: None,
        repair_unstressed_vts: None,
        repair_stressed_vts: None,
        l_pp: None,
        l_pp_ci_low: None,
        l_pp_ci_high: None,
        gamma_pp: None,
        gamma_pp_ci_low: None,
        gamma_pp_ci_high: None,
        sigma_pp: None,
        sigma_pp_ci_low: None,
        sigma_pp_ci_high: None,
        delta_pp: None,
        delta_pp_ci_low: None,
        delta_pp_ci_high: None,
        p_l_positive: None,
        p_gamma_positive: None,
        p_sigma_positive: None,
        p_iut: None,
        p_holm: None,
        p_floor: 1.0 / f64::from(draws.max(1)),
        activates: None,
        tost_margin_pp: None,
        tost_margin_sigma_pp: None,
        draws,
        seed,
        draw_seed: None,
    }
}

/// A value of the table: a number that is not finite is null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Writes L, Γ, Σ and Δ (estimate, interval, one-sided p) into a row.
fn put_effects(
    row: &mut RepairsRow,
    l: Option<Summary>,
    gamma: Option<Summary>,
    sigma: Option<Summary>,
    delta: Option<Summary>,
) {
    let parts = |s: Option<Summary>| {
        s.map_or([None; 4], |s| {
            [s.estimate, s.low, s.high, s.p_positive].map(finite)
        })
    };
    let [l_pp, l_low, l_high, p_l] = parts(l);
    let [gamma_pp, gamma_low, gamma_high, p_gamma] = parts(gamma);
    let [sigma_pp, sigma_low, sigma_high, p_sigma] = parts(sigma);
    let [delta_pp, delta_low, delta_high, _] = parts(delta);
    (row.l_pp, row.l_pp_ci_low, row.l_pp_ci_high) = (l_pp, l_low, l_high);
    (row.gamma_pp, row.gamma_pp_ci_low, row.gamma_pp_ci_high) = (gamma_pp, gamma_low, gamma_high);
    (row.sigma_pp, row.sigma_pp_ci_low, row.sigma_pp_ci_high) = (sigma_pp, sigma_low, sigma_high);
    (row.delta_pp, row.delta_pp_ci_low, row.delta_pp_ci_high) = (delta_pp, delta_low, delta_high);
    (row.p_l_positive, row.p_gamma_positive, row.p_sigma_positive) = (p_l, p_gamma, p_sigma);
}

/// Writes μ⁰₀, μ⁰₁, μᵃ₀, μᵃ₁ into a row.
fn put_means(row: &mut RepairsRow, means: [f64; 4]) {
    row.no_repair_unstressed_vts = Some(means[0]);
    row.no_repair_stressed_vts = Some(means[1]);
    row.repair_unstressed_vts = Some(means[2]);
    row.repair_stressed_vts = Some(means[3]);
}

/// A condition of one layer: (configuration, family, stratum, level, repeat).
type Condition<'a> = (&'a str, &'a str, String, usize, u32);

/// Every row of the table, by completion cap and layer (see the module doc).
pub fn rows(
    episodes: &[EpisodeRow],
    draws: u32,
    seed: u64,
) -> Result<Vec<RepairsRow>, AnalysisError> {
    let mut out = rows_for(episodes.iter(), &LAYERS, KIND, draws, seed)?;
    out.push(benchmark_row(draws, seed));
    Ok(out)
}

/// The rows of a design with `layers`, by completion cap and layer, for the analysis
/// `kind` (which names its bootstrap streams): the repairs study's without the
/// benchmark row, or the holdout's.
pub fn rows_for<'r>(
    episodes: impl Iterator<Item = &'r EpisodeRow>,
    layers: &[Layer],
    kind: &'static str,
    draws: u32,
    seed: u64,
) -> Result<Vec<RepairsRow>, AnalysisError> {
    let mut by_cap: BTreeMap<u32, Vec<&EpisodeRow>> = BTreeMap::new();
    for row in episodes {
        if arm_in(row, layers).is_some() {
            by_cap.entry(row.completion_cap).or_default().push(row);
        }
    }
    if by_cap.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: kind,
            detail: "no episode of the no-repair arm (fixed menu, base prompt, native \
                     delivery, the model acting) or of a repair arm"
                .into(),
        });
    }
    let mut out = Vec::new();
    for (cap, rows) in &by_cap {
        let first = out.len();
        for li in 0..layers.len() {
            out.extend(layer_rows(*cap, li, layers, kind, rows, draws, seed)?);
        }
        // Holm over the estimable own repairs of this cap.
        let own: Vec<usize> = (first..out.len())
            .filter(|&i| out[i].role == Role::Repair && out[i].estimable)
            .collect();
        let p: Vec<f64> = own
            .iter()
            .map(|&i| out[i].p_iut.unwrap_or(f64::NAN))
            .collect();
        for (&i, h) in own.iter().zip(stats::holm(&p)) {
            let r = &mut out[i];
            r.p_holm = h.is_finite().then_some(h);
            r.activates = Some(h.is_finite() && h <= ALPHA);
        }
        for r in &mut out[first..] {
            if !r.estimable || r.activates == Some(true) {
                r.tost_margin_pp = None;
                r.tost_margin_sigma_pp = None;
            }
        }
    }
    Ok(out)
}

/// The paper's generic-rescue check as a row.
fn benchmark_row(draws: u32, seed: u64) -> RepairsRow {
    let e = repair_stats::generic_rescue(0.8, 0.4, 0.5);
    let point = |x: f64| Summary {
        estimate: x,
        low: f64::NAN,
        high: f64::NAN,
        p_positive: f64::NAN,
    };
    let mut row = RepairsRow {
        layer: "generic".into(),
        pressure: "p0 = 0.8, p1 = 0.4".into(),
        repair: "generic_rescue_r0.5".into(),
        estimable: true,
        note: Some(
            "a repair that rescues half of all failures whatever their layer, at baseline \
             success 0.8 unstressed and 0.4 stressed"
                .into(),
        ),
        // The benchmark has no layer: the one given is only there to be replaced above.
        ..empty_row(None, &LAYERS[0], Role::GenericRescueBenchmark, draws, seed)
    };
    put_means(&mut row, [0.8, 0.4, 0.9, 0.7]);
    put_effects(
        &mut row,
        Some(point(e.loss)),
        e.gamma.get(1).copied().map(point),
        e.sigma.get(1).copied().map(point),
        None,
    );
    row
}

/// The rows of layer `li` at one cap: its own repair, then its controls.
fn layer_rows(
    cap: u32,
    li: usize,
    layers: &[Layer],
    kind: &'static str,
    rows: &[&EpisodeRow],
    draws: u32,
    seed: u64,
) -> Result<Vec<RepairsRow>, AnalysisError> {
    let layer = &layers[li];
    // Per arm (None = no repair), the successes of each condition.
    let mut arms: BTreeMap<Option<usize>, BTreeMap<Condition<'_>, bool>> = BTreeMap::new();
    let mut names: BTreeMap<Option<usize>, BTreeSet<&str>> = BTreeMap::new();
    for row in rows {
        let (Some(arm), Some(z)) = (arm_in(row, layers), layer.level(row)) else {
            continue;
        };
        let key = (
            row.configuration.as_str(),
            row.family.as_str(),
            layer.stratum(row),
            z,
            row.repeat,
        );
        if arms
            .entry(arm)
            .or_default()
            .insert(key, crate::common::design::success(row))
            .is_some()
        {
            return Err(AnalysisError::Inconsistent {
                analysis: kind,
                detail: format!(
                    "two episodes of arm {} for family {} × configuration {} at ({}, {}, {}, {}), \
                     repeat {}, cap {cap}",
                    row.arm, row.family, row.configuration, row.v, row.w, row.d, row.r, row.repeat
                ),
            });
        }
        names.entry(arm).or_default().insert(row.arm.as_str());
    }
    let mut own_row = empty_row(Some(cap), layer, Role::Repair, draws, seed);
    let (Some(base), Some(own)) = (arms.get(&None), arms.get(&Some(li))) else {
        own_row.note = Some(if arms.contains_key(&Some(li)) {
            format!(
                "the no-repair arm (fixed menu, base prompt) does not run at {} = {} \
                 or {}",
                layer.pressure().split(' ').next().unwrap_or(""),
                layer.unstressed,
                layer.stressed
            )
        } else {
            format!(
                "no arm with {} (the {} repair) runs at {} = {} or {}",
                layer.component(),
                layer.name,
                layer.pressure().split(' ').next().unwrap_or(""),
                layer.unstressed,
                layer.stressed
            )
        });
        return Ok(vec![own_row]);
    };
    // The layer's strata: both arms at both levels.
    let levels = |m: &BTreeMap<Condition<'_>, bool>| {
        let mut by: BTreeMap<String, [bool; 2]> = BTreeMap::new();
        for (_, _, s, z, _) in m.keys() {
            by.entry(s.clone()).or_default()[*z] = true;
        }
        by.into_iter()
            .filter(|(_, l)| l[0] && l[1])
            .map(|(s, _)| s)
            .collect::<BTreeSet<String>>()
    };
    let strata: BTreeSet<String> = levels(base).intersection(&levels(own)).cloned().collect();
    let conditions: Vec<&Condition<'_>> = base
        .keys()
        .filter(|k| strata.contains(&k.2) && own.contains_key(*k))
        .collect();
    if conditions.is_empty() {
        own_row.note = Some(format!(
            "the no-repair arm and the {} repair never run on the same cells at \
             both levels of {}",
            layer.name,
            layer.pressure()
        ));
        return Ok(vec![own_row]);
    }
    // Controls: other layers' repairs on every condition.
    let mut arm_order: Vec<usize> = vec![li];
    let mut left_out: Vec<&str> = Vec::new();
    for (lk, other) in layers.iter().enumerate() {
        if lk == li {
            continue;
        }
        match arms.get(&Some(lk)) {
            Some(m) if conditions.iter().all(|c| m.contains_key(*c)) => arm_order.push(lk),
            Some(_) => left_out.push(other.repair),
            None => {}
        }
    }
    // Tallies per family: [no repair, own, controls...][z].
    let mut families: BTreeMap<&str, FamilyTallies> = BTreeMap::new();
    let mut configurations: BTreeSet<&str> = BTreeSet::new();
    for c in &conditions {
        configurations.insert(c.0);
        let t = families
            .entry(c.1)
            .or_insert_with(|| vec![[Tally::default(); 2]; arm_order.len() + 1]);
        t[0][c.3].add(base[*c]);
        for (j, lk) in arm_order.iter().enumerate() {
            let ok = arms.get(&Some(*lk)).and_then(|m| m.get(*c)).copied();
            t[j + 1][c.3].add(ok.unwrap_or(false));
        }
    }
    let tallies: Vec<FamilyTallies> = families.into_values().collect();
    let draw_seed = stats::derive_seed(seed, &[kind, &cap.to_string(), layer.name]);
    let (full, boot) = repair_stats::bootstrap(&tallies, draws, draw_seed);
    let all_means = repair_stats::means(&tallies, 0..tallies.len());
    let cells = format!(
        "{} at {}",
        layer.pressure(),
        strata.iter().cloned().collect::<Vec<_>>().join("; ")
    );
    let base_name = join(names.get(&None));
    let mut out = Vec::new();
    for (j, lk) in arm_order.iter().enumerate() {
        let a = j + 1;
        let pick = |f: &dyn Fn(&Effects) -> f64| -> Vec<f64> { boot.iter().map(f).collect() };
        let l = repair_stats::summarize(full.loss, &pick(&|e| e.loss));
        let gamma_draws = pick(&|e| e.gamma[a]);
        let sigma_draws = pick(&|e| e.sigma[a]);
        let gamma = repair_stats::summarize(full.gamma[a], &gamma_draws);
        let sigma = repair_stats::summarize(full.sigma[a], &sigma_draws);
        let delta = (a == 1)
            .then(|| {
                full.delta.map(|d| {
                    let dd: Vec<f64> = boot.iter().filter_map(|e| e.delta).collect();
                    repair_stats::summarize(d, &dd)
                })
            })
            .flatten();
        let other = &layers[*lk];
        let role = if a == 1 {
            Role::Repair
        } else {
            Role::WrongLayerControl
        };
        let mut row = empty_row(Some(cap), layer, role, draws, seed);
        row.repair = other.repair.into();
        row.repair_arm = Some(join(names.get(&Some(*lk))));
        row.no_repair_arm = Some(base_name.clone());
        row.cells = cells.clone();
        row.n_cells = 2 * strata.len() as u32;
        row.n_families = tallies.len() as u32;
        row.n_configurations = configurations.len() as u32;
        row.n_episodes_per_arm = conditions.len() as u32;
        row.estimable = true;
        put_means(
            &mut row,
            [
                all_means[0][0],
                all_means[0][1],
                all_means[a][0],
                all_means[a][1],
            ],
        );
        let mut parts = vec![l.p_positive, gamma.p_positive, sigma.p_positive];
        if a == 1 && layer.needs_delta {
            parts.push(delta.map_or(f64::NAN, |d| d.p_positive));
        }
        row.p_iut = Some(repair_stats::intersection_union_p(&parts)).filter(|p| p.is_finite());
        put_effects(&mut row, Some(l), Some(gamma), Some(sigma), delta);
        row.tost_margin_pp = repair_stats::tost_margin(full.gamma[a], &gamma_draws, ALPHA);
        row.tost_margin_sigma_pp = repair_stats::tost_margin(full.sigma[a], &sigma_draws, ALPHA);
        row.draw_seed = Some(draw_seed);
        if a == 1 && !left_out.is_empty() {
            row.note = Some(format!(
                "not a control here (not run on every condition of this layer): {}",
                left_out.join(", ")
            ));
        }
        out.push(row);
    }
    Ok(out)
}

fn join(names: Option<&BTreeSet<&str>>) -> String {
    names
        .map(|n| n.iter().copied().collect::<Vec<_>>().join("+"))
        .unwrap_or_default()
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
