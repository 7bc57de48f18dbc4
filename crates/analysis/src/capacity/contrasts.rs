//! The eight capacity contrasts (paper Section 4.1, Appendix D) with cluster-bootstrap
//! intervals, Holm-corrected bootstrap p-values, the exact sign-flip test, the
//! organization-equal reweighting, and the per-configuration effects.
//!
//! Owns: three tables, computed for every stratum (menu lane × completion cap) of the
//! no-repair capacity rows (see [`crate::common::design`] for strata, units and weights):
//!
//! * `contrasts` — one row per lane, cap, weighting, cluster unit and contrast:
//!   `analysis` (`capacity`), `lane`, `completion_cap`, `weighting`, `contrast`,
//!   `label`, `cluster_unit`, `n_clusters`, `n_units`, `estimate_pp`, `ci_low_pp`,
//!   `ci_high_pp`, `p_value`, `p_floor`, `p_holm`, `draws`, `seed`, `draw_seed`.
//!   `weighting` is `unit` (each family × configuration unit counts once: the paper's
//!   estimates) or `organization_equal` (each organization counts once and, within it,
//!   each unit once; weights fixed at their full-sample values inside the bootstrap).
//!   Holm corrects the eight p-values of each (lane, cap, weighting, cluster unit).
//!   `p_floor` is `1 / draws`; a p equal to it means "at most this".
//! * `contrasts_sign_flip` — the exact sign-flip test over clusters, for every
//!   requested cluster unit and always for intents, when there are at most
//!   [`stats::MAX_SIGN_FLIP_CLUSTERS`] clusters (families, 36, are too many):
//!   `analysis`, `lane`, `completion_cap`, `weighting`, `contrast`, `cluster_unit`,
//!   `n_clusters`, `n_units`, `estimate_pp`, `assignments` (`2^n`), `p_value`,
//!   `p_floor` (`2 / 2^n`, the smallest attainable), `p_holm` (over the eight).
//!   Kept apart from `contrasts` because an exact test has no interval: the two
//!   tables have no empty cells.
//! * `contrasts_by_configuration` — each configuration's eight contrasts over its
//!   families, with a family-cluster bootstrap: `analysis`, `lane`, `completion_cap`,
//!   `configuration`, `organization`, `contrast`, `label`, `cluster_unit` (`family`),
//!   `n_units`, `estimate_pp`, `ci_low_pp`, `ci_high_pp`, `p_value` (unadjusted:
//!   descriptive, 8 × configurations tests), `p_floor`, `draws`, `seed`, `draw_seed`.
//!
//! Seeds (see [`stats`], "Seeds"): a `contrasts` row hashes the parts
//! `["contrasts", lane, cap, weighting, cluster_unit, contrast]` (cap in decimal), a
//! `contrasts_by_configuration` row `["contrasts_by_configuration", lane, cap,
//! configuration, contrast]`; the result is the row's `draw_seed`.
//!
//! Invariants: every number is a function of the rows and the manifest's draws, seed
//! and units; row order does not matter. A stratum that misses part of the design is
//! an error naming it, never a partial table.
//!
//! Never: reads or writes files, or runs episodes.

use crate::common::stats::{Bootstrap, ClusterUnit};
use crate::{Context, Design, ParamProblem, Produced, Typed};
use tbb_tables::analyses::contrasts::{
    ContrastsByConfigurationRow, ContrastsRow, ContrastsSignFlipRow,
};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

use crate::common::design::{self, CellMeans, Contrast, Stratum};
use crate::common::stats::{self, ClusterTotals, Interval, Settings};
use crate::{AnalysisError, Output};

/// The `analysis` value of every row.
pub const ANALYSIS: &str = "capacity";
/// Name in error messages.
const KIND: &str = "contrasts";

/// The `contrasts` analysis kind.
pub struct Contrasts;

impl Typed for Contrasts {
    type Params = Bootstrap;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "contrasts/1";
    const OUTPUTS: &'static [&'static str] = &[
        ContrastsRow::TABLE,
        ContrastsSignFlipRow::TABLE,
        ContrastsByConfigurationRow::TABLE,
    ];

    fn check(params: &Bootstrap) -> Vec<ParamProblem> {
        params.check()
    }

    fn needs(design: &Design) -> Option<String> {
        design.needs_every_capacity_cell()
    }

    fn run(params: &Bootstrap, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(params, input.episodes).map(Produced::from)
    }
}

