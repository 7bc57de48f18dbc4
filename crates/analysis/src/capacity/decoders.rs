//! The decoders (paper Table 11, Figure 11): can a failure record say which pressure
//! caused the failure? From the capacity study's baseline cell (8, low, raw) and its
//! three single-stress endpoint cells — V (128, low, raw), W (8, high, raw) and
//! D (8, low, linked) — every configuration × family × repeat *packet* in which the
//! baseline succeeds and exactly one stressed cell fails is labelled with that cell's
//! pressure; a lookup table from a feature tuple of the failing row to the label is
//! fitted with one intent held out per fold, and its out-of-fold predictions are
//! scored by balanced accuracy.
//!
//! Owns: the rows of the `decoders`, `decoder_gains`, `decoder_packets` and
//! `decoder_multi` tables ([`DecodersRow`], …), the packet rule, the feature sets ([`FEATURE_SETS`]), the classifier
//! ([`fit`], [`predict`]) and their statistics.
//!
//! # Packets
//! Per lane and completion cap (the parameters; the routed lane at 1,024 by default).
//! A packet needs all four rows; one with an infrastructure failure in any row is
//! excluded and counted, as is one whose baseline fails or none of whose stressed cells
//! fails (not a packet) and one with more than one failing stressed cell (kept for the
//! descriptive `decoder_multi` table).
//!
//! # Features (of the failing stressed row; none names a configuration, family or
//! pressure)
//! first unmet obligation; terminal flag; both; both with the trace shape; the trace
//! shape alone (executed calls binned 0 / 1–2 / 3–5 / 6+, and the recorded stop
//! reason); the call count alone (binned); the nine obligation verdicts; the
//! termination-aware label (the harness limit that fired — truncation, budget or call
//! limit, turn limit, infeasibility — where one did, else the first unmet obligation);
//! and, as a labelled reference that reads the treatment, the menu size.
//!
//! # Classifier
//! One fold per intent: the intent's packets are predicted by a table fitted on the
//! others, mapping each exact feature tuple to its majority label, ties resolved in
//! the order V, W, D; a tuple unseen in training gets the training prior (the majority
//! label of the training packets, same ties).
//!
//! # Statistics
//! Balanced accuracy is the mean of the recalls of the classes that have packets (a
//! constant guess scores 1/3 with all three). Its 95% interval is the percentile
//! interval of an intent-cluster bootstrap over the out-of-fold predictions, held
//! fixed. The paired gains between feature sets ([`COMPARISONS`], five exploratory
//! comparisons) use the same draws for both sets; their intervals are at
//! 1 − 0.05 / 5 = 99% (Bonferroni).
//!
//! Never: reads anything but episode rows; fits on the fold it predicts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::common::needs;
use crate::common::stats::{self, check_draws, IndexStream, DEFAULT_DRAWS, DEFAULT_SEED};
use crate::{AnalysisError, Context, Design, Names, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::decoders::{
    DecoderGainsRow, DecoderMultiRow, DecoderPacketsRow, DecodersRow, FeatureSet, PacketCount,
    Pressure,
};
use tbb_tables::levels::{Encoding, Menu, Obligation, Routing, TerminalFlag, Workflow};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

const KIND: &str = "decoders";

/// The pressures, in tie-breaking order.
pub const LABELS: [Pressure; 3] = [Pressure::V, Pressure::W, Pressure::D];

/// The baseline cell and the stressed cell of each label: (v, w, d).
const BASELINE: (u32, Workflow, Encoding) = (8, Workflow::Low, Encoding::Raw);
const STRESSED: [(u32, Workflow, Encoding); 3] = [
    (128, Workflow::Low, Encoding::Raw),
    (8, Workflow::High, Encoding::Raw),
    (8, Workflow::Low, Encoding::Linked),
];

/// A feature set: which, whether it reads the treatment (a reference, not a
/// diagnostic), and the tuple of a failing row.
pub type Features = (FeatureSet, bool, fn(&EpisodeRow) -> String);

/// Every feature set, in table order.
pub const FEATURE_SETS: [Features; 9] = [
    (FeatureSet::FirstUnmet, false, |r| first_unmet(r)),
    (FeatureSet::TerminalFlag, false, |r| terminal(r)),
    (FeatureSet::FirstUnmetAndTerminalFlag, false, |r| {
        format!("{}|{}", first_unmet(r), terminal(r))
    }),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        false,
        |r| format!("{}|{}|{}", first_unmet(r), terminal(r), shape(r)),
    ),
    (FeatureSet::TraceShape, false, shape),
    (FeatureSet::CallCounts, false, |r| calls_bin(r.calls).into()),
    (FeatureSet::ObligationVector, false, |r| {
        r.ok.iter().map(|ok| if *ok { '1' } else { '0' }).collect()
    }),
    (FeatureSet::TerminationAware, false, termination_aware),
    (FeatureSet::MenuSizeProxy, true, |r| {
        format!("{}|{}|{}", r.v, first_unmet(r), terminal(r))
    }),
];

