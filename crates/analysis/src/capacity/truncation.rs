//! Truncation attribution (paper Section 4.2): how often episodes end at the
//! completion cap, by menu size and configuration; the matched-pair accounting of the
//! menu effect; and the per-configuration menu effect against the truncation rate.
//!
//! Owns: three tables, for every stratum (menu lane × completion cap) of the
//! no-repair capacity rows (see [`crate::common::design`]). Rows with `configuration = "all"`
//! (and `organization = "all"`) pool the panel; the others follow, sorted by
//! configuration.
//!
//! * `truncation` — share truncated by menu size, over all capacity cells at that
//!   size (V = 8 has seven cells, V = 32 one, V = 128 four): `lane`,
//!   `completion_cap`, `configuration`, `organization`, `v`, `n_cells`, `episodes`,
//!   `successes`, `vts_rate`, `truncated`, `truncated_share`,
//!   `truncated_before_first_call`, `truncated_before_first_call_share` (of the
//!   truncated; null when none was).
//! * `truncation_pairs` — the matched V = 8 / V = 128 pairs (same family,
//!   configuration, W, D, repeat; the four endpoint W × D cells): `lane`,
//!   `completion_cap`, `configuration`, `organization`, `pairs`, `lost` (success at 8,
//!   failure at 128), `gained`, `v_effect_pp` (`(gained − lost) / pairs`, the V
//!   contrast over pairs), `lost_pp`, `gained_pp`, `lost_truncated_128` (lost pairs
//!   whose V = 128 episode was truncated), `lost_truncated_pp` (their share of the
//!   pairs: the part of `lost_pp` they carry), `loss_share_truncated`
//!   (`lost_truncated_128 / lost`; null with no loss), `truncated_8`, `truncated_128`
//!   (pairs whose arm was truncated), `truncation_rate_128` (`truncated_128 / pairs`),
//!   `truncated_128_before_first_call`.
//! * `truncation_correlation` — across configurations, the V effect
//!   (`v_effect_pp`) against the truncation rate at V = 128: `lane`,
//!   `completion_cap`, `n_configurations`, `pearson_r`, `spearman_rho` (average ranks
//!   for ties; both null when either variable is constant or there are fewer than two
//!   configurations), `never_truncating` (configurations with no truncated V = 128
//!   pair episode), `never_truncating_v_effect_min_pp`, `..._max_pp` (null when there
//!   is none).
//!
//! With one repeat, a configuration's `v_effect_pp` equals its V main effect in
//! `contrasts_by_configuration`; with several, pairs are counted repeat by repeat.
//!
//! Invariants: counts are exact integers from the rows; every truncated episode is
//! counted whatever its outcome (the pair accounting uses the `truncated` flag of the
//! V = 128 episode); row order does not matter.
//!
//! Never: resamples (no table here has an interval) or reads files.

use std::collections::BTreeMap;

use crate::{Context, Design, NoParams, Produced, Typed};
use tbb_tables::analyses::truncation::{
    TruncationCorrelationRow, TruncationPairsRow, TruncationRow,
};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

use crate::common::design::{self, Stratum, VPair, CELLS};
use crate::common::stats;
use crate::{AnalysisError, Output};

/// Name in error messages.
const KIND: &str = "truncation";

/// The `truncation` analysis kind.
pub struct Truncation;

impl Typed for Truncation {
    type Params = NoParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "truncation/2";
    const OUTPUTS: &'static [&'static str] = &[
        TruncationRow::TABLE,
        TruncationPairsRow::TABLE,
        TruncationCorrelationRow::TABLE,
    ];

    fn needs(design: &Design) -> Option<String> {
        design.needs_v_pairs()
    }

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(input.episodes).map(Produced::from)
    }
}
/// The `configuration` and `organization` of pooled rows.
pub const ALL: &str = "all";

/// Truncation counts of one group of episodes at one menu size (its `truncation` row
/// is [`ShareCounts::row`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareCounts {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Configuration or [`ALL`].
    pub configuration: String,
    /// Organization or [`ALL`].
    pub organization: String,
    /// Menu size.
    pub v: u32,
    /// Capacity cells at that size.
    pub n_cells: u32,
    /// Episodes.
    pub episodes: u32,
    /// Successes.
    pub successes: u32,
    /// Truncated at the cap.
    pub truncated: u32,
    /// Truncated before any executed call.
    pub truncated_before_first_call: u32,
}

