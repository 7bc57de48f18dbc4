//! The snapshot constraints: one milestone's snapshot of a namespace against its target
//! rows and, for all but `snapshot_similarity`, the snapshot of its reference milestone.
//!
//! Owns `snapshot_similarity` (row costs: per target row and snapshot row the mean over
//! the target's columns of −ln of each column's similarity, as upstream's polars columns
//! compute it) and the addition, removal, update and guardrail rules built on it, with
//! upstream's zero fill and join semantics: numeric nulls become 0, boolean nulls false
//! and text nulls the empty string (what polars' `fill_null(strategy="zero")` does), and
//! a row with a null left never joins. Never reads the world:
//! snapshots are handed in. `tool_trace_dependant_similarity` is in [`super::tool_trace`].

use serde_json::Value;

use crate::context::{Namespace, Row, INDEX};

use super::assignment;
use super::error::EvaluationError;
use super::measures::{scores, Scores};
use super::model::SnapshotConstraint;
use super::pyvalue::py_eq;
use super::schema::{kind, Kind};

/// The columns a snapshot has once the index is dropped, in schema order.
fn snapshot_columns(ns: Namespace) -> impl Iterator<Item = &'static str> {
    ns.columns().iter().copied().filter(|c| *c != INDEX)
}

fn get<'a>(row: &'a Row, column: &str) -> &'a Value {
    row.get(column).unwrap_or(&Value::Null)
}

/// `−log(s)` as polars computes it on a `Float32` column: `ln(s) / ln(e as f32)` in
/// `f32`, and `ln(e as f32)` is one ulp below 1, so this is not `−ln(s)`.
fn narrow_cost(s: f32) -> f32 {
    -(s.ln() / std::f32::consts::E.ln())
}

/// The mean over columns of one cell's costs, as `pl.mean_horizontal` computes it: nulls
/// skipped, summed left to right in `f32` unless a `Float64` column is among them, the
/// sum divided by the count in `f64`; all null is `None`.
fn row_mean(cells: &[(bool, Option<f64>)]) -> Option<f64> {
    let wide = cells.iter().any(|(w, _)| *w);
    let present: Vec<f64> = cells.iter().filter_map(|(_, c)| *c).collect();
    if present.is_empty() {
        return None;
    }
    let sum = if wide {
        present.iter().fold(0.0f64, |a, &c| a + c)
    } else {
        f64::from(present.iter().fold(0.0f32, |a, &c| a + c as f32))
    };
    Some(sum / present.len() as f64)
}

/// `snapshot_similarity`: 0 unless the snapshot has as many rows as the target and every
/// target column; otherwise `exp(−mean cost)` of the best one-to-one row assignment.
pub(crate) fn snapshot_similarity(
    c: &SnapshotConstraint,
    snapshot: &[Row],
    target: &[Row],
) -> Result<f64, EvaluationError> {
    let ns = c.namespace;
    if snapshot.len() != target.len() {
        return Ok(0.0);
    }
    let known: Vec<&str> = snapshot_columns(ns).collect();
    if target
        .iter()
        .flat_map(|r| r.keys())
        .any(|k| !known.contains(&k.as_str()))
    {
        return Ok(0.0);
    }
    // A target frame has every column any of its rows has; a row lacking one holds null.
    // Schema order stands for the frame's column order: the f32 sum is exact whatever the
    // order unless three or more columns have a fractional cost, which no scenario has.
    let columns: Vec<&str> = known
        .into_iter()
        .filter(|k| target.iter().any(|r| r.contains_key(*k)))
        .collect();
    let mut cost = Vec::with_capacity(target.len());
    for t in target {
        let mut per_column = Vec::with_capacity(columns.len());
        for &column in &columns {
            let s = scores(&c.measure(column), ns, snapshot, column, get(t, column))?;
            per_column.push(s);
        }
        let row_costs: Vec<Option<f64>> = (0..snapshot.len())
            .map(|j| {
                let cells: Vec<(bool, Option<f64>)> = per_column
                    .iter()
                    .map(|s| match s {
                        Scores::Narrow(v) => (false, v[j].map(|x| f64::from(narrow_cost(x)))),
                        Scores::Wide(v) => (true, v[j].map(|x| -x.ln())),
                    })
                    .collect();
                row_mean(&cells)
            })
            .collect();
        cost.push(row_costs);
    }
    assignment::similarity(&cost)
}

