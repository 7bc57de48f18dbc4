//! ToolSandbox's milestone evaluator (upstream's `common/evaluation.py`): how well an
//! episode's world, saved with every snapshot, meets a scenario's milestones while
//! avoiding its minefields.
//!
//! Owns grading from a [`Context`] and nothing else: it reads snapshots and never runs a
//! tool, writes to the world, or reads a clock, file or network. Each file holds one
//! concept: the [`model`] read from a scenario, the column `measures` and
//! `constraints`, the `similarity` of one milestone at one message, the `matcher`'s
//! search, the [`turns`] count, and [`evaluate`] combining them.
//!
//! Where upstream raises instead of returning a number, [`evaluate`] returns an
//! [`EvaluationError`]; upstream's CLI records such a scenario with similarity 0.

mod assignment;
mod constraints;
pub mod error;
#[cfg(test)]
mod hand_tests;
mod matcher;
mod measures;
pub mod model;
mod porter;
mod pyvalue;
mod reading;
#[cfg(test)]
mod reference_tests;
mod rouge;
mod schema;
mod similarity;
mod tool_trace;
pub mod turns;

use crate::context::Context;

pub use error::{EvaluationError, ModelError};
pub use model::{
    ColumnMeasure, ConstraintKind, Extractor, FillTo, Guardrails, Milestone, MilestoneMatcher,
    MilestoneSpec, SnapshotConstraint, Tolerances,
};
pub use turns::effective_turn_count;

/// Where one milestone (or minefield) was matched and how well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MilestoneMatch {
    /// The sandbox message index it was matched to.
    pub message_index: i64,
    /// Its similarity there, in [0, 1].
    pub similarity: f64,
}

/// An episode's grade (upstream's `EvaluationResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The grade: the milestone similarity, or 0 if a minefield was hit.
    pub similarity: f64,
    /// The mean over milestones of each one's similarity (1 with no milestones).
    pub milestone_similarity: f64,
    /// The mean over minefields of each one's similarity (0 with no minefields).
    pub minefield_similarity: f64,
    /// Per milestone, in index order: where it was matched (`None`: never, as for a
    /// milestone outside the graph).
    pub milestone_mapping: Vec<Option<MilestoneMatch>>,
    /// Per minefield, in index order, likewise.
    pub minefield_mapping: Vec<Option<MilestoneMatch>>,
    /// The order in which the search matched the minefields (upstream keeps its minefield
    /// mapping in this order and sorts only the milestones').
    pub minefield_order: Vec<usize>,
    /// Whether any minefield scored above 0 (the grade is then 0).
    pub minefield_hit: bool,
    /// The effective turn count.
    pub turn_count: usize,
}

impl Evaluation {
    /// Success is a grade of exactly 1.0. The comparison is exact on purpose: a perfect
    /// grade is built only from exact values (0/1 measures, ROUGE-L of identical token
    /// lists is 1.0, `exp(-0.0)` is 1.0 and a mean of ones is 1.0), while any imperfection
    /// leaves it strictly below 1.
    pub fn is_success(&self) -> bool {
        self.similarity == 1.0
    }
}

fn mapping(
    n: usize,
    assigned: &[similarity::Assigned],
) -> (Vec<Option<MilestoneMatch>>, Vec<usize>) {
    let mut out = vec![None; n];
    for a in assigned {
        if let Some(slot) = out.get_mut(a.milestone) {
            *slot = Some(MilestoneMatch {
                message_index: a.snapshot,
                similarity: a.similarity,
            });
        }
    }
    (out, assigned.iter().map(|a| a.milestone).collect())
}

/// Version of the evaluator, part of the key of every node that grades a saved world:
/// bump it whenever a change here changes any grade.
pub const CODE_VERSION: &str = "toolsandbox-evaluation/1";

/// Grades the episode whose saved world is `ctx` (upstream's `Evaluation.evaluate`).
pub fn evaluate(
    milestones: &MilestoneMatcher,
    minefields: &MilestoneMatcher,
    ctx: &Context,
) -> Result<Evaluation, EvaluationError> {
    let (milestone_assigned, milestone_similarity) =
        matcher::best_matching(milestones, ctx)?.unwrap_or((Vec::new(), 1.0));
    let (minefield_assigned, minefield_similarity) =
        matcher::best_matching(minefields, ctx)?.unwrap_or((Vec::new(), 0.0));
    let minefield_hit = minefield_similarity != 0.0;
    let (milestone_mapping, _) = mapping(milestones.milestones().len(), &milestone_assigned);
    let (minefield_mapping, minefield_order) =
        mapping(minefields.milestones().len(), &minefield_assigned);
    Ok(Evaluation {
        similarity: if minefield_hit {
            0.0
        } else {
            milestone_similarity
        },
        milestone_similarity,
        minefield_similarity,
        milestone_mapping,
        minefield_mapping,
        minefield_order,
        minefield_hit,
        turn_count: effective_turn_count(ctx)?,
    })
}
