//! The milestone model: milestones, their snapshot constraints and column measures, and the
//! graph that orders them, read from a scenario's `milestone_matcher` or
//! `minefield_matcher`.
//!
//! Owns the types and their validation. The scenario file holds the matchers as upstream
//! has them after construction: every constraint carries its complete column → measure map
//! (defaults merged with the scenario's overrides) and the guardrail constraints upstream
//! derives are already in the list, so [`MilestoneMatcher::from_json`] takes the constraints
//! as they are (the private `reading` module turns the JSON into these types).
//! [`MilestoneMatcher::new`] is for matchers built in code, and derives the guardrails as
//! upstream's constructor does. Never grades: that is the matcher's job.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::context::{Namespace, Row};

use super::error::ModelError;
use super::reading::{field, parse_edges, parse_milestone, shape};
use super::schema::default_measure;

/// Absolute tolerances per argument or column name (upstream's `atol_dict`).
pub type Tolerances = BTreeMap<String, f64>;

/// How one column of a snapshot row is compared with one target value.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnMeasure {
    /// `column_exact_match_similarity`: equal (or both null when the target is null).
    ExactMatch,
    /// `column_close_similarity`: numbers within the column's tolerance.
    Close {
        /// Tolerances by column name.
        atol: Tolerances,
    },
    /// `column_one_similarity`: always 1.
    One,
    /// `column_contains_similarity`: the cell contains the target text.
    Contains,
    /// `column_tool_trace_exact_match_similarity`: a call in the cell's tool trace has the
    /// target's tool name and arguments (within tolerances where given).
    ToolTraceExactMatch {
        /// Tolerances by argument name.
        atol: Option<Tolerances>,
    },
    /// `column_rouge_l_similarity`: ROUGE-L F-measure with the Porter stemmer.
    RougeL,
}

/// Which column of the target a value taken from a tool trace fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillTo {
    /// Merged into the target tool trace's arguments.
    ToolTrace,
    /// Substituted into the target content with Python's `str.format`.
    Content,
}

/// Upstream's tool-trace extractors (`tool_trace_extractors.py`), by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Extractor {
    SearchWeatherAroundLatLonTemperature,
    ResultToTimestamp0,
    ResultToTimestamp1,
    Days,
    LatLonDict,
    CurrentTemperature,
    ResultToTemperature,
    ResultToReminderTimestampLowerbound,
    MinTemperatureAmount,
    MinTemperature,
}

/// How a milestone's snapshot is compared (upstream's snapshot similarity functions).
#[derive(Debug, Clone, PartialEq)]
pub enum ConstraintKind {
    /// `snapshot_similarity`: the snapshot's rows against the target rows.
    Snapshot,
    /// `addition_similarity`: the snapshot is the reference plus the target rows.
    Addition,
    /// `removal_similarity`: the snapshot is the reference minus the target rows.
    Removal,
    /// `update_similarity`: the snapshot is the reference with the target rows changed.
    Update,
    /// `guardrail_similarity`: the snapshot equals the reference.
    Guardrail,
    /// `tool_trace_dependant_similarity`: a target completed with values taken from the
    /// reference message's tool trace.
    ToolTraceDependant {
        /// Which target column the values fill.
        fill_to: FillTo,
        /// Which values are taken.
        extractor: Extractor,
    },
}

impl ConstraintKind {
    /// Upstream's function name.
    pub fn name(&self) -> &'static str {
        match self {
            ConstraintKind::Snapshot => "snapshot_similarity",
            ConstraintKind::Addition => "addition_similarity",
            ConstraintKind::Removal => "removal_similarity",
            ConstraintKind::Update => "update_similarity",
            ConstraintKind::Guardrail => "guardrail_similarity",
            ConstraintKind::ToolTraceDependant { .. } => "tool_trace_dependant_similarity",
        }
    }

    fn needs_reference(&self) -> bool {
        !matches!(self, ConstraintKind::Snapshot)
    }

    fn needs_target(&self) -> bool {
        !matches!(self, ConstraintKind::Guardrail)
    }
}

/// One constraint of a milestone on one namespace's snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotConstraint {
    /// The namespace whose snapshot is constrained.
    pub namespace: Namespace,
    /// How it is compared.
    pub kind: ConstraintKind,
    /// The milestone whose snapshot is the reference: `-1` is the episode's starting
    /// world (the first user message), `None` no reference.
    pub reference: Option<i64>,
    /// The rows to compare with (their columns are the ones constrained).
    pub target: Option<Vec<Row>>,
    /// The measure of every column (defaults merged with overrides).
    pub columns: BTreeMap<String, ColumnMeasure>,
}

