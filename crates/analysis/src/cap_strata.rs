//! The cap studies' configuration strata (paper Appendix E): which configurations the
//! sixteenfold sweep (`sweep_strata`) and the crossover (`crossover_strata`) run, chosen
//! by rule from the capacity panel's tables — its `truncation` table (the V = 128
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
//! Owns: the `sweep_strata` and `crossover_strata` tables, one row per configuration of
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

use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt32Array};
use serde::{Deserialize, Serialize};

use super::truncation_strata::{stratum, upstream_counts};
use super::{AnalysisError, Context, Input, Output, Produced, Typed};
use tbb_tables::TableBuilder;

/// The upstream truncation table.
const TRUNCATION: &str = "truncation";
/// The upstream per-configuration contrasts.
const CONTRASTS: &str = "contrasts_by_configuration";
/// What both kinds read: this study's episodes (which configurations it ran) and the
/// two upstream tables.
const INPUTS: &[Input] = &[
    Input::Episodes,
    Input::Table(TRUNCATION),
    Input::Table(CONTRASTS),
];
/// The strata are read on the routed menu.
const LANE: &str = "routed";
/// The default draw seed.
const SEED: u64 = 20_261_204;

/// The sweep's strata.
pub struct SweepStrata;
/// The crossover's strata.
pub struct CrossoverStrata;

/// `sweep_strata`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepParams {
    /// M configurations run (default 1).
    #[serde(default)]
    pub m: Option<u32>,
    /// N configurations run (default 1).
    #[serde(default)]
    pub n: Option<u32>,
    /// How close to zero N's V effect must be, in pp (default 3).
    #[serde(default)]
    pub null_margin_pp: Option<f64>,
    /// The cap the strata are read at (default the frozen 1,024).
    #[serde(default)]
    pub completion_cap: Option<u32>,
    /// Seed of the draw among a stratum's candidates.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// `crossover_strata`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossoverParams {
    /// B configurations run (default 2).
    #[serde(default)]
    pub b: Option<u32>,
    /// S configurations run (default 1).
    #[serde(default)]
    pub s: Option<u32>,
    /// N configurations run (default 1).
    #[serde(default)]
    pub n: Option<u32>,
    /// The loss S must show, in pp (default 8).
    #[serde(default)]
    pub loss_pp: Option<f64>,
    /// How close to zero N's V effect must be, in pp (default 3).
    #[serde(default)]
    pub null_margin_pp: Option<f64>,
    /// The cap the strata are read at (default the frozen 1,024).
    #[serde(default)]
    pub completion_cap: Option<u32>,
    /// Seed of the draw among a stratum's candidates.
    #[serde(default)]
    pub seed: Option<u64>,
}

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
type Classify = Box<dyn Fn(&Facts) -> Option<&'static str>>;

/// A rule: how a configuration's facts place it, and how many of each stratum run
/// (`None`: all of them).
pub struct Rule {
    classify: Classify,
    /// `(stratum, how many run)`, in the order the strata are listed.
    pub takes: Vec<(&'static str, Option<u32>)>,
    seed: u64,
}

fn is_null(f: &Facts, margin: f64) -> bool {
    f.truncated == 0 && f.v_effect_pp.is_some_and(|v| v.abs() <= margin)
}

impl Rule {
    /// The sweep's rule.
    pub fn sweep(p: &SweepParams) -> Rule {
        let margin = p.null_margin_pp.unwrap_or(3.0);
        Rule {
            // The truncation strata are `truncation_strata`'s; N also asks for a V
            // effect near zero.
            classify: Box::new(move |f| match stratum(f.episodes, f.truncated) {
                Some("N") => is_null(f, margin).then_some("N"),
                other => other,
            }),
            takes: vec![
                ("B", None),
                ("M", Some(p.m.unwrap_or(1))),
                ("N", Some(p.n.unwrap_or(1))),
            ],
            seed: p.seed.unwrap_or(SEED),
        }
    }

    /// The crossover's rule.
    pub fn crossover(p: &CrossoverParams) -> Rule {
        let margin = p.null_margin_pp.unwrap_or(3.0);
        let loss = p.loss_pp.unwrap_or(8.0);
        Rule {
            classify: Box::new(move |f| {
                let (e, t) = (u64::from(f.episodes), u64::from(f.truncated));
                if e == 0 {
                    None
                } else if 5 * t >= e {
                    Some("B")
                } else if 20 * t <= 3 * e && f.v_effect_pp.is_some_and(|v| v <= -loss) {
                    Some("S")
                } else if is_null(f, margin) {
                    Some("N")
                } else {
                    None
                }
            }),
            takes: vec![
                ("B", Some(p.b.unwrap_or(2))),
                ("S", Some(p.s.unwrap_or(1))),
                ("N", Some(p.n.unwrap_or(1))),
            ],
            seed: p.seed.unwrap_or(SEED),
        }
    }

