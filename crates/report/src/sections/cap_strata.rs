//! The cap studies' configuration section: which configurations the sweep or the
//! crossover runs, and the rule's reading of each one from the capacity study's tables
//! (paper Appendix E; the paper's own choice is quoted beside ours, labelled as the
//! paper's).
//!
//! Owns: the layout of the `sweep_strata` and `crossover_strata` tables in the report.
//!
//! Invariants: one table per strata table present, rows as written (by configuration).
//!
//! Never: applies the rule (the analysis did) or computes a share.

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{configuration_label, table, Tables};

/// `(table, what the paper ran)` for each strata table.
const STUDIES: [(&str, &str); 2] = [
    (
        "sweep_strata",
        "The paper's sweep ran 8 configurations: 6 in B (every panel configuration with \
         at least 20% truncation at V = 128), 1 in M and 1 in N.",
    ),
    (
        "crossover_strata",
        "The paper's crossover ran 4 configurations: 2 in B, 1 in S and 1 in N.",
    ),
];

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "The configurations are chosen by rule from the capacity study's V = 128 \
         truncation share and menu effect on the routed menu at the frozen cap, read \
         from its tables (pinned by hash in this study's lockfile). Where a stratum has \
         more candidates than it takes, a fixed-seed draw (the candidate rank) decides.",
    )]);
    for (name, paper) in STUDIES {
        let Some(t) = table(tables, name) else {
            continue;
        };
        let configuration = t.text("configuration")?;
        let (episodes, truncated) = (t.int("upstream_episodes")?, t.int("upstream_truncated")?);
        let (share, effect) = (t.float("truncated_share")?, t.float("v_effect_pp")?);
        let (stratum, rank) = (t.text_opt("stratum")?, t.int_opt("candidate_rank")?);
        let (selected, in_study) = (t.flag("selected")?, t.flag("in_study")?);
        let runs = selected.iter().filter(|&&s| s).count() as u64;
        s.paragraph(vec![text(format!(
            "The rule selects {} of {} capacity configurations. {paper}",
            format::count(runs),
            format::count(configuration.len() as u64),
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
        for i in 0..configuration.len() {
            table.push(vec![
                configuration_label(&configuration[i]),
                format::count(episodes[i]),
                format::count(truncated[i]),
                if share[i].is_nan() {
                    "—".into()
                } else {
                    format::percent(share[i])
                },
                if effect[i].is_nan() {
                    "—".into()
                } else {
                    format::effect_pp(effect[i])
                },
                stratum[i].clone().unwrap_or_else(|| "—".into()),
                rank[i].map_or_else(|| "—".into(), format::count),
                match (selected[i], in_study[i]) {
                    (true, true) => "yes".into(),
                    (false, false) => String::new(),
                    (true, false) => "selected, not run".into(),
                    (false, true) => "run, not selected".into(),
                },
            ]);
        }
        s.table(table);
    }
    Ok(())
}
