//! The `report` analysis kind: renders `report.md`, `report.html` and the figures from
//! the tables of every analysis listed before it (the rendering is this crate's),
//! and links a few failing episodes of each configuration to their pages. Beside them
//! the pipeline publishes `episodes.html`, the filterable index of every episode
//! ([`crate::index`]), rendered from the rows when the report is written. (Stored with
//! the analysis, the page was a copy of every row, serialised and read back.)
//!
//! Which episodes: per configuration, at most [`LINKED_PER_CONFIGURATION`] failures,
//! chosen from the episode rows alone — one per terminal flag first (flags in
//! alphabetical order), then the rest, each group ordered by key
//! (`transcript_ref`) — so the choice is a pure function of the rows. The pages are
//! the pipeline's to write (`Produced::episodes`), since they read transcripts; so are
//! the pages of their matched episodes (the same unit, one pressure changed:
//! [`matched_of`]), which each failure's page links to.
//!
//! Never: computes a statistic; it reads the tables and rows it is given.

use std::collections::BTreeMap;

use crate::EpisodeLink;
use tbb_analysis::{AnalysisError, Context, Input, NoParams, Produced, Typed};
use tbb_tables::levels::{Actor, Delivery, Menu, Obligation, PromptVariant, Routing, TerminalFlag};
use tbb_tables::rows::EpisodeRow;

impl From<crate::ReportError> for AnalysisError {
    fn from(e: crate::ReportError) -> AnalysisError {
        AnalysisError::Foreign(tbb_analysis::ForeignDiagnostic(Box::new(e)))
    }
}

/// Failing episodes linked per configuration.
pub const LINKED_PER_CONFIGURATION: usize = 3;

/// The `report` analysis kind.
pub struct Report;

impl Typed for Report {
    type Params = NoParams;
    const NAME: &'static str = "report";
    // 8: links failing episodes to their pages (reads the episodes); 9: tables fit
    // a 1,280-pixel window (wrapping headers, intervals under their estimates), named
    // lines in the truncation figure, and `episodes.html`; 10: the index links every
    // key, those without a published page to `show/`; 11: `episodes.html` is rendered
    // when the report is published, from the rows, not stored with the analysis (a page
    // of every episode is tens of megabytes at four repeats); 12: the repeats section,
    // the cap studies' paper row of repeat disagreement, the paper's prompt repairs on
    // 20 configurations and the baseline's controller calls marked as by construction;
    // 13: the paper's values beside ours in every section that has them (one quotes
    // module; the repeats section's paper table), its points marked on the figures, and
    // the V × W anatomy section; 14: the paper's interval and Holm p share a column (the
    // contrasts table fits the report's column again), and the ToolSandbox section.
    // Bump with the engine's `show::VERSION`, since the pages are published with the
    // report.
    const VERSION: &'static str = "report/14";
    const INPUTS: &'static [Input] = &[Input::EveryAnalysis, Input::Episodes];
    const OUTPUTS: &'static [&'static str] = &[];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let chosen = chosen(input.episodes);
        let links: Vec<EpisodeLink> = chosen.iter().map(|r| link(r)).collect();
        let rendered = crate::render_linked(input.study, input.tables, input.skipped, &links)?;
        // The linked failures' pages, then their matched episodes' (the same unit with
        // one pressure changed), which each failure's page links to.
        let mut episodes: Vec<String> = chosen
            .iter()
            .map(|r| r.transcript_ref.to_string())
            .collect();
        for r in matched_of(input.episodes, &chosen) {
            if !episodes.iter().any(|e| **e == *r.transcript_ref) {
                episodes.push(r.transcript_ref.to_string());
            }
        }
        // `episodes.html` is not among the files: the pipeline renders it when it
        // publishes the report ([`crate::index::render`]), linking these pages.
        Ok(Produced {
            tables: Vec::new(),
            files: rendered.into_files(),
            episodes,
        })
    }
}