/// The paper's five exploratory comparisons of feature sets, in its order: (set,
/// against). The record with the trace shape against the call counts, the first unmet
/// obligation, the trace shape alone and the joint record; the joint record against
/// the first unmet obligation.
pub const COMPARISONS: [(FeatureSet, FeatureSet); 5] = [
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::CallCounts,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::FirstUnmet,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::TraceShape,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::FirstUnmetAndTerminalFlag,
    ),
    (
        FeatureSet::FirstUnmetAndTerminalFlag,
        FeatureSet::FirstUnmet,
    ),
];

fn first_unmet(r: &EpisodeRow) -> String {
    r.first_unmet.map_or("none", Obligation::name).to_string()
}

fn terminal(r: &EpisodeRow) -> String {
    r.terminal_flag
        .map_or("none", TerminalFlag::name)
        .to_string()
}

/// Executed calls binned 0 / 1–2 / 3–5 / 6+.
pub fn calls_bin(calls: u32) -> &'static str {
    match calls {
        0 => "0",
        1..=2 => "1-2",
        3..=5 => "3-5",
        _ => "6+",
    }
}

fn shape(r: &EpisodeRow) -> String {
    format!("{}|{}", calls_bin(r.calls), r.stop_reason)
}

fn termination_aware(r: &EpisodeRow) -> String {
    match r.terminal_flag {
        Some(
            flag @ (TerminalFlag::Truncation
            | TerminalFlag::BudgetOrCallLimit
            | TerminalFlag::TurnLimit
            | TerminalFlag::Infeasibility),
        ) => flag.name().to_string(),
        _ => first_unmet(r),
    }
}

/// The lanes the packets may come from.
const LANES: [Menu; 2] = [Menu::Routed, Menu::Fixed];

/// The `decoders` analysis kind.
pub struct Decoders;

