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

use crate::store::StoreError;

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
}