/// The matched-pair accounting of one group of pairs (its `truncation_pairs` row is
/// [`PairCounts::row`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PairCounts {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Configuration or [`ALL`].
    pub configuration: String,
    /// Organization or [`ALL`].
    pub organization: String,
    /// Pairs.
    pub pairs: u32,
    /// Success at 8, failure at 128.
    pub lost: u32,
    /// Failure at 8, success at 128.
    pub gained: u32,
    /// Lost pairs whose V = 128 episode was truncated.
    pub lost_truncated_128: u32,
    /// Pairs whose V = 8 episode was truncated.
    pub truncated_8: u32,
    /// Pairs whose V = 128 episode was truncated.
    pub truncated_128: u32,
    /// ... before any executed call.
    pub truncated_128_before_first_call: u32,
}

impl PairCounts {
    fn new(stratum: &Stratum, configuration: &str, organization: &str) -> PairCounts {
        PairCounts {
            stratum: stratum.clone(),
            configuration: configuration.into(),
            organization: organization.into(),
            pairs: 0,
            lost: 0,
            gained: 0,
            lost_truncated_128: 0,
            truncated_8: 0,
            truncated_128: 0,
            truncated_128_before_first_call: 0,
        }
    }

    fn add(&mut self, p: &VPair<'_>) {
        let (y8, y128) = (p.y_small(), p.y_large());
        self.pairs += 1;
        self.lost += u32::from(y8 && !y128);
        self.gained += u32::from(!y8 && y128);
        self.lost_truncated_128 += u32::from(y8 && !y128 && p.large.truncated);
        self.truncated_8 += u32::from(p.small.truncated);
        self.truncated_128 += u32::from(p.large.truncated);
        self.truncated_128_before_first_call += u32::from(p.large.truncated_before_first_call);
    }

    fn pp(&self, count: u32) -> f64 {
        100.0 * f64::from(count) / f64::from(self.pairs)
    }

    /// The V effect over the pairs, in pp: computed from the integer difference so
    /// that configurations with equal counts get bit-equal effects (and so tie in
    /// [`stats::spearman`]'s ranks) — `100·g/n − 100·l/n` differs in the last bits.
    pub fn v_effect_pp(&self) -> f64 {
        let net = i64::from(self.gained) - i64::from(self.lost);
        100.0 * net as f64 / f64::from(self.pairs)
    }

    /// Share of the pairs with a truncated V = 128 episode.
    pub fn truncation_rate_128(&self) -> f64 {
        f64::from(self.truncated_128) / f64::from(self.pairs)
    }

    /// The `truncation_pairs` row.
    pub fn row(&self) -> TruncationPairsRow {
        TruncationPairsRow {
            lane: self.stratum.lane.name(),
            completion_cap: self.stratum.completion_cap,
            configuration: self.configuration.clone(),
            organization: self.organization.clone(),
            pairs: self.pairs,
            lost: self.lost,
            gained: self.gained,
            v_effect_pp: self.v_effect_pp(),
            lost_pp: self.pp(self.lost),
            gained_pp: self.pp(self.gained),
            lost_truncated_128: self.lost_truncated_128,
            lost_truncated_pp: self.pp(self.lost_truncated_128),
            loss_share_truncated: share(self.lost_truncated_128, self.lost),
            truncated_8: self.truncated_8,
            truncated_128: self.truncated_128,
            truncation_rate_128: self.truncation_rate_128(),
            truncated_128_before_first_call: self.truncated_128_before_first_call,
        }
    }
}

impl ShareCounts {
    /// The `truncation` row.
    pub fn row(&self) -> TruncationRow {
        TruncationRow {
            lane: self.stratum.lane.name(),
            completion_cap: self.stratum.completion_cap,
            configuration: self.configuration.clone(),
            organization: self.organization.clone(),
            v: self.v,
            n_cells: self.n_cells,
            episodes: self.episodes,
            successes: self.successes,
            vts_rate: ratio(self.successes, self.episodes),
            truncated: self.truncated,
            truncated_share: ratio(self.truncated, self.episodes),
            truncated_before_first_call: self.truncated_before_first_call,
            truncated_before_first_call_share: share(
                self.truncated_before_first_call,
                self.truncated,
            ),
        }
    }
}

