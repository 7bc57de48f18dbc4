//! `decoders.parquet`, `decoder_gains.parquet`, `decoder_packets.parquet` and
//! `decoder_multi.parquet`, written by the `decoders` analysis: can a failure record
//! say which pressure (V, W or D) caused the failure?

use serde::{Deserialize, Serialize};

use crate::TableRow;

/// A feature set of the failing row that a decoder maps to a pressure (published by
/// these names, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FeatureSet {
    /// The first unmet obligation.
    #[serde(rename = "first_unmet")]
    FirstUnmet,
    /// The terminal flag.
    #[serde(rename = "terminal_flag")]
    TerminalFlag,
    /// Both (the paper's joint record).
    #[serde(rename = "first_unmet+terminal_flag")]
    FirstUnmetAndTerminalFlag,
    /// Both with the trace shape.
    #[serde(rename = "first_unmet+terminal_flag+trace_shape")]
    FirstUnmetTerminalFlagAndTraceShape,
    /// Executed calls binned 0 / 1–2 / 3–5 / 6+ and the recorded stop reason.
    #[serde(rename = "trace_shape")]
    TraceShape,
    /// Executed calls binned.
    #[serde(rename = "call_counts")]
    CallCounts,
    /// The nine obligation verdicts.
    #[serde(rename = "obligation_vector")]
    ObligationVector,
    /// The harness limit that fired where one did, else the first unmet obligation.
    #[serde(rename = "termination_aware")]
    TerminationAware,
    /// The failure record (first unmet obligation, terminal flag) with the menu size
    /// revealed: reads the treatment, a reference rather than a diagnostic.
    #[serde(rename = "menu_size_proxy")]
    MenuSizeProxy,
}

/// A pressure a packet is labelled with (and a decoder predicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Pressure {
    /// The menu size (128, low, raw).
    V,
    /// The workflow (8, high, raw).
    W,
    /// The returned state's encoding (8, low, linked).
    D,
}

/// One row of `decoders`: one feature set's out-of-fold decoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodersRow {
    /// The menu lane the packets come from.
    pub lane: String,
    /// The completion cap the packets come from.
    pub completion_cap: u32,
    /// The feature set.
    pub feature_set: FeatureSet,
    /// Whether the set reads the treatment (a reference, not a diagnostic).
    pub reads_treatment: bool,
    /// Labelled packets (`n_v + n_w + n_d`).
    pub n_packets: u32,
    /// Packets labelled V.
    pub n_v: u32,
    /// Packets labelled W.
    pub n_w: u32,
    /// Packets labelled D.
    pub n_d: u32,
    /// Distinct feature tuples among the packets.
    pub n_tuples: u32,
    /// Mean recall over the pressures that have packets (share; NaN with none).
    pub balanced_accuracy: f64,
    /// 95% intent-cluster percentile interval, low end (share); null when no draw is
    /// finite.
    pub ci_low: Option<f64>,
    /// High end of the same interval.
    pub ci_high: Option<f64>,
    /// Recall of V (share); null without a V packet.
    pub recall_v: Option<f64>,
    /// Recall of W; null without a W packet.
    pub recall_w: Option<f64>,
    /// Recall of D; null without a D packet.
    pub recall_d: Option<f64>,
    /// Bootstrap draws.
    pub draws: u32,
    /// Bootstrap seed.
    pub seed: u64,
}

impl TableRow for DecodersRow {
    const TABLE: &'static str = "decoders";
}

/// One row of `decoder_gains`: one exploratory paired comparison of two feature sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecoderGainsRow {
    /// The set.
    pub feature_set: FeatureSet,
    /// The set it is compared with.
    pub against: FeatureSet,
    /// Difference in balanced accuracy, percentage points.
    pub gain_pp: f64,
    /// Bonferroni-adjusted percentile interval (the same intent draws for both sets),
    /// low end, pp; null when no draw is finite.
    pub ci_low_pp: Option<f64>,
    /// High end of the same interval, pp.
    pub ci_high_pp: Option<f64>,
    /// The interval's level (`1 − 0.05 / comparisons`).
    pub level: f64,
    /// The number of comparisons the level is adjusted for.
    pub comparisons: u32,
    /// Bootstrap draws.
    pub draws: u32,
    /// Bootstrap seed.
    pub seed: u64,
}

impl TableRow for DecoderGainsRow {
    const TABLE: &'static str = "decoder_gains";
}

/// Which packets a `decoder_packets` row counts (published in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketCount {
    /// Exactly one stressed cell failed: the decoders' packets.
    Labelled,
    /// Of which labelled V.
    LabelledV,
    /// Of which labelled W.
    LabelledW,
    /// Of which labelled D.
    LabelledD,
    /// More than one stressed cell failed (read by `decoder_multi` only).
    ExcludedMultiFailure,
    /// Some row failed for infrastructure reasons.
    ExcludedInfraFailure,
    /// The baseline cell failed.
    BaselineFailed,
    /// No stressed cell failed.
    NoFailure,
    /// One of the four rows is missing.
    Incomplete,
}

/// One row of `decoder_packets`: how many configuration × family × repeat packets of
/// the lane and cap fall in one class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecoderPacketsRow {
    /// The menu lane.
    pub lane: String,
    /// The completion cap.
    pub completion_cap: u32,
    /// Which packets.
    pub packets: PacketCount,
    /// How many.
    pub n: u32,
}

impl TableRow for DecoderPacketsRow {
    const TABLE: &'static str = "decoder_packets";
}

/// One row of `decoder_multi`: the joint record's decoder (first unmet obligation and
/// terminal flag, fitted without the row's intent) on the failing stressed rows of the
/// multi-failure packets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecoderMultiRow {
    /// The failing row's cell's pressure.
    pub pressure: Pressure,
    /// The decoder's prediction.
    pub predicted: Pressure,
    /// Failing rows with this (pressure, prediction).
    pub n_rows: u32,
}

impl TableRow for DecoderMultiRow {
    const TABLE: &'static str = "decoder_multi";
}
