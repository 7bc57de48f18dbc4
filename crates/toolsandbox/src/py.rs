//! Python's text for JSON values: `repr` and `json.dumps(..., ensure_ascii=False)`.
//!
//! Upstream's conversation holds Python text: a tool call is Python code whose
//! arguments are the `repr` of the parsed arguments, a tool's answer is the `repr` of
//! what it returned, and each tool trace is `json.dumps` of the call. This module
//! writes those texts from `serde_json` values so the rows read as upstream's do.
//!
//! Key order: Python keeps insertion order, serde_json's map does not (it sorts). The
//! caller passes the order upstream would have produced (a tool's parameters, a
//! table's columns); keys it does not name follow, sorted.
//!
//! Never: decides what a value is, only how Python would print it.

use serde_json::{Map, Value};

/// Python's `repr(float)`: the shortest text that reads back to the same float, in
/// fixed notation for exponents −4..16 and scientific (`1e+16`, `1.5e-05`) beyond.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if (-4..16).contains(&exp) {
        if exp < 0 {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{first}{frac}e{exp_sign}{:02}", exp.abs())
    };
    format!("{sign}{body}")
}

fn number_repr(n: &serde_json::Number) -> String {
    if n.is_f64() {
        float_repr(n.as_f64().unwrap_or(f64::NAN))
    } else {
        n.to_string()
    }
}

/// Characters Python's `str.isprintable` refuses beyond the control characters: the
/// separators other than the space and the common format characters.
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{a0}' | '\u{ad}' | '\u{1680}' | '\u{2000}'..='\u{200f}' | '\u{2028}'..='\u{202f}'
            | '\u{205f}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{3000}' | '\u{feff}')
}

/// Python's `repr(str)`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_unprintable(c) => {
                let code = c as u32;
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn ordered<'a>(map: &'a Map<String, Value>, order: &[&str]) -> Vec<(&'a String, &'a Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(k, _)| {
        (
            order
                .iter()
                .position(|o| *o == k.as_str())
                .unwrap_or(usize::MAX),
            k.as_str(),
        )
    });
    entries
}

/// Python's `repr` of the value as Python would hold it (`None`, `True`, lists, dicts).
pub fn repr(v: &Value, order: &[&str]) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => number_repr(n),
        Value::String(s) => str_repr(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(|x| repr(x, order)).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = ordered(map, order)
                .into_iter()
                .map(|(k, x)| format!("{}: {}", str_repr(k), repr(x, order)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `json.dumps(value, ensure_ascii=False)`: `, ` and `: ` separators, floats as Python
/// prints them.
pub fn dumps(v: &Value, order: &[&str]) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_repr(n),
        Value::String(s) => json_str(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(|x| dumps(x, order)).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = ordered(map, order)
                .into_iter()
                .map(|(k, x)| format!("{}: {}", json_str(k), dumps(x, order)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_python_prints_them() {
        let cases = [
            (1796455147.0, "1796455147.0"),
            (1796181239.741119, "1796181239.741119"),
            (0.0006213711922373339, "0.0006213711922373339"),
            (1e-5, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1e16, "1e+16"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (123456789012345.6, "123456789012345.6"),
            (-40.000000000000064, "-40.000000000000064"),
            (5.684341886080802e-14, "5.684341886080802e-14"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
        ];
        for (f, text) in cases {
            assert_eq!(float_repr(f), text);
        }
    }

    #[test]
    fn strings_take_the_quote_python_picks() {
        assert_eq!(str_repr("plain"), "'plain'");
        assert_eq!(str_repr("what's up"), "\"what's up\"");
        assert_eq!(str_repr("both ' and \""), "'both \\' and \"'");
        assert_eq!(str_repr("tab\tnew\nline\\"), "'tab\\tnew\\nline\\\\'");
        assert_eq!(str_repr("é \u{7}"), "'é \\x07'");
    }

    #[test]
    fn containers_in_the_given_key_order() {
        let v = json!([{"name": "Bart", "person_id": "p", "is_self": false, "relationship": null}]);
        let order = [
            "person_id",
            "name",
            "phone_number",
            "relationship",
            "is_self",
        ];
        assert_eq!(
            repr(&v, &order),
            "[{'person_id': 'p', 'name': 'Bart', 'relationship': None, 'is_self': False}]"
        );
        assert_eq!(
            dumps(&json!({"b": 1, "a": [true, null, 2.5, "x\"y"]}), &[]),
            "{\"a\": [true, null, 2.5, \"x\\\"y\"], \"b\": 1}"
        );
    }
}
