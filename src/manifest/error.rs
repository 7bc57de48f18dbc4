//! Errors of loading a manifest: every problem names the manifest file and points at
//! the span of the offending value, or names the override (`--set key`, `TBB_*`
//! variable) the value came from.

use std::path::PathBuf;

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

use crate::provider::config::CatalogueError;

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
    /// The configuration catalogue the manifest names cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Catalogue(Box<CatalogueError>),
    /// The manifest does not parse, or names things that do not exist, or asks for
    /// something impossible; every problem found is listed.
    #[error("{} problem(s) in manifest {}; nothing was run", problems.len(), path.display())]
    #[diagnostic(code(tbb::manifest::invalid))]
    Invalid {
        /// The manifest.
        path: PathBuf,
        /// All problems found.
        #[related]
        problems: Vec<Problem>,
    },
}

impl From<CatalogueError> for ManifestError {
    fn from(e: CatalogueError) -> Self {
        ManifestError::Catalogue(Box::new(e))
    }
}

impl ManifestError {
    /// The problems of an invalid manifest (empty for other errors).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ManifestError::Invalid { problems, .. } => problems,
            _ => &[],
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
    /// The manifest's text.
    #[source_code]
    pub src: NamedSource<String>,
    /// Where in the file, when the value came from the file.
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    /// Short label at the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}
