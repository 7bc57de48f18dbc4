//! The `repeats` analysis kind: for any study that runs its conditions more than once,
//! per configuration and completion cap, pass@1, pass^k for every k up to the repeats
//! (tau-bench's headline metric: the chance that k runs of a condition all succeed),
//! and how often runs of one condition disagree.
//!
//! Owns: the `repeats` table's rows ([`RepeatsRow`]).
//!
//! # Definitions
//! A *condition group* is one (configuration, completion cap, block, arm, variant): the
//! episodes that differ only in their repeat. Blocks stay apart (the pilot's probe and
//! its retry are two blocks, not two runs of one group). For a group of n runs with c
//! successes, pass^k is `C(c, k) / C(n, k)` — the chance that k of its runs, drawn
//! without replacement, all succeed; unbiased for a run's success to the k-th power,
//! and pass^1 is the group's success rate. A configuration's pass^k is the mean over
//! its groups, for k up to its fewest runs of a group (every group counts in every k).
//! Disagreement is the share of groups run at least twice whose runs both succeed and
//! fail. `all` pools every configuration's groups at a cap.
//!
//! Never: runs episodes or reads files; a study run once gets rows with pass^1 only and
//! no disagreement.

use std::collections::BTreeMap;

use crate::{AnalysisError, Context, NoParams, Output, Produced, Typed};
use tbb_tables::analyses::repeats::RepeatsRow;
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

/// The `repeats` analysis kind.
pub struct Repeats;

impl Typed for Repeats {
    type Params = NoParams;
    const NAME: &'static str = "repeats";
    const VERSION: &'static str = "repeats/1";
    const OUTPUTS: &'static [&'static str] = &[RepeatsRow::TABLE];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        Ok(vec![Output::of(&rows(input.episodes))?].into())
    }
}

/// pass^k of a group of `n` runs with `c` successes: `C(c, k) / C(n, k)`.
pub fn pass_hat(n: u32, c: u32, k: u32) -> f64 {
    if k > c || k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |p, i| p * f64::from(c - i) / f64::from(n - i))
}

/// One group's runs: (runs, successes).
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    runs: u32,
    successes: u32,
}

/// The rows: per cap, each configuration in name order, then `all`.
pub fn rows(episodes: &[EpisodeRow]) -> Vec<RepeatsRow> {
    // cap -> configuration -> group -> runs.
    type Groups<'a> = BTreeMap<(&'a str, &'a str, &'a str), Group>;
    let mut by_cap: BTreeMap<u32, BTreeMap<&str, Groups<'_>>> = BTreeMap::new();
    let mut organizations: BTreeMap<&str, &str> = BTreeMap::new();
    for row in episodes {
        organizations.insert(&row.configuration, &row.organization);
        let group = by_cap
            .entry(row.completion_cap)
            .or_default()
            .entry(&row.configuration)
            .or_default()
            .entry((&row.block, &row.arm, &row.variant_id))
            .or_default();
        group.runs += 1;
        group.successes += u32::from(row.vts);
    }
    let mut out = Vec::new();
    for (cap, configurations) in &by_cap {
        for (configuration, groups) in configurations {
            let organization = organizations.get(configuration).map(|o| o.to_string());
            out.push(row(*cap, configuration, organization, groups.values()));
        }
        let every = configurations.values().flat_map(BTreeMap::values);
        out.push(row(*cap, "all", None, every));
    }
    out
}

