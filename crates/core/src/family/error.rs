//! Errors of loading `families/`: each one names the file and, where it can, the span.

use std::path::PathBuf;

use miette::{Diagnostic, SourceSpan};
use tbb_diag::source::Snippet;
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
    /// Files do not parse, or parse but break rules of the benchmark; the first
    /// [`MAX_SHOWN`] problems are listed and the message counts all of them.
    #[error(
        "{total} problem(s) in the family files; nothing was loaded{}",
        more_note(*total, problems.len())
    )]
    #[diagnostic(code(tbb::family::invalid))]
    Invalid {
        /// Problems found in all.
        total: usize,
        /// The first [`MAX_SHOWN`] of them.
        #[related]
        problems: Vec<Problem>,
    },
}

pub use tbb_diag::problems::MAX_SHOWN;

impl FamilyError {
    /// An invalid-families error with these problems, keeping the first [`MAX_SHOWN`]
    /// (the message counts the rest).
    pub fn invalid(mut problems: Vec<Problem>) -> FamilyError {
        let total = tbb_diag::problems::bound(&mut problems, |_| None);
        FamilyError::Invalid { total, problems }
    }
}

fn more_note(total: usize, shown: usize) -> String {
    if total > shown {
        format!(
            " (the first {shown} are listed; {} more are not)",
            total - shown
        )
    } else {
        String::new()
    }
}

/// One semantic problem in a family file, pointing at the offending span.
#[derive(Debug, Error, Diagnostic)]
#[error("{message}")]
pub struct Problem {
    /// What is wrong.
    pub message: String,
    /// What the problem shows of the file's text ([`tbb_diag::source`]).
    #[source_code]
    pub src: Snippet,
    /// Where.
    #[label("{label}")]
    pub span: SourceSpan,
    /// Short label at the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(n: usize) -> Problem {
        Problem {
            message: format!("problem {n}"),
            src: tbb_diag::source::SourceFile::nowhere("f.toml"),
            span: (0, 0).into(),
            label: String::new(),
            help: None,
        }
    }

    #[test]
    fn a_long_report_lists_the_first_problems_and_counts_all() {
        let e = FamilyError::invalid((0..120).map(problem).collect());
        let FamilyError::Invalid { total, problems } = &e else {
            panic!("{e:?}");
        };
        assert_eq!((*total, problems.len()), (120, MAX_SHOWN));
        assert_eq!(problems[49].message, "problem 49");
        assert_eq!(
            e.to_string(),
            "120 problem(s) in the family files; nothing was loaded \
             (the first 50 are listed; 70 more are not)"
        );
        let short = FamilyError::invalid((0..3).map(problem).collect());
        assert_eq!(
            short.to_string(),
            "3 problem(s) in the family files; nothing was loaded"
        );
    }
}
