//! The decoders (paper Table 11, Figure 11): how well each feature set of a failure
//! record recovers the pressure that caused the failure, the paired gains between
//! sets, the packets behind them and the joint record's reading of multi-failure
//! packets — with the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `decoders`, `decoder_gains`, `decoder_packets` and
//! `decoder_multi` tables and their figure, and the paper's values it quotes.
//!
//! Never: computes an estimate or an interval.

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::ReportError;
use super::{absent, table, Tables};

/// The paper's balanced accuracy per feature set: (estimate, low, high), percent.
const PAPER: [(&str, f64, f64, f64); 9] = [
    ("first_unmet", 53.4, 44.6, 60.1),
    ("terminal_flag", 48.5, 43.0, 55.4),
    ("first_unmet+terminal_flag", 48.9, 42.4, 58.9),
    ("first_unmet+terminal_flag+trace_shape", 51.3, 44.8, 57.0),
    ("trace_shape", 52.4, 44.2, 60.2),
    ("call_counts", 54.8, 47.8, 61.3),
    ("obligation_vector", 52.5, 44.3, 62.4),
    ("termination_aware", 54.1, 45.9, 63.2),
    ("menu_size_proxy", 71.8, 60.4, 82.6),
];

/// The paper's packet counts.
const PAPER_PACKETS: [(&str, &str); 6] = [
    ("labelled", "127"),
    ("labelled_v", "87"),
    ("labelled_w", "28"),
    ("labelled_d", "12"),
    ("excluded_multi_failure", "36"),
    ("excluded_infra_failure", "2"),
];

fn paper(set: &str) -> Option<(f64, f64, f64)> {
    PAPER.iter().find(|p| p.0 == set).map(|p| (p.1, p.2, p.3))
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
    match table(tables, "decoder_packets") {
        Some(t) => {
            let (what, n) = (t.text("packets")?, t.int("n")?);
            let mut out = Table::new(
                "Packets; ours beside the paper's (labelled \"paper\").",
                &[
                    ("Packets", Align::Left),
                    ("n", Align::Right),
                    ("Paper", Align::Right),
                ],
            );
            for i in 0..t.len() {
                let published = PAPER_PACKETS
                    .iter()
                    .find(|p| p.0 == what[i])
                    .map_or("—", |p| p.1);
                out.push(vec![
                    what[i].replace('_', " "),
                    format::count(n[i]),
                    published.into(),
                ]);
            }
            s.table(out);
        }
        None => s.note(absent("Packets", "decoder_packets", "decoders")),
    }
    let Some(t) = table(tables, "decoders") else {
        s.note(absent("Balanced accuracy", "decoders", "decoders"));
        return Ok(());
    };
    let set = t.text("feature_set")?;
    let treatment = t.flag("reads_treatment")?;
    let (ba, lo, hi) = (
        t.float("balanced_accuracy")?,
        t.float("ci_low")?,
        t.float("ci_high")?,
    );
    let recall = [
        t.float("recall_v")?,
        t.float("recall_w")?,
        t.float("recall_d")?,
    ];
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
    for i in 0..t.len() {
        let name = if treatment[i] {
            format!("{} (reads the treatment)", set[i])
        } else {
            set[i].clone()
        };
        let published = paper(&set[i]);
        out.push(vec![
            name.clone(),
            format!("{} [{}, {}]", pct(ba[i]), pct(lo[i]), pct(hi[i])),
            pct(recall[0][i]),
            pct(recall[1][i]),
            pct(recall[2][i]),
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
            estimate: 100.0 * ba[i],
            low: 100.0 * lo[i],
            high: 100.0 * hi[i],
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
    if let Some(g) = table(tables, "decoder_gains") {
        let (a, b, gain) = (
            g.text("feature_set")?,
            g.text("against")?,
            g.float("gain_pp")?,
        );
        let (lo, hi, level) = (
            g.float("ci_low_pp")?,
            g.float("ci_high_pp")?,
            g.float("level")?,
        );
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
        for i in 0..g.len() {
            out.push(vec![
                a[i].clone(),
                b[i].clone(),
                format::effect_with_interval(gain[i], lo[i], hi[i]),
                format!("{}%", format::fixed(100.0 * level[i], 0)),
            ]);
        }
        s.table(out);
    }
    if let Some(m) = table(tables, "decoder_multi") {
        let (pressure, predicted, n) =
            (m.text("pressure")?, m.text("predicted")?, m.int("n_rows")?);
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
        for i in 0..m.len() {
            out.push(vec![
                pressure[i].clone(),
                predicted[i].clone(),
                format::count(n[i]),
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
