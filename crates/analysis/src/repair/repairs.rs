//! The repairs study (paper Section 4.3): each layer's repair against its own pressure
//! and against the other layers' repairs run on the same cells — L, Γ, Σ, Δ with
//! family-cluster intervals, "activates" by an intersection-union test with Holm's
//! correction over the layers, and the smallest equivalence margins of the repairs that
//! do not activate. The formulas are [`super::repair_stats`].
//!
//! Owns: the `repairs` table. The design it reads — the [`LAYERS`] (which axis each
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

use arrow_array::RecordBatch;

use super::repair_stats::{self, Effects, FamilyTallies, Summary, Tally, ALPHA};
use crate::common::stats::{self, check_draws};
use crate::{AnalysisError, Context, Design, Output, ParamProblem, Produced, Typed};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableBuilder;

pub use layers::{arm_in, arm_of, needs_a_repair_design, Axis, Column, Layer, Params};
pub use layers::{HOLDOUT_LAYERS, LAYERS};
pub use layers::{NO_REPAIR_LANE, NO_REPAIR_PROMPT};

/// Name in error messages.
const KIND: &str = "repairs";

/// The `repairs` analysis kind.
pub struct Repairs;

impl Typed for Repairs {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "repairs/1";
    const OUTPUTS: &'static [&'static str] = &["repairs"];

    fn check(params: &Params) -> Vec<ParamProblem> {
        check_draws(params.draws).into_iter().collect()
    }

    fn needs(design: &Design) -> Option<String> {
        needs_a_repair_design(design)
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let (draws, seed) = params.resolved();
        let rows = rows(input.episodes, draws, seed)?;
        Ok(vec![Output {
            table: "repairs",
            batch: table(&rows, draws, seed, "repairs", false)?,
        }]
        .into())
    }
}

/// One row of the `repairs` table (and of the `holdout` table, which adds the
/// population).
#[derive(Debug, Clone, PartialEq)]
pub struct RepairRow {
    /// The configurations the row pools (`holdout` only: `all`, `confirmatory`).
    pub population: Option<String>,
    /// Completion cap (null on the benchmark row).
    pub completion_cap: Option<u32>,
    /// Layer (`V`, `W`, `D`, `R`; `generic` on the benchmark row).
    pub layer: String,
    /// "v 8→128".
    pub pressure: String,
    /// The repair (`routed_menu`, ...).
    pub repair: String,
    /// `repair`, `wrong_layer_control` or `generic_rescue_benchmark`.
    pub role: &'static str,
    /// The repair arm's name in the manifest.
    pub repair_arm: Option<String>,
    /// The no-repair arm's name in the manifest.
    pub no_repair_arm: Option<String>,
    /// The strata (cells without the layer's axis) the row pools.
    pub cells: String,
    /// Cells (strata × 2 levels).
    pub n_cells: u32,
    /// Families (clusters).
    pub n_families: u32,
    /// Configurations.
    pub n_configurations: u32,
    /// Episodes per arm.
    pub n_episodes_per_arm: u32,
    /// Whether the numbers exist.
    pub estimable: bool,
    /// Why not, or what was left out.
    pub note: Option<String>,
    /// μ⁰₀, μ⁰₁, μᵃ₀, μᵃ₁ (shares).
    pub means: Option<[f64; 4]>,
    /// L.
    pub l: Option<Summary>,
    /// Γ.
    pub gamma: Option<Summary>,
    /// Σ.
    pub sigma: Option<Summary>,
    /// Δ (own repair with at least one control).
    pub delta: Option<Summary>,
    /// Intersection-union p.
    pub p_iut: Option<f64>,
    /// Holm over the layers.
    pub p_holm: Option<f64>,
    /// Activates (own repairs).
    pub activates: Option<bool>,
    /// Smallest TOST margin on Γ.
    pub tost_margin: Option<f64>,
    /// Smallest TOST margin on Σ.
    pub tost_margin_sigma: Option<f64>,
    /// Stream seed.
    pub draw_seed: Option<u64>,
}

