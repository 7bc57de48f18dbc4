//! The first-responses section (paper Table 8, Appendix E): how the first response to
//! a 128-schema request ends when it ends at the completion cap, for the
//! configurations whose usage reports reasoning tokens — this study's counts beside
//! the paper's published ones.
//!
//! Owns: the layout of the `first_responses` table in the report, and the paper's
//! Table 8 values ([`PAPER`]), which are shown only in columns and sentences that say
//! they are the paper's.
//!
//! Invariants: rows in the order written (per completion cap, the pooled row first).
//! The paper's values are constants of this file, never mixed into this study's
//! columns.
//!
//! Never: counts or divides; every number of this study is a cell of the table.

use super::super::document::{code, text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{configuration_label, table, Tables};

/// The paper's Table 8: real providers at the frozen 1,024-token cap.
pub(crate) struct PaperTable8 {
    /// Configurations whose usage reports reasoning tokens.
    pub configurations: u64,
    /// First responses to a 128-schema request that ended at the cap.
    pub cut: u64,
    /// Of those, reasoning tokens only.
    pub reasoning_only: u64,
    /// The paper's printed share of `reasoning_only` in `cut`.
    pub reasoning_only_share: &'static str,
    /// Of those, inside a tool call.
    pub cut_in_tool_call: u64,
    /// Of those, inside visible text.
    pub cut_in_text: u64,
    /// Configurations that never truncate a first response.
    pub never_truncating: u64,
}

/// The paper's published values.
pub(crate) const PAPER: PaperTable8 = PaperTable8 {
    configurations: 9,
    cut: 171,
    reasoning_only: 120,
    reasoning_only_share: "70.2%",
    cut_in_tool_call: 39,
    cut_in_text: 12,
    never_truncating: 5,
};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = table(tables, "first_responses") else {
        return Ok(());
    };
    let (cap, configuration, organization) = (
        t.int("completion_cap")?,
        t.text("configuration")?,
        t.text("organization")?,
    );
    let (configurations, first, infra, cut) = (
        t.int("configurations")?,
        t.int("first_responses")?,
        t.int("infra_failed")?,
        t.int("cut")?,
    );
    let (reasoning, in_call, in_text, empty, never) = (
        t.int("reasoning_only")?,
        t.int("cut_in_tool_call")?,
        t.int("cut_in_text")?,
        t.int("cut_empty")?,
        t.int("never_truncating")?,
    );
    let (cut_share, reasoning_share) = (t.float("cut_share")?, t.float("reasoning_only_share")?);
    s.paragraph(vec![
        text(
            "The first response of every episode whose first request carried 128 tool \
             schemas, for the configurations whose usage payload reports reasoning tokens \
             (a request row with ",
        ),
        code("reasoning_source = \"reported\""),
        text("), every arm and repeat pooled. A response ended at the cap when its finish reason is "),
        code("length"),
        text(
            "; reasoning-only means no visible text, no tool call, and completion tokens \
             that are all reasoning. A first request that failed for infrastructure reasons is \
             counted among the first responses and never as cut.",
        ),
    ]);
    let pooled: Vec<usize> = (0..t.len())
        .filter(|&i| configuration[i] == "all")
        .collect();
    for &i in &pooled {
        s.paragraph(vec![text(format!(
            "This study, completion cap {}: of {} first responses from {} reporting \
             configurations ({} failed for infrastructure reasons), {} ended at the cap \
             ({}): {} ({}) held reasoning tokens only, {} ended inside a tool call, {} \
             inside visible text and {} after no completion token; {} of the {} \
             configurations never truncated a first response.",
            format::count(cap[i]),
            format::count(first[i]),
            format::count(configurations[i]),
            format::count(infra[i]),
            format::count(cut[i]),
            format::percent(cut_share[i]),
            format::count(reasoning[i]),
            format::percent(reasoning_share[i]),
            format::count(in_call[i]),
            format::count(in_text[i]),
            format::count(empty[i]),
            format::count(never[i]),
            format::count(configurations[i]),
        ))]);
    }
    s.paragraph(vec![text(format!(
        "The paper (Table 8, real providers at cap 1,024): {} reporting configurations; \
         {} first responses ended at the cap, {} ({}) reasoning-only, {} inside a tool \
         call and {} inside visible text; {} of the {} never truncate a first response.",
        PAPER.configurations,
        PAPER.cut,
        PAPER.reasoning_only,
        PAPER.reasoning_only_share,
        PAPER.cut_in_tool_call,
        PAPER.cut_in_text,
        PAPER.never_truncating,
        PAPER.configurations,
    ))]);

    let mut compare = Table::new(
        "First responses to a 128-schema request cut at the cap, pooled over the \
         reporting configurations: this study beside the paper's published Table 8 \
         (the paper's column is quoted, not computed).",
        &[
            ("Quantity", Align::Left),
            ("Completion cap", Align::Right),
            ("This study", Align::Right),
            ("Paper (Table 8)", Align::Right),
        ],
    );
    for &i in &pooled {
        let rows: [(&str, String, String); 6] = [
            (
                "Reporting configurations",
                format::count(configurations[i]),
                PAPER.configurations.to_string(),
            ),
            (
                "Cut at the cap",
                format::count(cut[i]),
                PAPER.cut.to_string(),
            ),
            (
                "Reasoning-only",
                format!(
                    "{} ({})",
                    format::count(reasoning[i]),
                    format::percent(reasoning_share[i])
                ),
                format!("{} ({})", PAPER.reasoning_only, PAPER.reasoning_only_share),
            ),
            (
                "Inside a tool call",
                format::count(in_call[i]),
                PAPER.cut_in_tool_call.to_string(),
            ),
            (
                "Inside visible text",
                format::count(in_text[i]),
                PAPER.cut_in_text.to_string(),
            ),
            (
                "Never truncating",
                format::count(never[i]),
                PAPER.never_truncating.to_string(),
            ),
        ];
        for (what, ours, paper) in rows {
            compare.push(vec![what.to_string(), format::count(cap[i]), ours, paper]);
        }
    }
    s.table(compare);

    let mut per = Table::new(
        "First responses to a 128-schema request by reporting configuration (\"all \
         (pooled)\" pools them; shares of the cut are of the responses cut at the cap).",
        &[
            ("Configuration", Align::Left),
            ("Organization", Align::Left),
            ("Cap", Align::Right),
            ("First responses", Align::Right),
            ("Infra failed", Align::Right),
            ("Cut", Align::Right),
            ("Cut share", Align::Right),
            ("Reasoning-only", Align::Right),
            ("Reasoning-only share", Align::Right),
            ("In tool call", Align::Right),
            ("In text", Align::Right),
            ("Empty", Align::Right),
        ],
    );
    for i in 0..t.len() {
        per.push(vec![
            configuration_label(&configuration[i]),
            organization[i].clone(),
            format::count(cap[i]),
            format::count(first[i]),
            format::count(infra[i]),
            format::count(cut[i]),
            format::percent(cut_share[i]),
            format::count(reasoning[i]),
            format::percent(reasoning_share[i]),
            format::count(in_call[i]),
            format::count(in_text[i]),
            format::count(empty[i]),
        ]);
    }
    s.table(per);
    Ok(())
}