fn row<'a>(
    cap: u32,
    configuration: &str,
    organization: Option<String>,
    groups: impl Iterator<Item = &'a Group> + Clone,
) -> RepeatsRow {
    let n_groups = groups.clone().count();
    let n_runs: u32 = groups.clone().map(|g| g.runs).sum();
    let successes: u32 = groups.clone().map(|g| g.successes).sum();
    let runs_min = groups.clone().map(|g| g.runs).min().unwrap_or(0);
    let runs_max = groups.clone().map(|g| g.runs).max().unwrap_or(0);
    let pass_hat_k = (1..=runs_min)
        .map(|k| {
            let sum: f64 = groups
                .clone()
                .map(|g| pass_hat(g.runs, g.successes, k))
                .sum();
            sum / n_groups as f64
        })
        .collect();
    let repeated = groups.clone().filter(|g| g.runs >= 2);
    let n_repeated = repeated.clone().count();
    let mixed = repeated
        .filter(|g| g.successes > 0 && g.successes < g.runs)
        .count();
    RepeatsRow {
        completion_cap: cap,
        configuration: configuration.to_string(),
        organization,
        n_groups: u32::try_from(n_groups).unwrap_or(u32::MAX),
        n_runs,
        runs_min,
        runs_max,
        pass_at_1: if n_runs == 0 {
            f64::NAN
        } else {
            f64::from(successes) / f64::from(n_runs)
        },
        pass_hat_k,
        disagreement: (n_repeated > 0).then(|| mixed as f64 / n_repeated as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing;

    fn episode(configuration: &str, variant: &str, repeat: u32, vts: bool) -> EpisodeRow {
        let mut row = testing::row(configuration, "Org", "f", "i", 8, "low", "raw", vts);
        row.variant_id = variant.into();
        row.repeat = repeat;
        row.completion_cap = 1024;
        row
    }

    #[test]
    fn pass_hat_is_the_chance_that_k_runs_drawn_without_replacement_all_succeed() {
        // 3 runs, 2 successes: k = 1 → 2/3; k = 2 → C(2,2)/C(3,2) = 1/3; k = 3 → 0.
        assert!((pass_hat(3, 2, 1) - 2.0 / 3.0).abs() < 1e-12);
        assert!((pass_hat(3, 2, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_hat(3, 2, 3), 0.0);
        assert_eq!(pass_hat(4, 4, 4), 1.0);
        // 4 runs, 3 successes, k = 2: C(3,2)/C(4,2) = 3/6.
        assert!((pass_hat(4, 3, 2) - 0.5).abs() < 1e-12);
    }

    /// A slow reference: pass^k by enumerating every k-subset of a group's runs.
    fn by_subsets(outcomes: &[bool], k: usize) -> f64 {
        let n = outcomes.len();
        let (mut all, mut total) = (0u32, 0u32);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            total += 1;
            all += u32::from((0..n).all(|i| mask & (1 << i) == 0 || outcomes[i]));
        }
        f64::from(all) / f64::from(total)
    }

    #[test]
    fn pass_hat_agrees_with_counting_subsets() {
        for outcomes in [
            vec![true, false, true, true, false],
            vec![true; 4],
            vec![false, true, false],
        ] {
            let n = outcomes.len() as u32;
            let c = outcomes.iter().filter(|&&x| x).count() as u32;
            for k in 1..=outcomes.len() {
                let fast = pass_hat(n, c, k as u32);
                assert!(
                    (fast - by_subsets(&outcomes, k)).abs() < 1e-12,
                    "{outcomes:?} {k}"
                );
            }
        }
    }

    #[test]
    fn rows_by_hand() {
        // a: v1 succeeds 3 of 3, v2 1 of 3; b: v1 0 of 2, v2 2 of 2 (runs_min 2).
        let mut episodes = Vec::new();
        for (variant, outcomes) in [("v1", [true, true, true]), ("v2", [true, false, false])] {
            for (rep, &ok) in outcomes.iter().enumerate() {
                episodes.push(episode("a", variant, rep as u32, ok));
            }
        }
        for (variant, outcomes) in [("v1", [false, false]), ("v2", [true, true])] {
            for (rep, &ok) in outcomes.iter().enumerate() {
                episodes.push(episode("b", variant, rep as u32, ok));
            }
        }
        let rows = rows(&episodes);
        let names: Vec<&str> = rows.iter().map(|r| r.configuration.as_str()).collect();
        assert_eq!(names, ["a", "b", "all"]);
        let a = &rows[0];
        assert_eq!((a.n_groups, a.n_runs, a.runs_min, a.runs_max), (2, 6, 3, 3));
        assert!((a.pass_at_1 - 4.0 / 6.0).abs() < 1e-12);
        // pass^2: (1 + 0) / 2; pass^3: (1 + 0) / 2.
        let expected = [(1.0 + 1.0 / 3.0) / 2.0, 0.5, 0.5];
        for (got, want) in a.pass_hat_k.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{:?}", a.pass_hat_k);
        }
        assert_eq!(a.disagreement, Some(0.5));
        assert_eq!(a.organization.as_deref(), Some("Org"));
        let b = &rows[1];
        assert_eq!(b.pass_hat_k, vec![0.5, 0.5]);
        assert_eq!(b.disagreement, Some(0.0));
        // all: four groups, fewest runs 2: pass^1 = (1 + 1/3 + 0 + 1) / 4,
        // pass^2 = (1 + 0 + 0 + 1) / 4.
        let all = &rows[2];
        assert_eq!((all.n_groups, all.runs_min, all.runs_max), (4, 2, 3));
        assert!((all.pass_hat_k[0] - (1.0 + 1.0 / 3.0 + 1.0) / 4.0).abs() < 1e-12);
        assert!((all.pass_hat_k[1] - 0.5).abs() < 1e-12);
        assert_eq!(all.disagreement, Some(0.25));
        assert_eq!(all.organization, None);
    }

    #[test]
    fn a_study_run_once_has_pass_at_1_and_no_disagreement() {
        let rows = rows(&[episode("a", "v1", 0, true), episode("a", "v2", 0, false)]);
        assert_eq!(rows[0].pass_hat_k, vec![0.5]);
        assert_eq!(rows[0].disagreement, None);
    }
}
