//! Truncation strata of the menu effect (paper Section 4.2 and Appendix D, "The
//! truncation-resolution bound"): the menu effect within the pairs that neither menu
//! truncated, and worst-case bounds on the total menu effect when every truncated
//! failure could have gone either way.
//!
//! Owns: the `strata` table, one row per stratum (menu lane × completion cap) pooled
//! (`configuration = "all"`) and then per configuration, over the matched V = 8 /
//! V = 128 pairs of [`crate::common::design::v_pairs`]:
//! `lane`, `completion_cap`, `configuration`, `organization`, `pairs`,
//! `total_effect_pp` (observed mean of `y128 − y8`), `pairs_neither_truncated`,
//! `neither_truncated_effect_pp` (the mean within them; null when there is none),
//! `truncated_failures_8`, `truncated_failures_128` (pairs whose arm is a truncated
//! failure), `truncated_failures_both`, `bound_independent_low_pp`,
//! `bound_independent_high_pp`, `bound_alike_low_pp`, `bound_alike_high_pp`.
//!
//! # The bounds
//! Every non-truncated episode keeps its outcome; each truncated failure (an episode
//! truncated at the cap that failed) may resolve either way. With the arms resolving
//! independently, the lowest total effect has every truncated failure at V = 8
//! succeed and every one at V = 128 fail, the highest the reverse:
//! `low = observed − T8 / N`, `high = observed + T128 / N` (in pp, `N` pairs). With
//! both arms resolving alike (the paper's arm-level assumption: every truncated
//! failure, at V = 8 and at V = 128, resolves the same way), the two ends are all of
//! them failing (the observed effect) and all of them succeeding
//! (`observed + (T128 − T8) / N`), ordered. The paper's counts (−12.3 pp, 411 and 48,
//! 3,024 pairs) give its [−12.3, −0.3]. The alike interval lies within the
//! independent one, and both contain the observed effect.
//! The bounds say nothing about what a larger cap would do (the sweep measures that).
//!
//! Invariants: exact counts from the rows; row order does not matter.
//!
//! Never: resamples, or reads files.

use std::collections::BTreeMap;

use crate::{Context, Design, NoParams, Produced, Typed};
use tbb_tables::analyses::strata::StrataRow;
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

use super::truncation::ALL;
use crate::common::design::{self, Stratum, VPair};
use crate::{AnalysisError, Output};

/// Name in error messages.
const KIND: &str = "strata";

/// The `strata` analysis kind.
pub struct Strata;

impl Typed for Strata {
    type Params = NoParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "strata/2";
    const OUTPUTS: &'static [&'static str] = &[StrataRow::TABLE];

    fn needs(design: &Design) -> Option<String> {
        design.needs_v_pairs()
    }

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(input.episodes).map(Produced::from)
    }
}

/// The pair counts and sums of one row of the `strata` table (the row is
/// [`PairSums::row`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PairSums {
    /// Lane and cap.
    pub stratum: Stratum,
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Pairs `N`.
    pub pairs: u32,
    /// Observed `Σ (y128 − y8)`.
    pub total: i64,
    /// Pairs with neither arm truncated.
    pub neither: u32,
    /// `Σ (y128 − y8)` within them.
    pub neither_total: i64,
    /// Pairs whose V = 8 arm is a truncated failure.
    pub free_8: u32,
    /// Pairs whose V = 128 arm is a truncated failure.
    pub free_128: u32,
    /// Pairs with both.
    pub free_both: u32,
    /// `Σ` of the lowest resolution, arms independent.
    pub independent_low: i64,
    /// `Σ` of the highest resolution, arms independent.
    pub independent_high: i64,
}