/// The one completion cap of the episodes (the manifest refuses a study of several
/// caps whose decoders name none, so several here means rows of another design).
fn single_cap(episodes: &[EpisodeRow]) -> Result<u32, AnalysisError> {
    let caps: BTreeSet<u32> = episodes.iter().map(|r| r.completion_cap).collect();
    match caps.iter().collect::<Vec<_>>().as_slice() {
        [cap] => Ok(**cap),
        _ => Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: format!(
                "the episodes hold {} completion caps and `completion_cap` names none",
                caps.len()
            ),
        }),
    }
}

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The menu lane the packets come from (default `routed`).
    #[serde(default)]
    pub lane: Option<String>,
    /// The completion cap (default: the study's, when it runs one; a study of several
    /// caps must name one, which the manifest checks).
    #[serde(default)]
    pub completion_cap: Option<u32>,
    /// Bootstrap draws (default 10,000).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default 20261202).
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Typed for Decoders {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "decoders/2";
    const OUTPUTS: &'static [&'static str] = &[
        DecodersRow::TABLE,
        DecoderGainsRow::TABLE,
        DecoderPacketsRow::TABLE,
        DecoderMultiRow::TABLE,
    ];

    fn check(params: &Params) -> Vec<ParamProblem> {
        check_draws(params.draws).into_iter().collect()
    }

    fn needs(design: &Design) -> Option<String> {
        let has = |(v, w, d): (u32, Workflow, Encoding)| {
            design
                .cells
                .iter()
                .any(|c| u32::from(c.v) == v && c.w == w && c.d == d && c.depth.is_none())
        };
        let missing: Vec<String> = std::iter::once(BASELINE)
            .chain(STRESSED)
            .filter(|c| !has(*c))
            .map(|(v, w, d)| format!("({v}, {w}, {d})"))
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "it needs the baseline cell (8, low, raw) and the single-stress endpoint \
                 cells; the manifest lacks {}",
                missing.join(", ")
            )
        })
    }

    fn check_names(params: &Params, names: &Names<'_>) -> Vec<ParamProblem> {
        let lanes = LANES.map(Menu::name);
        let lanes = lanes.iter().map(String::as_str);
        let mut out: Vec<ParamProblem> = (params.lane.as_deref())
            .and_then(|lane| needs::among("lane", "lane", lane, lanes, "the lanes"))
            .into_iter()
            .collect();
        match params.completion_cap {
            Some(cap) => out.extend(names.completion_cap("completion_cap", cap)),
            None => out.extend(names.single_cap("completion_cap").err()),
        }
        out
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let lane = match params.lane.as_deref() {
            None => Menu::Routed,
            Some(name) => name
                .parse::<Menu>()
                .map_err(|e| AnalysisError::InvalidParameter {
                    analysis: KIND,
                    detail: e.to_string(),
                })?,
        };
        let cap = match params.completion_cap {
            Some(cap) => cap,
            None => single_cap(input.episodes)?,
        };
        let draws = params.draws.unwrap_or(DEFAULT_DRAWS);
        let seed = params.seed.unwrap_or(DEFAULT_SEED);
        let packets = packets(input.episodes, lane, cap);
        if packets.labelled.is_empty() {
            return Err(AnalysisError::MissingData {
                analysis: KIND,
                detail: format!(
                    "no packet in lane {lane} at cap {cap}: no configuration × family whose \
                     baseline (8, low, raw) succeeds and exactly one single-stress cell fails"
                ),
            });
        }
        let scores = score(&packets.labelled, draws, seed);
        Ok(vec![
            Output::of(&decoders_rows(&scores, &lane.name(), cap, draws, seed))?,
            Output::of(&gains(&scores, draws, seed))?,
            Output::of(&packets_rows(&packets, &lane.name(), cap))?,
            Output::of(&multi_rows(&multi(&packets)))?,
        ]
        .into())
    }
}

/// A labelled packet: its intent (the fold), its label (index into [`LABELS`]) and
/// the failing stressed row.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    /// The intent.
    pub intent: &'a str,
    /// Index into [`LABELS`].
    pub label: usize,
    /// The failing stressed row.
    pub row: &'a EpisodeRow,
}

/// The packets of a lane and cap, and what was left out.
#[derive(Debug, Default)]
pub struct Packets<'a> {
    /// Exactly one stressed cell failed.
    pub labelled: Vec<Packet<'a>>,
    /// More than one stressed cell failed: every failing stressed row, labelled by its
    /// cell.
    pub multi: Vec<Packet<'a>>,
    /// Packets with more than one failure.
    pub n_multi: u32,
    /// Packets with an infrastructure failure.
    pub n_infra: u32,
    /// Packets whose baseline failed.
    pub n_baseline_failed: u32,
    /// Packets with no failing stressed cell.
    pub n_no_failure: u32,
    /// Packets missing one of the four rows.
    pub n_incomplete: u32,
}

