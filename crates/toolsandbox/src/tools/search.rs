//! upstream's `filter_dataframe`: the search tools' filters, applied in order.
//!
//! Each filter is exact (`column == value`), fuzzy (rapidfuzz `WRatio` at least a
//! threshold, best first, at most five: see [`crate::fuzzy::extract`]) or a bound
//! (`>=`, `<=`). A null cell never matches, as in polars. A fuzzy filter reorders the
//! rows by score, and the filters after it keep that order. With no filter given, the
//! search is refused, naming every column it could have filtered on.
//!
//! Never: changes the world.

use serde_json::Value;

use super::ToolError;
use crate::context::Row;
use crate::fuzzy;

/// How one column is filtered.
#[derive(Debug, Clone, Copy)]
pub(crate) enum How {
    Exact,
    Fuzzy(f64),
    AtLeast,
    AtMost,
}

/// One criterion: the column, how, and the value if the caller passed one.
pub(crate) type Criterion<'a> = (&'static str, How, Option<&'a Value>);

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "numeric",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "struct",
    }
}

fn exact(rows: Vec<Row>, column: &str, value: &Value) -> Result<Vec<Row>, ToolError> {
    let mut out = Vec::new();
    for row in rows {
        let cell = row.get(column).unwrap_or(&Value::Null);
        let hit = match (cell, value) {
            (Value::Null, _) | (_, Value::Null) => false,
            (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
            (Value::Number(a), Value::Bool(b)) | (Value::Bool(b), Value::Number(a)) => {
                a.as_f64() == Some(f64::from(u8::from(*b)))
            }
            (a, b) if kind(a) == kind(b) => a == b,
            (a, b) => {
                return Err(ToolError::Type(format!(
                    "cannot compare {} column '{column}' with {} value",
                    kind(a),
                    kind(b)
                )))
            }
        };
        if hit {
            out.push(row);
        }
    }
    Ok(out)
}

fn bound(rows: Vec<Row>, column: &str, value: &Value, at_least: bool) -> Vec<Row> {
    let Some(limit) = value.as_f64() else {
        return Vec::new();
    };
    rows.into_iter()
        .filter(|r| {
            r.get(column).and_then(Value::as_f64).is_some_and(|x| {
                if at_least {
                    x >= limit
                } else {
                    x <= limit
                }
            })
        })
        .collect()
}

fn fuzzy_filter(
    rows: Vec<Row>,
    column: &str,
    value: &Value,
    threshold: f64,
) -> Result<Vec<Row>, ToolError> {
    let query = match value {
        Value::Null => return Ok(Vec::new()),
        Value::String(s) => s.as_str(),
        _ => return Err(ToolError::Type("sentence must be a String".into())),
    };
    let choices: Vec<Option<&str>> = rows
        .iter()
        .map(|r| r.get(column).and_then(Value::as_str))
        .collect();
    let picked = fuzzy::extract(query, &choices, threshold);
    Ok(picked.into_iter().map(|i| rows[i].clone()).collect())
}

/// Applies the criteria in order to a snapshot's rows.
pub(crate) fn filter(rows: Vec<Row>, criteria: &[Criterion<'_>]) -> Result<Vec<Row>, ToolError> {
    if criteria.iter().all(|(_, _, v)| v.is_none()) {
        let names: Vec<String> = criteria
            .iter()
            .map(|(c, _, _)| crate::py::str_repr(c))
            .collect();
        return Err(ToolError::Value(format!(
            "No search criteria are given. At least one search criteria should be provided among ({})",
            names.join(", ")
        )));
    }
    let mut rows = rows;
    for &(column, how, value) in criteria {
        let Some(value) = value else { continue };
        rows = match how {
            How::Exact => exact(rows, column, value)?,
            How::Fuzzy(threshold) => fuzzy_filter(rows, column, value, threshold)?,
            How::AtLeast => bound(rows, column, value, true),
            How::AtMost => bound(rows, column, value, false),
        };
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows() -> Vec<Row> {
        [
            json!({"name": "Tomas Haake", "n": 1.0, "is_self": true}),
            json!({"name": "Homer S", "n": null, "is_self": false}),
            json!({"name": null, "n": 3.0, "is_self": false}),
        ]
        .into_iter()
        .filter_map(|v| v.as_object().cloned())
        .collect()
    }

    #[test]
    fn filters_in_order() {
        let homer = json!("homer");
        let out = filter(rows(), &[("name", How::Fuzzy(90.0), Some(&homer))]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["name"], "Homer S");
        let two = json!(2);
        let out = filter(rows(), &[("n", How::AtLeast, Some(&two))]).unwrap();
        assert_eq!(out.len(), 1);
        let f = json!(false);
        let out = filter(rows(), &[("is_self", How::Exact, Some(&f))]).unwrap();
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn no_criteria_is_refused_with_every_column() {
        let err = filter(
            rows(),
            &[("name", How::Exact, None), ("n", How::AtMost, None)],
        );
        assert_eq!(
            err.unwrap_err().to_string(),
            "ValueError: No search criteria are given. At least one search criteria should be provided among ('name', 'n')"
        );
    }
}