/// How units are weighted in a contrast's mean (the level lives with the tables'
/// rows; its weights are computed here).
pub use tbb_tables::analyses::contrasts::Weighting;

/// The weight of each unit of `means` under `weighting`.
pub fn unit_weights(weighting: Weighting, means: &CellMeans) -> Vec<f64> {
    match weighting {
        Weighting::Unit => vec![1.0; means.units.len()],
        Weighting::OrganizationEqual => {
            let orgs: Vec<&str> = means
                .units
                .iter()
                .map(|u| u.organization.as_str())
                .collect();
            stats::equal_group_weights(&orgs)
        }
    }
}

/// One bootstrapped contrast.
#[derive(Debug, Clone, PartialEq)]
pub struct ContrastResult {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Weighting.
    pub weighting: Weighting,
    /// Which contrast.
    pub contrast: Contrast,
    /// Resampled unit.
    pub cluster_unit: ClusterUnit,
    /// Number of clusters.
    pub n_clusters: usize,
    /// Number of family × configuration units.
    pub n_units: usize,
    /// Estimate, interval and p.
    pub interval: Interval,
    /// Holm-adjusted p over the eight contrasts.
    pub p_holm: f64,
    /// Draws.
    pub draws: u32,
    /// The stream seed.
    pub draw_seed: u64,
}

/// Each contrast's unit values, in [`Contrast::ALL`] order.
pub fn unit_differences(means: &CellMeans) -> Vec<Vec<f64>> {
    Contrast::ALL
        .iter()
        .map(|&c| means.unit_differences(c))
        .collect()
}

/// The eight contrasts of one stratum bootstrapped for each cluster unit, with Holm
/// over the eight within each unit. `diffs` from [`unit_differences`].
pub fn bootstrap_contrasts(
    means: &CellMeans,
    diffs: &[Vec<f64>],
    weighting: Weighting,
    units: &[ClusterUnit],
    draws: u32,
    seed: u64,
) -> Vec<ContrastResult> {
    let weights = unit_weights(weighting, means);
    let (lane, cap) = (
        means.stratum.lane.name(),
        means.stratum.completion_cap.to_string(),
    );
    let mut out = Vec::with_capacity(units.len() * Contrast::ALL.len());
    for &unit in units {
        let keys: Vec<&str> = means.units.iter().map(|u| u.cluster(unit)).collect();
        let (clusters, names) = stats::cluster_ids(&keys);
        let mut block: Vec<ContrastResult> = Contrast::ALL
            .iter()
            .zip(diffs)
            .map(|(&contrast, values)| {
                let totals = ClusterTotals::new(values, &weights, &clusters, names.len());
                let draw_seed = stats::derive_seed(
                    seed,
                    &[
                        "contrasts",
                        &lane,
                        &cap,
                        weighting.name(),
                        unit.name(),
                        contrast.name(),
                    ],
                );
                ContrastResult {
                    stratum: means.stratum.clone(),
                    weighting,
                    contrast,
                    cluster_unit: unit,
                    n_clusters: names.len(),
                    n_units: means.units.len(),
                    interval: stats::cluster_bootstrap(&totals, draws, draw_seed),
                    p_holm: f64::NAN,
                    draws,
                    draw_seed,
                }
            })
            .collect();
        let p: Vec<f64> = block.iter().map(|r| r.interval.p_value).collect();
        for (r, h) in block.iter_mut().zip(stats::holm(&p)) {
            r.p_holm = h;
        }
        out.extend(block);
    }
    out
}

/// One exact sign-flip test.
#[derive(Debug, Clone, PartialEq)]
pub struct SignFlipResult {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Weighting.
    pub weighting: Weighting,
    /// Which contrast.
    pub contrast: Contrast,
    /// Whose signs flip.
    pub cluster_unit: ClusterUnit,
    /// Number of clusters `n`.
    pub n_clusters: usize,
    /// Number of units.
    pub n_units: usize,
    /// The contrast's estimate.
    pub estimate: f64,
    /// Exact p.
    pub p_value: f64,
    /// Holm over the eight.
    pub p_holm: f64,
}