impl RepairRow {
    fn empty(cap: Option<u32>, layer: &Layer, role: &'static str) -> RepairRow {
        RepairRow {
            population: None,
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
            means: None,
            l: None,
            gamma: None,
            sigma: None,
            delta: None,
            p_iut: None,
            p_holm: None,
            activates: None,
            tost_margin: None,
            tost_margin_sigma: None,
            draw_seed: None,
        }
    }
}

/// A condition of one layer: (configuration, family, stratum, level, repeat).
type Condition<'a> = (&'a str, &'a str, String, usize, u32);

/// Every row of the table, by completion cap and layer (see the module doc).
pub fn rows(
    episodes: &[EpisodeRow],
    draws: u32,
    seed: u64,
) -> Result<Vec<RepairRow>, AnalysisError> {
    let mut out = rows_for(episodes.iter(), &LAYERS, KIND, draws, seed)?;
    out.push(benchmark_row());
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
) -> Result<Vec<RepairRow>, AnalysisError> {
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
            .filter(|&i| out[i].role == "repair" && out[i].estimable)
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
                r.tost_margin = None;
                r.tost_margin_sigma = None;
            }
        }
    }
    Ok(out)
}

/// The paper's generic-rescue check as a row.
fn benchmark_row() -> RepairRow {
    let e = repair_stats::generic_rescue(0.8, 0.4, 0.5);
    let point = |x: f64| Summary {
        estimate: x,
        low: f64::NAN,
        high: f64::NAN,
        p_positive: f64::NAN,
    };
    RepairRow {
        population: None,
        completion_cap: None,
        layer: "generic".into(),
        pressure: "p0 = 0.8, p1 = 0.4".into(),
        repair: "generic_rescue_r0.5".into(),
        role: "generic_rescue_benchmark",
        repair_arm: None,
        no_repair_arm: None,
        cells: String::new(),
        n_cells: 0,
        n_families: 0,
        n_configurations: 0,
        n_episodes_per_arm: 0,
        estimable: true,
        note: Some(
            "a repair that rescues half of all failures whatever their layer, at baseline \
             success 0.8 unstressed and 0.4 stressed"
                .into(),
        ),
        means: Some([0.8, 0.4, 0.9, 0.7]),
        l: Some(point(e.loss)),
        gamma: e.gamma.get(1).copied().map(point),
        sigma: e.sigma.get(1).copied().map(point),
        delta: None,
        p_iut: None,
        p_holm: None,
        activates: None,
        tost_margin: None,
        tost_margin_sigma: None,
        draw_seed: None,
    }
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
) -> Result<Vec<RepairRow>, AnalysisError> {
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
    let mut own_row = RepairRow::empty(Some(cap), layer, "repair");
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
        let mut row = RepairRow::empty(
            Some(cap),
            layer,
            if a == 1 {
                "repair"
            } else {
                "wrong_layer_control"
            },
        );
        row.repair = other.repair.into();
        row.repair_arm = Some(join(names.get(&Some(*lk))));
        row.no_repair_arm = Some(base_name.clone());
        row.cells = cells.clone();
        row.n_cells = 2 * strata.len() as u32;
        row.n_families = tallies.len() as u32;
        row.n_configurations = configurations.len() as u32;
        row.n_episodes_per_arm = conditions.len() as u32;
        row.estimable = true;
        row.means = Some([
            all_means[0][0],
            all_means[0][1],
            all_means[a][0],
            all_means[a][1],
        ]);
        let mut parts = vec![l.p_positive, gamma.p_positive, sigma.p_positive];
        if a == 1 && layer.needs_delta {
            parts.push(delta.map_or(f64::NAN, |d| d.p_positive));
        }
        row.p_iut = Some(repair_stats::intersection_union_p(&parts)).filter(|p| p.is_finite());
        row.l = Some(l);
        row.gamma = Some(gamma);
        row.sigma = Some(sigma);
        row.delta = delta;
        row.tost_margin = repair_stats::tost_margin(full.gamma[a], &gamma_draws, ALPHA);
        row.tost_margin_sigma = repair_stats::tost_margin(full.sigma[a], &sigma_draws, ALPHA);
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

/// The table `name` of `rows`; with `population`, the population column first.
pub fn table(
    rows: &[RepairRow],
    draws: u32,
    seed: u64,
    name: &str,
    population: bool,
) -> Result<RecordBatch, AnalysisError> {
    let s = |f: fn(&RepairRow) -> Option<Summary>, g: fn(&Summary) -> f64| {
        rows.iter()
            .map(move |r| f(r).map(|x| g(&x)).filter(|x| x.is_finite()))
            .collect::<Vec<_>>()
    };
    let mean = |i: usize| rows.iter().map(move |r| r.means.map(|m| m[i]));
    let mut b = TableBuilder::new();
    if population {
        b = b.text_opt("population", rows.iter().map(|r| r.population.as_ref()));
    }
    let mut b = b
        .u32_opt("completion_cap", rows.iter().map(|r| r.completion_cap))
        .text("layer", rows.iter().map(|r| &r.layer))
        .text("pressure", rows.iter().map(|r| &r.pressure))
        .text("repair", rows.iter().map(|r| &r.repair))
        .text("role", rows.iter().map(|r| r.role))
        .text_opt("repair_arm", rows.iter().map(|r| r.repair_arm.as_ref()))
        .text_opt(
            "no_repair_arm",
            rows.iter().map(|r| r.no_repair_arm.as_ref()),
        )
        .text("cells", rows.iter().map(|r| &r.cells))
        .u32("n_cells", rows.iter().map(|r| r.n_cells))
        .u32("n_families", rows.iter().map(|r| r.n_families))
        .u32("n_configurations", rows.iter().map(|r| r.n_configurations))
        .u32(
            "n_episodes_per_arm",
            rows.iter().map(|r| r.n_episodes_per_arm),
        )
        .bool("estimable", rows.iter().map(|r| r.estimable))
        .text_opt("note", rows.iter().map(|r| r.note.as_ref()))
        .f64_opt("no_repair_unstressed_vts", mean(0))
        .f64_opt("no_repair_stressed_vts", mean(1))
        .f64_opt("repair_unstressed_vts", mean(2))
        .f64_opt("repair_stressed_vts", mean(3));
    type Get = fn(&RepairRow) -> Option<Summary>;
    let quantities: [(&str, Get); 4] = [
        ("l_pp", |r| r.l),
        ("gamma_pp", |r| r.gamma),
        ("sigma_pp", |r| r.sigma),
        ("delta_pp", |r| r.delta),
    ];
    for (name, get) in quantities {
        b = b
            .f64_opt(name, s(get, |x| x.estimate))
            .f64_opt(&format!("{name}_ci_low"), s(get, |x| x.low))
            .f64_opt(&format!("{name}_ci_high"), s(get, |x| x.high));
    }
    for (name, get) in &quantities[..3] {
        let p = name.trim_end_matches("_pp");
        b = b.f64_opt(&format!("p_{p}_positive"), s(*get, |x| x.p_positive));
    }
    let floor = 1.0 / f64::from(draws.max(1));
    Ok(b.f64_opt("p_iut", rows.iter().map(|r| r.p_iut))
        .f64_opt("p_holm", rows.iter().map(|r| r.p_holm))
        .f64("p_floor", rows.iter().map(|_| floor))
        .bool_opt("activates", rows.iter().map(|r| r.activates))
        .f64_opt("tost_margin_pp", rows.iter().map(|r| r.tost_margin))
        .f64_opt(
            "tost_margin_sigma_pp",
            rows.iter().map(|r| r.tost_margin_sigma),
        )
        .u32("draws", rows.iter().map(|_| draws))
        .u64("seed", rows.iter().map(|_| seed))
        .u64_opt("draw_seed", rows.iter().map(|r| r.draw_seed))
        .build(name)?)
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
