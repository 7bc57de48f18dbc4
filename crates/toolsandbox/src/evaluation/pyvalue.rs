//! Python's meaning of JSON values where upstream's grade depends on it: `==`, `is_close`,
//! `float()`, `int()`, `str()` and fixed-point formatting.
//!
//! Owns those small conversions so the measures can state their rules in upstream's terms.
//! Never decides a similarity.

use serde_json::{Number, Value};

/// A number as Python sees it: `bool` is an `int` there.
pub(crate) fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn numbers_equal(a: &Number, b: &Number) -> bool {
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

/// Python's `==` on values decoded from JSON (`1 == 1.0 == True`, containers deep).
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            as_number(a) == as_number(b)
        }
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| py_eq(p, q)))
        }
        _ => false,
    }
}

/// Upstream's `is_close`: numbers within `atol` when one is given, `==` otherwise.
/// `value` `None` is upstream's `NOT_GIVEN`, equal to nothing.
pub(crate) fn is_close(value: Option<&Value>, reference: &Value, atol: Option<f64>) -> bool {
    let Some(value) = value else {
        return false;
    };
    if let (Some(atol), Some(x), Some(y)) = (atol, as_number(value), as_number(reference)) {
        return (x - y).abs() <= atol;
    }
    py_eq(value, reference)
}

/// Python's `float(v)`, `None` where it raises.
pub(crate) fn py_float(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => parse_float(s),
        other => as_number(other),
    }
}

fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim();
    // Python allows single underscores between digits; Rust's parser does not.
    let cleaned: String = if t.contains('_') {
        let b = t.as_bytes();
        let ok = b.iter().enumerate().all(|(i, &c)| {
            c != b'_'
                || (i > 0
                    && i + 1 < b.len()
                    && b[i - 1].is_ascii_digit()
                    && b[i + 1].is_ascii_digit())
        });
        if !ok {
            return None;
        }
        t.replace('_', "")
    } else {
        t.to_string()
    };
    cleaned.parse::<f64>().ok()
}

/// Python's `int(v)`, `None` where it raises.
pub(crate) fn py_int(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::from(i64::from(*b))),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.clone()),
        Value::Number(n) => {
            let f = n.as_f64()?.trunc();
            // Beyond i64 Python still has the integer; JSON-sized values never get there.
            (f.is_finite() && f.abs() < 9.2e18).then(|| Value::from(f as i64))
        }
        Value::String(s) => {
            let t = s.trim().replace('_', "");
            t.parse::<i64>().ok().map(Value::from)
        }
        _ => None,
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, fixed between 1e-4 and
/// 1e16, scientific (two-digit exponent at least) outside.
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
    }
}

/// Python's `str(v)` for the values extractors produce; `None` for containers.
pub(crate) fn py_str(v: &Value) -> Option<String> {
    Some(match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => float_repr(n.as_f64()?),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// Python's `f"{x:.{places}f}"` (Rust rounds the exact binary value half to even, as
/// Python does; only the spelling of NaN differs).
pub(crate) fn fixed(x: f64, places: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    format!("{x:.places$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_equality_crosses_int_float_and_bool() {
        assert!(py_eq(&json!(1), &json!(1.0)));
        assert!(py_eq(&json!(true), &json!(1)));
        assert!(!py_eq(&json!("1"), &json!(1)));
        assert!(py_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!py_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn is_close_uses_the_tolerance_only_for_numbers() {
        assert!(is_close(Some(&json!(10.5)), &json!(10), Some(1.0)));
        assert!(!is_close(Some(&json!(12)), &json!(10), Some(1.0)));
        assert!(is_close(Some(&json!(1e12)), &json!(0), Some(f64::INFINITY)));
        assert!(!is_close(None, &json!(10), Some(f64::INFINITY)));
        assert!(is_close(Some(&json!("a")), &json!("a"), Some(1.0)));
    }

    #[test]
    fn conversions_follow_python() {
        assert_eq!(py_float(&json!(" 72.5 ")), Some(72.5));
        assert_eq!(py_float(&json!("1_000.5")), Some(1000.5));
        assert_eq!(py_float(&json!("abc")), None);
        assert_eq!(py_float(&json!(null)), None);
        assert_eq!(py_int(&json!(12.9)), Some(json!(12)));
        assert_eq!(py_int(&json!("12.0")), None);
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1e-7), "1e-07");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(-123.25), "-123.25");
        assert_eq!(float_repr(1.5e300), "1.5e+300");
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(-0.4, 0), "-0");
        assert_eq!(fixed(72.45, 1), "72.5");
    }
}