impl SnapshotConstraint {
    /// A constraint with the namespace's default measures, `overrides` replacing some.
    pub fn new(
        namespace: Namespace,
        kind: ConstraintKind,
        reference: Option<i64>,
        target: Option<Vec<Row>>,
        overrides: BTreeMap<String, ColumnMeasure>,
    ) -> SnapshotConstraint {
        let mut columns: BTreeMap<String, ColumnMeasure> = namespace
            .columns()
            .iter()
            .map(|c| (c.to_string(), default_measure(namespace, c)))
            .collect();
        columns.extend(overrides);
        SnapshotConstraint {
            namespace,
            kind,
            reference,
            target,
            columns,
        }
    }

    /// The measure for `column` (its default when the map lacks it).
    pub fn measure(&self, column: &str) -> ColumnMeasure {
        self.columns
            .get(column)
            .cloned()
            .unwrap_or_else(|| default_measure(self.namespace, column))
    }
}

/// A milestone: constraints that must hold together at one point of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Milestone {
    /// Its constraints, guardrails included.
    pub constraints: Vec<SnapshotConstraint>,
}

/// Which namespaces a milestone built in code guards against change (upstream's
/// `guardrail_database_list` / `guardrail_database_exclusion_list`).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Guardrails {
    /// Every namespace (upstream's default).
    #[default]
    All,
    /// Only these.
    Only(Vec<Namespace>),
    /// Every namespace but these.
    Except(Vec<Namespace>),
}

/// A milestone built in code, before its guardrails are derived.
#[derive(Debug, Clone, PartialEq)]
pub struct MilestoneSpec {
    /// Its own constraints.
    pub constraints: Vec<SnapshotConstraint>,
    /// The namespaces it guards.
    pub guardrails: Guardrails,
}

/// Milestones (or minefields) and the graph that orders them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MilestoneMatcher {
    milestones: Vec<Milestone>,
    nodes: Vec<usize>,
    edges: Vec<(usize, usize)>,
}

impl MilestoneMatcher {
    /// The milestones, in their index order.
    pub fn milestones(&self) -> &[Milestone] {
        &self.milestones
    }

    /// The milestones in the graph, in upstream's node order. Upstream builds the graph
    /// from the edge list, so with more than one milestone one that no edge names is
    /// never matched (and counts 0 in the mean).
    pub fn nodes(&self) -> &[usize] {
        &self.nodes
    }

    /// The graph's edges: the first must be matched no later than the second.
    pub fn edges(&self) -> &[(usize, usize)] {
        &self.edges
    }