/// Groups the rows of `lane` at `cap` into packets (see the module doc).
pub fn packets<'a>(episodes: &'a [EpisodeRow], lane: Menu, cap: u32) -> Packets<'a> {
    type Key<'a> = (&'a str, &'a str, u32);
    let cell = |r: &EpisodeRow| -> Option<usize> {
        let at = |(v, w, d): (u32, Workflow, Encoding)| r.v == v && r.w == w && r.d == d;
        if r.depth.is_some() || r.r != Routing::Low {
            None
        } else if at(BASELINE) {
            Some(0)
        } else {
            STRESSED.iter().position(|c| at(*c)).map(|i| i + 1)
        }
    };
    let mut groups: BTreeMap<Key<'a>, [Option<&'a EpisodeRow>; 4]> = BTreeMap::new();
    for r in episodes {
        if r.lane != lane || r.completion_cap != cap {
            continue;
        }
        if let Some(i) = cell(r) {
            groups
                .entry((r.configuration.as_str(), r.family.as_str(), r.repeat))
                .or_default()[i] = Some(r);
        }
    }
    let mut out = Packets::default();
    for rows in groups.values() {
        let [Some(base), Some(v), Some(w), Some(d)] = *rows else {
            out.n_incomplete += 1;
            continue;
        };
        let stressed = [v, w, d];
        if rows.iter().flatten().any(|r| r.infra_failure) {
            out.n_infra += 1;
        } else if !base.vts {
            out.n_baseline_failed += 1;
        } else {
            let failed: Vec<usize> = (0..3).filter(|&i| !stressed[i].vts).collect();
            let packet = |i: usize| Packet {
                intent: stressed[i].intent.as_str(),
                label: i,
                row: stressed[i],
            };
            match failed.as_slice() {
                [] => out.n_no_failure += 1,
                [one] => out.labelled.push(packet(*one)),
                many => {
                    out.n_multi += 1;
                    out.multi.extend(many.iter().map(|&i| packet(i)));
                }
            }
        }
    }
    out
}

/// A fitted lookup table: tuple → label, and the prior for unseen tuples.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Majority label per tuple.
    pub by_tuple: BTreeMap<String, usize>,
    /// The training packets' majority label.
    pub prior: usize,
}

/// The majority of `counts`, ties to the earliest label.
fn majority(counts: &[u32; 3]) -> usize {
    let mut best = 0;
    for i in 1..3 {
        if counts[i] > counts[best] {
            best = i;
        }
    }
    best
}

/// Fits the table on `(tuple, label)` pairs.
pub fn fit<'t>(training: impl IntoIterator<Item = (&'t str, usize)>) -> Table {
    let mut counts: BTreeMap<String, [u32; 3]> = BTreeMap::new();
    let mut prior = [0u32; 3];
    for (tuple, label) in training {
        counts.entry(tuple.to_string()).or_default()[label] += 1;
        prior[label] += 1;
    }
    Table {
        by_tuple: counts
            .iter()
            .map(|(t, c)| (t.clone(), majority(c)))
            .collect(),
        prior: majority(&prior),
    }
}

/// The table's label for a tuple.
pub fn predict(table: &Table, tuple: &str) -> usize {
    table.by_tuple.get(tuple).copied().unwrap_or(table.prior)
}

