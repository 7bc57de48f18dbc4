//! `tool_trace_dependant_similarity` and upstream's ten tool-trace extractors: a target
//! message completed with values read from the reference message's tool calls.
//!
//! Owns the extraction (each extractor's reading of a call's `result`, with Python's
//! `float()`/`int()` and its fixed-point spellings; a call the extractor cannot read adds
//! nothing, as upstream swallows those errors), the filling of the target's tool trace or
//! content, and the maximum over the filled targets. Upstream returns 0 outright when a
//! filled content names a missing value or a target call has no arguments (its
//! `KeyError`/`IndexError` handler wraps the whole search); so does this. Never reads the
//! world: the two one-row SANDBOX snapshots are handed in.

use serde_json::{Map, Value};

use crate::context::Row;

use super::constraints::snapshot_similarity;
use super::error::EvaluationError;
use super::measures::{decode_traces, golden_traces};
use super::model::{Extractor, FillTo, SnapshotConstraint};
use super::pyvalue::{fixed, py_float, py_int, py_str};

type Extracted = Map<String, Value>;

fn one(key: &str, value: Value) -> Vec<Extracted> {
    let mut m = Map::new();
    m.insert(key.into(), value);
    vec![m]
}

/// `default_value_normalization` of a float: 0 to 3 decimals.
fn spellings(key: &str, x: f64) -> Vec<Extracted> {
    (0..=3)
        .map(|places| {
            let mut m = Map::new();
            m.insert(key.into(), Value::String(fixed(x, places)));
            m
        })
        .collect()
}

/// What `extractor` reads from one call (empty where upstream's extractor raises or
/// returns nothing).
pub(crate) fn extract(extractor: Extractor, call: &Value) -> Vec<Extracted> {
    let result = call.get("result");
    let field = |k: &str| result.and_then(Value::as_object).and_then(|r| r.get(k));
    let float_of = |v: Option<&Value>| v.and_then(py_float).map(Value::from);
    let out = match extractor {
        Extractor::SearchWeatherAroundLatLonTemperature => field("current_temperature")
            .and_then(py_float)
            .map(|t| spellings("temperature", t)),
        Extractor::ResultToTimestamp0 => float_of(result).map(|v| one("timestamp_0", v)),
        Extractor::ResultToTimestamp1 => float_of(result).map(|v| one("timestamp_1", v)),
        Extractor::Days => field("days").and_then(py_int).map(|v| one("days", v)),
        Extractor::LatLonDict => match (field("latitude"), field("longitude")) {
            (Some(lat), Some(lon)) => {
                let mut m = Map::new();
                m.insert("latitude".into(), lat.clone());
                m.insert("longitude".into(), lon.clone());
                Some(vec![m])
            }
            _ => None,
        },
        Extractor::CurrentTemperature => {
            float_of(field("current_temperature")).map(|v| one("amount", v))
        }
        Extractor::ResultToTemperature => result
            .and_then(py_float)
            .map(|t| spellings("temperature", t)),
        Extractor::ResultToReminderTimestampLowerbound => {
            float_of(result).map(|v| one("reminder_timestamp_lowerbound", v))
        }
        Extractor::MinTemperatureAmount => {
            float_of(field("min_temperature")).map(|v| one("amount", v))
        }
        Extractor::MinTemperature => result
            .and_then(py_float)
            .map(|t| spellings("min_temperature", t)),
    };
    out.unwrap_or_default()
}

/// Python's `template.format(**values)` for plain `{name}` fields and `{{`/`}}`.
/// `Ok(None)` where Python raises `KeyError` or `IndexError` (upstream then scores 0).
fn format(template: &str, values: &Extracted) -> Result<Option<String>, EvaluationError> {
    let bad = || EvaluationError::Template(template.into());
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some('{') | None => return Err(bad()),
                        Some(c) => name.push(c),
                    }
                }
                if name.contains(['!', ':', '.', '[']) {
                    return Err(bad());
                }
                if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
                    return Ok(None);
                }
                let Some(v) = values.get(&name) else {
                    return Ok(None);
                };
                out.push_str(&py_str(v).ok_or_else(bad)?);
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => return Err(bad()),
            c => out.push(c),
        }
    }
    Ok(Some(out))
}

/// The target with `column` set to `value` in every row (polars' broadcast literal).
fn with_column(target: &[Row], column: &str, value: Value) -> Vec<Row> {
    target
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.insert(column.into(), value.clone());
            r
        })
        .collect()
}