/// Shares by menu size for one stratum: pooled rows first, then per configuration.
pub fn shares(stratum: &Stratum, rows: &[(&EpisodeRow, usize)]) -> Vec<ShareCounts> {
    let mut cells_at: BTreeMap<u32, u32> = BTreeMap::new();
    for c in &CELLS {
        *cells_at.entry(c.v).or_default() += 1;
    }
    // Key: (per configuration?, configuration, v): the pooled rows sort first.
    let mut groups: BTreeMap<(bool, &str, u32), ShareCounts> = BTreeMap::new();
    for &(row, cell) in rows {
        let v = CELLS[cell].v;
        for (pooled, config, org) in [
            (true, ALL, ALL),
            (false, row.configuration.as_str(), row.organization.as_str()),
        ] {
            let g = groups
                .entry((!pooled, config, v))
                .or_insert_with(|| ShareCounts {
                    stratum: stratum.clone(),
                    configuration: config.to_string(),
                    organization: org.to_string(),
                    v,
                    n_cells: cells_at.get(&v).copied().unwrap_or(0),
                    episodes: 0,
                    successes: 0,
                    truncated: 0,
                    truncated_before_first_call: 0,
                });
            g.episodes += 1;
            g.successes += u32::from(design::success(row));
            g.truncated += u32::from(row.truncated);
            g.truncated_before_first_call += u32::from(row.truncated_before_first_call);
        }
    }
    groups.into_values().collect()
}

/// Pair accounting for one stratum: the pooled row first, then per configuration.
pub fn pair_accounting(stratum: &Stratum, pairs: &[VPair<'_>]) -> Vec<PairCounts> {
    let mut pooled = PairCounts::new(stratum, ALL, ALL);
    let mut by_config: BTreeMap<&str, PairCounts> = BTreeMap::new();
    for p in pairs {
        pooled.add(p);
        by_config
            .entry(&p.small.configuration)
            .or_insert_with(|| {
                PairCounts::new(stratum, &p.small.configuration, &p.small.organization)
            })
            .add(p);
    }
    std::iter::once(pooled)
        .chain(by_config.into_values())
        .collect()
}

/// The V effect against the V = 128 truncation rate across the configurations of
/// `rows` (per-configuration rows of [`pair_accounting`]).
pub fn correlation(stratum: &Stratum, rows: &[PairCounts]) -> TruncationCorrelationRow {
    let configs: Vec<&PairCounts> = rows.iter().filter(|r| r.configuration != ALL).collect();
    let x: Vec<f64> = configs.iter().map(|r| r.truncation_rate_128()).collect();
    let y: Vec<f64> = configs.iter().map(|r| r.v_effect_pp()).collect();
    let never: Vec<f64> = configs
        .iter()
        .filter(|r| r.truncated_128 == 0)
        .map(|r| r.v_effect_pp())
        .collect();
    let min = never.iter().copied().reduce(f64::min);
    let max = never.iter().copied().reduce(f64::max);
    TruncationCorrelationRow {
        lane: stratum.lane.name(),
        completion_cap: stratum.completion_cap,
        n_configurations: configs.len() as u32,
        pearson_r: stats::pearson(&x, &y),
        spearman_rho: stats::spearman(&x, &y),
        never_truncating: never.len() as u32,
        never_truncating_v_effect_min_pp: min,
        never_truncating_v_effect_max_pp: max,
    }
}

/// The `truncation`, `truncation_pairs` and `truncation_correlation` tables.
pub fn run(episodes: &[EpisodeRow]) -> Result<Vec<Output>, AnalysisError> {
    let strata = design::capacity_rows(episodes);
    if strata.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no episodes of the capacity cells without a repair".into(),
        });
    }
    let mut share_rows = Vec::new();
    let mut pair_rows = Vec::new();
    let mut corr_rows = Vec::new();
    for (stratum, rows) in &strata {
        design::check_groups(KIND, rows.iter().map(|(r, _)| *r))?;
        share_rows.extend(shares(stratum, rows));
        let pairs = design::v_pairs(KIND, stratum, rows)?;
        let accounting = pair_accounting(stratum, &pairs);
        corr_rows.push(correlation(stratum, &accounting));
        pair_rows.extend(accounting);
    }
    let share_rows: Vec<TruncationRow> = share_rows.iter().map(ShareCounts::row).collect();
    let pair_rows: Vec<TruncationPairsRow> = pair_rows.iter().map(PairCounts::row).collect();
    Ok(vec![
        Output::of(&share_rows)?,
        Output::of(&pair_rows)?,
        Output::of(&corr_rows)?,
    ])
}

/// `num / den`, `None` (a null) when `den` is 0.
fn share(num: u32, den: u32) -> Option<f64> {
    (den > 0).then(|| f64::from(num) / f64::from(den))
}