    /// Each configuration's stratum, its rank in its stratum's draw, and whether it
    /// runs; in the order given.
    pub fn place(&self, facts: &[Facts]) -> Vec<(Option<&'static str>, Option<u32>, bool)> {
        let strata: Vec<Option<&'static str>> = facts.iter().map(|f| (self.classify)(f)).collect();
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
fn draw(seed: u64, configuration: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(configuration.as_bytes());
    h.finalize().to_hex().to_string()
}

impl Typed for SweepStrata {
    type Params = SweepParams;
    const NAME: &'static str = "sweep_strata";
    const VERSION: &'static str = "sweep_strata/1";
    const INPUTS: &'static [Input] = INPUTS;
    const OUTPUTS: &'static [&'static str] = &["sweep_strata"];

    fn preflight(
        params: &SweepParams,
        upstream: &BTreeMap<String, RecordBatch>,
        configurations: &BTreeSet<String>,
    ) -> Option<String> {
        let rule = Rule::sweep(params);
        preflight(
            Self::NAME,
            &rule,
            params.completion_cap,
            upstream,
            configurations,
        )
    }

    fn run(params: &SweepParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(
            Self::NAME,
            &Rule::sweep(params),
            params.completion_cap,
            input,
        )
    }
}

impl Typed for CrossoverStrata {
    type Params = CrossoverParams;
    const NAME: &'static str = "crossover_strata";
    const VERSION: &'static str = "crossover_strata/1";
    const INPUTS: &'static [Input] = INPUTS;
    const OUTPUTS: &'static [&'static str] = &["crossover_strata"];

    fn preflight(
        params: &CrossoverParams,
        upstream: &BTreeMap<String, RecordBatch>,
        configurations: &BTreeSet<String>,
    ) -> Option<String> {
        let rule = Rule::crossover(params);
        preflight(
            Self::NAME,
            &rule,
            params.completion_cap,
            upstream,
            configurations,
        )
    }