impl PairSums {
    /// The row of `pairs`.
    pub fn of(
        stratum: &Stratum,
        configuration: &str,
        organization: &str,
        pairs: &[VPair<'_>],
    ) -> PairSums {
        let mut r = PairSums {
            stratum: stratum.clone(),
            configuration: configuration.into(),
            organization: organization.into(),
            pairs: 0,
            total: 0,
            neither: 0,
            neither_total: 0,
            free_8: 0,
            free_128: 0,
            free_both: 0,
            independent_low: 0,
            independent_high: 0,
        };
        for p in pairs {
            r.add(p);
        }
        r
    }

    fn add(&mut self, p: &VPair<'_>) {
        let y8 = i64::from(p.y_small());
        let y128 = i64::from(p.y_large());
        let (f8, f128) = (p.free_small(), p.free_large());
        let diff = y128 - y8;
        self.pairs += 1;
        self.total += diff;
        if !p.small.truncated && !p.large.truncated {
            self.neither += 1;
            self.neither_total += diff;
        }
        self.free_8 += u32::from(f8);
        self.free_128 += u32::from(f128);
        self.free_both += u32::from(f8 && f128);
        // Lowest: free at 8 succeeds, free at 128 fails; highest: the reverse.
        let low = y128 - if f8 { 1 } else { y8 };
        let high = if f128 { 1 } else { y128 } - y8;
        self.independent_low += low;
        self.independent_high += high;
    }

    /// `sum / n` in pp, `None` when `n` is 0.
    fn pp_opt(sum: i64, n: u32) -> Option<f64> {
        (n > 0).then(|| 100.0 * sum as f64 / f64::from(n))
    }

    /// `sum / pairs` in pp (a row has at least one pair).
    fn pp(&self, sum: i64, n: u32) -> f64 {
        100.0 * sum as f64 / f64::from(n)
    }

    /// Observed total effect, pp.
    pub fn total_effect_pp(&self) -> f64 {
        self.pp(self.total, self.pairs)
    }

    /// Effect within the pairs neither menu truncated, pp (`None` when there is none).
    pub fn neither_truncated_effect_pp(&self) -> Option<f64> {
        Self::pp_opt(self.neither_total, self.neither)
    }

    /// `[low, high]` with the arms resolving independently, pp.
    pub fn bound_independent_pp(&self) -> (f64, f64) {
        (
            self.pp(self.independent_low, self.pairs),
            self.pp(self.independent_high, self.pairs),
        )
    }

    /// `[low, high]` with every truncated failure of both arms resolving alike, pp:
    /// the observed effect (all fail) and `observed + (T128 − T8) / N` (all succeed),
    /// ordered.
    pub fn bound_alike_pp(&self) -> (f64, f64) {
        let all_succeed = self.total + i64::from(self.free_128) - i64::from(self.free_8);
        let (a, b) = (
            self.pp(self.total, self.pairs),
            self.pp(all_succeed, self.pairs),
        );
        (a.min(b), a.max(b))
    }

    /// The `strata` row.
    pub fn row(&self) -> StrataRow {
        let (independent_low, independent_high) = self.bound_independent_pp();
        let (alike_low, alike_high) = self.bound_alike_pp();
        StrataRow {
            lane: self.stratum.lane.name(),
            completion_cap: self.stratum.completion_cap,
            configuration: self.configuration.clone(),
            organization: self.organization.clone(),
            pairs: self.pairs,
            total_effect_pp: self.total_effect_pp(),
            pairs_neither_truncated: self.neither,
            neither_truncated_effect_pp: self.neither_truncated_effect_pp(),
            truncated_failures_8: self.free_8,
            truncated_failures_128: self.free_128,
            truncated_failures_both: self.free_both,
            bound_independent_low_pp: independent_low,
            bound_independent_high_pp: independent_high,
            bound_alike_low_pp: alike_low,
            bound_alike_high_pp: alike_high,
        }
    }
}

/// Pooled and per-configuration rows of one stratum's pairs.
pub fn strata_rows(stratum: &Stratum, pairs: &[VPair<'_>]) -> Vec<PairSums> {
    let mut by_config: BTreeMap<(&str, &str), Vec<VPair<'_>>> = BTreeMap::new();
    for p in pairs {
        by_config
            .entry((&p.small.configuration, &p.small.organization))
            .or_default()
            .push(*p);
    }
    std::iter::once(PairSums::of(stratum, ALL, ALL, pairs))
        .chain(
            by_config
                .iter()
                .map(|((c, o), ps)| PairSums::of(stratum, c, o, ps)),
        )
        .collect()
}

/// The `strata` table.
pub fn run(episodes: &[EpisodeRow]) -> Result<Vec<Output>, AnalysisError> {
    let strata = design::capacity_rows(episodes);
    if strata.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no episodes of the capacity cells without a repair".into(),
        });
    }
    let mut rows = Vec::new();
    for (stratum, cell_rows) in &strata {
        let pairs = design::v_pairs(KIND, stratum, cell_rows)?;
        rows.extend(strata_rows(stratum, &pairs));
    }
    let rows: Vec<StrataRow> = rows.iter().map(PairSums::row).collect();
    Ok(vec![Output::of(&rows)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::{row, unit};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// An episode with outcome `y` and truncation flag `t`.
    fn ep(v: u32, y: bool, t: bool) -> EpisodeRow {
        let mut r = row("c", "o", "f", "i", v, "low", "raw", y);
        r.truncated = t;
        r
    }

    #[test]
    fn the_bounds_on_a_constructed_table_by_hand() {
        // Ten pairs (y8, truncated8, y128, truncated128):
        //   3 × (1, -, 1, -)   diff 0
        //   1 × (1, -, 0, -)   diff −1, not truncated
        //   3 × (1, -, 0, T)   diff −1, a truncated failure at 128
        //   1 × (0, T, 0, T)   diff 0, truncated failures in both arms
        //   1 × (0, T, 1, -)   diff +1, a truncated failure at 8
        //   1 × (0, -, 1, -)   diff +1
        // Observed: (−1 − 3 + 1 + 1) / 10 = −20 pp.
        // Neither truncated: the 3 + 1 + 1 untruncated pairs, diffs sum 0: 0 pp.
        // Independent low: the two free V = 8 arms succeed: the (0,T,0,T) pair
        //   becomes −1 and the (0,T,1,-) pair 0: −4 / 10 = −40 pp (= −20 − 2/10).
        // Independent high: the four free V = 128 arms succeed: the three
        //   (1,-,0,T) pairs become 0 and the (0,T,0,T) pair +1: +2 / 10 = +20 pp.
        // Alike (arm-level): all six truncated failures fail (observed, −20 pp) or
        //   all succeed: −20 + (4 − 2) / 10 = 0 pp.
        let spec: [(usize, bool, bool, bool, bool); 6] = [
            (3, true, false, true, false),
            (1, true, false, false, false),
            (3, true, false, false, true),
            (1, false, true, false, true),
            (1, false, true, true, false),
            (1, false, false, true, false),
        ];
        let mut episodes = Vec::new();
        for (n, y8, t8, y128, t128) in spec {
            for _ in 0..n {
                episodes.push((ep(8, y8, t8), ep(128, y128, t128)));
            }
        }
        let pairs: Vec<VPair<'_>> = episodes
            .iter()
            .map(|(small, large)| VPair { small, large })
            .collect();
        let stratum = Stratum {
            lane: tbb_tables::levels::Menu::Routed,
            completion_cap: 1024,
        };
        let r = PairSums::of(&stratum, "all", "all", &pairs);
        assert_eq!(r.pairs, 10);
        assert!(close(r.total_effect_pp(), -20.0));
        assert_eq!(r.neither, 5);
        assert_eq!(r.neither_truncated_effect_pp(), Some(0.0));
        assert_eq!((r.free_8, r.free_128, r.free_both), (2, 4, 1));
        let (lo, hi) = r.bound_independent_pp();
        assert!(close(lo, -40.0) && close(hi, 20.0), "{lo} {hi}");
        let (lo, hi) = r.bound_alike_pp();
        assert!(close(lo, -20.0) && close(hi, 0.0), "{lo} {hi}");
    }

    /// A row with the paper's counts: 3,024 pairs, 472 lost and 101 gained (371 more
    /// lost: −12.3 pp observed), 48 truncated failures at V = 8 and 411 at V = 128.
    fn paper_row() -> PairSums {
        PairSums {
            stratum: Stratum {
                lane: tbb_tables::levels::Menu::Routed,
                completion_cap: 1024,
            },
            configuration: "all".into(),
            organization: "all".into(),
            pairs: 3024,
            total: -371,
            neither: 0,
            neither_total: 0,
            free_8: 48,
            free_128: 411,
            free_both: 0,
            independent_low: 0,
            independent_high: 0,
        }
    }

    #[test]
    fn the_alike_bound_reproduces_the_papers_interval() {
        // −371 / 3,024 = −12.27 pp; (−371 + 411 − 48) / 3,024 = −8 / 3,024 = −0.26 pp.
        let (lo, hi) = paper_row().bound_alike_pp();
        assert_eq!(
            (format!("{lo:.1}"), format!("{hi:.1}")),
            ("-12.3".into(), "-0.3".into())
        );
    }

    #[test]
    fn the_alike_bound_is_ordered_when_more_truncate_at_v8() {
        let mut r = paper_row();
        (r.free_8, r.free_128) = (411, 48);
        let (lo, hi) = r.bound_alike_pp();
        // −371 − 363 = −734 / 3,024 = −24.27 pp below the observed −12.27.
        assert!(close(lo, -73400.0 / 3024.0) && close(hi, -37100.0 / 3024.0));
    }

    #[test]
    fn the_table_has_a_pooled_row_then_one_per_configuration() {
        let mut rows = unit("a", "A", "f", "i", |i| i < 4);
        for r in rows.iter_mut().filter(|r| r.v == 128) {
            r.truncated = true;
        }
        rows.extend(unit("b", "B", "f", "i", |_| true));
        let out = run(&rows).unwrap_or_else(|e| panic!("{e}"));
        let t = &out[0].batch;
        assert_eq!(t.num_rows(), 3);
        let col = |name: &str| {
            t.column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float64Array>())
                .map(|c| c.values().to_vec())
                .unwrap_or_default()
        };
        // Pooled: 8 pairs, 4 lost (all truncated at 128): −50 pp; neither truncated:
        // configuration b's 4 pairs, 0 pp; independent high: −50 + 4/8 = 0.
        assert_eq!(col("total_effect_pp"), vec![-50.0, -100.0, 0.0]);
        let neither: Vec<Option<f64>> = t
            .column_by_name("neither_truncated_effect_pp")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float64Array>())
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        // Configuration a truncates every V = 128 episode: no pair is neither, a null.
        assert_eq!(neither, [Some(0.0), None, Some(0.0)]);
        assert_eq!(col("bound_independent_high_pp"), vec![0.0, 0.0, 0.0]);
        assert_eq!(col("bound_independent_low_pp"), vec![-50.0, -100.0, 0.0]);
    }
}