/// The failing episodes linked, configuration by configuration in the rows' order.
pub fn chosen(rows: &[EpisodeRow]) -> Vec<&EpisodeRow> {
    let mut by_config: Vec<(&str, Vec<&EpisodeRow>)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| !r.vts && !r.transcript_ref.is_empty())
    {
        match by_config.iter_mut().find(|(c, _)| *c == r.configuration) {
            Some((_, list)) => list.push(r),
            None => by_config.push((&r.configuration, vec![r])),
        }
    }
    let mut out = Vec::new();
    for (_, mut failures) in by_config {
        failures.sort_by(|a, b| a.transcript_ref.cmp(&b.transcript_ref));
        let mut by_flag: BTreeMap<&str, Vec<&EpisodeRow>> = BTreeMap::new();
        for r in &failures {
            by_flag
                .entry(r.terminal_flag.map_or("", TerminalFlag::name))
                .or_default()
                .push(r);
        }
        let mut picked: Vec<&EpisodeRow> = by_flag
            .values()
            .filter_map(|list| list.first().copied())
            .take(LINKED_PER_CONFIGURATION)
            .collect();
        for r in failures {
            if picked.len() >= LINKED_PER_CONFIGURATION {
                break;
            }
            if !picked.iter().any(|p| p.transcript_ref == r.transcript_ref) {
                picked.push(r);
            }
        }
        out.extend(picked);
    }
    out
}

/// Everything of an episode but its cell: rows alike in it are one unit's episodes.
type Unit<'r> = (
    &'r str,
    &'r str,
    &'r str,
    &'r str,
    Menu,
    u32,
    u32,
    PromptVariant,
    Delivery,
    Actor,
);

fn unit(r: &EpisodeRow) -> Unit<'_> {
    (
        &r.configuration,
        &r.family,
        &r.block,
        &r.arm,
        r.lane,
        r.completion_cap,
        r.repeat,
        r.repair,
        r.delivery,
        r.actor,
    )
}

/// The cell's pressures, in the order of the engine's `show::matched::PRESSURES`.
fn pressures(r: &EpisodeRow) -> [String; 5] {
    [
        r.v.to_string(),
        r.w.to_string(),
        r.d.to_string(),
        r.r.to_string(),
        r.depth.map(|d| d.to_string()).unwrap_or_default(),
    ]
}

/// The episodes of the same unit as one of `chosen` whose cell differs from its cell
/// in exactly one pressure, in the rows' order.
pub fn matched_of<'r>(rows: &'r [EpisodeRow], chosen: &[&EpisodeRow]) -> Vec<&'r EpisodeRow> {
    let wanted: Vec<(Unit<'_>, [String; 5])> =
        chosen.iter().map(|c| (unit(c), pressures(c))).collect();
    rows.iter()
        .filter(|r| !r.transcript_ref.is_empty())
        .filter(|r| {
            let (u, p) = (unit(r), pressures(r));
            wanted
                .iter()
                .any(|(wu, wp)| *wu == u && wp.iter().zip(&p).filter(|(a, b)| a != b).count() == 1)
        })
        .collect()
}

fn link(r: &EpisodeRow) -> EpisodeLink {
    let page = tbb_tables::paths::episode_page(&r.transcript_ref);
    let mut what = format!("{}, v={} w={} d={}", r.family, r.v, r.w, r.d);
    if r.r != Routing::Low {
        what.push_str(&format!(" r={}", r.r));
    }
    if let Some(depth) = r.depth {
        what.push_str(&format!(" depth={depth}"));
    }
    what.push_str(&format!(", arm {}, cap {}", r.arm, r.completion_cap));
    EpisodeLink {
        configuration: r.configuration.to_string(),
        key: page.trim_end_matches(".html").to_string(),
        href: format!("episodes/{page}"),
        what,
        failure: format!(
            "{} unmet, {}",
            r.first_unmet.map_or("none", Obligation::name),
            r.terminal_flag.map_or("no flag", TerminalFlag::name)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_analysis::common::design::testing::row;

    fn episode(config: &str, v: u32, w: &str, d: &str, repeat: u32, key: &str) -> EpisodeRow {
        let mut r = row(config, "o", "harbor", "i", v, w, d, false);
        r.repeat = repeat;
        r.transcript_ref = key.into();
        r
    }

    #[test]
    fn matched_episodes_are_the_same_unit_one_pressure_apart() {
        let rows = [
            episode("sim-a", 128, "low", "raw", 0, "chosen"),
            episode("sim-a", 8, "low", "raw", 0, "v8"),
            episode("sim-a", 128, "high", "raw", 0, "high"),
            episode("sim-a", 8, "high", "raw", 0, "two-apart"),
            episode("sim-b", 8, "low", "raw", 0, "other-config"),
            episode("sim-a", 8, "low", "raw", 1, "other-repeat"),
            episode("sim-a", 128, "low", "linked", 0, "linked"),
        ];
        let chosen = [&rows[0]];
        let keys: Vec<&str> = matched_of(&rows, &chosen)
            .iter()
            .map(|r| &*r.transcript_ref)
            .collect();
        assert_eq!(keys, ["v8", "high", "linked"]);
    }
}
