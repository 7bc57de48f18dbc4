//! Reading a matcher from the scenario file's JSON: names of upstream's functions (or
//! `{"fn", "kwargs"}` for a `functools.partial`) to the model's types.
//!
//! Owns the file's shape and its typed refusals (unknown measure, constraint, extractor).
//! Never validates the graph or derives guardrails: [`super::model`] does.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::context::{Namespace, Row};

use super::error::ModelError;
use super::model::{
    ColumnMeasure, ConstraintKind, Extractor, FillTo, Milestone, SnapshotConstraint, Tolerances,
};

impl Extractor {
    pub(crate) fn from_name(name: &str) -> Result<Extractor, ModelError> {
        Ok(match name {
            "search_weather_around_lat_lon_temperature_extractor" => {
                Extractor::SearchWeatherAroundLatLonTemperature
            }
            "result_to_timestamp0_extractor" => Extractor::ResultToTimestamp0,
            "result_to_timestamp1_extractor" => Extractor::ResultToTimestamp1,
            "days_extractor" => Extractor::Days,
            "lat_lon_dict_extractor" => Extractor::LatLonDict,
            "current_temperature_extractor" => Extractor::CurrentTemperature,
            "result_to_temperature_extractor" => Extractor::ResultToTemperature,
            "result_to_reminder_timestamp_lowerbound_extractor" => {
                Extractor::ResultToReminderTimestampLowerbound
            }
            "min_temperature_amount_extractor" => Extractor::MinTemperatureAmount,
            "min_temperature_extractor" => Extractor::MinTemperature,
            other => return Err(ModelError::UnknownExtractor(other.into())),
        })
    }
}

pub(crate) fn shape(at: &str, problem: &str) -> ModelError {
    ModelError::Shape {
        at: at.into(),
        problem: problem.into(),
    }
}

pub(crate) fn field<'a>(v: &'a Value, name: &str, at: &str) -> Result<&'a Value, ModelError> {
    v.get(name)
        .ok_or_else(|| shape(&format!("{at}{name}"), "missing"))
}

pub(crate) fn parse_edges(v: &Value) -> Result<Vec<(usize, usize)>, ModelError> {
    let list = v
        .as_array()
        .ok_or_else(|| shape("edge_list", "a list of [from, to] pairs"))?;
    list.iter()
        .map(|e| match e.as_array().map(Vec::as_slice) {
            Some([a, b]) => match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) => Ok((a as usize, b as usize)),
                _ => Err(shape("edge_list", "milestone indices")),
            },
            _ => Err(shape("edge_list", "a list of [from, to] pairs")),
        })
        .collect()
}

