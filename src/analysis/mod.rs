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

use crate::manifest::AnalysisKind;
use crate::store::StoreError;

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
