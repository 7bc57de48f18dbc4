//! The six column measures: one target value against one column of every snapshot row.
//!
//! Owns each measure's rule and its output type. Upstream returns a polars column per
//! measure: `Float32` for all but `column_one_similarity`, whose `pl.lit(1.0)` is
//! `Float64`, and a null where polars propagates one (`eq` or `str.contains_any` on a
//! null cell). Those types and nulls decide how the row's mean is summed later, so they
//! are kept here as [`Scores`]. Never combines columns or rows.

use serde_json::Value;

use crate::context::{Namespace, Row};

use super::error::EvaluationError;
use super::model::{ColumnMeasure, Tolerances};
use super::pyvalue::{is_close, py_eq};
use super::rouge::rouge_l;

/// One measure's similarity for each snapshot row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scores {
    /// A `Float32` column (`None` is a null).
    Narrow(Vec<Option<f32>>),
    /// A `Float64` column.
    Wide(Vec<Option<f64>>),
}

fn cell<'a>(row: &'a Row, column: &str) -> &'a Value {
    row.get(column).unwrap_or(&Value::Null)
}

fn flag(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Polars' `eq` on a typed column: numbers by value, anything else only with its own kind.
fn column_eq(cell: &Value, value: &Value) -> bool {
    match (cell, value) {
        (Value::Number(_), Value::Number(_)) => py_eq(cell, value),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Array(_), Value::Array(_)) => py_eq(cell, value),
        _ => false,
    }
}

/// Calls of a tool-trace cell: upstream stores a list of JSON texts; already decoded
/// objects are accepted too.
pub(crate) fn decode_traces(cell: &Value) -> Result<Option<Vec<Value>>, EvaluationError> {
    match cell {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => serde_json::from_str(text)
                    .map_err(|e| EvaluationError::ToolTrace(format!("{e}: {text}"))),
                other => Ok(other.clone()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(EvaluationError::ToolTrace(format!(
            "a tool_trace cell is {}",
            type_name(other)
        ))),
    }
}

/// The golden calls of a target tool trace: one call or a list of alternatives, as JSON
/// text (upstream's form) or already decoded.
pub(crate) fn golden_traces(value: &Value) -> Result<Vec<Value>, EvaluationError> {
    let decoded = match value {
        Value::String(text) => serde_json::from_str(text)
            .map_err(|e| EvaluationError::ToolTrace(format!("{e}: {text}")))?,
        other => other.clone(),
    };
    match decoded {
        Value::Array(list) => Ok(list),
        Value::Object(_) => Ok(vec![decoded]),
        other => Err(EvaluationError::ToolTrace(format!(
            "a target tool trace is {}",
            type_name(&other)
        ))),
    }
}

fn trace_matches(
    call: &Value,
    golden: &Value,
    atol: Option<&Tolerances>,
) -> Result<bool, EvaluationError> {
    let malformed = |what: &str| EvaluationError::ToolTrace(format!("a call without {what}"));
    let name = call
        .get("tool_name")
        .ok_or_else(|| malformed("tool_name"))?;
    let golden_name = golden
        .get("tool_name")
        .ok_or_else(|| malformed("tool_name"))?;
    if !py_eq(name, golden_name) {
        return Ok(false);
    }
    let args = call
        .get("arguments")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed("arguments"))?;
    let golden_args = golden
        .get("arguments")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed("arguments"))?;
    Ok(golden_args.iter().all(|(k, want)| {
        let tol = atol.and_then(|t| t.get(k)).copied();
        is_close(args.get(k), want, tol)
    }))
}

/// `measure` of `column` against `value` for each row of a snapshot of `ns`.
pub(crate) fn scores(
    measure: &ColumnMeasure,
    ns: Namespace,
    rows: &[Row],
    column: &str,
    value: &Value,
) -> Result<Scores, EvaluationError> {
    let target_type = || EvaluationError::TargetType {
        namespace: ns,
        column: column.into(),
        value: value.to_string(),
    };
    let narrow = |f: &dyn Fn(&Value) -> Result<Option<f32>, EvaluationError>| {
        rows.iter()
            .map(|r| f(cell(r, column)))
            .collect::<Result<Vec<_>, _>>()
            .map(Scores::Narrow)
    };
    match measure {
        ColumnMeasure::ExactMatch => narrow(&|c| {
            Ok(if value.is_null() {
                Some(flag(c.is_null()))
            } else if c.is_null() {
                None
            } else {
                Some(flag(column_eq(c, value)))
            })
        }),
        ColumnMeasure::Close { atol } => {
            if super::pyvalue::as_number(value).is_none() {
                return Err(target_type());
            }
            let tol = atol.get(column).copied();
            narrow(&|c| Ok(Some(flag(is_close(Some(value), c, tol)))))
        }
        ColumnMeasure::One => Ok(Scores::Wide(vec![Some(1.0); rows.len()])),
        ColumnMeasure::Contains => {
            let needle = value.as_str().ok_or_else(target_type)?;
            narrow(&|c| match c {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(flag(s.contains(needle)))),
                other => Err(EvaluationError::NotText {
                    namespace: ns,
                    column: column.into(),
                    found: type_name(other),
                }),
            })
        }
        ColumnMeasure::ToolTraceExactMatch { atol } => {
            let golden = golden_traces(value)?;
            narrow(&|c| {
                let Some(calls) = decode_traces(c)? else {
                    return Ok(Some(0.0));
                };
                for g in &golden {
                    for call in &calls {
                        if trace_matches(call, g, atol.as_ref())? {
                            return Ok(Some(1.0));
                        }
                    }
                }
                Ok(Some(0.0))
            })
        }
        ColumnMeasure::RougeL => {
            let target = value.as_str().ok_or_else(|| EvaluationError::NotText {
                namespace: ns,
                column: column.into(),
                found: type_name(value),
            })?;
            narrow(&|c| match c {
                Value::String(s) => Ok(Some(rouge_l(target, s) as f32)),
                other => Err(EvaluationError::NotText {
                    namespace: ns,
                    column: column.into(),
                    found: type_name(other),
                }),
            })
        }
    }
}
