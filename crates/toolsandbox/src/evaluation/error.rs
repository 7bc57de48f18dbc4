//! What can go wrong when a matcher is read or an episode graded.
//!
//! Owns the two error types. Reading errors ([`ModelError`]) are found before any grading;
//! grading errors ([`EvaluationError`]) are the conditions under which upstream's evaluator
//! raises instead of returning a number (its CLI then records the scenario with similarity 0
//! and the exception's type), so a caller can do the same. Never a panic on data.

use crate::context::{ContextError, Namespace};

/// A milestone or minefield matcher that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The JSON does not have the shape of a matcher.
    #[error("matcher JSON at {at}: {problem}")]
    Shape {
        /// Where in the JSON (a dotted path).
        at: String,
        /// What was expected there.
        problem: String,
    },
    /// A column measure upstream does not define.
    #[error("unknown column similarity measure `{0}`")]
    UnknownMeasure(String),
    /// A snapshot constraint upstream does not define.
    #[error("unknown snapshot constraint `{0}`")]
    UnknownConstraint(String),
    /// A tool-trace extractor upstream does not define.
    #[error("unknown tool trace extractor `{0}`")]
    UnknownExtractor(String),
    /// `fill_to` is neither `tool_trace` nor `content`.
    #[error("fill_to must be `tool_trace` or `content`, not `{0}`")]
    UnknownFillTo(String),
    /// `column_close_similarity` needs its tolerances (upstream asserts them).
    #[error("column_close_similarity on `{0}` needs an atol_dict")]
    CloseWithoutTolerance(String),
    /// A constraint that compares with another milestone's snapshot names none.
    #[error("milestone {milestone}: `{constraint}` needs a reference milestone")]
    MissingReference {
        /// The milestone holding the constraint.
        milestone: usize,
        /// The constraint's upstream name.
        constraint: &'static str,
    },
    /// `tool_trace_dependant_similarity` is only defined on the SANDBOX namespace.
    #[error("milestone {0}: tool_trace_dependant_similarity must constrain SANDBOX")]
    ToolTraceOutsideSandbox(usize),
    /// A constraint without target rows where the measure compares rows with them.
    #[error("milestone {milestone}: `{constraint}` needs at least one target row")]
    MissingTarget {
        /// The milestone holding the constraint.
        milestone: usize,
        /// The constraint's upstream name.
        constraint: &'static str,
    },
    /// A milestone whose constraints are all guardrails (its geometric mean would divide by
    /// zero upstream).
    #[error("milestone {0} has no constraint other than guardrails")]
    NoScoredConstraint(usize),
    /// An edge names a milestone that does not exist.
    #[error("edge ({0}, {1}) names a milestone beyond the {2} defined")]
    EdgeOutOfRange(usize, usize, usize),
    /// The milestone graph has a cycle, so no order of the milestones respects it.
    #[error("the milestone graph has a cycle")]
    Cycle,
}

/// A grade that cannot be computed: upstream raises in each of these cases.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvaluationError {
    /// The world refused a read (a snapshot beyond the next message).
    #[error(transparent)]
    Context(#[from] ContextError),
    /// ROUGE-L asked to score a null or non-text cell.
    #[error("{namespace:?}.{column}: ROUGE-L needs text on both sides, found {found}")]
    NotText {
        /// The namespace of the snapshot.
        namespace: Namespace,
        /// The column measured.
        column: String,
        /// The JSON type found instead.
        found: &'static str,
    },
    /// A target value of the wrong type for its measure (a non-number for
    /// `column_close_similarity`, a non-string for `column_contains_similarity`).
    #[error("{namespace:?}.{column}: the measure cannot compare with target value {value}")]
    TargetType {
        /// The namespace of the snapshot.
        namespace: Namespace,
        /// The column measured.
        column: String,
        /// The offending target value.
        value: String,
    },
    /// A tool trace (in the world or a target) that is not the JSON upstream writes.
    #[error("malformed tool trace: {0}")]
    ToolTrace(String),
    /// `tool_trace_dependant_similarity` needs exactly one SANDBOX row on each side.
    #[error("tool_trace_dependant_similarity needs one SANDBOX row per snapshot, found {0}")]
    NotOneMessage(usize),
    /// A target content template that Python's `str.format` would reject or that this
    /// evaluator does not support (format specs, attribute access, unmatched braces).
    #[error("content template {0:?} is not a plain `{{name}}` template")]
    Template(String),
    /// A constraint refers to a milestone that has not been matched yet (upstream's
    /// lookup raises `KeyError`): the reference is not an ancestor in the milestone graph.
    #[error(
        "milestone {milestone} refers to milestone {reference}, which is not matched before it"
    )]
    UnmatchedReference {
        /// The milestone being scored.
        milestone: usize,
        /// The milestone it refers to.
        reference: i64,
    },
    /// More target rows than the exact assignment search handles.
    #[error("{0} target rows: more than the 16 the assignment search handles")]
    TooManyRows(usize),
}