/// Out-of-fold predictions of one feature set: one per packet, each fitted without
/// its intent.
pub fn out_of_fold(packets: &[Packet<'_>], features: fn(&EpisodeRow) -> String) -> Vec<usize> {
    let tuples: Vec<String> = packets.iter().map(|p| features(p.row)).collect();
    let intents: BTreeSet<&str> = packets.iter().map(|p| p.intent).collect();
    let mut predicted = vec![0; packets.len()];
    for held in intents {
        let table = fit(packets
            .iter()
            .zip(&tuples)
            .filter(|(p, _)| p.intent != held)
            .map(|(p, t)| (t.as_str(), p.label)));
        for (i, p) in packets.iter().enumerate() {
            if p.intent == held {
                predicted[i] = predict(&table, &tuples[i]);
            }
        }
    }
    predicted
}

/// Per-class recall (NaN for a class with no packet) and their mean over the classes
/// that have packets, from (label, predicted, weight) triples.
pub fn balanced_accuracy(
    outcomes: impl IntoIterator<Item = (usize, usize, f64)>,
) -> (f64, [f64; 3]) {
    let mut hit = [0.0; 3];
    let mut n = [0.0; 3];
    for (label, predicted, weight) in outcomes {
        n[label] += weight;
        if predicted == label {
            hit[label] += weight;
        }
    }
    let recall = [0, 1, 2].map(|i| if n[i] > 0.0 { hit[i] / n[i] } else { f64::NAN });
    let present: Vec<f64> = recall.iter().copied().filter(|r| r.is_finite()).collect();
    let ba = if present.is_empty() {
        f64::NAN
    } else {
        present.iter().sum::<f64>() / present.len() as f64
    };
    (ba, recall)
}

/// One feature set's score.
#[derive(Debug, Clone)]
pub struct Score {
    /// The feature set.
    pub name: FeatureSet,
    /// Whether it reads the treatment.
    pub reference: bool,
    /// Balanced accuracy (share).
    pub balanced_accuracy: f64,
    /// Per-class recall.
    pub recall: [f64; 3],
    /// Packets per class.
    pub n: [u32; 3],
    /// Distinct tuples seen.
    pub n_tuples: u32,
    /// Balanced accuracy of each bootstrap draw (intents resampled).
    pub draws: Vec<f64>,
}

/// Scores every feature set with one intent-cluster bootstrap (the same intent draws
/// for every set).
pub fn score(packets: &[Packet<'_>], draws: u32, seed: u64) -> Vec<Score> {
    let intents: Vec<&str> = packets
        .iter()
        .map(|p| p.intent)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let of_intent: Vec<usize> = packets
        .iter()
        .map(|p| intents.iter().position(|i| *i == p.intent).unwrap_or(0))
        .collect();
    // The multiplicity of each intent in each draw, shared by every feature set.
    let mut stream = IndexStream::new(stats::derive_seed(seed, &[KIND, "intents"]));
    let picks: Vec<Vec<f64>> = (0..draws)
        .map(|_| {
            let mut m = vec![0.0; intents.len()];
            for _ in 0..intents.len() {
                m[stream.index(intents.len() as u32)] += 1.0;
            }
            m
        })
        .collect();
    let mut n = [0u32; 3];
    for p in packets {
        n[p.label] += 1;
    }
    FEATURE_SETS
        .iter()
        .map(|(name, reference, features)| {
            let predicted = out_of_fold(packets, *features);
            let outcomes = |weights: &dyn Fn(usize) -> f64| {
                balanced_accuracy(
                    packets
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (p.label, predicted[i], weights(of_intent[i]))),
                )
            };
            let (ba, recall) = outcomes(&|_| 1.0);
            let draws: Vec<f64> = picks.iter().map(|m| outcomes(&|k| m[k]).0).collect();
            let tuples: BTreeSet<String> = packets.iter().map(|p| features(p.row)).collect();
            Score {
                name: *name,
                reference: *reference,
                balanced_accuracy: ba,
                recall,
                n,
                n_tuples: tuples.len() as u32,
                draws,
            }
        })
        .collect()
}

/// The gains of [`COMPARISONS`], Bonferroni over them, from the scores' bootstrap
/// `draws` and `seed`.
pub fn gains(scores: &[Score], draws: u32, seed: u64) -> Vec<DecoderGainsRow> {
    let level = 1.0 - 0.05 / COMPARISONS.len() as f64;
    let get = |name: FeatureSet| scores.iter().find(|s| s.name == name);
    COMPARISONS
        .iter()
        .filter_map(|(set, against)| {
            let (a, b) = (get(*set)?, get(*against)?);
            let mut diffs: Vec<f64> = a
                .draws
                .iter()
                .zip(&b.draws)
                .map(|(x, y)| 100.0 * (x - y))
                .filter(|d| d.is_finite())
                .collect();
            let tail = (1.0 - level) / 2.0;
            let (low, high) = if diffs.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                stats::quantile_pair(&mut diffs, tail, 1.0 - tail)
            };
            Some(DecoderGainsRow {
                feature_set: a.name,
                against: b.name,
                gain_pp: 100.0 * (a.balanced_accuracy - b.balanced_accuracy),
                ci_low_pp: finite(low),
                ci_high_pp: finite(high),
                level,
                comparisons: COMPARISONS.len() as u32,
                draws,
                seed,
            })
        })
        .collect()
}

