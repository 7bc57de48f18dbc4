//! The decoders (paper Table 11, Figure 11): how well each feature set of a failure
//! record recovers the pressure that caused the failure, the paired gains between
//! sets, the packets behind them and the joint record's reading of multi-failure
//! packets — with the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `decoders`, `decoder_gains`, `decoder_packets` and
//! `decoder_multi` tables and their figure, and the paper's values it quotes.
//!
//! Never: computes an estimate or an interval.

use tbb_tables::analyses::decoders::{
    DecoderGainsRow, DecoderMultiRow, DecoderPacketsRow, DecodersRow, FeatureSet, PacketCount,
};
use tbb_tables::levels::level_name;

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::ReportError;
use super::{absent, rows, Tables};

/// The paper's balanced accuracy per feature set: (estimate, low, high), percent.
const PAPER: [(FeatureSet, f64, f64, f64); 9] = [
    (FeatureSet::FirstUnmet, 53.4, 44.6, 60.1),
    (FeatureSet::TerminalFlag, 48.5, 43.0, 55.4),
    (FeatureSet::FirstUnmetAndTerminalFlag, 48.9, 42.4, 58.9),
    (
        FeatureSet::FirstUnmetTerminalFlagAndTraceShape,
        51.3,
        44.8,
        57.0,
    ),
    (FeatureSet::TraceShape, 52.4, 44.2, 60.2),
    (FeatureSet::CallCounts, 54.8, 47.8, 61.3),
    (FeatureSet::ObligationVector, 52.5, 44.3, 62.4),
    (FeatureSet::TerminationAware, 54.1, 45.9, 63.2),
    (FeatureSet::MenuSizeProxy, 71.8, 60.4, 82.6),
];

/// The paper's packet counts.
const PAPER_PACKETS: [(PacketCount, &str); 6] = [
    (PacketCount::Labelled, "127"),
    (PacketCount::LabelledV, "87"),
    (PacketCount::LabelledW, "28"),
    (PacketCount::LabelledD, "12"),
    (PacketCount::ExcludedMultiFailure, "36"),
    (PacketCount::ExcludedInfraFailure, "2"),
];

fn paper(set: FeatureSet) -> Option<(f64, f64, f64)> {
    PAPER.iter().find(|p| p.0 == set).map(|p| (p.1, p.2, p.3))
}

/// A missing value as the formatters' "—".
fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// Fills the decoders section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "A packet is one configuration × family whose baseline cell (8, low, raw) \
         succeeds and exactly one single-stress cell — V (128, low, raw), W (8, high, \
         raw) or D (8, low, linked) — fails; its label is that pressure. Each feature \
         set maps the failing row's exact tuple to the majority label of the packets \
         of the other intents (one fold per intent; ties V, W, D; an unseen tuple gets \
         the training prior). Balanced accuracy is the mean of the recalls (a constant \
         guess scores 33.3%); intervals: 95% intent-cluster bootstrap over the \
         out-of-fold predictions, held fixed. The menu-size proxy reads the treatment: \
         a reference, not a diagnostic.",
    )]);
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
                let published = PAPER_PACKETS
                    .iter()
                    .find(|p| p.0 == r.packets)
                    .map_or("—", |p| p.1);
                out.push(vec![
                    level_name(&r.packets).replace('_', " "),
                    format::count(u64::from(r.n)),
                    published.into(),
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
            published.map_or("—".into(), |(e, l, h)| {
                format!(
                    "{} [{}, {}]",
                    format::fixed(e, 1),
                    format::fixed(l, 1),
                    format::fixed(h, 1)
                )
            }),
        ]);
        labels.push(name);
        ours.push(Some(Whisker {
            estimate: 100.0 * r.balanced_accuracy,
            low: 100.0 * lo,
            high: 100.0 * hi,
        }));
        theirs.push(published.map(|(estimate, low, high)| Whisker {
            estimate,
            low,
            high,
        }));
    }
    s.table(out);
    s.figure(Figure {
        file_name: "report-decoders.svg".into(),
        caption: "Balanced accuracy per feature set with 95% intent-cluster intervals: \
                  this panel's, and the paper's published values (labelled). A constant \
                  guess scores 33.3%."
            .into(),
        svg: figures::dot_whisker(
            "Decoders: balanced accuracy (%)",
            &labels,
            &[
                WhiskerSeries {
                    name: "this panel".into(),
                    values: ours,
                },
                WhiskerSeries {
                    name: "paper (published)".into(),
                    values: theirs,
                },
            ],
            "balanced accuracy, %",
        )?,
    });
    if let Some(gains) = rows::<DecoderGainsRow>(tables)? {
        let mut out = Table::new(
            "Paired gains in balanced accuracy (pp), the same intent draws for both sets; \
             intervals Bonferroni-adjusted over the five exploratory comparisons.",
            &[
                ("Feature set", Align::Left),
                ("Against", Align::Left),
                ("Gain", Align::Right),
                ("Level", Align::Right),
            ],
        );
        for r in &gains {
            out.push(vec![
                level_name(&r.feature_set),
                level_name(&r.against),
                format::effect_with_interval(r.gain_pp, or_nan(r.ci_low_pp), or_nan(r.ci_high_pp)),
                format!("{}%", format::fixed(100.0 * r.level, 0)),
            ]);
        }
        s.table(out);
    }
    if let Some(multi) = rows::<DecoderMultiRow>(tables)? {
        let mut out = Table::new(
            "Descriptive: the joint record's decoder (first unmet obligation and terminal \
             flag) on each failing stressed row of the multi-failure packets, fitted \
             without the row's intent.",
            &[
                ("Pressure", Align::Left),
                ("Predicted", Align::Left),
                ("Rows", Align::Right),
            ],
        );
        for r in &multi {
            out.push(vec![
                level_name(&r.pressure),
                level_name(&r.predicted),
                format::count(u64::from(r.n_rows)),
            ]);
        }
        s.table(out);
    }
    s.note(vec![text(
        "The paper's joint record recovers 1 of its 12 returned-state (D) cases, and \
         termination-aware labels 8.3% of them.",
    )]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use tbb_analysis::capacity::decoders;

    /// The section from the analysis's tables on hand-built packets of three intents.
    #[test]
    fn the_decoders_section() {
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
        let r = super::super::testing::rendered(
            &decoders::Decoders,
            "capacity",
            &episodes,
            r#"{"draws": 100, "seed": 5}"#,
        );
        assert_eq!(r.figures.len(), 1);
        insta::assert_snapshot!(super::super::testing::section(&r, "## Decoders"));
    }
}
