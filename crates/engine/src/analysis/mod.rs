//! Analyses: paired contrasts, cluster bootstraps, truncation attribution, strata,
//! lanes and costs, computed from the graded episodes.
//!
//! Owns: every statistic of the paper's capacity analysis and the tables it writes
//! (`contrasts`, `truncation`, `strata`, `lanes`, `costs`).
//!
//! Invariants: an analysis is a pure function of its parameters and the episode rows
//! it is given (in any order: every analysis sorts or groups before it computes), so
//! the same rows and seed give the same table byte for byte. Randomness is ChaCha
//! seeded from the analysis's `seed` parameter only.
//!
//! Never: runs episodes, reads the clock, or touches the file system; the pipeline
//! hands it rows and writes the tables it returns.

pub mod contrasts;
pub mod costs;
pub mod design;
pub mod lanes;
pub mod stats;
pub mod strata;
pub mod truncation;

use arrow_array::RecordBatch;

use crate::harness::Menu as Lane;
use crate::manifest::AnalysisKind;
use crate::store::StoreError;
use tbb_core::compile::cell::{level_name, Cell};

/// Version of an analysis's computation, part of its node's key: bump it whenever a
/// change to that analysis changes its tables.
pub fn code_version(kind: AnalysisKind) -> &'static str {
    match kind {
        AnalysisKind::Contrasts => "contrasts/1",
        AnalysisKind::Truncation => "truncation/2",
        AnalysisKind::Strata => "strata/2",
        AnalysisKind::Lanes => "lanes/2",
        AnalysisKind::Costs => "costs/2",
        AnalysisKind::Report => "report/1",
    }
}

/// One table an analysis produced, written as `outputs/<study>/<table>.parquet`.
#[derive(Debug, Clone)]
pub struct Output {
    /// Table name (file stem), e.g. `contrasts`.
    pub table: &'static str,
    /// Its rows.
    pub batch: RecordBatch,
}

/// Why an analysis could not be computed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AnalysisError {
    /// Building a table failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] StoreError),
    /// The episodes lack what the analysis needs (e.g. a cell of the capacity design).
    #[error("the {analysis} analysis cannot run: {detail}")]
    #[diagnostic(
        code(tbb::analysis::missing_data),
        help("run the capacity cells it needs (`[cells] preset = \"capacity\"`) or drop the analysis from the manifest")
    )]
    MissingData {
        /// Which analysis.
        analysis: &'static str,
        /// What is missing.
        detail: String,
    },
    /// The episodes contradict each other (two rows for one condition, a family in
    /// two intents, a configuration in two organizations).
    #[error("the {analysis} analysis cannot run: {detail}")]
    #[diagnostic(
        code(tbb::analysis::inconsistent),
        help("the episodes table should hold one row per scored condition; rerun the study or report a bug")
    )]
    Inconsistent {
        /// Which analysis.
        analysis: &'static str,
        /// The contradiction.
        detail: String,
    },
    /// A parameter of the analysis in the manifest is out of range.
    #[error("the {analysis} analysis has an invalid parameter: {detail}")]
    #[diagnostic(code(tbb::analysis::invalid_parameter))]
    InvalidParameter {
        /// Which analysis.
        analysis: &'static str,
        /// What is wrong.
        detail: String,
    },
}

/// Why an analysis of this kind cannot run on a manifest's design, or `None` when it
/// can: what each kind needs of the cells and lanes, checked before any episode runs,
/// so a study on a subset of the design skips the analysis instead of paying for every
/// request and then failing.
///
/// - contrasts: all twelve capacity cells (every contrast's weights span them);
/// - truncation and strata: matched V = 8 / V = 128 pairs — at least one endpoint
///   (W, D) at both menu sizes, and every endpoint cell's V partner;
/// - lanes: both menu lanes, routed and fixed;
/// - costs and the report: any episodes.
pub fn cannot_run(kind: AnalysisKind, cells: &[Cell], lanes: &[Lane]) -> Option<String> {
    let index = |c: &Cell| {
        let (w, d) = (level_name(&c.w), level_name(&c.d));
        let capacity = level_name(&c.r) == design::CAPACITY_R && c.depth.is_none();
        design::CELLS
            .iter()
            .position(|x| capacity && u32::from(c.v) == x.v && x.w == w && x.d == d)
    };
    let present: std::collections::BTreeSet<usize> = cells.iter().filter_map(index).collect();
    match kind {
        AnalysisKind::Contrasts => {
            let missing: Vec<String> = (0..design::CELLS.len())
                .filter(|i| !present.contains(i))
                .map(|i| design::CELLS[i].label())
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "it needs all 12 capacity cells; the manifest lacks {}",
                    missing.join(", ")
                )
            })
        }
        AnalysisKind::Truncation | AnalysisKind::Strata => {
            let endpoints: Vec<usize> = present
                .iter()
                .copied()
                .filter(|&i| i < design::N_ENDPOINTS)
                .collect();
            // Endpoints are ordered V slowest: the partner of cell i is i ± 4.
            let half = design::N_ENDPOINTS / 2;
            let partner = |i: usize| if i < half { i + half } else { i - half };
            let unpaired: Vec<String> = endpoints
                .iter()
                .filter(|&&i| !present.contains(&partner(i)))
                .map(|&i| {
                    format!(
                        "{} has no {}",
                        design::CELLS[i].label(),
                        design::CELLS[partner(i)].label()
                    )
                })
                .collect();
            if endpoints.is_empty() {
                Some("it needs matched V = 8 / V = 128 cells (e.g. (8, low, raw) and (128, low, raw)); the manifest has none".into())
            } else if !unpaired.is_empty() {
                Some(format!(
                    "it needs every endpoint cell's V = 8 / V = 128 partner: {}",
                    unpaired.join(", ")
                ))
            } else {
                None
            }
        }
        AnalysisKind::Lanes => {
            let both = lanes.contains(&Lane::Routed) && lanes.contains(&Lane::Fixed);
            (!both).then(|| "it needs an arm with the routed menu and one with the fixed menu (`[[arms]]` with `menu = \"routed\"` and `menu = \"fixed\"`)".into())
        }
        AnalysisKind::Costs | AnalysisKind::Report => None,
    }
}

