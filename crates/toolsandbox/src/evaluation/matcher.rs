//! Matching milestones to the conversation: upstream's `MilestoneMatcher._dfs`.
//!
//! Owns the search: each milestone is matched to a sandbox message index, no earlier than
//! the milestone matched just before it (and, for the first, the first user message),
//! in an order the milestone graph allows, so as to maximise the sum of similarities.
//! Upstream's exact search is kept, tie-breaking included: at each step the candidates are
//! tried by similarity (highest first), then milestone index, then message index (both
//! lowest first, the order of its heap of `(-similarity, milestone, message)`); a branch
//! is skipped when even perfect scores for the rest could not beat the best found at this
//! step, and a later branch replaces the best only when strictly better. Never scores a
//! constraint itself.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::context::Context;

use super::error::EvaluationError;
use super::model::MilestoneMatcher;
use super::similarity::{Assigned, Calculator};

struct Search<'a, 'c> {
    matcher: &'a MilestoneMatcher,
    calc: Calculator<'c>,
    min: i64,
    max: i64,
}

impl Search<'_, '_> {
    fn ready(&self, remaining: &BTreeSet<usize>) -> Vec<usize> {
        remaining
            .iter()
            .copied()
            .filter(|&v| {
                !self
                    .matcher
                    .edges()
                    .iter()
                    .any(|&(a, b)| b == v && remaining.contains(&a))
            })
            .collect()
    }

    fn dfs(
        &mut self,
        assigned: &mut Vec<Assigned>,
        assigned_sum: f64,
        remaining: &BTreeSet<usize>,
    ) -> Result<(Vec<Assigned>, f64), EvaluationError> {
        if remaining.is_empty() {
            return Ok((assigned.clone(), assigned_sum));
        }
        let last = assigned.last().map_or(self.min, |a| a.snapshot);
        let mut candidates = Vec::new();
        for milestone in self.ready(remaining) {
            for snapshot in (last..=self.max).rev() {
                let similarity = self.calc.similarity(milestone, snapshot, assigned)?;
                candidates.push(Assigned {
                    milestone,
                    snapshot,
                    similarity,
                });
            }
        }
        candidates.sort_by(|a, b| {
            b.similarity
                .partial_cmp(&a.similarity)
                .unwrap_or(Ordering::Equal)
                .then(a.milestone.cmp(&b.milestone))
                .then(a.snapshot.cmp(&b.snapshot))
        });
        let mut best: (Vec<Assigned>, f64) = (Vec::new(), -1.0);
        for candidate in candidates {
            let bound = assigned_sum + candidate.similarity + remaining.len() as f64 - 1.0;
            if bound <= best.1 {
                continue;
            }
            let mut rest = remaining.clone();
            rest.remove(&candidate.milestone);
            assigned.push(candidate);
            let found = self.dfs(assigned, assigned_sum + candidate.similarity, &rest);
            assigned.pop();
            let (mapping, sum) = found?;
            if sum > best.1 {
                best = (mapping, sum);
            }
        }
        Ok(best)
    }
}

/// The best matching of `matcher`'s milestones to `ctx`'s conversation, in the order
/// they were matched, and the mean similarity over all milestones (those outside the
/// graph count 0). `None` when the graph is empty (upstream's "no milestones").
pub(crate) fn best_matching(
    matcher: &MilestoneMatcher,
    ctx: &Context,
) -> Result<Option<(Vec<Assigned>, f64)>, EvaluationError> {
    if matcher.nodes().is_empty() {
        return Ok(None);
    }
    let mut search = Search {
        matcher,
        calc: Calculator::new(ctx, matcher),
        min: ctx.first_user_sandbox_message_index(),
        max: ctx.max_sandbox_message_index(),
    };
    let remaining: BTreeSet<usize> = matcher.nodes().iter().copied().collect();
    let (mapping, sum) = search.dfs(&mut Vec::new(), 0.0, &remaining)?;
    Ok(Some((mapping, sum / matcher.milestones().len() as f64)))
}