/// The exact sign-flip tests of one stratum for each cluster unit with at most
/// [`stats::MAX_SIGN_FLIP_CLUSTERS`] clusters.
pub fn sign_flips(
    means: &CellMeans,
    diffs: &[Vec<f64>],
    weighting: Weighting,
    units: &[ClusterUnit],
) -> Vec<SignFlipResult> {
    let weights = unit_weights(weighting, means);
    let mut out = Vec::new();
    for &unit in units {
        let keys: Vec<&str> = means.units.iter().map(|u| u.cluster(unit)).collect();
        let (clusters, names) = stats::cluster_ids(&keys);
        if names.len() > stats::MAX_SIGN_FLIP_CLUSTERS {
            continue;
        }
        let mut block: Vec<SignFlipResult> = Vec::with_capacity(Contrast::ALL.len());
        for (&contrast, values) in Contrast::ALL.iter().zip(diffs) {
            let totals = ClusterTotals::new(values, &weights, &clusters, names.len());
            let Some(p_value) = stats::sign_flip_p(&totals.sums) else {
                continue;
            };
            block.push(SignFlipResult {
                stratum: means.stratum.clone(),
                weighting,
                contrast,
                cluster_unit: unit,
                n_clusters: names.len(),
                n_units: means.units.len(),
                estimate: totals.estimate(),
                p_value,
                p_holm: f64::NAN,
            });
        }
        let p: Vec<f64> = block.iter().map(|r| r.p_value).collect();
        for (r, h) in block.iter_mut().zip(stats::holm(&p)) {
            r.p_holm = h;
        }
        out.extend(block);
    }
    out
}

/// One configuration's contrast over its families.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigurationResult {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// Which contrast.
    pub contrast: Contrast,
    /// Families.
    pub n_units: usize,
    /// Estimate, family-bootstrap interval, unadjusted p.
    pub interval: Interval,
    /// Draws.
    pub draws: u32,
    /// The stream seed.
    pub draw_seed: u64,
}

/// Every configuration's eight contrasts, resampling its families.
pub fn by_configuration(
    means: &CellMeans,
    diffs: &[Vec<f64>],
    draws: u32,
    seed: u64,
) -> Vec<ConfigurationResult> {
    let (lane, cap) = (
        means.stratum.lane.name(),
        means.stratum.completion_cap.to_string(),
    );
    let mut out = Vec::new();
    for (configuration, idx) in means.by_configuration() {
        let families: Vec<&str> = idx
            .iter()
            .map(|&i| means.units[i].family.as_str())
            .collect();
        let (clusters, names) = stats::cluster_ids(&families);
        let ones = vec![1.0; idx.len()];
        let organization = idx
            .first()
            .map(|&i| means.units[i].organization.clone())
            .unwrap_or_default();
        for (&contrast, values) in Contrast::ALL.iter().zip(diffs) {
            let mine: Vec<f64> = idx.iter().map(|&i| values[i]).collect();
            let totals = ClusterTotals::new(&mine, &ones, &clusters, names.len());
            let draw_seed = stats::derive_seed(
                seed,
                &[
                    "contrasts_by_configuration",
                    &lane,
                    &cap,
                    configuration,
                    contrast.name(),
                ],
            );
            out.push(ConfigurationResult {
                stratum: means.stratum.clone(),
                configuration: configuration.to_string(),
                organization: organization.clone(),
                contrast,
                n_units: idx.len(),
                interval: stats::cluster_bootstrap(&totals, draws, draw_seed),
                draws,
                draw_seed,
            });
        }
    }
    out
}

/// The cell means of every stratum of the capacity rows.
pub fn capacity_means(
    analysis: &'static str,
    episodes: &[EpisodeRow],
) -> Result<Vec<CellMeans>, AnalysisError> {
    let strata = design::capacity_rows(episodes);
    if strata.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis,
            detail: "no episodes of the capacity cells without a repair (repair = \"none\", \
                     R low, no frontier depth)"
                .into(),
        });
    }
    strata
        .iter()
        .map(|(stratum, rows)| design::cell_means(analysis, stratum, rows))
        .collect()
}

