//! Routed versus fixed menu lanes (paper Appendix D, last paragraph): the paired
//! difference in success with a cluster-bootstrap interval, and what the fixed lane
//! costs in tokens and schema exposures per episode.
//!
//! Owns: the `lanes` table. Episodes are the no-repair capacity rows
//! ([`crate::common::design::capacity_rows`]); a pair is the same family, configuration, cell
//! (V, W, D), completion cap and repeat in the routed and the fixed lane. Episodes
//! without a partner in the other lane are not paired and are counted in
//! `unpaired_routed` / `unpaired_fixed` (a study may run the fixed lane on some cells
//! only). Caps that lack one of the two lanes are skipped; no cap with both is an
//! error.
//!
//! One row per completion cap, scope and cluster unit. Scope `all` pools every paired
//! cell; `v=8`, `v=32`, `v=128` restrict to one menu size. Columns: `completion_cap`,
//! `scope`, `cluster_unit`, `n_clusters`, `n_units`, `pairs`, `unpaired_routed`,
//! `unpaired_fixed`, `routed_vts`, `fixed_vts`, `estimate_pp` (routed − fixed),
//! `ci_low_pp`, `ci_high_pp`, `p_value` (centered bootstrap, unadjusted), `p_floor`,
//! `draws`, `seed`, `draw_seed`, `routed_tokens_per_episode`,
//! `fixed_tokens_per_episode`, `fixed_extra_tokens_per_episode`,
//! `routed_schema_exposures_per_episode`, `fixed_schema_exposures_per_episode`,
//! `fixed_extra_schema_exposures_per_episode`.
//!
//! The estimate is a mean over family × configuration units of each unit's mean
//! paired difference (equal to the mean over pairs when every unit has the same
//! number of pairs); the bootstrap resamples the analysis's cluster units (see
//! [`crate::common::stats`]); a row's stream hashes `["lanes", cap, scope, cluster_unit]`.
//!
//! # Schema exposures
//! A schema exposure is one tool schema sent in one request. The fixed lane sends the
//! full menu with every request (`requests × v`); the routed lane narrows to the
//! operational tools after the first executed call to one, so it sends fewer. Both
//! come exactly from the episodes table's `schema_exposures` column, the schemas sent
//! summed over every request of the episode (failed sends included).
//!
//! Invariants: row order does not matter; token sums are exact integers.
//!
//! Never: runs episodes or reads files.

use std::collections::BTreeMap;

use crate::common::stats::Bootstrap;
use crate::{Context, Design, ParamProblem, Produced, Typed};
use tbb_tables::analyses::lanes::LanesRow;
use tbb_tables::levels::Menu;
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

use crate::common::design::{self, Unit};
use crate::common::stats::{self, ClusterTotals, Settings};
use crate::{AnalysisError, Output};

/// Name in error messages.
const KIND: &str = "lanes";

/// The `lanes` analysis kind.
pub struct Lanes;

impl Typed for Lanes {
    type Params = Bootstrap;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "lanes/2";
    const OUTPUTS: &'static [&'static str] = &[LanesRow::TABLE];

    fn check(params: &Bootstrap) -> Vec<ParamProblem> {
        params.check()
    }

    fn needs(design: &Design) -> Option<String> {
        design.needs_both_lanes()
    }

    fn run(params: &Bootstrap, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(params, input.episodes).map(Produced::from)
    }
}
/// The lane with the oracle-assisted narrowing.
pub const ROUTED: Menu = Menu::Routed;
/// The lane with the full menu throughout.
pub const FIXED: Menu = Menu::Fixed;

/// A routed and a fixed episode of one condition.
#[derive(Debug, Clone, Copy)]
pub struct LanePair<'a> {
    /// Routed lane.
    pub routed: &'a EpisodeRow,
    /// Fixed lane.
    pub fixed: &'a EpisodeRow,
}