/// `num / den` for a denominator that is never 0 (a group has rows).
fn ratio(num: u32, den: u32) -> f64 {
    f64::from(num) / f64::from(den)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::unit;
    use arrow_array::RecordBatch;
    use arrow_array::{Array, Float64Array, StringArray, UInt32Array};
    use tbb_tables::levels::{Encoding, Workflow};

    /// Configuration "heavy" truncates (before any call) and fails at V = 128 in
    /// families f1 and f2, and also truncates at (8, low, raw) in f1; configuration
    /// "light" never truncates but fails (128, high, linked) in f1 and gains at
    /// (128, low, raw) in f2, where (8, low, raw) failed.
    fn panel() -> Vec<EpisodeRow> {
        let mut rows = Vec::new();
        for family in ["f1", "f2", "f3"] {
            let heavy_hit = family != "f3";
            let mut heavy = unit("heavy", "H", family, "i", |i| {
                !(heavy_hit && (4..8).contains(&i))
            });
            for r in &mut heavy {
                if heavy_hit && r.v == 128 {
                    r.truncated = true;
                    r.truncated_before_first_call = true;
                }
                if family == "f1" && r.v == 8 && r.w == Workflow::Low && r.d == Encoding::Raw {
                    r.truncated = true;
                    r.vts = false;
                }
            }
            rows.extend(heavy);
            rows.extend(unit("light", "L", family, "i", |i| match family {
                "f1" => i != 7,
                "f2" => i != 0,
                _ => true,
            }));
        }
        rows
    }

    fn run_panel() -> Vec<Output> {
        run(&panel()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn f64s(b: &RecordBatch, name: &str) -> Vec<f64> {
        let c = b
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .unwrap_or_else(|| panic!("{name}"));
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    /// A nullable float column, nulls as `None`.
    fn opts(b: &RecordBatch, name: &str) -> Vec<Option<f64>> {
        b.column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .unwrap_or_else(|| panic!("{name}"))
            .iter()
            .collect()
    }

    fn u32s(b: &RecordBatch, name: &str) -> Vec<u32> {
        let c = b
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .unwrap_or_else(|| panic!("{name}"));
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    fn strs(b: &RecordBatch, name: &str) -> Vec<String> {
        let c = b
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .unwrap_or_else(|| panic!("{name}"));
        (0..c.len()).map(|i| c.value(i).to_string()).collect()
    }

    #[test]
    fn shares_by_menu_size_by_hand() {
        let out = run_panel();
        let t = &out[0].batch;
        // Pooled rows first (v = 8, 32, 128), then heavy, then light.
        assert_eq!(strs(t, "configuration")[..3], ["all", "all", "all"]);
        assert_eq!(u32s(t, "v")[..3], [8, 32, 128]);
        assert_eq!(u32s(t, "n_cells")[..3], [7, 1, 4]);
        // V = 128: 2 configurations × 3 families × 4 cells = 24 episodes, 8 truncated
        // (heavy, f1 and f2), all before the first call.
        assert_eq!(u32s(t, "episodes")[2], 24);
        assert_eq!(u32s(t, "truncated")[2], 8);
        assert_eq!(f64s(t, "truncated_share")[2], 8.0 / 24.0);
        assert_eq!(opts(t, "truncated_before_first_call_share")[2], Some(1.0));
        // V = 8: 42 episodes, one truncated (not before the first call).
        assert_eq!((u32s(t, "episodes")[0], u32s(t, "truncated")[0]), (42, 1));
        assert_eq!(u32s(t, "truncated_before_first_call")[0], 0);
        assert_eq!(opts(t, "truncated_before_first_call_share")[0], Some(0.0));
        // V = 32 nothing truncated: the share of the truncated is undefined, a null
        // (pooled and heavy at V = 32, light at every V).
        assert_eq!(opts(t, "truncated_before_first_call_share")[1], None);
        assert_eq!(
            t.column_by_name("truncated_before_first_call_share")
                .map(arrow_array::Array::null_count),
            Some(5)
        );
        // Heavy at V = 128: 12 episodes, 8 truncated.
        let heavy128 = (0..t.num_rows())
            .find(|&i| strs(t, "configuration")[i] == "heavy" && u32s(t, "v")[i] == 128)
            .unwrap_or_else(|| panic!("row"));
        assert_eq!(u32s(t, "truncated")[heavy128], 8);
        assert_eq!(strs(t, "organization")[heavy128], "H");
    }

    #[test]
    fn matched_pair_accounting_by_hand() {
        let out = run_panel();
        let t = &out[1].batch;
        assert_eq!(strs(t, "configuration"), ["all", "heavy", "light"]);
        // 2 configurations × 3 families × 4 W × D cells.
        assert_eq!(u32s(t, "pairs"), [24, 12, 12]);
        // Heavy: f1 loses 3 (its (low, raw) pair fails at 8 too), f2 loses 4: 7, all
        // with a truncated V = 128 episode. Light: f1 loses (high, linked), f2 gains
        // (low, raw).
        assert_eq!(u32s(t, "lost"), [8, 7, 1]);
        assert_eq!(u32s(t, "gained"), [1, 0, 1]);
        assert_eq!(u32s(t, "lost_truncated_128"), [7, 7, 0]);
        let v = f64s(t, "v_effect_pp");
        assert!((v[0] - (-700.0 / 24.0)).abs() < 1e-12);
        assert!((v[1] - (-700.0 / 12.0)).abs() < 1e-12);
        assert_eq!(v[2], 0.0);
        // The truncated lost pairs carry 7/24 of the 8/24 lost.
        assert!((f64s(t, "lost_truncated_pp")[0] - 700.0 / 24.0).abs() < 1e-12);
        assert_eq!(
            opts(t, "loss_share_truncated"),
            [Some(7.0 / 8.0), Some(1.0), Some(0.0)]
        );
        assert_eq!(u32s(t, "truncated_8"), [1, 1, 0]);
        assert_eq!(u32s(t, "truncated_128"), [8, 8, 0]);
        assert_eq!(
            f64s(t, "truncation_rate_128"),
            [8.0 / 24.0, 8.0 / 12.0, 0.0]
        );
    }

    #[test]
    fn the_correlation_across_configurations() {
        let out = run_panel();
        let t = &out[2].batch;
        // Two configurations, (2/3, −58.3) and (0, 0): r = ρ = −1.
        assert_eq!(u32s(t, "n_configurations"), [2]);
        assert!((f64s(t, "pearson_r")[0] + 1.0).abs() < 1e-12);
        assert!((f64s(t, "spearman_rho")[0] + 1.0).abs() < 1e-12);
        assert_eq!(
            t.column_by_name("pearson_r")
                .map(arrow_array::Array::null_count),
            Some(0)
        );
        assert_eq!(u32s(t, "never_truncating"), [1]);
        assert_eq!(opts(t, "never_truncating_v_effect_min_pp"), [Some(0.0)]);
        assert_eq!(opts(t, "never_truncating_v_effect_max_pp"), [Some(0.0)]);
    }

    /// A per-configuration row of 84 pairs with the given counts.
    fn counted(configuration: &str, gained: u32, lost: u32, truncated_128: u32) -> PairCounts {
        PairCounts {
            gained,
            lost,
            truncated_128,
            pairs: 84,
            ..PairCounts::new(&stratum(), configuration, configuration)
        }
    }

    fn stratum() -> Stratum {
        Stratum {
            lane: tbb_tables::levels::Menu::Fixed,
            completion_cap: 1024,
        }
    }

    #[test]
    fn equal_net_counts_tie_in_the_rank_correlation() {
        // a: 0 gained, 1 lost; b: 2 gained, 3 lost — both −1/84 (100·0/84 − 100·1/84
        // and 100·2/84 − 100·3/84 differ in the last bit); c: −10/84.
        let rows = [
            counted("a", 0, 1, 0),
            counted("b", 2, 3, 10),
            counted("c", 0, 10, 20),
        ];
        assert_eq!(rows[0].v_effect_pp(), rows[1].v_effect_pp());
        // Truncation ranks (1, 2, 3); effect ranks with the tie averaged (2.5, 2.5, 1):
        // dx = (−1, 0, 1), dy = (0.5, 0.5, −1): ρ = −1.5 / √(2 · 1.5) = −√3 / 2.
        // Untied ranks (3, 2, 1) would give −1.
        let rho = correlation(&stratum(), &rows).spearman_rho;
        let expected = -(3.0f64.sqrt()) / 2.0;
        assert!(rho.is_some_and(|r| (r - expected).abs() < 1e-12), "{rho:?}");
    }

    #[test]
    fn undefined_correlations_and_loss_shares_are_null() {
        // Only "heavy": one configuration (no correlation), truncating at V = 128 (no
        // never-truncating configuration); "light" alone loses nothing in f3.
        let heavy: Vec<EpisodeRow> = panel()
            .into_iter()
            .filter(|r| r.configuration == "heavy")
            .collect();
        let light: Vec<EpisodeRow> = panel()
            .into_iter()
            .filter(|r| r.configuration == "light" && r.family == "f3")
            .collect();
        let out = run(&heavy).unwrap_or_else(|e| panic!("{e}"));
        let t = &out[2].batch;
        for name in [
            "pearson_r",
            "spearman_rho",
            "never_truncating_v_effect_min_pp",
            "never_truncating_v_effect_max_pp",
        ] {
            assert_eq!(opts(t, name), [None], "{name}");
        }
        let out = run(&light).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u32s(&out[1].batch, "lost"), [0, 0]);
        assert_eq!(opts(&out[1].batch, "loss_share_truncated"), [None, None]);
    }
}