/// The `contrasts`, `contrasts_sign_flip` and `contrasts_by_configuration` tables.
pub fn run(analysis: &Bootstrap, episodes: &[EpisodeRow]) -> Result<Vec<Output>, AnalysisError> {
    let settings = Settings::resolve(KIND, analysis)?;
    let mut flip_units = settings.units.clone();
    if !flip_units.contains(&ClusterUnit::Intent) {
        flip_units.push(ClusterUnit::Intent);
    }
    let mut boot = Vec::new();
    let mut flips = Vec::new();
    let mut configs = Vec::new();
    for means in capacity_means(KIND, episodes)? {
        let diffs = unit_differences(&means);
        for weighting in Weighting::ALL {
            boot.extend(bootstrap_contrasts(
                &means,
                &diffs,
                weighting,
                &settings.units,
                settings.draws,
                settings.seed,
            ));
            flips.extend(sign_flips(&means, &diffs, weighting, &flip_units));
        }
        configs.extend(by_configuration(
            &means,
            &diffs,
            settings.draws,
            settings.seed,
        ));
    }
    Ok(vec![
        Output::of(&contrasts_rows(&boot, settings.seed))?,
        Output::of(&sign_flip_rows(&flips))?,
        Output::of(&configuration_rows(&configs, settings.seed))?,
    ])
}

/// The `contrasts` rows of bootstrapped contrasts.
fn contrasts_rows(results: &[ContrastResult], seed: u64) -> Vec<ContrastsRow> {
    results
        .iter()
        .map(|r| ContrastsRow {
            analysis: ANALYSIS.into(),
            lane: r.stratum.lane.name(),
            completion_cap: r.stratum.completion_cap,
            weighting: r.weighting,
            contrast: r.contrast.name().into(),
            label: r.contrast.label().into(),
            cluster_unit: r.cluster_unit,
            n_clusters: r.n_clusters as u32,
            n_units: r.n_units as u32,
            estimate_pp: r.interval.estimate,
            ci_low_pp: r.interval.low,
            ci_high_pp: r.interval.high,
            p_value: r.interval.p_value,
            p_floor: r.interval.p_floor,
            p_holm: r.p_holm,
            draws: r.draws,
            seed,
            draw_seed: r.draw_seed,
        })
        .collect()
}

/// The `contrasts_sign_flip` rows of exact tests.
fn sign_flip_rows(results: &[SignFlipResult]) -> Vec<ContrastsSignFlipRow> {
    results
        .iter()
        .map(|r| ContrastsSignFlipRow {
            analysis: ANALYSIS.into(),
            lane: r.stratum.lane.name(),
            completion_cap: r.stratum.completion_cap,
            weighting: r.weighting,
            contrast: r.contrast.name().into(),
            cluster_unit: r.cluster_unit,
            n_clusters: r.n_clusters as u32,
            n_units: r.n_units as u32,
            estimate_pp: r.estimate,
            assignments: 1u64 << r.n_clusters,
            p_value: r.p_value,
            p_floor: stats::sign_flip_floor(r.n_clusters),
            p_holm: r.p_holm,
        })
        .collect()
}

