//! Errors of loading a manifest: every problem names the manifest file and points at
//! the span of the offending value, or names the override (`--set key`, `TBB_*`
//! variable) the value came from.
//!
//! Reports are bounded: [`ManifestError::invalid`] keeps the first [`MAX_SHOWN`]
//! problems and ends the list with "… and N more", so a generated manifest with a
//! thousand broken entries prints a screenful, not megabytes. The problems share one
//! copy of the manifest's text (an `Arc`), never one copy each, and a problem on an
//! over-long line shows a window of it ([`tbb_diag::source`]).

use std::path::PathBuf;

use miette::{Diagnostic, SourceSpan};
use tbb_diag::source::{Snippet, SourceFile};
use thiserror::Error;

use tbb_provider::config::CatalogueError;

/// Loading a manifest failed; nothing was resolved.
#[derive(Debug, Error, Diagnostic)]
pub enum ManifestError {
    /// The manifest file could not be read.
    #[error("cannot read manifest {}", path.display())]
    #[diagnostic(
        code(tbb::manifest::io),
        help("pass the path of a manifest, e.g. manifests/capacity.toml")
    )]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// There is no file at the path.
    #[error("manifest {} does not exist", path.display())]
    #[diagnostic(
        code(tbb::manifest::missing),
        help("pass the path of a manifest, e.g. manifests/capacity.toml (paths are relative to the current directory)")
    )]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The configuration catalogue the manifest names cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Catalogue(Box<CatalogueError>),
    /// The manifest does not parse, or names things that do not exist, or asks for
    /// something impossible; every problem found is listed.
    #[error("{total} problem(s) in manifest {}; nothing was run", path.display())]
    #[diagnostic(code(tbb::manifest::invalid))]
    Invalid {
        /// The manifest.
        path: PathBuf,
        /// How many problems were found.
        total: usize,
        /// The first [`MAX_SHOWN`] problems, then, when there were more, one line
        /// saying how many are not shown.
        #[related]
        problems: Vec<Problem>,
    },
}

impl From<CatalogueError> for ManifestError {
    fn from(e: CatalogueError) -> Self {
        ManifestError::Catalogue(Box::new(e))
    }
}

pub use tbb_diag::problems::MAX_SHOWN;

impl ManifestError {
    /// An invalid manifest with these problems, keeping the first [`MAX_SHOWN`].
    pub fn invalid(path: PathBuf, mut problems: Vec<Problem>) -> ManifestError {
        let total = tbb_diag::problems::bound(&mut problems, |cut| {
            Some(Problem {
                message: format!("… and {cut} more"),
                src: SourceFile::nowhere(path.display().to_string()),
                span: None,
                label: String::new(),
                help: Some("fix the problems shown and check again to see the rest".into()),
            })
        });
        ManifestError::Invalid {
            path,
            total,
            problems,
        }
    }

    /// The problems shown of an invalid manifest (empty for other errors), without the
    /// closing "… and N more".
    pub fn problems(&self) -> &[Problem] {
        match self {
            ManifestError::Invalid {
                problems, total, ..
            } => &problems[..(*total).min(MAX_SHOWN).min(problems.len())],
            _ => &[],
        }
    }

    /// How many problems were found (shown or not).
    pub fn problem_count(&self) -> usize {
        match self {
            ManifestError::Invalid { total, .. } => *total,
            _ => 0,
        }
    }
}

/// One problem in a manifest.
#[derive(Debug, Error, Diagnostic)]
#[error("{message}")]
pub struct Problem {
    /// What is wrong (prefixed with the override's name when the value did not come
    /// from the file).
    pub message: String,
    /// What the problem shows of the manifest's text (shared by every problem of a
    /// report, or a window of an over-long line).
    #[source_code]
    pub src: Snippet,
    /// Where in the file, when the value came from the file.
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    /// Short label at the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}
