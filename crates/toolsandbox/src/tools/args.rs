//! A tool call's arguments, checked as Python checks a call to upstream's tool.
//!
//! Upstream runs `tool(**arguments)`: Python refuses unknown and missing keywords, and
//! the tools decorated `@typechecked` refuse a value whose type the annotation does not
//! allow (an `int` passes for a `float`, a `bool` for either, as Python's numeric tower
//! has it). The messages are Python's. Range checks (`validate_timestamp`,
//! `validate_latitude`, …) are helpers the tools call in their own order.
//!
//! Never: converts a value to another type; a tool reads what the caller sent.

use serde_json::{Map, Value};

use super::ToolError;
use crate::py;

/// An annotation's base type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Str,
    Float,
    Int,
    Bool,
}

/// What a parameter defaults to, as far as checking a call is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dflt {
    /// Must be passed.
    Required,
    /// Has an ordinary default (`None`, `False`, `0`).
    Value,
    /// Defaults to upstream's `NOT_GIVEN` sentinel (a search or modify filter).
    NotGiven,
}

/// One parameter of a tool's signature.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub name: &'static str,
    pub ty: Ty,
    /// `Optional[...]`: `None` is allowed.
    pub none_ok: bool,
    pub default: Dflt,
}

pub(crate) const fn req(name: &'static str, ty: Ty) -> Param {
    Param {
        name,
        ty,
        none_ok: false,
        default: Dflt::Required,
    }
}

pub(crate) const fn opt(name: &'static str, ty: Ty, none_ok: bool) -> Param {
    Param {
        name,
        ty,
        none_ok,
        default: Dflt::Value,
    }
}

pub(crate) const fn not_given(name: &'static str, ty: Ty) -> Param {
    Param {
        name,
        ty,
        none_ok: false,
        default: Dflt::NotGiven,
    }
}

pub(crate) const fn not_given_or_none(name: &'static str, ty: Ty) -> Param {
    Param {
        name,
        ty,
        none_ok: true,
        default: Dflt::NotGiven,
    }
}

/// Python's `type(value)` as `repr` shows it.
pub(crate) fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<class 'NoneType'>",
        Value::Bool(_) => "<class 'bool'>",
        Value::Number(n) if n.is_f64() => "<class 'float'>",
        Value::Number(_) => "<class 'int'>",
        Value::String(_) => "<class 'str'>",
        Value::Array(_) => "<class 'list'>",
        Value::Object(_) => "<class 'dict'>",
    }
}

impl Param {
    /// The annotation as Python prints it in `validate_type`'s message.
    fn annotation(&self) -> String {
        let base = match self.ty {
            Ty::Str => "str",
            Ty::Float => "float",
            Ty::Int => "int",
            Ty::Bool => "bool",
        };
        const NOT_GIVEN: &str = "tool_sandbox.common.utils.NotGiven";
        match (self.default == Dflt::NotGiven, self.none_ok) {
            (true, true) => format!("typing.Union[{base}, NoneType, {NOT_GIVEN}]"),
            (true, false) => format!("typing.Union[{base}, {NOT_GIVEN}]"),
            (false, true) => format!("typing.Optional[{base}]"),
            (false, false) => format!("<class '{base}'>"),
        }
    }

    /// upstream's `validate_type`.
    pub(crate) fn check(&self, v: &Value) -> Result<(), ToolError> {
        let fits = match v {
            Value::Null => self.none_ok,
            Value::Bool(_) => matches!(self.ty, Ty::Bool | Ty::Int | Ty::Float),
            Value::Number(n) if n.is_f64() => self.ty == Ty::Float,
            Value::Number(_) => matches!(self.ty, Ty::Int | Ty::Float),
            Value::String(_) => self.ty == Ty::Str,
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            Err(ToolError::Type(format!(
                "Parameter '{}' is of type '{}', but expected '{}'.",
                self.name,
                py_type(v),
                self.annotation()
            )))
        }
    }
}

/// The arguments of one call, after Python's checks: only those passed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Args {
    values: Map<String, Value>,
}

fn missing_message(tool: &str, missing: &[&str]) -> String {
    let quoted: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
    let list = match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
        [] => String::new(),
    };
    let noun = if missing.len() == 1 {
        "argument"
    } else {
        "arguments"
    };
    format!(
        "{tool}() missing {} required positional {noun}: {list}",
        missing.len()
    )
}

impl Args {
    /// Python's call checks, then (for a `@typechecked` tool) the annotations.
    pub(crate) fn parse(
        tool: &str,
        params: &[Param],
        typechecked: bool,
        arguments: &Value,
    ) -> Result<Args, ToolError> {
        let values = match arguments {
            Value::Object(map) => map.clone(),
            Value::Null => Map::new(),
            other => {
                let ty = py_type(other)
                    .trim_start_matches("<class '")
                    .trim_end_matches("'>");
                return Err(ToolError::Type(format!(
                    "{tool}() argument after ** must be a mapping, not {ty}"
                )));
            }
        };
        if let Some(k) = values
            .keys()
            .find(|k| !params.iter().any(|p| p.name == k.as_str()))
        {
            return Err(ToolError::Type(format!(
                "{tool}() got an unexpected keyword argument {}",
                py::str_repr(k)
            )));
        }
        let missing: Vec<&str> = params
            .iter()
            .filter(|p| p.default == Dflt::Required && !values.contains_key(p.name))
            .map(|p| p.name)
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::Type(missing_message(tool, &missing)));
        }
        if typechecked {
            for p in params {
                if let Some(v) = values.get(p.name) {
                    p.check(v)?;
                }
            }
        }
        Ok(Args { values })
    }

    /// The value passed for `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// A string argument.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// A numeric argument as Python would compute with it (`True` is 1).
    pub(crate) fn number(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            v => v.as_f64(),
        }
    }

    /// An integer argument (`True` is 1).
    pub(crate) fn int(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Bool(b) => Some(i64::from(*b)),
            v => v.as_i64(),
        }
    }

    /// A boolean argument.
    pub(crate) fn flag(&self, name: &str) -> Option<bool> {
        self.get(name).and_then(Value::as_bool)
    }
}

