//! The study report: `report.md` and a self-contained `report.html`, with SVG figures,
//! rendered from the analysis tables.
//!
//! Owns: what the report shows and how — the sections (`sections/`, one file per
//! analysis: contrasts, truncation, strata and bounds, lanes, costs, first responses), number
//! formatting (`format.rs`), the figures (`figures.rs`, drawn with plotters' SVG
//! backend), the paper's values it quotes beside ours (`paper.rs`, the one place they
//! live, each with its citation), and the two writers (`markdown.rs`, `html.rs`) of one format-neutral
//! document (`document.rs`); and the `report`
//! analysis kind ([`kind`]) that renders it as the last analysis of a study. The pipeline owns
//! reading the tables and writing the files: `report.md`, `report.html`, and each
//! of [`Rendered::figures`] under its file name beside them.
//!
//! Invariants:
//! * Deterministic byte for byte: the output is a pure function of the tables — no
//!   clock, no environment, no hash-map order, fixed float formatting — so a report
//!   rendered twice, or on another machine, is identical, and its node can be cached.
//! * Every number shown is a cell of some table (or a count of rows), never a
//!   statistic computed here: the report cannot disagree with the Parquet files. The
//!   one exception is the paper's values, quoted from `paper.rs` and always labelled
//!   as the paper's (a "Paper" column, a "paper" row or figure mark, a sentence that
//!   says so).
//! * A section whose tables are all absent is replaced by a one-line note at the top
//!   (a study need not request every analysis); a part of a section whose table is
//!   absent becomes a note in place. A present table that lacks a column the report
//!   reads, or holds it in another type, is an error naming the table and what does not
//!   fit (each section reads its table's row struct from `tbb_tables`), never a
//!   silently empty section.
//! * `report.html` loads nothing (inline CSS, inline SVG, no JavaScript).
//!
//! Never: reads or writes files, runs analyses, or reaches the network.

mod document;
mod figures;
pub mod format;
pub mod html;
pub mod index;
pub mod kind;
mod markdown;
mod paper;
mod sections;

use std::collections::BTreeMap;

use arrow_array::RecordBatch;

use document::{code, text, Document, Inline};
use sections::SECTIONS;

/// A rendered report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// `report.md`. It references each figure by file name (see `figures`).
    pub markdown: String,
    /// `report.html`, self-contained: the figures are inline.
    pub html: String,
    /// The figures as standalone SVG documents: (file name, SVG text), in report
    /// order. The names (`report-….svg`) are plain file names, meant to be written
    /// beside `report.md`, whose image links point at them.
    pub figures: Vec<(String, String)>,
}

impl Rendered {
    /// Every file of the report, `(file name, text)`, to write side by side under
    /// `outputs/<study>/`: `report.md`, `report.html`, then the figures.
    pub fn into_files(self) -> Vec<(String, String)> {
        let mut files = vec![
            ("report.md".to_string(), self.markdown),
            ("report.html".to_string(), self.html),
        ];
        files.extend(self.figures);
        files
    }
}

/// Why a report could not be rendered.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReportError {
    /// A text or count column holds a null (or a negative count).
    #[error("the {table} table's column {column} has no valid value in row {row}")]
    #[diagnostic(
        code(tbb::report::null_value),
        help("the analyses write no nulls in this column; the table may have been edited by hand")
    )]
    NullValue {
        /// Table name.
        table: String,
        /// Column name.
        column: String,
        /// Row index (from 0).
        row: usize,
    },
    /// A table is not laid out as its row struct says.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Layout(#[from] tbb_tables::StoreError),
    /// plotters failed to draw a figure.
    #[error("drawing the figure {figure:?} failed: {detail}")]
    #[diagnostic(code(tbb::report::figure))]
    Figure {
        /// The figure's title.
        figure: String,
        /// plotters' message.
        detail: String,
    },
}

/// Renders the report of a study from its analysis tables, keyed by table name
/// ("contrasts", "contrasts_by_configuration", "contrasts_sign_flip", "truncation",
/// "truncation_pairs", "truncation_correlation", "strata", "lanes", "costs", ...
/// whichever are present). `skipped` names the analyses the study's design cannot
/// support, with why (`analysis::skipped`): their sections say so instead of asking the
/// reader to add an analysis the manifest already holds.
pub fn render(
    study: &str,
    tables: &BTreeMap<String, RecordBatch>,
    skipped: &[(&str, String)],
) -> Result<Rendered, ReportError> {
    render_linked(study, tables, skipped, &[])
}

/// A failing episode the report links to: its page is `href`, published beside the
/// report (`episodes/<key prefix>.html`, written by the pipeline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeLink {
    /// Its configuration.
    pub configuration: String,
    /// The first digits of its key (the link's text).
    pub key: String,
    /// Its page, relative to the report.
    pub href: String,
    /// What it is: family, cell and arm, as one line.
    pub what: String,
    /// Its failure record: first unmet obligation and terminal flag.
    pub failure: String,
}