/// The analyses of a manifest that cannot run on its design, in manifest order, with
/// why: `tbb manifest check` and `tbb plan` list them, and the DAG leaves them out.
pub fn skipped(manifest: &crate::manifest::Manifest) -> Vec<(AnalysisKind, String)> {
    manifest
        .analyses
        .iter()
        .filter_map(|a| cannot_run(a.kind, &manifest.cells, &manifest.menus()).map(|r| (a.kind, r)))
        .collect()
}

/// Runs one analysis over the graded episodes.
pub fn run(
    analysis: &crate::manifest::Analysis,
    episodes: &[crate::store::tables::EpisodeRow],
) -> Result<Vec<Output>, AnalysisError> {
    match analysis.kind {
        AnalysisKind::Contrasts => contrasts::run(analysis, episodes),
        AnalysisKind::Truncation => truncation::run(analysis, episodes),
        AnalysisKind::Strata => strata::run(analysis, episodes),
        AnalysisKind::Lanes => lanes::run(analysis, episodes),
        AnalysisKind::Costs => costs::run(analysis, episodes),
        AnalysisKind::Report => Err(AnalysisError::MissingData {
            analysis: analysis.kind.name(),
            detail: "the report is not implemented yet".into(),
        }),
    }
}

#[cfg(test)]
mod needs_tests {
    use super::*;

    fn cell(v: u16, w: &str, d: &str) -> Cell {
        Cell {
            v,
            w: w.parse().unwrap_or_else(|_| panic!("{w}")),
            d: d.parse().unwrap_or_else(|_| panic!("{d}")),
            r: tbb_core::compile::cell::Routing::Low,
            depth: None,
        }
    }

    #[test]
    fn the_capacity_design_runs_every_analysis() {
        let both = [Lane::Routed, Lane::Fixed];
        for kind in AnalysisKind::ALL {
            assert_eq!(cannot_run(kind, &Cell::capacity(), &both), None, "{kind:?}");
        }
    }

    #[test]
    fn a_small_live_study_declares_what_it_cannot_run() {
        // V = 8 and V = 128 at one W/D, one lane.
        let cells = [cell(8, "low", "raw"), cell(128, "low", "raw")];
        let routed = [Lane::Routed];
        let contrasts = cannot_run(AnalysisKind::Contrasts, &cells, &routed).unwrap_or_default();
        assert!(contrasts.contains("(8, high, linked)"), "{contrasts}");
        assert!(!contrasts.contains("(8, low, raw)"), "{contrasts}");
        assert_eq!(cannot_run(AnalysisKind::Truncation, &cells, &routed), None);
        assert_eq!(cannot_run(AnalysisKind::Strata, &cells, &routed), None);
        assert!(cannot_run(AnalysisKind::Lanes, &cells, &routed).is_some());
        assert_eq!(cannot_run(AnalysisKind::Costs, &cells, &routed), None);
        let lonely = [cell(8, "low", "raw"), cell(128, "high", "raw")];
        let strata = cannot_run(AnalysisKind::Strata, &lonely, &routed).unwrap_or_default();
        assert!(
            strata.contains("(8, low, raw) has no (128, low, raw)"),
            "{strata}"
        );
        let none = cannot_run(AnalysisKind::Truncation, &[cell(32, "low", "raw")], &routed);
        assert!(none.is_some_and(|s| s.contains("has none")));
    }
}
