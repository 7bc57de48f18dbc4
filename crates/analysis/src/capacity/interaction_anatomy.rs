//! The `interaction_anatomy` analysis kind: where the capacity factorial's V × W
//! interaction comes from (the paper's Appendix D).
//!
//! Owns: the `interaction_anatomy` table's rows ([`InteractionAnatomyRow`]).
//!
//! # Definitions
//! Per stratum (lane, completion cap) of the no-repair capacity rows. The interaction
//! averages differences-in-differences, one per family × configuration × encoding of
//! the endpoint cube (raw, linked): these are the analysis's *units* (the paper's 1,512
//! are 21 configurations × 36 families × 2 encodings). A unit has four cells: the
//! baseline `b = (8, low, d)`, the single stresses `v = (128, low, d)` and
//! `w = (8, high, d)`, and the joint stress `j = (128, high, d)`, each its mean success
//! over its repeats (0 or 1 with one repeat). Its value is `j − v − w + b` (pp), and
//! the coefficient, their mean, is the `contrasts` table's `v_x_w`.
//!
//! * `expected_independent_pp`: if each pressure removed the same share of the
//!   successes the other leaves, the joint cell's success rate would be
//!   `p_v · p_w / p_b` (rates over units, per encoding), and the interaction
//!   `(p_v − p_b)(p_w − p_b) / p_b`; the mean over the two encodings (null when some
//!   `p_b` is 0).
//! * `all_stressed_fail_units`: units whose three stressed cells never succeed while
//!   the baseline does: each contributes exactly its baseline success.
//!   `all_stressed_fail_share` is their summed value over every unit's.
//! * `forced_units`: whatever `b` and `j` do, a unit's value lies between `−(v + w)`
//!   and `2 − v − w`, so the single-stress cells alone force its sign when both fail
//!   (never below 0) or both succeed (never above 0). The coefficient over the other
//!   units (`unforced_pp`) is bootstrapped over clusters of each requested unit, as the
//!   contrasts are (an encoding's two units of a family × configuration fall in the
//!   same cluster).
//! * `joint_rescue_units`: units whose joint cell succeeds (mean above 0) while a
//!   single-stress cell fails (mean below 1).
//!
//! The readings of the paper's sentences these follow, and the ones they do not, are in
//! `docs/interaction-anatomy.md`.
//!
//! Seeds (see [`stats`], "Seeds"): a row hashes the parts `["interaction_anatomy",
//! lane, cap, cluster_unit]` (cap in decimal).
//!
//! Never: reads files, runs episodes, or re-estimates the other contrasts.

use crate::capacity::contrasts::capacity_means;
use crate::common::design::CellMeans;
use crate::common::stats::{self, Bootstrap, ClusterTotals, Settings};
use crate::{AnalysisError, Context, Design, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::interaction_anatomy::InteractionAnatomyRow;
use tbb_tables::TableRow;

/// Name in error messages and seeds.
const KIND: &str = "interaction_anatomy";

/// The `interaction_anatomy` analysis kind.
pub struct InteractionAnatomy;

impl Typed for InteractionAnatomy {
    type Params = Bootstrap;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "interaction_anatomy/1";
    const OUTPUTS: &'static [&'static str] = &[InteractionAnatomyRow::TABLE];

    fn check(params: &Bootstrap) -> Vec<ParamProblem> {
        params.check()
    }

    fn needs(design: &Design) -> Option<String> {
        design.needs_every_capacity_cell()
    }

    fn run(params: &Bootstrap, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let settings = Settings::resolve(KIND, params)?;
        let mut rows = Vec::new();
        for means in capacity_means(KIND, input.episodes)? {
            rows.extend(stratum_rows(&means, &settings));
        }
        Ok(vec![Output::of(&rows)?].into())
    }
}

/// The four cells of one encoding (index into the endpoint cube: bit 2 V, bit 1 W,
/// bit 0 D).
#[derive(Debug, Clone, Copy)]
struct Square {
    baseline: usize,
    v: usize,
    w: usize,
    joint: usize,
}

/// The raw and the linked squares.
const SQUARES: [Square; 2] = [square(0), square(1)];

const fn square(d: usize) -> Square {
    Square {
        baseline: d,
        v: 0b100 | d,
        w: 0b010 | d,
        joint: 0b110 | d,
    }
}