/// [`render`], with a "Failing episodes" section linking `links` (grouped by
/// configuration, in the order given) when there are any.
pub fn render_linked(
    study: &str,
    tables: &BTreeMap<String, RecordBatch>,
    skipped: &[(&str, String)],
    links: &[EpisodeLink],
) -> Result<Rendered, ReportError> {
    let mut doc = document(study, tables, skipped)?;
    if !links.is_empty() {
        doc.sections.push(episodes_section(links));
    }
    Ok(Rendered {
        markdown: markdown::write(&doc),
        html: html::write(&doc),
        figures: doc
            .figures()
            .map(|f| (f.file_name.clone(), f.svg.clone()))
            .collect(),
    })
}

/// The failing episodes linked to their pages, a paragraph per configuration.
fn episodes_section(links: &[EpisodeLink]) -> document::Section {
    let mut section = document::Section::new("failing-episodes", "Failing episodes");
    section.paragraph(vec![
        text(
            "A few failing episodes of each configuration, chosen deterministically (a \
         variety of terminal flags first, then by key), each linked to its page: the \
         prompt, every request, response and observation, the verdict and the limits. ",
        ),
        code("tbb show"),
        text(" prints any episode the same way, and "),
        Inline::Link {
            text: crate::index::FILE.to_string(),
            href: crate::index::FILE.to_string(),
        },
        text(" lists every episode of the study, filterable by configuration, family, cell, arm, verdict and terminal flag."),
    ]);
    let mut configurations: Vec<&str> = Vec::new();
    for l in links {
        if !configurations.contains(&l.configuration.as_str()) {
            configurations.push(&l.configuration);
        }
    }
    for c in configurations {
        let mut p = vec![code(c), text(": ")];
        for (i, l) in links.iter().filter(|l| l.configuration == c).enumerate() {
            if i > 0 {
                p.push(text("; "));
            }
            p.push(Inline::Link {
                text: l.key.clone(),
                href: l.href.clone(),
            });
            p.push(text(format!(" ({}; {})", l.what, l.failure)));
        }
        p.push(text("."));
        section.paragraph(p);
    }
    section
}

/// The format-neutral document of the report.
fn document(
    study: &str,
    tables: &BTreeMap<String, RecordBatch>,
    skipped: &[(&str, String)],
) -> Result<Document, ReportError> {
    let mut doc = Document {
        study: study.to_string(),
        preamble: Vec::new(),
        omitted: Vec::new(),
        sections: Vec::new(),
    };
    let mut preamble: Vec<Inline> = vec![text(
        "Rendered by tbb from the study's analysis tables; the Parquet files beside \
         this report hold every value at full precision, this report rounds. Tables: ",
    )];
    if tables.is_empty() {
        preamble.push(text("none"));
    }
    for (i, name) in tables.keys().enumerate() {
        if i > 0 {
            preamble.push(text(", "));
        }
        preamble.push(code(name.as_str()));
    }
    preamble.push(text(
        ". Figures are inline in report.html and SVG files beside report.md.",
    ));
    doc.preamble.push(preamble);

    for spec in &SECTIONS {
        if spec.tables.iter().any(|t| tables.contains_key(*t)) {
            let mut section = document::Section::new(spec.id, spec.title);
            (spec.build)(tables, &mut section)?;
            doc.sections.push(section);
        } else if !spec.noted_when_absent {
            continue;
        } else if let Some((_, why)) = skipped.iter().find(|(a, _)| *a == spec.analysis) {
            doc.omitted.push(vec![
                text(format!("{}: skipped, the ", spec.title)),
                code(spec.analysis),
                text(format!(
                    " analysis cannot run on this study's design: {why}."
                )),
            ]);
        } else {
            let mut note = vec![text(format!("{}: omitted, the study has no ", spec.title))];
            for (i, t) in spec.tables.iter().enumerate() {
                if i > 0 {
                    note.push(text(if i + 1 == spec.tables.len() {
                        " or "
                    } else {
                        ", "
                    }));
                }
                note.push(code(*t));
            }
            note.push(text(" table (add the "));
            note.push(code(spec.analysis));
            note.push(text(" analysis to its manifest)."));
            doc.omitted.push(note);
        }
    }

    let rendered: Vec<&str> = SECTIONS
        .iter()
        .flat_map(|s| s.tables.iter().copied())
        .collect();
    let others: Vec<&String> = tables
        .keys()
        .filter(|k| !rendered.contains(&k.as_str()))
        .collect();
    if !others.is_empty() {
        let mut note = vec![text("Not shown in this report: ")];
        for (i, name) in others.iter().enumerate() {
            if i > 0 {
                note.push(text(", "));
            }
            note.push(code(name.as_str()));
        }
        note.push(text("."));
        doc.omitted.push(note);
    }
    Ok(doc)
}

#[cfg(test)]
mod tests;
