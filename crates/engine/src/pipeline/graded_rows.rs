//! The episode rows an apply grades, kept in the slot of their grade node from the
//! moment each episode is graded to the moment the rows are published.
//!
//! Owns: where a graded row waits. Every grade node of the DAG has a slot, in DAG
//! order, and the study's rows are the slots themselves once the rows graded before
//! this apply (read from the cache) fill the empty ones: no row is ever moved from one
//! collection into another. Rows kept by grade node in a map of boxes, moved one by one
//! into a list at publication, were two copies of every row in the process's memory at
//! its peak (the freed boxes stay with the allocator for a while): with the rows in
//! their slots, the sampled peak RSS of the capacity study at four repeats fell from
//! 307.7 to 271.3 MiB (BENCHMARKS.md; the rows are 32.5 MB there).
//!
//! Never: places a row in the design or decides whether a missing row fails the
//! tables (`apply` does both).

use petgraph::graph::NodeIndex;
use tbb_tables::rows::EpisodeRow;

use super::dag::Dag;
use super::key::NodeKind;

/// A slot per grade node, in DAG order.
pub(crate) struct GradedRows {
    /// The grade nodes, in DAG order.
    grades: Vec<NodeIndex>,
    /// The slot of each node of the DAG by its index (`NO_SLOT` for any other kind).
    slot_of: Vec<u32>,
    /// The rows, a slot per grade node.
    slots: Vec<Option<EpisodeRow>>,
}

const NO_SLOT: u32 = u32::MAX;

impl GradedRows {
    /// Empty slots for every grade node of `dag`.
    pub(crate) fn new(dag: &Dag) -> GradedRows {
        let mut slot_of = vec![NO_SLOT; dag.graph.node_count()];
        let mut grades = Vec::new();
        for (i, node) in dag.nodes() {
            if node.kind == NodeKind::Grade {
                // A DAG has far fewer than 2^32 nodes (a node is ~200 bytes).
                slot_of[i.index()] = grades.len() as u32;
                grades.push(i);
            }
        }
        let mut slots = Vec::new();
        slots.resize_with(grades.len(), || None);
        GradedRows {
            grades,
            slot_of,
            slots,
        }
    }

    /// No slot at all, for an apply that publishes nothing (a shard: its rows are the
    /// merge's): every row handed to it is dropped, and a shard of a large study does
    /// not hold a slot for each of the study's episodes.
    pub(crate) fn none() -> GradedRows {
        GradedRows {
            grades: Vec::new(),
            slot_of: Vec::new(),
            slots: Vec::new(),
        }
    }

    fn slot(&self, grade: NodeIndex) -> Option<usize> {
        match self.slot_of.get(grade.index()) {
            Some(&slot) if slot != NO_SLOT => Some(slot as usize),
            _ => None,
        }
    }

    /// Keeps the row of grade node `grade` (dropped for a node that has no slot).
    pub(crate) fn insert(&mut self, grade: NodeIndex, row: EpisodeRow) {
        if let Some(slot) = self.slot(grade) {
            self.slots[slot] = Some(row);
        }
    }

    /// The grade nodes not graded in this apply, in DAG order.
    pub(crate) fn ungraded(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.grades
            .iter()
            .zip(&self.slots)
            .filter(|(_, slot)| slot.is_none())
            .map(|(&g, _)| g)
    }

    /// The grade nodes in DAG order, each with its slot.
    pub(crate) fn slots_mut(
        &mut self,
    ) -> impl Iterator<Item = (NodeIndex, &mut Option<EpisodeRow>)> {
        self.grades.iter().copied().zip(self.slots.iter_mut())
    }

    /// The rows of the filled slots, in DAG order, in the slots' own memory.
    pub(crate) fn into_rows(self) -> Vec<EpisodeRow> {
        filled(self.slots)
    }
}

/// The values of the filled slots, in order, collected in the slots' own allocation: a
/// `filter_map` over a vector's own iterator collects in place when the item keeps its
/// size and alignment, as an `Option` of a type with a niche (a row holds `Arc`s) does.
// `flatten()`, which clippy prefers, collects into a new allocation (the test says so).
#[allow(clippy::filter_map_identity)]
fn filled<T>(slots: Vec<Option<T>>) -> Vec<T> {
    slots.into_iter().filter_map(|slot| slot).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_are_the_slots_own_memory() {
        assert_eq!(
            std::mem::size_of::<Option<EpisodeRow>>(),
            std::mem::size_of::<EpisodeRow>()
        );
        let slots: Vec<Option<String>> = vec![Some("a".into()), None, Some("c".into())];
        let at = slots.as_ptr() as usize;
        let rows = filled(slots);
        assert_eq!(rows, ["a", "c"]);
        assert_eq!(
            rows.as_ptr() as usize,
            at,
            "collected into a new allocation"
        );
    }
}