    /// A matcher from a scenario's `milestone_matcher` or `minefield_matcher` (`null` is
    /// an empty matcher). Constraints are taken as they are: the file holds upstream's
    /// matchers after construction, guardrails included.
    pub fn from_json(value: &Value) -> Result<MilestoneMatcher, ModelError> {
        if value.is_null() {
            return MilestoneMatcher::build(Vec::new(), Some(Vec::new()));
        }
        let milestones = field(value, "milestones", "")?
            .as_array()
            .ok_or_else(|| shape("milestones", "a list of milestones"))?
            .iter()
            .enumerate()
            .map(|(i, m)| parse_milestone(m, &format!("milestones.{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        let edges = match value.get("edge_list") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_edges(v)?),
        };
        MilestoneMatcher::build(milestones, edges)
    }

    /// A matcher from milestones built in code, with upstream's guardrails added: each
    /// milestone also requires, for every namespace it guards that neither it nor its
    /// references nor its predecessors constrain (SANDBOX never), that the namespace is
    /// unchanged since each reference and each predecessor. `edges` `None` chains the
    /// milestones in order.
    pub fn new(
        specs: Vec<MilestoneSpec>,
        edges: Option<Vec<(usize, usize)>>,
    ) -> Result<MilestoneMatcher, ModelError> {
        let guards: Vec<Guardrails> = specs.iter().map(|s| s.guardrails.clone()).collect();
        let milestones = specs
            .into_iter()
            .map(|s| Milestone {
                constraints: s.constraints,
            })
            .collect();
        let mut matcher = MilestoneMatcher::build(milestones, edges)?;
        matcher.add_guardrails(&guards);
        matcher.validate()?;
        Ok(matcher)
    }

    fn build(
        milestones: Vec<Milestone>,
        edges: Option<Vec<(usize, usize)>>,
    ) -> Result<MilestoneMatcher, ModelError> {
        let n = milestones.len();
        let edges = edges.unwrap_or_else(|| (1..n).map(|i| (i - 1, i)).collect());
        let (nodes, edges) = if n == 1 {
            (vec![0], Vec::new())
        } else {
            let mut nodes = Vec::new();
            let mut unique = Vec::new();
            for &(a, b) in &edges {
                if a >= n || b >= n {
                    return Err(ModelError::EdgeOutOfRange(a, b, n));
                }
                for x in [a, b] {
                    if !nodes.contains(&x) {
                        nodes.push(x);
                    }
                }
                if !unique.contains(&(a, b)) {
                    unique.push((a, b));
                }
            }
            (nodes, unique)
        };
        let matcher = MilestoneMatcher {
            milestones,
            nodes,
            edges,
        };
        matcher.validate()?;
        Ok(matcher)
    }

    fn validate(&self) -> Result<(), ModelError> {
        for (i, m) in self.milestones.iter().enumerate() {
            if m.constraints
                .iter()
                .all(|c| c.kind == ConstraintKind::Guardrail)
            {
                return Err(ModelError::NoScoredConstraint(i));
            }
            for c in &m.constraints {
                if c.kind.needs_reference() && c.reference.is_none() {
                    return Err(ModelError::MissingReference {
                        milestone: i,
                        constraint: c.kind.name(),
                    });
                }
                if c.kind.needs_target() && c.target.as_ref().is_none_or(Vec::is_empty) {
                    return Err(ModelError::MissingTarget {
                        milestone: i,
                        constraint: c.kind.name(),
                    });
                }
                if matches!(c.kind, ConstraintKind::ToolTraceDependant { .. })
                    && c.namespace != Namespace::Sandbox
                {
                    return Err(ModelError::ToolTraceOutsideSandbox(i));
                }
            }
        }
        self.check_acyclic()
    }

    fn check_acyclic(&self) -> Result<(), ModelError> {
        let mut remaining: BTreeSet<usize> = self.nodes.iter().copied().collect();
        while !remaining.is_empty() {
            let free: Vec<usize> = remaining
                .iter()
                .copied()
                .filter(|&v| {
                    !self
                        .edges
                        .iter()
                        .any(|&(a, b)| b == v && remaining.contains(&a))
                })
                .collect();
            if free.is_empty() {
                return Err(ModelError::Cycle);
            }
            for v in free {
                remaining.remove(&v);
            }
        }
        Ok(())
    }

    /// The predecessors of `node` in the graph.
    pub(crate) fn predecessors(&self, node: usize) -> BTreeSet<usize> {
        self.edges
            .iter()
            .filter(|&&(_, b)| b == node)
            .map(|&(a, _)| a)
            .collect()
    }

    fn add_guardrails(&mut self, guards: &[Guardrails]) {
        for &i in &self.nodes.clone() {
            let own_refs: BTreeSet<i64> = self.milestones[i]
                .constraints
                .iter()
                .filter_map(|c| c.reference)
                .collect();
            let preds: BTreeSet<i64> = self.predecessors(i).into_iter().map(|p| p as i64).collect();
            let mut guarded: BTreeSet<Namespace> = match &guards[i] {
                Guardrails::All => Namespace::ALL.into_iter().collect(),
                Guardrails::Only(list) => list.iter().copied().collect(),
                Guardrails::Except(list) => Namespace::ALL
                    .into_iter()
                    .filter(|ns| !list.contains(ns))
                    .collect(),
            };
            guarded.remove(&Namespace::Sandbox);
            let involved: BTreeSet<i64> =
                own_refs.union(&preds).copied().chain([i as i64]).collect();
            for &j in &involved {
                // Upstream looks the milestone up with Python's indexing, so the starting
                // world's −1 reads the last milestone's constraints; kept for the same guards.
                let len = self.milestones.len() as i64;
                let k = if j < 0 { len + j } else { j };
                let Some(m) = usize::try_from(k).ok().and_then(|k| self.milestones.get(k)) else {
                    continue;
                };
                for c in &m.constraints {
                    if c.kind != ConstraintKind::Guardrail {
                        guarded.remove(&c.namespace);
                    }
                }
            }
            for &reference in own_refs.union(&preds) {
                for &ns in &guarded {
                    self.milestones[i].constraints.push(SnapshotConstraint::new(
                        ns,
                        ConstraintKind::Guardrail,
                        Some(reference),
                        None,
                        BTreeMap::new(),
                    ));
                }
            }
        }
    }
}
