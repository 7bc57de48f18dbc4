//! What the cap studies' two strata kinds share (paper Appendix E; it is not a kind
//! itself): which configurations the sixteenfold sweep (`sweep_strata`) and the
//! crossover (`crossover_strata`) run, chosen by rule from the capacity panel's tables — its `truncation` table (the V = 128
//! truncation share on the routed menu at the frozen cap) and its
//! `contrasts_by_configuration` table (the V contrast, V = 128 − 8) — bound in the
//! manifest with `inputs = { truncation = { from = "capacity" },
//! contrasts_by_configuration = { from = "capacity" } }`, so both are pinned by hash in
//! the lockfile.
//!
//! The rules, on the upstream counts (integers, so a boundary share falls in the
//! stratum it opens):
//!
//! * sweep: `B` truncation ≥ 20 %; `M` 5 % ≤ truncation < 20 %; `N` no truncation and
//!   a V effect within `null_margin_pp` (3) of zero. Every B configuration is run, and
//!   `m` (1) of M and `n` (1) of N.
//! * crossover: `B` truncation ≥ 20 %; `S` truncation ≤ 15 % with a loss of at least
//!   `loss_pp` (8: a V effect ≤ −8 pp); `N` as the sweep's. `b` (2) of B, `s` (1) of S
//!   and `n` (1) of N are run.
//!
//! Where a stratum has more candidates than it takes, they are ranked by blake3 of
//! (`seed`, name) — a draw that is deterministic, documented and blind to the
//! configurations' results — and the first ones taken.
//!
//! Owns: the layout of the `sweep_strata` and `crossover_strata` tables, one row per configuration of
//! the upstream tables (sorted by name): `configuration`, `upstream_episodes`,
//! `upstream_truncated`, `truncated_share`, `v_effect_pp`, `stratum` (null: in none),
//! `candidate_rank` (its place in its stratum's draw, from 1), `selected`, and
//! `in_study` (whether this study ran it).
//!
//! Invariants: the study must run exactly the selected configurations; otherwise
//! `tbb plan` says so and `tbb apply` refuses before running anything (the kinds'
//! preflight), naming the list to put in the manifest. The manifest lists them
//! itself (a reader sees what runs, and a rerun is byte for byte), and this analysis
//! holds that list to the rule.
//!
//! Never: reads files (the pipeline hands it the upstream tables).

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::RecordBatch;

use super::truncation_strata::upstream_counts;
use crate::{AnalysisError, Context, Input, Output, Produced};
use tbb_tables::analyses::cap_strata::CapStrataRow;
use tbb_tables::analyses::contrasts::ContrastsByConfigurationRow;
use tbb_tables::analyses::truncation::TruncationRow;
use tbb_tables::levels::Menu;
use tbb_tables::TableRow;

/// The upstream truncation table.
const TRUNCATION: &str = TruncationRow::TABLE;
/// The upstream per-configuration contrasts.
const CONTRASTS: &str = ContrastsByConfigurationRow::TABLE;
/// What both kinds read: this study's episodes (which configurations it ran) and the
/// two upstream tables.
pub(super) const INPUTS: &[Input] = &[
    Input::Episodes,
    Input::Table(TRUNCATION),
    Input::Table(CONTRASTS),
];
/// The strata are read on the routed menu.
const LANE: Menu = Menu::Routed;
/// The default draw seed.
pub(super) const SEED: u64 = 20_261_204;

/// What the rules read of one upstream configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Name.
    pub configuration: String,
    /// V = 128 episodes and how many were truncated.
    pub episodes: u32,
    /// Truncated of them.
    pub truncated: u32,
    /// V contrast (V = 128 − 8) in pp, when the upstream has it.
    pub v_effect_pp: Option<f64>,
}

/// How a rule places one configuration: its stratum, if any.
pub(super) type Classify<S> = Box<dyn Fn(&Facts) -> Option<S>>;

/// A rule: how a configuration's facts place it, and how many of each stratum run
/// (`None`: all of them).
/// `S` is the stratum level of the kind's table.
pub struct Rule<S> {
    pub(super) classify: Classify<S>,
    /// `(stratum, how many run)`, in the order the strata are listed.
    pub takes: Vec<(S, Option<u32>)>,
    pub(super) seed: u64,
}

/// Whether a configuration is null: no truncation and a V effect within `margin` pp
/// of zero (both kinds' `N`).
pub(super) fn is_null(f: &Facts, margin: f64) -> bool {
    f.truncated == 0 && f.v_effect_pp.is_some_and(|v| v.abs() <= margin)
}

/// Where a rule places one configuration: its stratum, its rank in its stratum's draw,
/// and whether it runs.
pub type Placement<S> = (Option<S>, Option<u32>, bool);

impl<S: Copy + PartialEq> Rule<S> {
    /// Each configuration's stratum, its rank in its stratum's draw, and whether it
    /// runs; in the order given.
    pub fn place(&self, facts: &[Facts]) -> Vec<Placement<S>> {
        let strata: Vec<Option<S>> = facts.iter().map(|f| (self.classify)(f)).collect();
        let mut placed = vec![(None, None, false); facts.len()];
        for (i, s) in strata.iter().enumerate() {
            placed[i].0 = *s;
        }
        for &(stratum, take) in &self.takes {
            let mut candidates: Vec<(String, usize)> = strata
                .iter()
                .enumerate()
                .filter(|(_, s)| **s == Some(stratum))
                .map(|(i, _)| (draw(self.seed, &facts[i].configuration), i))
                .collect();
            candidates.sort();
            for (rank, (_, i)) in candidates.into_iter().enumerate() {
                let rank = rank as u32 + 1;
                placed[i].1 = Some(rank);
                placed[i].2 = take.is_none_or(|k| rank <= k);
            }
        }
        placed
    }
}