/// Python's truthiness of a value (`if on and ...`).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// upstream's `validate_range` for a numeric value (others pass).
pub(crate) fn check_range(args: &Args, name: &str, min: f64, max: f64) -> Result<(), ToolError> {
    let Some(v) = args.get(name) else {
        return Ok(());
    };
    let Some(x) = (match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        v => v.as_f64(),
    }) else {
        return Ok(());
    };
    if x < min {
        return Err(ToolError::Value(format!(
            "Parameter '{name}' is smaller than its valid range minimum of {}.",
            py::float_repr(min)
        )));
    }
    if x > max {
        return Err(ToolError::Value(format!(
            "Parameter '{name}' is larger than its valid range maximum of {}.",
            py::float_repr(max)
        )));
    }
    Ok(())
}

/// 1980-01-01 and 2050-01-01 as upstream writes them (in its own, non-UTC zone).
const TS_MIN: f64 = 315_529_200.0;
const TS_MAX: f64 = 2_524_604_400.0;

/// upstream's `validate_timestamp` range (seconds, not milliseconds).
pub(crate) fn check_timestamp(args: &Args, name: &str) -> Result<(), ToolError> {
    check_range(args, name, TS_MIN, TS_MAX)
}

/// upstream's `validate_latitude` range.
pub(crate) fn check_latitude(args: &Args, name: &str) -> Result<(), ToolError> {
    check_range(args, name, -90.0, 90.0)
}

/// upstream's `validate_longitude` range.
pub(crate) fn check_longitude(args: &Args, name: &str) -> Result<(), ToolError> {
    check_range(args, name, -180.0, 180.0)
}

/// upstream's `validate_phone_number` on an argument, if passed.
pub(crate) fn check_phone(args: &Args, name: &str) -> Result<(), ToolError> {
    match args.get(name) {
        None => Ok(()),
        Some(Value::String(s)) => crate::phone::validate(s).map_err(ToolError::PhoneNumber),
        Some(_) => Err(ToolError::Type("Can't parse non-string value".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARAMS: &[Param] = &[
        req("name", Ty::Str),
        req("phone_number", Ty::Str),
        opt("relationship", Ty::Str, true),
        opt("is_self", Ty::Bool, false),
    ];

    fn parse(v: Value) -> Result<Args, ToolError> {
        Args::parse("add_contact", PARAMS, true, &v)
    }

    #[test]
    fn python_call_errors() {
        assert_eq!(
            parse(json!({"name": "x"})).unwrap_err().to_string(),
            "TypeError: add_contact() missing 1 required positional argument: 'phone_number'"
        );
        assert_eq!(
            parse(json!({})).unwrap_err().to_string(),
            "TypeError: add_contact() missing 2 required positional arguments: 'name' and 'phone_number'"
        );
        assert_eq!(
            parse(json!({"name": "x", "phone_number": "+1", "age": 3}))
                .unwrap_err()
                .to_string(),
            "TypeError: add_contact() got an unexpected keyword argument 'age'"
        );
        assert_eq!(
            parse(json!([1])).unwrap_err().to_string(),
            "TypeError: add_contact() argument after ** must be a mapping, not list"
        );
    }

    #[test]
    fn typecheck_messages_name_the_annotation() {
        assert_eq!(
            parse(json!({"name": 5, "phone_number": "+1"}))
                .unwrap_err()
                .to_string(),
            "TypeError: Parameter 'name' is of type '<class 'int'>', but expected '<class 'str'>'."
        );
        assert_eq!(
            parse(json!({"name": "x", "phone_number": "+1", "relationship": 1}))
                .unwrap_err()
                .to_string(),
            "TypeError: Parameter 'relationship' is of type '<class 'int'>', but expected 'typing.Optional[str]'."
        );
        let p = not_given_or_none("latitude", Ty::Float);
        assert!(p.check(&json!(null)).is_ok());
        assert!(p.check(&json!(3)).is_ok());
        assert_eq!(
            p.check(&json!("3")).unwrap_err().to_string(),
            "TypeError: Parameter 'latitude' is of type '<class 'str'>', but expected 'typing.Union[float, NoneType, tool_sandbox.common.utils.NotGiven]'."
        );
        assert!(req("year", Ty::Int).check(&json!(2026.0)).is_err());
        assert!(req("year", Ty::Int).check(&json!(true)).is_ok());
    }

    #[test]
    fn ranges() {
        let args = Args::parse(
            "t",
            &[req("timestamp", Ty::Float)],
            true,
            &json!({"timestamp": 1_796_455_147_000i64}),
        )
        .unwrap();
        assert_eq!(
            check_timestamp(&args, "timestamp").unwrap_err().to_string(),
            "ValueError: Parameter 'timestamp' is larger than its valid range maximum of 2524604400.0."
        );
    }
}