/// `fill_null(strategy="zero")` over the given columns: numbers 0, booleans false.
fn zero_fill<'a>(ns: Namespace, row: &Row, columns: impl Iterator<Item = &'a str>) -> Row {
    let mut out = row.clone();
    for column in columns {
        if get(row, column).is_null() {
            let filled = match kind(ns, column) {
                Kind::Number => Value::from(0),
                Kind::Bool => Value::Bool(false),
                Kind::Text => Value::String(String::new()),
                Kind::Role => Value::String("SYSTEM".into()),
                Kind::List => Value::Null,
            };
            out.insert(column.to_string(), filled);
        }
    }
    out
}

fn fill_snapshot(ns: Namespace, rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .map(|r| zero_fill(ns, r, snapshot_columns(ns)))
        .collect()
}

fn fill_target(ns: Namespace, rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            let columns: Vec<String> = r.keys().cloned().collect();
            zero_fill(ns, r, columns.iter().map(String::as_str))
        })
        .collect()
}

/// An inner join's key equality on every column: a null never matches.
fn joins(ns: Namespace, a: &Row, b: &Row) -> bool {
    snapshot_columns(ns).all(|c| {
        let (x, y) = (get(a, c), get(b, c));
        !x.is_null() && !y.is_null() && py_eq(x, y)
    })
}

/// The rows of `left` that join no row of `right` (an anti join).
fn anti_join(ns: Namespace, left: &[Row], right: &[Row]) -> Vec<Row> {
    left.iter()
        .filter(|l| !right.iter().any(|r| joins(ns, l, r)))
        .cloned()
        .collect()
}

fn target_of(c: &SnapshotConstraint) -> &[Row] {
    c.target.as_deref().unwrap_or(&[])
}

/// `addition_similarity`: 0 unless every reference row joins the snapshot (counting every
/// pair that joins, as an inner join's length does); then the snapshot rows the
/// reference lacks against the target.
pub(crate) fn addition_similarity(
    c: &SnapshotConstraint,
    snapshot: &[Row],
    reference: &[Row],
) -> Result<f64, EvaluationError> {
    let ns = c.namespace;
    let s = fill_snapshot(ns, snapshot);
    let r = fill_snapshot(ns, reference);
    let pairs: usize = s
        .iter()
        .map(|a| r.iter().filter(|b| joins(ns, a, b)).count())
        .sum();
    if pairs != r.len() {
        return Ok(0.0);
    }
    let added = anti_join(ns, &s, &r);
    snapshot_similarity(c, &added, &fill_target(ns, target_of(c)))
}

/// `removal_similarity`: an addition read backwards (the reference is the snapshot plus
/// the removed rows).
pub(crate) fn removal_similarity(
    c: &SnapshotConstraint,
    snapshot: &[Row],
    reference: &[Row],
) -> Result<f64, EvaluationError> {
    addition_similarity(c, reference, snapshot)
}

/// `update_similarity`: 0 unless the row counts agree; then the snapshot rows the
/// reference lacks against the target.
pub(crate) fn update_similarity(
    c: &SnapshotConstraint,
    snapshot: &[Row],
    reference: &[Row],
) -> Result<f64, EvaluationError> {
    let ns = c.namespace;
    if snapshot.len() != reference.len() {
        return Ok(0.0);
    }
    let s = fill_snapshot(ns, snapshot);
    let r = fill_snapshot(ns, reference);
    let changed = anti_join(ns, &s, &r);
    snapshot_similarity(c, &changed, &fill_target(ns, target_of(c)))
}

/// `guardrail_similarity`: 1 if the snapshot equals the reference row for row (nulls
/// equal, order significant), else 0.
pub(crate) fn guardrail_similarity(ns: Namespace, snapshot: &[Row], reference: &[Row]) -> f64 {
    let same = snapshot.len() == reference.len()
        && snapshot.iter().zip(reference).all(|(a, b)| {
            snapshot_columns(ns).all(|c| {
                let (x, y) = (get(a, c), get(b, c));
                (x.is_null() && y.is_null()) || py_eq(x, y)
            })
        });
    if same {
        1.0
    } else {
        0.0
    }
}