pub(crate) fn parse_milestone(v: &Value, at: &str) -> Result<Milestone, ModelError> {
    let constraints = v
        .as_array()
        .ok_or_else(|| shape(at, "a list of snapshot constraints"))?
        .iter()
        .enumerate()
        .map(|(j, c)| parse_constraint(c, &format!("{at}.{j}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Milestone { constraints })
}

fn parse_constraint(v: &Value, at: &str) -> Result<SnapshotConstraint, ModelError> {
    let namespace: Namespace = serde_json::from_value(field(v, "namespace", at)?.clone())
        .map_err(|_| shape(&format!("{at}.namespace"), "a namespace name"))?;
    let kind = parse_kind(field(v, "constraint", at)?, at)?;
    let reference = match v.get("reference_milestone") {
        None | Some(Value::Null) => None,
        Some(r) => Some(
            r.as_i64()
                .ok_or_else(|| shape(&format!("{at}.reference_milestone"), "an integer"))?,
        ),
    };
    let target = match v.get("target") {
        None | Some(Value::Null) => None,
        Some(Value::Array(rows)) => Some(
            rows.iter()
                .map(|r| {
                    r.as_object()
                        .cloned()
                        .ok_or_else(|| shape(&format!("{at}.target"), "a list of rows"))
                })
                .collect::<Result<Vec<Row>, _>>()?,
        ),
        Some(_) => return Err(shape(&format!("{at}.target"), "a list of rows")),
    };
    let mut overrides = BTreeMap::new();
    if let Some(columns) = v.get("columns").filter(|c| !c.is_null()) {
        let columns = columns
            .as_object()
            .ok_or_else(|| shape(&format!("{at}.columns"), "a column → measure map"))?;
        for (column, m) in columns {
            overrides.insert(column.clone(), parse_measure(column, m)?);
        }
    }
    Ok(SnapshotConstraint::new(
        namespace, kind, reference, target, overrides,
    ))
}

/// The keyword arguments of a `functools.partial`.
type Kwargs<'a> = Option<&'a serde_json::Map<String, Value>>;

/// A name, or `{"fn": name, "kwargs": {...}}` for a `functools.partial`.
fn name_and_kwargs<'a>(v: &'a Value, at: &str) -> Result<(&'a str, Kwargs<'a>), ModelError> {
    if let Some(name) = v.as_str() {
        return Ok((name, None));
    }
    let name = v
        .get("fn")
        .and_then(Value::as_str)
        .ok_or_else(|| shape(at, "a function name or {fn, kwargs}"))?;
    Ok((name, v.get("kwargs").and_then(Value::as_object)))
}

fn parse_kind(v: &Value, at: &str) -> Result<ConstraintKind, ModelError> {
    let (name, kwargs) = name_and_kwargs(v, &format!("{at}.constraint"))?;
    Ok(match name {
        "snapshot_similarity" => ConstraintKind::Snapshot,
        "addition_similarity" => ConstraintKind::Addition,
        "removal_similarity" => ConstraintKind::Removal,
        "update_similarity" => ConstraintKind::Update,
        "guardrail_similarity" => ConstraintKind::Guardrail,
        "tool_trace_dependant_similarity" => {
            let arg = |k: &str| {
                kwargs
                    .and_then(|kw| kw.get(k))
                    .and_then(Value::as_str)
                    .ok_or_else(|| shape(&format!("{at}.constraint.kwargs.{k}"), "a name"))
            };
            let fill_to = match arg("fill_to")? {
                "tool_trace" => FillTo::ToolTrace,
                "content" => FillTo::Content,
                other => return Err(ModelError::UnknownFillTo(other.into())),
            };
            ConstraintKind::ToolTraceDependant {
                fill_to,
                extractor: Extractor::from_name(arg("extractor")?)?,
            }
        }
        other => return Err(ModelError::UnknownConstraint(other.into())),
    })
}

fn parse_measure(column: &str, v: &Value) -> Result<ColumnMeasure, ModelError> {
    let (name, kwargs) = name_and_kwargs(v, &format!("columns.{column}"))?;
    let atol = match kwargs.and_then(|kw| kw.get("atol_dict")) {
        None | Some(Value::Null) => None,
        Some(d) => Some(parse_tolerances(d, column)?),
    };
    Ok(match name {
        "column_exact_match_similarity" => ColumnMeasure::ExactMatch,
        "column_close_similarity" => ColumnMeasure::Close {
            atol: atol.ok_or_else(|| ModelError::CloseWithoutTolerance(column.into()))?,
        },
        "column_one_similarity" => ColumnMeasure::One,
        "column_contains_similarity" => ColumnMeasure::Contains,
        "column_tool_trace_exact_match_similarity" => ColumnMeasure::ToolTraceExactMatch { atol },
        "column_rouge_l_similarity" => ColumnMeasure::RougeL,
        other => return Err(ModelError::UnknownMeasure(other.into())),
    })
}

/// Tolerances are numbers; Python writes an infinite one as `Infinity`, which JSON
/// cannot hold, so the names of the non-finite values are accepted as strings too.
fn parse_tolerances(v: &Value, column: &str) -> Result<Tolerances, ModelError> {
    let at = format!("columns.{column}.kwargs.atol_dict");
    let map = v
        .as_object()
        .ok_or_else(|| shape(&at, "a name → number map"))?;
    map.iter()
        .map(|(k, x)| {
            let t = match x {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => match s.to_ascii_lowercase().as_str() {
                    "infinity" | "inf" => Some(f64::INFINITY),
                    "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
                    "nan" => Some(f64::NAN),
                    _ => None,
                },
                _ => None,
            };
            t.map(|t| (k.clone(), t))
                .ok_or_else(|| shape(&format!("{at}.{k}"), "a number"))
        })
        .collect()
}