/// The joint record's decoder (first unmet + terminal flag) on the failing stressed
/// rows of the multi-failure packets, each predicted by the table fitted without its
/// intent: counts per (true pressure, predicted pressure).
pub fn multi(packets: &Packets<'_>) -> BTreeMap<(usize, usize), u32> {
    let features = FEATURE_SETS[2].2;
    let mut out = BTreeMap::new();
    let intents: BTreeSet<&str> = packets.multi.iter().map(|p| p.intent).collect();
    for held in intents {
        let training: Vec<(String, usize)> = packets
            .labelled
            .iter()
            .filter(|p| p.intent != held)
            .map(|p| (features(p.row), p.label))
            .collect();
        let table = fit(training.iter().map(|(t, l)| (t.as_str(), *l)));
        for p in packets.multi.iter().filter(|p| p.intent == held) {
            *out.entry((p.label, predict(&table, &features(p.row))))
                .or_insert(0) += 1;
        }
    }
    out
}

/// A value of the tables: a number that is not finite is null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The `decoders` rows: each feature set's score with its 95% interval.
fn decoders_rows(
    scores: &[Score],
    lane: &str,
    cap: u32,
    draws: u32,
    seed: u64,
) -> Vec<DecodersRow> {
    scores
        .iter()
        .map(|s| {
            let mut d: Vec<f64> = s.draws.iter().copied().filter(|x| x.is_finite()).collect();
            let (low, high) = if d.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                stats::quantile_pair(&mut d, 0.025, 0.975)
            };
            DecodersRow {
                lane: lane.to_string(),
                completion_cap: cap,
                feature_set: s.name,
                reads_treatment: s.reference,
                n_packets: s.n.iter().sum::<u32>(),
                n_v: s.n[0],
                n_w: s.n[1],
                n_d: s.n[2],
                n_tuples: s.n_tuples,
                balanced_accuracy: s.balanced_accuracy,
                ci_low: finite(low),
                ci_high: finite(high),
                recall_v: finite(s.recall[0]),
                recall_w: finite(s.recall[1]),
                recall_d: finite(s.recall[2]),
                draws,
                seed,
            }
        })
        .collect()
}

/// The `decoder_packets` rows: what was labelled and what was left out, and why.
fn packets_rows(p: &Packets<'_>, lane: &str, cap: u32) -> Vec<DecoderPacketsRow> {
    let count = |label: usize| p.labelled.iter().filter(|x| x.label == label).count() as u32;
    [
        (PacketCount::Labelled, p.labelled.len() as u32),
        (PacketCount::LabelledV, count(0)),
        (PacketCount::LabelledW, count(1)),
        (PacketCount::LabelledD, count(2)),
        (PacketCount::ExcludedMultiFailure, p.n_multi),
        (PacketCount::ExcludedInfraFailure, p.n_infra),
        (PacketCount::BaselineFailed, p.n_baseline_failed),
        (PacketCount::NoFailure, p.n_no_failure),
        (PacketCount::Incomplete, p.n_incomplete),
    ]
    .into_iter()
    .map(|(packets, n)| DecoderPacketsRow {
        lane: lane.to_string(),
        completion_cap: cap,
        packets,
        n,
    })
    .collect()
}

/// The `decoder_multi` rows of [`multi`]'s counts.
fn multi_rows(m: &BTreeMap<(usize, usize), u32>) -> Vec<DecoderMultiRow> {
    m.iter()
        .filter_map(|((t, p), n)| {
            Some(DecoderMultiRow {
                pressure: *LABELS.get(*t)?,
                predicted: *LABELS.get(*p)?,
                n_rows: *n,
            })
        })
        .collect()
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