/// The four cells of one unit.
#[derive(Debug, Clone, Copy)]
struct Cells {
    b: f64,
    v: f64,
    w: f64,
    j: f64,
}

impl Cells {
    /// The units of one family × configuration, one per encoding.
    fn of(m: &[f64; 12]) -> [Cells; 2] {
        SQUARES.map(|s| Cells {
            b: m[s.baseline],
            v: m[s.v],
            w: m[s.w],
            j: m[s.joint],
        })
    }

    /// The unit's difference-in-differences, pp.
    fn value(self) -> f64 {
        100.0 * (self.j - self.v - self.w + self.b)
    }

    /// Whether the single-stress cells alone force the sign of its value.
    fn sign_forced(self) -> bool {
        (self.v == 0.0 && self.w == 0.0) || (self.v == 1.0 && self.w == 1.0)
    }

    /// Whether every stressed cell fails while the baseline succeeds.
    fn all_stressed_fail(self) -> bool {
        self.v == 0.0 && self.w == 0.0 && self.j == 0.0 && self.b > 0.0
    }

    /// Whether the joint cell succeeds while a single stress fails.
    fn joint_rescue(self) -> bool {
        self.j > 0.0 && (self.v < 1.0 || self.w < 1.0)
    }
}

/// The interaction expected under independence, pp (null when a baseline rate is 0).
fn expected_independent(means: &CellMeans) -> Option<f64> {
    let n = means.means.len() as f64;
    let rate = |cell: usize| means.means.iter().map(|m| m[cell]).sum::<f64>() / n;
    let mut sum = 0.0;
    for s in SQUARES {
        let (b, v, w) = (rate(s.baseline), rate(s.v), rate(s.w));
        if b == 0.0 {
            return None;
        }
        sum += (v - b) * (w - b) / b;
    }
    Some(100.0 * sum / SQUARES.len() as f64)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One row per cluster unit for one stratum.
fn stratum_rows(means: &CellMeans, settings: &Settings) -> Vec<InteractionAnatomyRow> {
    // (family × configuration index, its cells at one encoding).
    let units: Vec<(usize, Cells)> = means
        .means
        .iter()
        .enumerate()
        .flat_map(|(i, m)| Cells::of(m).map(|c| (i, c)))
        .collect();
    let n_units = units.len();
    let total: f64 = units.iter().map(|(_, c)| c.value()).sum();
    let observed_pp = total / n_units.max(1) as f64;
    let failing: Vec<f64> = units
        .iter()
        .filter(|(_, c)| c.all_stressed_fail())
        .map(|(_, c)| c.value())
        .collect();
    let unforced: Vec<&(usize, Cells)> = units.iter().filter(|(_, c)| !c.sign_forced()).collect();
    let rescues = units.iter().filter(|(_, c)| c.joint_rescue()).count();
    let unforced_values: Vec<f64> = unforced.iter().map(|(_, c)| c.value()).collect();
    let weights = vec![1.0; unforced.len()];
    let (lane, cap) = (
        means.stratum.lane.name(),
        means.stratum.completion_cap.to_string(),
    );
    settings
        .units
        .iter()
        .map(|&unit| {
            let keys: Vec<&str> = unforced
                .iter()
                .map(|(i, _)| means.units[*i].cluster(unit))
                .collect();
            let (clusters, names) = stats::cluster_ids(&keys);
            let totals = ClusterTotals::new(&unforced_values, &weights, &clusters, names.len());
            let draw_seed = stats::derive_seed(settings.seed, &[KIND, &lane, &cap, unit.name()]);
            let interval = stats::cluster_bootstrap(&totals, settings.draws, draw_seed);
            InteractionAnatomyRow {
                lane: lane.clone(),
                completion_cap: means.stratum.completion_cap,
                n_units: count(n_units),
                observed_pp,
                expected_independent_pp: expected_independent(means),
                all_stressed_fail_units: count(failing.len()),
                all_stressed_fail_share: (total != 0.0)
                    .then(|| failing.iter().sum::<f64>() / total),
                forced_units: count(n_units - unforced.len()),
                unforced_units: count(unforced.len()),
                cluster_unit: unit,
                n_clusters: count(names.len()),
                unforced_pp: interval.estimate,
                ci_low_pp: interval.low,
                ci_high_pp: interval.high,
                joint_rescue_units: count(rescues),
                joint_rescue_share: rescues as f64 / n_units.max(1) as f64,
                draws: settings.draws,
                seed: settings.seed,
                draw_seed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::unit;
    use crate::common::design::{cell_means, Contrast};
    use tbb_tables::analyses::contrasts::ClusterUnit;
    use tbb_tables::rows::EpisodeRow;

    fn settings() -> Settings {
        Settings {
            draws: 200,
            seed: 7,
            units: vec![ClusterUnit::Family],
        }
    }

    fn means_of(rows: &[EpisodeRow]) -> CellMeans {
        let strata = crate::common::design::capacity_rows(rows);
        let (stratum, rows) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        cell_means("test", stratum, rows).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Endpoint index (bit 2 V, bit 1 W, bit 0 D) → success, from the eight values in
    /// that order; the checkpoints succeed.
    fn cube(cells: [bool; 8]) -> impl Fn(usize) -> bool {
        move |i| if i < 8 { cells[i] } else { true }
    }

    /// Four families, each with an encoding of a shape the definitions name, counted by
    /// hand: eight units.
    ///
    /// Cells in endpoint order: (8,low,raw) (8,low,linked) (8,high,raw) (8,high,linked)
    /// (128,low,raw) (128,low,linked) (128,high,raw) (128,high,linked).
    /// * f1: the baseline succeeds, every stressed cell fails, at both encodings: two
    ///   units of 100 pp, all-fail, forced (both singles fail).
    /// * f2: everything succeeds: two units of 0, forced (both singles succeed).
    /// * f3: raw b 1, v 0, w 1, j 1 → 100, unforced, a joint rescue; linked all 1 → 0,
    ///   forced.
    /// * f4: raw b 1, v 1, w 0, j 0 → 0, unforced; linked b 0, v 1, w 0, j 0 → −100,
    ///   unforced; no rescue (j never succeeds).
    #[test]
    fn the_anatomy_by_hand() {
        let t = true;
        let f = false;
        let mut rows = Vec::new();
        rows.extend(unit("a", "O", "f1", "i", cube([t, t, f, f, f, f, f, f])));
        rows.extend(unit("a", "O", "f2", "i", cube([t; 8])));
        rows.extend(unit("a", "O", "f3", "i", cube([t, t, t, t, f, t, t, t])));
        rows.extend(unit("a", "O", "f4", "i", cube([t, f, f, f, t, t, f, f])));
        let means = means_of(&rows);
        let got = stratum_rows(&means, &settings());
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!(r.n_units, 8);
        // (100 + 100 + 0 + 0 + 100 + 0 + 0 − 100) / 8.
        assert_eq!(r.observed_pp, 25.0);
        // The contrasts' own per-family values agree.
        let contrast: f64 = means.unit_differences(Contrast::VxW).iter().sum::<f64>() / 4.0;
        assert_eq!(r.observed_pp, contrast);
        assert_eq!(r.all_stressed_fail_units, 2);
        // f1's 200 of the summed 200.
        assert_eq!(r.all_stressed_fail_share, Some(1.0));
        assert_eq!((r.forced_units, r.unforced_units), (5, 3));
        // (100 + 0 − 100) / 3 over f3 raw and f4's two.
        assert_eq!(r.unforced_pp, 0.0);
        assert_eq!(r.n_clusters, 2);
        assert!(r.ci_low_pp <= 0.0 && r.ci_high_pp >= 0.0);
        assert_eq!(r.joint_rescue_units, 1);
        assert_eq!(r.joint_rescue_share, 0.125);
        // Rates over the four units. Raw: b 4/4, v 2/4 (f2, f4), w 2/4 (f2, f3):
        // (0.5 − 1)(0.5 − 1)/1 = 0.25. Linked: b 3/4 (f1, f2, f3), v 3/4 (f2, f3, f4),
        // w 2/4 (f2, f3): (0.75 − 0.75)(0.5 − 0.75)/0.75 = 0. Mean 0.125.
        assert_eq!(r.expected_independent_pp, Some(12.5));
    }

    #[test]
    fn a_baseline_that_never_succeeds_has_no_independent_expectation() {
        let rows = unit("a", "O", "f1", "i", cube([false; 8]));
        let r = &stratum_rows(&means_of(&rows), &settings())[0];
        assert_eq!(r.expected_independent_pp, None);
        assert_eq!(r.all_stressed_fail_share, None);
        assert_eq!(r.all_stressed_fail_units, 0);
    }
}
