//! Errors of loading `families/`: each one names the file and, where it can, the span.

use std::path::PathBuf;

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

/// Loading the families failed; nothing was loaded.
#[derive(Debug, Error, Diagnostic)]
pub enum FamilyError {
    /// A file or directory could not be read.
    #[error("cannot read {}", path.display())]
    #[diagnostic(
        code(tbb::family::io),
        help("run tbb from the project root, or pass --families DIR")
    )]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Files do not parse, or parse but break rules of the benchmark; every problem
    /// found is listed.
    #[error("{} problem(s) in the family files; nothing was loaded", problems.len())]
    #[diagnostic(code(tbb::family::invalid))]
    Invalid {
        /// All problems found.
        #[related]
        problems: Vec<Problem>,
    },
}

/// One semantic problem in a family file, pointing at the offending span.
#[derive(Debug, Error, Diagnostic)]
#[error("{message}")]
pub struct Problem {
    /// What is wrong.
    pub message: String,
    /// The file's text.
    #[source_code]
    pub src: NamedSource<String>,
    /// Where.
    #[label("{label}")]
    pub span: SourceSpan,
    /// Short label at the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}