/// The pairs at one cap, sorted by (configuration, family, v, w, d, repeat), and the
/// unpaired episodes of each lane.
pub struct Paired<'a> {
    /// The pairs.
    pub pairs: Vec<LanePair<'a>>,
    /// Routed episodes without a fixed partner.
    pub unpaired_routed: Vec<&'a EpisodeRow>,
    /// Fixed episodes without a routed partner.
    pub unpaired_fixed: Vec<&'a EpisodeRow>,
}

/// Pairs the routed and fixed rows of one cap.
pub fn pair_lanes<'a>(
    routed: &[(&'a EpisodeRow, usize)],
    fixed: &[(&'a EpisodeRow, usize)],
) -> Result<Paired<'a>, AnalysisError> {
    type Key<'k> = (&'k str, &'k str, u32, &'k str, &'k str, u32);
    let mut slots: BTreeMap<Key<'a>, [Option<&'a EpisodeRow>; 2]> = BTreeMap::new();
    for (side, rows) in [(0, routed), (1, fixed)] {
        for &(row, _) in rows {
            let key = (
                row.configuration.as_str(),
                row.family.as_str(),
                row.v,
                // By name, as the pairs were always ordered.
                row.w.name(),
                row.d.name(),
                row.repeat,
            );
            let slot = slots.entry(key).or_default();
            if slot[side].replace(row).is_some() {
                return Err(AnalysisError::Inconsistent {
                    analysis: KIND,
                    detail: format!(
                        "two {} episodes for family {} × configuration {} at ({}, {}, {}), \
                         repeat {}, cap {}",
                        row.lane,
                        row.family,
                        row.configuration,
                        row.v,
                        row.w,
                        row.d,
                        row.repeat,
                        row.completion_cap
                    ),
                });
            }
        }
    }
    let mut out = Paired {
        pairs: Vec::new(),
        unpaired_routed: Vec::new(),
        unpaired_fixed: Vec::new(),
    };
    for slot in slots.into_values() {
        match slot {
            [Some(routed), Some(fixed)] => out.pairs.push(LanePair { routed, fixed }),
            [Some(r), None] => out.unpaired_routed.push(r),
            [None, Some(f)] => out.unpaired_fixed.push(f),
            [None, None] => {}
        }
    }
    Ok(out)
}

/// The rows of one cap's scope.
#[allow(clippy::too_many_arguments)]
fn scope_rows(
    cap: u32,
    scope: &str,
    pairs: &[LanePair<'_>],
    unpaired_routed: usize,
    unpaired_fixed: usize,
    settings: &Settings,
) -> Result<Vec<LanesRow>, AnalysisError> {
    design::check_groups(KIND, pairs.iter().flat_map(|p| [p.routed, p.fixed]))?;
    // Units: (family, configuration) -> (unit, Σ diff, n).
    let mut units: BTreeMap<(&str, &str), (Unit, i64, u32)> = BTreeMap::new();
    for p in pairs {
        let diff = i64::from(design::success(p.routed)) - i64::from(design::success(p.fixed));
        let e = units
            .entry((&p.routed.family, &p.routed.configuration))
            .or_insert_with(|| (Unit::of(p.routed), 0, 0));
        e.1 += diff;
        e.2 += 1;
    }
    let values: Vec<f64> = units
        .values()
        .map(|(_, s, n)| 100.0 * *s as f64 / f64::from(*n))
        .collect();
    let ones = vec![1.0; values.len()];
    let n = pairs.len() as f64;
    let mean = |f: &dyn Fn(&LanePair<'_>) -> u64| pairs.iter().map(f).sum::<u64>() as f64 / n;
    let routed_vts = mean(&|p| u64::from(design::success(p.routed)));
    let fixed_vts = mean(&|p| u64::from(design::success(p.fixed)));
    let routed_tokens = mean(&|p| p.routed.total_tokens);
    let fixed_tokens = mean(&|p| p.fixed.total_tokens);
    let routed_exp = mean(&|p| p.routed.schema_exposures);
    let fixed_exp = mean(&|p| p.fixed.schema_exposures);
    let cap_s = cap.to_string();
    let mut out = Vec::new();
    for &unit in &settings.units {
        let keys: Vec<&str> = units.values().map(|(u, _, _)| u.cluster(unit)).collect();
        let (clusters, names) = stats::cluster_ids(&keys);
        let totals = ClusterTotals::new(&values, &ones, &clusters, names.len());
        let draw_seed = stats::derive_seed(settings.seed, &["lanes", &cap_s, scope, unit.name()]);
        let interval = stats::cluster_bootstrap(&totals, settings.draws, draw_seed);
        out.push(LanesRow {
            completion_cap: cap,
            scope: scope.to_string(),
            cluster_unit: unit,
            n_clusters: names.len() as u32,
            n_units: values.len() as u32,
            pairs: pairs.len() as u32,
            unpaired_routed: unpaired_routed as u32,
            unpaired_fixed: unpaired_fixed as u32,
            routed_vts,
            fixed_vts,
            estimate_pp: interval.estimate,
            ci_low_pp: interval.low,
            ci_high_pp: interval.high,
            p_value: interval.p_value,
            p_floor: interval.p_floor,
            draws: settings.draws,
            seed: settings.seed,
            draw_seed,
            routed_tokens_per_episode: routed_tokens,
            fixed_tokens_per_episode: fixed_tokens,
            fixed_extra_tokens_per_episode: fixed_tokens - routed_tokens,
            routed_schema_exposures_per_episode: routed_exp,
            fixed_schema_exposures_per_episode: fixed_exp,
            fixed_extra_schema_exposures_per_episode: fixed_exp - routed_exp,
        });
    }
    Ok(out)
}

/// The `lanes` table.
pub fn run(analysis: &Bootstrap, episodes: &[EpisodeRow]) -> Result<Vec<Output>, AnalysisError> {
    let settings = Settings::resolve(KIND, analysis)?;
    let strata = design::capacity_rows(episodes);
    let mut by_cap: BTreeMap<u32, [Vec<(&EpisodeRow, usize)>; 2]> = BTreeMap::new();
    for (stratum, rows) in strata {
        let side = match stratum.lane {
            ROUTED => 0,
            FIXED => 1,
            _ => continue,
        };
        by_cap.entry(stratum.completion_cap).or_default()[side] = rows;
    }
    let mut rows = Vec::new();
    for (cap, [routed, fixed]) in &by_cap {
        if routed.is_empty() || fixed.is_empty() {
            continue;
        }
        let paired = pair_lanes(routed, fixed)?;
        let mut sizes: Vec<u32> = paired.pairs.iter().map(|p| p.routed.v).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut scopes: Vec<(String, Option<u32>)> = vec![("all".into(), None)];
        scopes.extend(sizes.iter().map(|&v| (format!("v={v}"), Some(v))));
        for (scope, v) in scopes {
            let keep = |row: &EpisodeRow| v.is_none_or(|v| row.v == v);
            let pairs: Vec<LanePair<'_>> = paired
                .pairs
                .iter()
                .filter(|p| keep(p.routed))
                .copied()
                .collect();
            let unpaired_r = paired.unpaired_routed.iter().filter(|r| keep(r)).count();
            let unpaired_f = paired.unpaired_fixed.iter().filter(|r| keep(r)).count();
            rows.extend(scope_rows(
                *cap, &scope, &pairs, unpaired_r, unpaired_f, &settings,
            )?);
        }
    }
    if rows.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no routed/fixed pairs: the lanes analysis needs both lanes \
                     (`lanes = [\"routed\", \"fixed\"]`) at one completion cap"
                .into(),
        });
    }
    Ok(vec![Output::of(&rows)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::unit;
    use crate::ClusterUnit;
    use arrow_array::{Array, Float64Array, StringArray, UInt32Array};

    fn lanes_panel() -> Vec<EpisodeRow> {
        // Two configurations × two families, all twelve cells in both lanes. The
        // fixed lane fails at V = 128 for configuration "a" in both families; the
        // routed lane never fails. Fixed episodes use 500 more tokens and send the full
        // menu with each of their 4 requests.
        let mut rows = Vec::new();
        for config in ["a", "b"] {
            for family in ["f1", "f2"] {
                rows.extend(unit(config, "O", family, "i", |_| true));
                let mut fixed = unit(config, "O", family, "i", |i| {
                    !(config == "a" && (4..8).contains(&i))
                });
                for r in &mut fixed {
                    r.lane = FIXED;
                    r.total_tokens += 500;
                    r.schema_exposures = u64::from(r.requests) * u64::from(r.v);
                }
                rows.extend(fixed);
            }
        }
        rows
    }

    #[test]
    fn routed_minus_fixed_by_hand() {
        let analysis = Bootstrap {
            draws: Some(1_000),
            seed: Some(5),
            cluster_units: vec![ClusterUnit::Family],
        };
        let out = run(&analysis, &lanes_panel()).unwrap_or_else(|e| panic!("{e}"));
        let t = &out[0].batch;
        let scope = t
            .column_by_name("scope")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .unwrap_or_else(|| panic!("scope"));
        let scopes: Vec<&str> = (0..scope.len()).map(|i| scope.value(i)).collect();
        assert_eq!(scopes, ["all", "v=8", "v=32", "v=128"]);
        let f = |name: &str| -> Vec<f64> {
            t.column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
                .map(|c| c.values().to_vec())
                .unwrap_or_default()
        };
        let pairs = t
            .column_by_name("pairs")
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .map(|c| c.values().to_vec())
            .unwrap_or_default();
        // All cells: 4 units × 12 cells = 48 pairs; "a"'s units differ by 4/12 each:
        // mean over units (33.3 + 33.3 + 0 + 0) / 4 = 16.7 pp.
        assert_eq!(pairs, [48, 28, 4, 16]);
        assert!((f("estimate_pp")[0] - 100.0 / 6.0).abs() < 1e-9);
        // At V = 128: "a" loses all 4 cells: (100 + 100 + 0 + 0) / 4 = 50 pp. Both
        // families hold one unit of each configuration, so every family-cluster draw
        // gives 50: the interval is [50, 50].
        assert_eq!(
            (f("estimate_pp")[3], f("ci_low_pp")[3], f("ci_high_pp")[3]),
            (50.0, 50.0, 50.0)
        );
        assert_eq!(f("estimate_pp")[1], 0.0);
        assert_eq!(f("fixed_extra_tokens_per_episode"), vec![500.0; 4]);
        // Exposures at V = 128 (4 requests; the routed rows narrowed to 6 tools after
        // the first): fixed 4 × 128 = 512; routed 128 + 3 × 6 = 146, so the fixed lane
        // sends 366 more; at V = 8: 32 and 8 + 18 = 26.
        assert_eq!(f("fixed_schema_exposures_per_episode")[3], 512.0);
        assert_eq!(f("routed_schema_exposures_per_episode")[3], 146.0);
        assert_eq!(f("fixed_extra_schema_exposures_per_episode")[3], 366.0);
        assert_eq!(f("routed_schema_exposures_per_episode")[1], 26.0);
        assert_eq!(f("fixed_schema_exposures_per_episode")[1], 32.0);
        assert_eq!(f("fixed_vts")[3], 0.5);
    }

    #[test]
    fn unpaired_episodes_are_counted_and_one_lane_is_missing_data() {
        let mut rows = lanes_panel();
        rows.retain(|r| !(r.lane == FIXED && r.v == 8));
        let analysis = Bootstrap {
            draws: Some(100),
            seed: None,
            cluster_units: vec![ClusterUnit::Family],
        };
        let out = run(&analysis, &rows).unwrap_or_else(|e| panic!("{e}"));
        let unpaired = out[0]
            .batch
            .column_by_name("unpaired_routed")
            .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
            .map(|c| c.values().to_vec())
            .unwrap_or_default();
        // 4 units × 7 V = 8 cells lost their fixed partner; scopes all, v=32, v=128.
        assert_eq!(unpaired, [28, 0, 0]);
        rows.retain(|r| r.lane != FIXED);
        assert!(matches!(
            run(&analysis, &rows),
            Err(AnalysisError::MissingData { .. })
        ));
    }
}
