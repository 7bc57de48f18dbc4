//! The decoders (paper Table 11, Figure 11): how well each feature set of a failure
//! record recovers the pressure that caused the failure, the paired gains between
//! sets, the packets behind them and the joint record's reading of multi-failure
//! packets — with the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `decoders`, `decoder_gains`, `decoder_packets` and
//! `decoder_multi` tables and their figure, and which row each of the paper's
//! decoder values ([`paper::decoders`]) stands beside: a "Paper" column in every
//! table, labelled "paper" rows for the comparisons and totals the analysis does not
//! write, and black diamonds on the figure.
//!
//! Never: computes an estimate or an interval.

use tbb_tables::analyses::decoders::{
    DecoderGainsRow, DecoderMultiRow, DecoderPacketsRow, DecodersRow, FeatureSet, PacketCount,
    Pressure,
};
use tbb_tables::levels::level_name;

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::paper::{decoders as q, Quote};
use super::super::ReportError;
use super::{absent, rows, Tables};

/// The paper's balanced accuracy of `set` (Table 11).
fn paper(set: FeatureSet) -> Quote {
    match set {
        FeatureSet::FirstUnmet => q::FIRST_UNMET,
        FeatureSet::TerminalFlag => q::TERMINAL_FLAG,
        FeatureSet::FirstUnmetAndTerminalFlag => q::JOINT,
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape => q::JOINT_AND_TRACE_SHAPE,
        FeatureSet::TraceShape => q::TRACE_SHAPE,
        FeatureSet::CallCounts => q::CALL_COUNTS,
        FeatureSet::ObligationVector => q::OBLIGATION_VECTOR,
        FeatureSet::TerminationAware => q::TERMINATION_AWARE,
        FeatureSet::MenuSizeProxy => q::MENU_SIZE_PROXY,
    }
}

/// The paper's count of `packets`, where it prints one.
fn paper_packets(packets: PacketCount) -> Option<Quote> {
    match packets {
        PacketCount::Labelled => Some(q::PACKETS),
        PacketCount::LabelledV => Some(q::PACKETS_V),
        PacketCount::LabelledW => Some(q::PACKETS_W),
        PacketCount::LabelledD => Some(q::PACKETS_D),
        PacketCount::ExcludedMultiFailure => Some(q::EXCLUDED_MULTI_FAILURE),
        PacketCount::ExcludedInfraFailure => Some(q::EXCLUDED_INFRA_FAILURE),
        PacketCount::BaselineFailed | PacketCount::NoFailure | PacketCount::Incomplete => None,
    }
}

/// The paper's paired gains (Figure 11): (set, against, gain), the five comparisons the
/// analysis makes too. A study whose decoders lack a set shows the paper's gain for it
/// as a row of its own.
const GAINS_QUOTED: [(FeatureSet, FeatureSet, Quote); 5] = [
    (
        FeatureSet::FirstUnmetAndTerminalFlag,
        FeatureSet::FirstUnmet,
        q::GAIN_JOINT_OVER_FIRST_UNMET,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::FirstUnmetAndTerminalFlag,
        q::GAIN_TRACE_OVER_JOINT,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::CallCounts,
        q::GAIN_TRACE_OVER_CALL_COUNTS,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::FirstUnmet,
        q::GAIN_TRACE_OVER_FIRST_UNMET,
    ),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        FeatureSet::TraceShape,
        q::GAIN_TRACE_OVER_TRACE_SHAPE,
    ),
];

