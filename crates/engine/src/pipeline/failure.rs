//! Why a node failed: one type for every node of an apply, its causes named so that the
//! summary, the exit code and `tbb apply --json` can branch on them, rendered here only
//! ([`fmt::Display`] by thiserror).
//!
//! A failed node is not recorded and reruns on the next apply; the nodes that read it
//! fail as [`NodeFailure::Upstream`], naming it. A provider that fails an episode does
//! not fail its node: the episode is recorded as an infrastructure failure (a row with
//! `infra_failure`), so no cause here is the provider's.
//!
//! Never: decides whether a node runs (the plan does) or prints.

use serde::Serialize;
use thiserror::Error;

/// Why one node failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NodeFailure {
    /// A node it reads failed in this apply.
    #[error("upstream {node} failed: {cause}")]
    Upstream {
        /// The identity of the node it reads.
        node: String,
        /// Why that node failed.
        cause: Box<NodeFailure>,
    },
    /// Episodes it reads failed in this apply, so the episodes are incomplete.
    #[error(
        "{count} episodes failed (the first: {first}: {cause}), so the episodes are incomplete"
    )]
    EpisodesIncomplete {
        /// How many grade nodes have no row.
        count: usize,
        /// The identity of the first.
        first: String,
        /// Why it has none.
        cause: Box<NodeFailure>,
    },
    /// A row it reads from the cache does not deserialise (the plan reruns such rows;
    /// this is one that changed after the plan was made).
    #[error("stored row of {node} unreadable: {detail}")]
    StoredRowUnreadable {
        /// The node whose row it is.
        node: String,
        /// serde's error.
        detail: String,
    },
    /// The variant did not compile.
    #[error("the variant does not compile: {detail}")]
    Compile {
        /// The compiler's error.
        detail: String,
    },
    /// Recompiling gave another variant than the cached one.
    #[error("recompiling gave variant {new} where the cache holds {old}: the compiler is not deterministic, or its CODE_VERSION was not bumped")]
    Nondeterministic {
        /// The cached variant hash.
        old: String,
        /// The recompiled one.
        new: String,
    },
    /// The analysis refused its inputs (missing data, an inconsistency, a table it
    /// cannot read).
    #[error("analysis refused: {detail}")]
    AnalysisRefused {
        /// The analysis's error.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("{detail}")]
    Io {
        /// What could not be read or written, and the system's error.
        detail: String,
    },
    /// Another study's table changed between plan and apply.
    #[error("{detail}")]
    UpstreamStudyChanged {
        /// Which table, and what to do.
        detail: String,
    },
    /// A defect of tbb (a transcript that does not rebuild its trace, a panicking
    /// task): report it.
    #[error("{detail} (a bug of tbb: please report it)")]
    Internal {
        /// What went wrong.
        detail: String,
    },
}

/// A cause as `tbb apply --json` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// [`NodeFailure::Upstream`] and [`NodeFailure::EpisodesIncomplete`].
    UpstreamFailed,
    /// [`NodeFailure::StoredRowUnreadable`].
    StoredRowUnreadable,
    /// [`NodeFailure::Compile`].
    Compile,
    /// [`NodeFailure::Nondeterministic`].
    Nondeterministic,
    /// [`NodeFailure::AnalysisRefused`].
    AnalysisRefused,
    /// [`NodeFailure::Io`].
    Io,
    /// [`NodeFailure::UpstreamStudyChanged`].
    UpstreamStudyChanged,
    /// [`NodeFailure::Internal`].
    Internal,
}

impl NodeFailure {
    /// Its cause.
    pub fn cause(&self) -> Cause {
        match self {
            NodeFailure::Upstream { .. } | NodeFailure::EpisodesIncomplete { .. } => {
                Cause::UpstreamFailed
            }
            NodeFailure::StoredRowUnreadable { .. } => Cause::StoredRowUnreadable,
            NodeFailure::Compile { .. } => Cause::Compile,
            NodeFailure::Nondeterministic { .. } => Cause::Nondeterministic,
            NodeFailure::AnalysisRefused { .. } => Cause::AnalysisRefused,
            NodeFailure::Io { .. } => Cause::Io,
            NodeFailure::UpstreamStudyChanged { .. } => Cause::UpstreamStudyChanged,
            NodeFailure::Internal { .. } => Cause::Internal,
        }
    }

