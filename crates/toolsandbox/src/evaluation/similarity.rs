//! One milestone's similarity at one point of the conversation, given where the milestones
//! it refers to were matched (upstream's `CachedSimilarityCalculator`).
//!
//! Owns the geometric mean over a milestone's constraints (guardrails multiply in but are
//! not counted: they are 0 or 1), the meaning of the reference `-1` (the snapshot at the
//! first user message, the episode's starting world), and the cache. A constraint's value
//! depends only on the two snapshots it reads, so values are cached by the snapshots'
//! own indices, which many message indices share: the buckets upstream describes. Never
//! chooses an assignment.

use std::collections::HashMap;
use std::rc::Rc;

use crate::context::{Context, Namespace, Row};

use super::constraints::{
    addition_similarity, guardrail_similarity, removal_similarity, snapshot_similarity,
    update_similarity,
};
use super::error::EvaluationError;
use super::model::{ConstraintKind, MilestoneMatcher, SnapshotConstraint};
use super::tool_trace::tool_trace_dependant_similarity;

/// A milestone matched to a message: which, where, how well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Assigned {
    pub(crate) milestone: usize,
    pub(crate) snapshot: i64,
    pub(crate) similarity: f64,
}

/// (milestone, constraint, current snapshot, reference snapshot): snapshot indices as
/// stored, so every message reading the same snapshot shares the entry.
type Key = (usize, usize, i64, Option<i64>);

/// Scores milestones against one episode, remembering what it has computed.
pub(crate) struct Calculator<'a> {
    ctx: &'a Context,
    matcher: &'a MilestoneMatcher,
    first_user: i64,
    values: HashMap<Key, f64>,
    /// The stored snapshot index message `at` reads, by (namespace, at): finding it scans
    /// the namespace's table, and the assignment search asks for the same ones often.
    indices: HashMap<(Namespace, i64), i64>,
    /// Snapshot rows by (namespace, stored index), shared rather than copied per ask.
    snapshots: HashMap<(Namespace, i64), Rc<Vec<Row>>>,
}

impl<'a> Calculator<'a> {
    pub(crate) fn new(ctx: &'a Context, matcher: &'a MilestoneMatcher) -> Calculator<'a> {
        Calculator {
            ctx,
            matcher,
            first_user: ctx.first_user_sandbox_message_index(),
            values: HashMap::new(),
            indices: HashMap::new(),
            snapshots: HashMap::new(),
        }
    }

    /// The stored index of the snapshot of `ns` that message `at` reads.
    fn stored_index(&mut self, ns: Namespace, at: i64) -> Result<i64, EvaluationError> {
        if let Some(&stored) = self.indices.get(&(ns, at)) {
            return Ok(stored);
        }
        let stored = self.ctx.most_recent_snapshot_index(ns, at)?;
        self.indices.insert((ns, at), stored);
        Ok(stored)
    }

    /// The rows of the snapshot of `ns` stored at `stored`.
    fn rows(&mut self, ns: Namespace, stored: i64) -> Result<Rc<Vec<Row>>, EvaluationError> {
        if let Some(rows) = self.snapshots.get(&(ns, stored)) {
            return Ok(rows.clone());
        }
        let rows = Rc::new(self.ctx.get_database(ns, Some(stored), false)?);
        self.snapshots.insert((ns, stored), rows.clone());
        Ok(rows)
    }

    fn reference_index(
        &self,
        milestone: usize,
        reference: Option<i64>,
        assigned: &[Assigned],
    ) -> Result<Option<i64>, EvaluationError> {
        match reference {
            None => Ok(None),
            Some(-1) => Ok(Some(self.first_user)),
            Some(r) => assigned
                .iter()
                .find(|a| a.milestone as i64 == r)
                .map(|a| Some(a.snapshot))
                .ok_or(EvaluationError::UnmatchedReference {
                    milestone,
                    reference: r,
                }),
        }
    }

    fn constraint_value(
        c: &SnapshotConstraint,
        current: &[Row],
        reference: Option<&[Row]>,
    ) -> Result<f64, EvaluationError> {
        let reference = reference.unwrap_or(&[]);
        match &c.kind {
            ConstraintKind::Snapshot => {
                snapshot_similarity(c, current, c.target.as_deref().unwrap_or(&[]))
            }
            ConstraintKind::Addition => addition_similarity(c, current, reference),
            ConstraintKind::Removal => removal_similarity(c, current, reference),
            ConstraintKind::Update => update_similarity(c, current, reference),
            ConstraintKind::Guardrail => Ok(guardrail_similarity(c.namespace, current, reference)),
            ConstraintKind::ToolTraceDependant { fill_to, extractor } => {
                tool_trace_dependant_similarity(c, *fill_to, *extractor, current, reference)
            }
        }
    }

    /// Milestone `milestone`'s similarity when matched to message `current`, the
    /// milestones in `assigned` already matched.
    pub(crate) fn similarity(
        &mut self,
        milestone: usize,
        current: i64,
        assigned: &[Assigned],
    ) -> Result<f64, EvaluationError> {
        let matcher = self.matcher;
        let constraints = &matcher.milestones()[milestone].constraints;
        let mut product = 1.0f64;
        let mut counted = 0u32;
        for (k, c) in constraints.iter().enumerate() {
            let reference = self.reference_index(milestone, c.reference, assigned)?;
            let cur_stored = self.stored_index(c.namespace, current)?;
            let ref_stored = match reference {
                Some(r) => Some(self.stored_index(c.namespace, r)?),
                None => None,
            };
            let key = (milestone, k, cur_stored, ref_stored);
            let value = match self.values.get(&key) {
                Some(v) => *v,
                None => {
                    let cur_rows = self.rows(c.namespace, cur_stored)?;
                    let ref_rows = match ref_stored {
                        Some(r) => Some(self.rows(c.namespace, r)?),
                        None => None,
                    };
                    let v = Self::constraint_value(
                        c,
                        &cur_rows,
                        ref_rows.as_ref().map(|r| r.as_slice()),
                    )?;
                    self.values.insert(key, v);
                    v
                }
            };
            product *= value;
            if c.kind != ConstraintKind::Guardrail {
                counted += 1;
            }
        }
        Ok(product.powf(1.0 / f64::from(counted)))
    }
}