/// A missing value as the formatters' "—".
fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// Fills the decoders section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(format!(
        "A packet is one configuration × family whose baseline cell (8, low, raw) \
         succeeds and exactly one single-stress cell — V (128, low, raw), W (8, high, \
         raw) or D (8, low, linked) — fails; its label is that pressure. Each feature \
         set maps the failing row's exact tuple to the majority label of the packets \
         of the other intents (one fold per intent; ties V, W, D; an unseen tuple gets \
         the training prior). Balanced accuracy is the mean of the recalls (a constant \
         guess scores {}); intervals: 95% intent-cluster bootstrap over the \
         out-of-fold predictions, held fixed. The menu-size proxy reads the treatment: \
         a reference, not a diagnostic.",
        q::CONSTANT_GUESS.text()
    ))]);
    match rows::<DecoderPacketsRow>(tables)? {
        Some(packets) => {
            let mut out = Table::new(
                "Packets; ours beside the paper's (labelled \"paper\").",
                &[
                    ("Packets", Align::Left),
                    ("n", Align::Right),
                    ("Paper", Align::Right),
                ],
            );
            for r in &packets {
                out.push(vec![
                    level_name(&r.packets).replace('_', " "),
                    format::count(u64::from(r.n)),
                    paper_packets(r.packets)
                        .map_or_else(|| format::MISSING.to_string(), |q| q.text()),
                ]);
            }
            s.table(out);
        }
        None => s.note(absent("Packets", "decoder_packets", "decoders")),
    }
    let Some(decoders) = rows::<DecodersRow>(tables)? else {
        s.note(absent("Balanced accuracy", "decoders", "decoders"));
        return Ok(());
    };
    let mut out = Table::new(
        "Balanced accuracy and per-class recall of each feature set (%), ours beside the \
         paper's Table 11 (labelled \"paper\").",
        &[
            ("Feature set", Align::Left),
            ("Balanced accuracy", Align::Right),
            ("Recall V", Align::Right),
            ("Recall W", Align::Right),
            ("Recall D", Align::Right),
            ("Paper", Align::Right),
        ],
    );
    let pct = |x: f64| {
        if x.is_finite() {
            format::fixed(100.0 * x, 1)
        } else {
            "—".into()
        }
    };
    let mut labels = Vec::new();
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for r in &decoders {
        let (lo, hi) = (or_nan(r.ci_low), or_nan(r.ci_high));
        let name = if r.reads_treatment {
            format!("{} (reads the treatment)", level_name(&r.feature_set))
        } else {
            level_name(&r.feature_set)
        };
        let published = paper(r.feature_set);
        out.push(vec![
            name.clone(),
            format!("{} [{}, {}]", pct(r.balanced_accuracy), pct(lo), pct(hi)),
            pct(or_nan(r.recall_v)),
            pct(or_nan(r.recall_w)),
            pct(or_nan(r.recall_d)),
            published.text(),
        ]);
        labels.push(name);
        ours.push(Some(Whisker {
            estimate: 100.0 * r.balanced_accuracy,
            low: 100.0 * lo,
            high: 100.0 * hi,
        }));
        theirs.push(published.whisker());
    }
    s.table(out);
    s.figure(Figure {
        file_name: "report-decoders.svg".into(),
        caption: format!(
            "Balanced accuracy per feature set with 95% intent-cluster intervals: this \
             panel's (dots), and the paper's Table 11 values (black diamonds, legend \
             \"paper\"). A constant guess scores {}.",
            q::CONSTANT_GUESS.text()
        ),
        svg: figures::dot_whisker(
            "Decoders: balanced accuracy (%)",
            &labels,
            &[WhiskerSeries {
                name: "this panel".into(),
                values: ours,
            }],
            &[theirs],
            "balanced accuracy, %",
        )?,
    });
    if let Some(gains) = rows::<DecoderGainsRow>(tables)? {
        let mut out = Table::new(
            "Paired gains in balanced accuracy (pp), the same intent draws for both sets; \
             intervals Bonferroni-adjusted over the five exploratory comparisons. The \
             paper's gains (Figure 11, at its 99% level) are in the \"Paper\" column \
             where it makes the same comparison, and in rows labelled \"paper\" for the \
             comparisons it makes and this analysis does not; the analysis's other \
             comparisons have no paper counterpart.",
            &[
                ("Feature set", Align::Left),
                ("Against", Align::Left),
                ("Gain", Align::Right),
                ("Level", Align::Right),
                ("Paper", Align::Right),
            ],
        );
        for r in &gains {
            let published = GAINS_QUOTED
                .iter()
                .find(|(set, against, _)| *set == r.feature_set && *against == r.against)
                .map_or_else(|| format::MISSING.to_string(), |(_, _, q)| q.text());
            out.push(vec![
                level_name(&r.feature_set),
                level_name(&r.against),
                format::effect_with_interval(r.gain_pp, or_nan(r.ci_low_pp), or_nan(r.ci_high_pp)),
                format!("{}%", format::fixed(100.0 * r.level, 0)),
                published,
            ]);
        }
        for (set, against, quote) in GAINS_QUOTED {
            if !gains
                .iter()
                .any(|r| r.feature_set == set && r.against == against)
            {
                out.push(vec![
                    format!("paper: {}", level_name(&set)),
                    level_name(&against),
                    format::MISSING.to_string(),
                    format::MISSING.to_string(),
                    quote.text(),
                ]);
            }
        }
        s.table(out);
    }
    if let Some(multi) = rows::<DecoderMultiRow>(tables)? {
        let mut out = Table::new(
            "Descriptive: the joint record's decoder (first unmet obligation and terminal \
             flag) on each failing stressed row of the multi-failure packets, fitted \
             without the row's intent. The paper prints its D rows recovered (beside \
             ours, \"Paper\") and its totals (the \"paper\" row), no other cell.",
            &[
                ("Pressure", Align::Left),
                ("Predicted", Align::Left),
                ("Rows", Align::Right),
                ("Paper", Align::Right),
            ],
        );
        let recovered_d = format!(
            "{} (of {} D rows)",
            q::MULTI_RECOVERS_D.text(),
            q::MULTI_D_ROWS.text()
        );
        for r in &multi {
            let d = |p: Pressure| p == Pressure::D;
            out.push(vec![
                level_name(&r.pressure),
                level_name(&r.predicted),
                format::count(u64::from(r.n_rows)),
                if d(r.pressure) && d(r.predicted) {
                    recovered_d.clone()
                } else {
                    format::MISSING.to_string()
                },
            ]);
        }
        if !multi
            .iter()
            .any(|r| r.pressure == Pressure::D && r.predicted == Pressure::D)
        {
            out.push(vec![
                "paper: D".into(),
                "D".into(),
                format::MISSING.to_string(),
                recovered_d,
            ]);
        }
        out.push(vec![
            "paper: every pressure".into(),
            "any".into(),
            format::MISSING.to_string(),
            format!(
                "{} rows, balanced accuracy {}",
                q::MULTI_ROWS.text(),
                q::MULTI_BALANCED_ACCURACY.text()
            ),
        ]);
        s.table(out);
    }
    s.note(vec![text(format!(
        "The paper's joint record recovers {} of its {} returned-state (D) cases, and \
         termination-aware labels {} of them.",
        q::JOINT_RECOVERS_D.text(),
        q::PACKETS_D.text(),
        q::TERMINATION_AWARE_RECALL_D.text()
    ))]);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use tbb_analysis::capacity::decoders;

    /// The report of the analysis's tables on hand-built packets of three intents.
    pub(crate) fn rendered() -> crate::Rendered {
        let mut episodes = Vec::new();
        for (k, ok) in [
            [true, false, true, true],
            [true, true, false, true],
            [true, true, true, false],
            [true, false, false, true],
            [true, false, true, true],
            [true, true, false, true],
        ]
        .iter()
        .enumerate()
        {
            let family = format!("f{k}");
            let intent = format!("i{}", k % 3);
            episodes.extend(decoders::tests::packet("c", &family, &intent, *ok));
        }
        super::super::testing::rendered(
            &decoders::Decoders,
            "capacity",
            &episodes,
            r#"{"draws": 100, "seed": 5}"#,
        )
    }

    /// The section from [`rendered`].
    #[test]
    fn the_decoders_section() {
        let r = rendered();
        assert_eq!(r.figures.len(), 1);
        insta::assert_snapshot!(super::super::testing::section(&r, "## Decoders"));
    }
}