/// Both ways of merging extracted values into each candidate call: the extracted values
/// winning, then the candidate's own arguments winning. `None` if a candidate has no
/// arguments.
fn filled_calls(
    candidates: &[Value],
    extracted: &Extracted,
) -> Result<Option<Vec<Value>>, EvaluationError> {
    let mut out = Vec::with_capacity(candidates.len() * 2);
    for candidate in candidates {
        let Some(call) = candidate.as_object() else {
            return Err(EvaluationError::ToolTrace(format!(
                "a target call is not an object: {candidate}"
            )));
        };
        let Some(args) = call.get("arguments") else {
            return Ok(None);
        };
        let args = args.as_object().ok_or_else(|| {
            EvaluationError::ToolTrace(format!("target arguments are not an object: {args}"))
        })?;
        let mut theirs = args.clone();
        theirs.extend(extracted.clone());
        let mut ours = extracted.clone();
        ours.extend(args.clone());
        for merged in [theirs, ours] {
            let mut c = call.clone();
            c.insert("arguments".into(), Value::Object(merged));
            out.push(Value::Object(c));
        }
    }
    Ok(Some(out))
}

/// `tool_trace_dependant_similarity` of the message `snapshot` against the constraint's
/// target, filled from the calls of the message `reference`.
pub(crate) fn tool_trace_dependant_similarity(
    c: &SnapshotConstraint,
    fill_to: FillTo,
    extractor: Extractor,
    snapshot: &[Row],
    reference: &[Row],
) -> Result<f64, EvaluationError> {
    for rows in [snapshot, reference] {
        if rows.len() != 1 {
            return Err(EvaluationError::NotOneMessage(rows.len()));
        }
    }
    let target = c.target.as_deref().unwrap_or(&[]);
    let Some(calls) = decode_traces(reference[0].get("tool_trace").unwrap_or(&Value::Null))? else {
        return Ok(0.0);
    };
    let extracted: Vec<Extracted> = calls.iter().flat_map(|t| extract(extractor, t)).collect();
    let first = |column: &str| {
        target.first().and_then(|r| r.get(column)).ok_or_else(|| {
            EvaluationError::ToolTrace(format!("the target has no `{column}` to fill"))
        })
    };
    let mut best = 0.0f64;
    for values in &extracted {
        let filled = match fill_to {
            FillTo::ToolTrace => {
                let candidates = golden_traces(first("tool_trace")?)?;
                let Some(calls) = filled_calls(&candidates, values)? else {
                    return Ok(0.0);
                };
                with_column(target, "tool_trace", Value::Array(calls))
            }
            FillTo::Content => {
                let template = first("content")?.as_str().ok_or_else(|| {
                    EvaluationError::Template("the target content is not text".into())
                })?;
                let Some(text) = format(template, values)? else {
                    return Ok(0.0);
                };
                with_column(target, "content", Value::String(text))
            }
        };
        let s = snapshot_similarity(c, snapshot, &filled)?;
        if s > best {
            best = s;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Extracted {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn extractors_read_results_as_python_would() {
        let weather = json!({"tool_name": "w", "arguments": {}, "result": {"current_temperature": "71.25", "min_temperature": 60}});
        let temps: Vec<Value> = extract(Extractor::SearchWeatherAroundLatLonTemperature, &weather)
            .into_iter()
            .map(|m| m["temperature"].clone())
            .collect();
        assert_eq!(
            temps,
            vec![json!("71"), json!("71.2"), json!("71.25"), json!("71.250")]
        );
        assert_eq!(
            extract(Extractor::MinTemperatureAmount, &weather),
            vec![map(json!({"amount": 60.0}))]
        );
        let days = json!({"result": {"days": 12.7}});
        assert_eq!(
            extract(Extractor::Days, &days),
            vec![map(json!({"days": 12}))]
        );
        assert!(extract(Extractor::ResultToTimestamp0, &json!({"result": "soon"})).is_empty());
        assert!(extract(Extractor::LatLonDict, &json!({"result": [1, 2]})).is_empty());
    }

    #[test]
    fn templates_format_like_python() {
        let v = map(json!({"days": 5, "t": "7.5"}));
        assert_eq!(
            format("It is {days} days {{ok}}", &v).unwrap(),
            Some("It is 5 days {ok}".into())
        );
        assert_eq!(format("{missing}", &v).unwrap(), None);
        assert_eq!(format("{0}", &v).unwrap(), None);
        assert!(format("{t:.1f}", &v).is_err());
        assert!(format("oops }", &v).is_err());
    }
}
