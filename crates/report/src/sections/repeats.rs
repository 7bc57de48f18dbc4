//! The repeats section: pass@1, pass^k and run-to-run disagreement per configuration,
//! whenever a study runs its conditions more than once.
//!
//! Owns: the layout of the `repeats` table in the report.
//!
//! Never: computes a statistic (the `repeats` analysis does).

use tbb_tables::analyses::repeats::RepeatsRow;

use super::super::paper::{cap_studies, sentinel, Quote};
use super::{configuration_label, rows, Tables};
use crate::document::{text, Align, Section, Table};
use crate::format;
use crate::ReportError;

/// Fills the repeats section: one table per completion cap of a study whose groups ran
/// more than once; a study run once gets a sentence saying so.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(rows) = rows::<RepeatsRow>(tables)? else {
        return Ok(());
    };
    if rows.iter().all(|r| r.runs_max < 2) {
        s.paragraph(vec![text(
            "Every condition ran once: pass^k for k above 1 and run-to-run disagreement \
             need repeats.",
        )]);
        return Ok(());
    }
    let mut caps: Vec<u32> = rows.iter().map(|r| r.completion_cap).collect();
    caps.dedup();
    for cap in caps {
        let at: Vec<&RepeatsRow> = rows.iter().filter(|r| r.completion_cap == cap).collect();
        let most = at.iter().map(|r| r.pass_hat_k.len()).max().unwrap_or(0);
        let mut table = Table::new(
            format!(
                "Repeats at a {} completion cap: success on one run (pass@1), the chance \
                 that k runs of a condition all succeed (pass^k, over each configuration's \
                 conditions, k up to its fewest runs of one), and the share of conditions \
                 run more than once whose runs disagree.",
                format::count(u64::from(cap))
            ),
            &[
                ("Configuration", Align::Left),
                ("Conditions", Align::Right),
                ("Runs", Align::Right),
                ("pass@1", Align::Right),
            ],
        );
        for k in 2..=most {
            table.push_column(format!("pass^{k}"), Align::Right);
        }
        table.push_column("Disagreement", Align::Right);
        for r in at {
            let runs = if r.runs_min == r.runs_max {
                format!(
                    "{} ({} each)",
                    format::count(u64::from(r.n_runs)),
                    r.runs_min
                )
            } else {
                format!(
                    "{} ({}–{} each)",
                    format::count(u64::from(r.n_runs)),
                    r.runs_min,
                    r.runs_max
                )
            };
            let mut cells = vec![
                configuration_label(&r.configuration),
                format::count(u64::from(r.n_groups)),
                runs,
                format::percent(r.pass_at_1),
            ];
            for k in 2..=most {
                cells.push(
                    r.pass_hat_k
                        .get(k - 1)
                        .map_or_else(|| "—".into(), |&p| format::percent(p)),
                );
            }
            cells.push(r.disagreement.map_or_else(|| "—".into(), format::percent));
            table.push(cells);
        }
        s.table(table);
    }
    s.table(paper_table());
    Ok(())
}

/// The paper's repeat figures: its sentinel pairs' pass@1, all-runs, any-run and
/// disagreement, and the disagreement of the sweep's and the crossover's repeats.
fn paper_table() -> Table {
    let mut table = Table::new(
        "The paper's repeat figures, for comparison with the tables above (its sentinel \
         pairs ran three times; its sweep and crossover twice per arm).",
        &[
            ("Paper", Align::Left),
            ("pass@1", Align::Right),
            ("All runs succeed", Align::Right),
            ("Any run succeeds", Align::Right),
            ("Disagreement", Align::Right),
        ],
    );
    for (label, quotes) in paper_rows() {
        let mut cells = vec![label];
        cells.extend(
            quotes
                .iter()
                .map(|q| q.map_or_else(|| format::MISSING.to_string(), |q| q.text())),
        );
        table.push(cells);
    }
    table
}

/// Each paper row: its label and its pass@1, all-runs, any-run and disagreement quotes.
fn paper_rows() -> [(String, [Option<Quote>; 4]); 4] {
    let crossover_at = |cap: Quote| format!("paper: crossover, at {} tokens", cap.text());
    [
        (
            format!("paper: sentinel pairs, {} runs", sentinel::RUNS_EACH.text()),
            [
                Some(sentinel::PASS_AT_1),
                Some(sentinel::ALL_RUNS),
                Some(sentinel::ANY_RUN),
                Some(sentinel::DISAGREEMENT),
            ],
        ),
        (
            "paper: sweep, at the frozen cap".to_string(),
            [None, None, None, Some(cap_studies::SWEEP_DISAGREEMENT_LOW)],
        ),
        (
            crossover_at(cap_studies::CROSSOVER_LOW_CAP),
            [
                None,
                None,
                None,
                Some(cap_studies::CROSSOVER_DISAGREEMENT_LOW),
            ],
        ),
        (
            crossover_at(cap_studies::CROSSOVER_HIGH_CAP),
            [
                None,
                None,
                None,
                Some(cap_studies::CROSSOVER_DISAGREEMENT_HIGH),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{rendered, section};
    use tbb_analysis::common::design::testing::row;
    use tbb_analysis::repeats::Repeats;

    /// The section, rendered from the analysis's table: two configurations, three
    /// repeats of two conditions each, at one cap.
    #[test]
    fn the_repeats_section() {
        let mut episodes = Vec::new();
        for (config, outcomes) in [
            ("sim-a", [[true, true, true], [true, false, true]]),
            ("sim-b", [[false, false, true], [true, true, true]]),
        ] {
            for (variant, runs) in ["v1", "v2"].into_iter().zip(outcomes) {
                for (repeat, ok) in runs.into_iter().enumerate() {
                    let mut e = row(config, "Org", "f", "i", 8, "low", "raw", ok);
                    e.variant_id = variant.into();
                    e.repeat = repeat as u32;
                    episodes.push(e);
                }
            }
        }
        let r = rendered(&Repeats, "s", &episodes, "{}");
        let shown = section(&r, "## Repeats");
        for (label, quotes) in super::paper_rows() {
            let line = shown
                .lines()
                .find(|l| l.starts_with(&format!("| {label}")))
                .unwrap_or_else(|| panic!("no row {label}: {shown}"));
            for q in quotes.into_iter().flatten() {
                assert!(line.contains(&q.text()), "{line}: {}", q.name);
            }
        }
        insta::assert_snapshot!(shown);
    }
}
