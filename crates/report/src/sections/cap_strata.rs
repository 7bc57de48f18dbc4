//! The cap studies' configuration section: which configurations the sweep or the
//! crossover runs, and the rule's reading of each one from the capacity study's tables
//! (paper Appendix E; the paper's own choice is quoted beside ours, labelled as the
//! paper's).
//!
//! Owns: the layout of the `sweep_strata` and `crossover_strata` tables in the report
//! (the paper's choice is [`paper::cap_strata`]).
//!
//! Invariants: one table per strata table present, rows as written (by configuration).
//!
//! Never: applies the rule (the analysis did) or computes a share.

use tbb_tables::analyses::cap_strata::{CapStrataRow, CrossoverStrataRow, SweepStrataRow};
use tbb_tables::TableRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::cap_strata as q;
use super::super::ReportError;
use super::{configuration_label, rows, Tables};

/// What the paper's sweep ran.
fn paper_sweep() -> String {
    format!(
        "The paper's sweep ran {} configurations: {} in B (every panel configuration with \
         at least {} truncation at V = 128), {} in M and {} in N.",
        q::SWEEP_CONFIGURATIONS.text(),
        q::SWEEP_B.text(),
        q::SWEEP_B_RULE.text(),
        q::SWEEP_M.text(),
        q::SWEEP_N.text()
    )
}

/// What the paper's crossover ran.
fn paper_crossover() -> String {
    format!(
        "The paper's crossover ran {} configurations: {} in B, {} in S and {} in N.",
        q::CROSSOVER_CONFIGURATIONS.text(),
        q::CROSSOVER_B.text(),
        q::CROSSOVER_S.text(),
        q::CROSSOVER_N.text()
    )
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "The configurations are chosen by rule from the capacity study's V = 128 \
         truncation share and menu effect on the routed menu at the frozen cap, read \
         from its tables (pinned by hash in this study's lockfile). Where a stratum has \
         more candidates than it takes, a fixed-seed draw (the candidate rank) decides.",
    )]);
    if let Some(rows) = rows::<SweepStrataRow>(tables)? {
        strata_table(s, SweepStrataRow::TABLE, &paper_sweep(), &rows, |x| {
            x.name()
        });
    }
    if let Some(rows) = rows::<CrossoverStrataRow>(tables)? {
        strata_table(
            s,
            CrossoverStrataRow::TABLE,
            &paper_crossover(),
            &rows,
            |x| x.name(),
        );
    }
    Ok(())
}

/// The sentence and table of one strata table; `stratum_name` names its level.
fn strata_table<S: Copy>(
    s: &mut Section,
    name: &str,
    paper: &str,
    rows: &[CapStrataRow<S>],
    stratum_name: fn(S) -> &'static str,
) {
    let runs = rows.iter().filter(|r| r.selected).count() as u64;
    s.paragraph(vec![text(format!(
        "The rule selects {} of {} capacity configurations. {paper}",
        format::count(runs),
        format::count(rows.len() as u64),
    ))]);
    let mut table = Table::new(
        format!("Configuration strata ({name})."),
        &[
            ("Configuration", Align::Left),
            ("V = 128 episodes", Align::Right),
            ("Truncated", Align::Right),
            ("Share", Align::Right),
            ("V effect (pp)", Align::Right),
            ("Stratum", Align::Left),
            ("Rank", Align::Right),
            ("Runs", Align::Left),
        ],
    );
    for r in rows {
        table.push(vec![
            configuration_label(&r.configuration),
            format::count(u64::from(r.upstream_episodes)),
            format::count(u64::from(r.upstream_truncated)),
            r.truncated_share
                .filter(|x| !x.is_nan())
                .map_or_else(|| "—".into(), format::percent),
            r.v_effect_pp
                .filter(|x| !x.is_nan())
                .map_or_else(|| "—".into(), format::effect_pp),
            r.stratum
                .map_or_else(|| "—".into(), |x| stratum_name(x).to_string()),
            r.candidate_rank
                .map_or_else(|| "—".into(), |k| format::count(u64::from(k))),
            match (r.selected, r.in_study) {
                (true, true) => "yes".into(),
                (false, false) => String::new(),
                (true, false) => "selected, not run".into(),
                (false, true) => "run, not selected".into(),
            },
        ]);
    }
    s.table(table);
}
