//! The first-responses section (paper Table 8, Appendix E): how the first response to
//! a 128-schema request ends when it ends at the completion cap, for the
//! configurations whose usage reports reasoning tokens — this study's counts beside
//! the paper's published ones.
//!
//! Owns: the layout of the `first_responses` table in the report, and where the
//! paper's Table 8 values ([`paper::first_responses`]) stand: only in columns and
//! sentences that say they are the paper's.
//!
//! Invariants: rows in the order written (per completion cap, the pooled row first).
//! The paper's values are never mixed into this study's columns.
//!
//! Never: counts or divides; every number of this study is a cell of the table.

use tbb_tables::analyses::first_responses::FirstResponsesRow;

use super::super::document::{code, text, Align, Section, Table};
use super::super::format;
use super::super::paper::{first_responses as q, harness};
use super::super::ReportError;
use super::{configuration_label, rows, Tables};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(rows) = rows::<FirstResponsesRow>(tables)? else {
        return Ok(());
    };
    let n = |x: u32| format::count(u64::from(x));
    // A share of nothing is a null in the table, shown as missing.
    let share = |x: Option<f64>| format::percent(x.unwrap_or(f64::NAN));
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
    let pooled: Vec<&FirstResponsesRow> =
        rows.iter().filter(|r| r.configuration == "all").collect();
    for r in &pooled {
        s.paragraph(vec![text(format!(
            "This study, completion cap {}: of {} first responses from {} reporting \
             configurations ({} failed for infrastructure reasons), {} ended at the cap \
             ({}): {} ({}) held reasoning tokens only, {} ended inside a tool call, {} \
             inside visible text and {} after no completion token; {} of the {} \
             configurations never truncated a first response.",
            n(r.completion_cap),
            n(r.first_responses),
            n(r.configurations),
            n(r.infra_failed),
            n(r.cut),
            share(r.cut_share),
            n(r.reasoning_only),
            share(r.reasoning_only_share),
            n(r.cut_in_tool_call),
            n(r.cut_in_text),
            n(r.cut_empty),
            n(r.never_truncating),
            n(r.configurations),
        ))]);
    }
    s.paragraph(vec![text(format!(
        "The paper (Table 8, real providers at cap {}): {} reporting configurations; \
         {} first responses ended at the cap, {} ({}) reasoning-only, {} inside a tool \
         call and {} inside visible text; {} of the {} never truncate a first response. \
         It prints no count of first responses, of infrastructure failures, or of \
         responses cut after no completion token.",
        harness::COMPLETION_CAP.text(),
        q::CONFIGURATIONS.text(),
        q::CUT.text(),
        q::REASONING_ONLY.text(),
        q::REASONING_ONLY_SHARE.text(),
        q::CUT_IN_TOOL_CALL.text(),
        q::CUT_IN_TEXT.text(),
        q::NEVER_TRUNCATING.text(),
        q::CONFIGURATIONS.text(),
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
    for r in &pooled {
        let quantities: [(&str, String, String); 6] = [
            (
                "Reporting configurations",
                n(r.configurations),
                q::CONFIGURATIONS.text(),
            ),
            ("Cut at the cap", n(r.cut), q::CUT.text()),
            (
                "Reasoning-only",
                format!(
                    "{} ({})",
                    n(r.reasoning_only),
                    share(r.reasoning_only_share)
                ),
                format!(
                    "{} ({})",
                    q::REASONING_ONLY.text(),
                    q::REASONING_ONLY_SHARE.text()
                ),
            ),
            (
                "Inside a tool call",
                n(r.cut_in_tool_call),
                q::CUT_IN_TOOL_CALL.text(),
            ),
            (
                "Inside visible text",
                n(r.cut_in_text),
                q::CUT_IN_TEXT.text(),
            ),
            (
                "Never truncating",
                n(r.never_truncating),
                q::NEVER_TRUNCATING.text(),
            ),
        ];
        for (what, ours, paper) in quantities {
            compare.push(vec![what.to_string(), n(r.completion_cap), ours, paper]);
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
    for r in &rows {
        per.push(vec![
            configuration_label(&r.configuration),
            r.organization.clone(),
            n(r.completion_cap),
            n(r.first_responses),
            n(r.infra_failed),
            n(r.cut),
            share(r.cut_share),
            n(r.reasoning_only),
            share(r.reasoning_only_share),
            n(r.cut_in_tool_call),
            n(r.cut_in_text),
            n(r.cut_empty),
        ]);
    }
    s.table(per);
    Ok(())
}