/// The draw's order key of a configuration: blake3 of the seed and its name.
pub(super) fn draw(seed: u64, configuration: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(configuration.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The upstream configurations' facts and where the rule places each.
type Placed<S> = (Vec<Facts>, Vec<Placement<S>>);

fn place<S: Copy + PartialEq>(
    kind: &'static str,
    rule: &Rule<S>,
    cap: Option<u32>,
    tables: &BTreeMap<String, RecordBatch>,
) -> Result<Placed<S>, AnalysisError> {
    let cap = cap.unwrap_or(tbb_tables::levels::COMPLETION_CAP);
    let table = |name: &str| {
        tables.get(name).ok_or_else(|| AnalysisError::InputTable {
            analysis: kind,
            table: name.into(),
            detail: "it was not given".into(),
        })
    };
    let counts = upstream_counts(kind, table(TRUNCATION)?, LANE, cap)?;
    let effects = v_effects(kind, table(CONTRASTS)?, cap)?;
    let facts: Vec<Facts> = counts
        .iter()
        .map(|(configuration, &(episodes, truncated))| Facts {
            configuration: configuration.clone(),
            episodes,
            truncated,
            v_effect_pp: effects.get(configuration).copied(),
        })
        .collect();
    let placed = rule.place(&facts);
    Ok((facts, placed))
}

/// Why the study's configurations are not the rule's selection, naming the list to
/// write; `None` when they are.
fn mismatch<S>(
    facts: &[Facts],
    placed: &[Placement<S>],
    in_study: &BTreeSet<&str>,
) -> Option<String> {
    let selected: BTreeSet<&str> = facts
        .iter()
        .zip(placed)
        .filter(|(_, p)| p.2)
        .map(|(f, _)| f.configuration.as_str())
        .collect();
    if &selected == in_study {
        return None;
    }
    let list = |s: &BTreeSet<&str>| {
        s.iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "the study runs [{}] but the rule selects [{}] from the upstream tables; \
         set `[configurations] names = [{}]`",
        list(in_study),
        list(&selected),
        list(&selected)
    ))
}

/// Why the study's configurations are not `rule`'s selection on the upstream
/// tables (or why those tables cannot be read); `None` when they are.
pub(super) fn preflight<S: Copy + PartialEq>(
    kind: &'static str,
    rule: &Rule<S>,
    cap: Option<u32>,
    upstream: &BTreeMap<String, RecordBatch>,
    configurations: &BTreeSet<String>,
) -> Option<String> {
    match place(kind, rule, cap, upstream) {
        Err(e) => Some(e.to_string()),
        Ok((facts, placed)) => {
            let in_study = configurations.iter().map(String::as_str).collect();
            mismatch(&facts, &placed, &in_study)
        }
    }
}

/// The strata table of `kind`: every upstream configuration, its stratum, rank and
/// whether it runs; an error when the study does not run exactly the selection.
pub(super) fn run<S: Copy + PartialEq>(
    kind: &'static str,
    rule: &Rule<S>,
    cap: Option<u32>,
    input: &Context<'_>,
) -> Result<Produced, AnalysisError>
where
    CapStrataRow<S>: TableRow,
{
    let (facts, placed) = place(kind, rule, cap, input.tables)?;
    let in_study: BTreeSet<&str> = input
        .episodes
        .iter()
        .map(|r| r.configuration.as_str())
        .collect();
    if let Some(detail) = mismatch(&facts, &placed, &in_study) {
        return Err(AnalysisError::Inconsistent {
            analysis: kind,
            detail,
        });
    }
    let rows: Vec<CapStrataRow<S>> = facts
        .iter()
        .zip(placed)
        .map(|(f, (stratum, candidate_rank, selected))| CapStrataRow {
            configuration: f.configuration.clone(),
            upstream_episodes: f.episodes,
            upstream_truncated: f.truncated,
            truncated_share: (f.episodes > 0)
                .then(|| f64::from(f.truncated) / f64::from(f.episodes)),
            v_effect_pp: f.v_effect_pp,
            stratum,
            candidate_rank,
            selected,
            in_study: in_study.contains(f.configuration.as_str()),
        })
        .collect();
    Ok(vec![Output::of(&rows)?].into())
}

/// The V contrast (pp) by configuration on the routed menu at `cap`, from an upstream
/// `contrasts_by_configuration` table.
fn v_effects(
    kind: &'static str,
    table: &RecordBatch,
    cap: u32,
) -> Result<BTreeMap<String, f64>, AnalysisError> {
    let rows =
        ContrastsByConfigurationRow::from_batch(table).map_err(|e| AnalysisError::InputTable {
            analysis: kind,
            table: CONTRASTS.into(),
            detail: e.to_string(),
        })?;
    let lane = LANE.name();
    Ok(rows
        .into_iter()
        .filter(|r| r.lane == lane && r.completion_cap == cap && r.contrast == "v")
        .map(|r| (r.configuration, r.estimate_pp))
        .collect())
}

/// Hand-built facts for the kinds' rule tests.
#[cfg(test)]
pub(super) mod testing {
    use super::Facts;

    /// Facts from `(configuration, episodes, truncated, v_effect_pp)`.
    pub(crate) fn facts(rows: &[(&str, u32, u32, Option<f64>)]) -> Vec<Facts> {
        rows.iter()
            .map(|&(c, e, t, v)| Facts {
                configuration: c.into(),
                episodes: e,
                truncated: t,
                v_effect_pp: v,
            })
            .collect()
    }
}