    /// The cause at the root of a chain of upstream failures.
    pub fn root(&self) -> &NodeFailure {
        match self {
            NodeFailure::Upstream { cause, .. } | NodeFailure::EpisodesIncomplete { cause, .. } => {
                cause.root()
            }
            other => other,
        }
    }

    /// A failure of node `node` as seen by a node that reads it.
    pub fn upstream(node: &str, cause: &NodeFailure) -> NodeFailure {
        NodeFailure::Upstream {
            node: node.to_string(),
            cause: Box::new(cause.clone()),
        }
    }

    /// An I/O failure described by `detail`.
    pub fn io(detail: impl Into<String>) -> NodeFailure {
        NodeFailure::Io {
            detail: detail.into(),
        }
    }

    /// A defect of tbb described by `detail`.
    pub fn internal(detail: impl Into<String>) -> NodeFailure {
        NodeFailure::Internal {
            detail: detail.into(),
        }
    }
}

impl From<tbb_analysis::AnalysisError> for NodeFailure {
    fn from(e: tbb_analysis::AnalysisError) -> NodeFailure {
        match e {
            // A table the analysis could not build is a write that failed, not a refusal.
            tbb_analysis::AnalysisError::Store(e) => NodeFailure::io(e.to_string()),
            e => NodeFailure::AnalysisRefused {
                detail: e.to_string(),
            },
        }
    }
}

impl From<super::cache::CacheError> for NodeFailure {
    fn from(e: super::cache::CacheError) -> NodeFailure {
        NodeFailure::io(e.to_string())
    }
}

impl From<tbb_tables::StoreError> for NodeFailure {
    fn from(e: tbb_tables::StoreError) -> NodeFailure {
        NodeFailure::io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_renders_its_cause_and_names_the_node_it_came_from() {
        let refused = NodeFailure::AnalysisRefused {
            detail: "the contrasts analysis cannot run: no episodes".into(),
        };
        assert_eq!(
            refused.to_string(),
            "analysis refused: the contrasts analysis cannot run: no episodes"
        );
        let report = NodeFailure::upstream("analysis[contrasts]", &refused);
        assert_eq!(
            report.to_string(),
            "upstream analysis[contrasts] failed: analysis refused: the contrasts analysis \
             cannot run: no episodes"
        );
        assert_eq!(report.cause(), Cause::UpstreamFailed);
        assert_eq!(report.root().cause(), Cause::AnalysisRefused);
        let unreadable = NodeFailure::StoredRowUnreadable {
            node: "grade[x]".into(),
            detail: "missing field `vts` at line 1 column 9".into(),
        };
        let incomplete = NodeFailure::EpisodesIncomplete {
            count: 2,
            first: "grade[x]".into(),
            cause: Box::new(unreadable.clone()),
        };
        assert_eq!(
            incomplete.to_string(),
            "2 episodes failed (the first: grade[x]: stored row of grade[x] unreadable: \
             missing field `vts` at line 1 column 9), so the episodes are incomplete"
        );
        assert_eq!(incomplete.root(), &unreadable);
        assert!(NodeFailure::internal("x")
            .to_string()
            .contains("a bug of tbb"));
    }

    #[test]
    fn causes_are_snake_case_names_in_json() {
        let names: Vec<String> = [
            Cause::UpstreamFailed,
            Cause::StoredRowUnreadable,
            Cause::AnalysisRefused,
            Cause::Io,
        ]
        .iter()
        .map(|c| serde_json::to_string(c).unwrap_or_default())
        .collect();
        assert_eq!(
            names,
            [
                "\"upstream_failed\"",
                "\"stored_row_unreadable\"",
                "\"analysis_refused\"",
                "\"io\""
            ]
        );
    }
}