    fn run(params: &CrossoverParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let rule = Rule::crossover(params);
        run(Self::NAME, &rule, params.completion_cap, input)
    }
}

/// The upstream configurations' facts and where the rule places each.
type Placed = (Vec<Facts>, Vec<(Option<&'static str>, Option<u32>, bool)>);

fn place(
    kind: &'static str,
    rule: &Rule,
    cap: Option<u32>,
    tables: &BTreeMap<String, RecordBatch>,
) -> Result<Placed, AnalysisError> {
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
fn mismatch(
    facts: &[Facts],
    placed: &[(Option<&'static str>, Option<u32>, bool)],
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

fn preflight(
    kind: &'static str,
    rule: &Rule,
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

fn run(
    kind: &'static str,
    rule: &Rule,
    cap: Option<u32>,
    input: &Context<'_>,
) -> Result<Produced, AnalysisError> {
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
    let batch = TableBuilder::new()
        .text(
            "configuration",
            facts.iter().map(|f| f.configuration.as_str()),
        )
        .u32("upstream_episodes", facts.iter().map(|f| f.episodes))
        .u32("upstream_truncated", facts.iter().map(|f| f.truncated))
        .f64_opt(
            "truncated_share",
            facts
                .iter()
                .map(|f| (f.episodes > 0).then(|| f64::from(f.truncated) / f64::from(f.episodes))),
        )
        .f64_opt("v_effect_pp", facts.iter().map(|f| f.v_effect_pp))
        .text_opt("stratum", placed.iter().map(|p| p.0))
        .u32_opt("candidate_rank", placed.iter().map(|p| p.1))
        .bool("selected", placed.iter().map(|p| p.2))
        .bool(
            "in_study",
            facts
                .iter()
                .map(|f| in_study.contains(f.configuration.as_str())),
        )
        .build(kind)?;
    Ok(vec![Output { table: kind, batch }].into())
}

/// The V contrast (pp) by configuration on the routed menu at `cap`, from an upstream
/// `contrasts_by_configuration` table.
fn v_effects(
    kind: &'static str,
    table: &RecordBatch,
    cap: u32,
) -> Result<BTreeMap<String, f64>, AnalysisError> {
    let bad = |detail: String| AnalysisError::InputTable {
        analysis: kind,
        table: CONTRASTS.into(),
        detail,
    };
    let text = |name: &str| {
        table
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| bad(format!("no text column `{name}`")))
    };
    let (lanes, configs, contrasts) = (text("lane")?, text("configuration")?, text("contrast")?);
    let caps = table
        .column_by_name("completion_cap")
        .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
        .ok_or_else(|| bad("no u32 column `completion_cap`".into()))?;
    let estimates = table
        .column_by_name("estimate_pp")
        .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
        .ok_or_else(|| bad("no float column `estimate_pp`".into()))?;
    let mut out = BTreeMap::new();
    for i in 0..table.num_rows() {
        if lanes.value(i) == LANE
            && caps.value(i) == cap
            && contrasts.value(i) == "v"
            && estimates.is_valid(i)
        {
            out.insert(configs.value(i).to_string(), estimates.value(i));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(rows: &[(&str, u32, u32, Option<f64>)]) -> Vec<Facts> {
        rows.iter()
            .map(|&(c, e, t, v)| Facts {
                configuration: c.into(),
                episodes: e,
                truncated: t,
                v_effect_pp: v,
            })
            .collect()
    }

    /// The sweep's strata on a hand-built table: B at exactly 20 %, M at exactly 5 %,
    /// N only without truncation and within 3 pp; every B runs, one M and one N.
    #[test]
    fn the_sweep_rule_on_a_hand_built_table() {
        let f = facts(&[
            ("b-edge", 100, 20, Some(-30.0)),
            ("b-heavy", 100, 60, Some(-45.0)),
            ("m-edge", 100, 5, Some(-10.0)),
            ("m-mid", 100, 12, Some(-8.0)),
            ("low", 100, 4, Some(0.0)),
            ("n-zero", 100, 0, Some(0.0)),
            ("n-edge", 100, 0, Some(-3.0)),
            ("loses", 100, 0, Some(-3.5)),
            ("unknown", 100, 0, None),
            ("none", 0, 0, Some(0.0)),
        ]);
        let placed = Rule::sweep(&SweepParams::default()).place(&f);
        let strata: Vec<Option<&str>> = placed.iter().map(|p| p.0).collect();
        assert_eq!(
            strata,
            [
                Some("B"),
                Some("B"),
                Some("M"),
                Some("M"),
                None,
                Some("N"),
                Some("N"),
                None,
                None,
                None
            ]
        );
        let runs: Vec<&str> = f
            .iter()
            .zip(&placed)
            .filter(|(_, p)| p.2)
            .map(|(f, _)| f.configuration.as_str())
            .collect();
        assert_eq!(runs.len(), 4, "{runs:?}");
        assert!(runs.contains(&"b-edge") && runs.contains(&"b-heavy"));
        assert_eq!(runs.iter().filter(|c| c.starts_with("m-")).count(), 1);
        assert_eq!(runs.iter().filter(|c| c.starts_with("n-")).count(), 1);
        // The draw is the documented one: the lower blake3(seed, name) wins.
        let m_winner = if draw(SEED, "m-edge") < draw(SEED, "m-mid") {
            "m-edge"
        } else {
            "m-mid"
        };
        assert!(runs.contains(&m_winner));
        // Another seed may draw otherwise, and taking more takes more.
        let all = Rule::sweep(&SweepParams {
            m: Some(5),
            n: Some(5),
            ..SweepParams::default()
        })
        .place(&f);
        assert_eq!(all.iter().filter(|p| p.2).count(), 6);
    }

    /// The crossover's strata: S needs at most 15 % truncation and a loss of at least
    /// 8 pp; two of B run.
    #[test]
    fn the_crossover_rule_on_a_hand_built_table() {
        let f = facts(&[
            ("b1", 100, 30, Some(-40.0)),
            ("b2", 100, 25, Some(-35.0)),
            ("b3", 100, 50, Some(-50.0)),
            ("s-edge", 100, 15, Some(-8.0)),
            ("s-clean", 100, 0, Some(-12.0)),
            ("too-much", 100, 16, Some(-20.0)),
            ("small-loss", 100, 10, Some(-7.9)),
            ("n", 100, 0, Some(1.0)),
        ]);
        let placed = Rule::crossover(&CrossoverParams::default()).place(&f);
        let strata: Vec<Option<&str>> = placed.iter().map(|p| p.0).collect();
        assert_eq!(
            strata,
            [
                Some("B"),
                Some("B"),
                Some("B"),
                Some("S"),
                Some("S"),
                None,
                None,
                Some("N")
            ]
        );
        let count = |s: &str| placed.iter().filter(|p| p.0 == Some(s) && p.2).count();
        assert_eq!((count("B"), count("S"), count("N")), (2, 1, 1));
        // Ranks run 1.. within each stratum.
        let mut b_ranks: Vec<u32> = placed
            .iter()
            .filter(|p| p.0 == Some("B"))
            .filter_map(|p| p.1)
            .collect();
        b_ranks.sort_unstable();
        assert_eq!(b_ranks, [1, 2, 3]);
    }
}