/// The `contrasts_by_configuration` rows of per-configuration contrasts.
fn configuration_rows(
    results: &[ConfigurationResult],
    seed: u64,
) -> Vec<ContrastsByConfigurationRow> {
    results
        .iter()
        .map(|r| ContrastsByConfigurationRow {
            analysis: ANALYSIS.into(),
            lane: r.stratum.lane.name(),
            completion_cap: r.stratum.completion_cap,
            configuration: r.configuration.clone(),
            organization: r.organization.clone(),
            contrast: r.contrast.name().into(),
            label: r.contrast.label().into(),
            cluster_unit: ClusterUnit::Family,
            n_units: r.n_units as u32,
            estimate_pp: r.interval.estimate,
            ci_low_pp: r.interval.low,
            ci_high_pp: r.interval.high,
            p_value: r.interval.p_value,
            p_floor: r.interval.p_floor,
            draws: r.draws,
            seed,
            draw_seed: r.draw_seed,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::unit;
    use arrow_array::{Array, Float64Array, StringArray, UInt32Array};

    /// Two organizations: org A with configuration a1, org B with b1 and b2; four
    /// families in two intents. Only the V = 128 cells vary: configuration a1 fails
    /// every V = 128 cell; b1 fails them in family f1 only; b2 never fails.
    fn panel() -> Vec<EpisodeRow> {
        let mut rows = Vec::new();
        for (config, org) in [("a1", "A"), ("b1", "B"), ("b2", "B")] {
            for (family, intent) in [("f1", "i1"), ("f2", "i1"), ("f3", "i2"), ("f4", "i2")] {
                let fail_large = match config {
                    "a1" => true,
                    "b1" => family == "f1",
                    _ => false,
                };
                rows.extend(unit(config, org, family, intent, |i| {
                    !(fail_large && (4..8).contains(&i))
                }));
            }
        }
        rows
    }

    fn analysis(units: Vec<ClusterUnit>, draws: u32) -> Bootstrap {
        Bootstrap {
            draws: Some(draws),
            seed: Some(11),
            cluster_units: units,
        }
    }

    fn column<'a, T: 'static>(batch: &'a arrow_array::RecordBatch, name: &str) -> &'a T {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .unwrap_or_else(|| panic!("column {name}"))
    }

    #[test]
    fn the_v_contrast_of_a_panel_by_hand() {
        let rows = panel();
        let out = run(&analysis(vec![ClusterUnit::Family], 2_000), &rows)
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = out.iter().map(|o| o.table).collect();
        assert_eq!(
            names,
            vec![
                "contrasts",
                "contrasts_sign_flip",
                "contrasts_by_configuration"
            ]
        );
        let t = &out[0].batch;
        // 1 stratum × 2 weightings × 1 unit × 8 contrasts.
        assert_eq!(t.num_rows(), 16);
        let contrast = column::<StringArray>(t, "contrast");
        let weighting = column::<StringArray>(t, "weighting");
        let estimate = column::<Float64Array>(t, "estimate_pp");
        let find = |c: &str, w: &str| {
            (0..t.num_rows())
                .find(|&i| contrast.value(i) == c && weighting.value(i) == w)
                .map(|i| estimate.value(i))
                .unwrap_or(f64::NAN)
        };
        // Units: a1 × 4 families at −100 pp, b1 × f1 at −100, the rest 0:
        // mean over 12 units = −500 / 12.
        assert!((find("v", "unit") - (-500.0 / 12.0)).abs() < 1e-9);
        // Organization-equal: A's mean −100, B's mean −100 / 8: (−100 − 12.5) / 2.
        assert!((find("v", "organization_equal") - (-56.25)).abs() < 1e-9);
        // Nothing else varies.
        assert_eq!(find("w", "unit"), 0.0);
        assert_eq!(find("d_compact", "unit"), 0.0);
        // V × W is zero too: the V = 128 failures do not depend on W.
        assert_eq!(find("v_x_w", "unit"), 0.0);
        // Holm never lowers a p; the p floor is 1/draws.
        let p = column::<Float64Array>(t, "p_value");
        let holm = column::<Float64Array>(t, "p_holm");
        let floor = column::<Float64Array>(t, "p_floor");
        for i in 0..t.num_rows() {
            assert!(holm.value(i) >= p.value(i));
            assert!(p.value(i) >= floor.value(i));
            assert_eq!(floor.value(i), 1.0 / 2_000.0);
        }
    }

    #[test]
    fn the_sign_flip_over_intents_by_hand() {
        let out = run(&analysis(vec![ClusterUnit::Family], 200), &panel())
            .unwrap_or_else(|e| panic!("{e}"));
        let t = &out[1].batch;
        let contrast = column::<StringArray>(t, "contrast");
        let unit = column::<StringArray>(t, "cluster_unit");
        let weighting = column::<StringArray>(t, "weighting");
        let p = column::<Float64Array>(t, "p_value");
        let n = column::<UInt32Array>(t, "n_clusters");
        // Families (4 ≤ 22) and intents are tested.
        let row = (0..t.num_rows())
            .find(|&i| {
                contrast.value(i) == "v"
                    && unit.value(i) == "intent"
                    && weighting.value(i) == "unit"
            })
            .unwrap_or_else(|| panic!("no intent row"));
        // Intent totals: i1 = a1 (f1, f2) + b1 f1 = −300; i2 = a1 (f3, f4) = −200.
        // Signed sums ±500, ±100: |·| ≥ 500 in 2 of 4 assignments.
        assert_eq!((n.value(row), p.value(row)), (2, 0.5));
        // W has all-zero totals: every assignment ties, p = 1.
        let w = (0..t.num_rows())
            .find(|&i| {
                contrast.value(i) == "w"
                    && unit.value(i) == "intent"
                    && weighting.value(i) == "unit"
            })
            .unwrap_or_else(|| panic!("no w row"));
        assert_eq!(p.value(w), 1.0);
    }

    #[test]
    fn per_configuration_effects_by_hand() {
        let out = run(&analysis(vec![], 500), &panel()).unwrap_or_else(|e| panic!("{e}"));
        let t = &out[2].batch;
        let config = column::<StringArray>(t, "configuration");
        let contrast = column::<StringArray>(t, "contrast");
        let estimate = column::<Float64Array>(t, "estimate_pp");
        let lo = column::<Float64Array>(t, "ci_low_pp");
        let hi = column::<Float64Array>(t, "ci_high_pp");
        let v: Vec<(&str, f64, f64, f64)> = (0..t.num_rows())
            .filter(|&i| contrast.value(i) == "v")
            .map(|i| (config.value(i), estimate.value(i), lo.value(i), hi.value(i)))
            .collect();
        assert_eq!(v[0], ("a1", -100.0, -100.0, -100.0));
        assert_eq!(v[2], ("b2", 0.0, 0.0, 0.0));
        // b1: one of four families at −100: −25, interval within [−100, 0].
        assert_eq!((v[1].0, v[1].1), ("b1", -25.0));
        assert!(v[1].2 >= -100.0 && v[1].3 <= 0.0 && v[1].2 <= -25.0 && v[1].3 >= -25.0);
    }

    #[test]
    fn results_do_not_depend_on_row_order_and_follow_the_seed() {
        let rows = panel();
        let mut reversed = rows.clone();
        reversed.reverse();
        let a = run(&analysis(vec![], 300), &rows).unwrap_or_else(|e| panic!("{e}"));
        let b = run(&analysis(vec![], 300), &reversed).unwrap_or_else(|e| panic!("{e}"));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.batch, y.batch, "{}", x.table);
        }
        let mut other = analysis(vec![], 300);
        other.seed = Some(12);
        let c = run(&other, &rows).unwrap_or_else(|e| panic!("{e}"));
        // Another seed: other streams, the same estimates.
        let seeds = |o: &Output| column::<arrow_array::UInt64Array>(&o.batch, "draw_seed").clone();
        assert_ne!(seeds(&a[0]), seeds(&c[0]));
        let est = |o: &Output| column::<Float64Array>(&o.batch, "estimate_pp").clone();
        assert_eq!(est(&a[0]), est(&c[0]));
    }

    #[test]
    fn default_units_give_a_row_per_unit_and_distinct_streams() {
        let out = run(&analysis(vec![], 100), &panel()).unwrap_or_else(|e| panic!("{e}"));
        let t = &out[0].batch;
        // 2 weightings × 3 units × 8 contrasts.
        assert_eq!(t.num_rows(), 48);
        let seeds = column::<arrow_array::UInt64Array>(t, "draw_seed");
        let mut s: Vec<u64> = (0..seeds.len()).map(|i| seeds.value(i)).collect();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 48);
    }

    #[test]
    fn no_capacity_rows_is_missing_data() {
        let mut rows = panel();
        for r in &mut rows {
            r.repair = tbb_tables::levels::PromptVariant::Workflow;
        }
        assert!(matches!(
            run(&analysis(vec![], 10), &rows),
            Err(AnalysisError::MissingData { .. })
        ));
    }
}
