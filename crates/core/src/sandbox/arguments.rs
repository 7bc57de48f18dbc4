//! Checks tool arguments against a tool's JSON Schema.
//!
//! Only the subset tool schemas here use is supported: `type: object`, `properties`
//! with scalar `type`s, `required`, `additionalProperties: false`, and `enum`. A full
//! validator (the `jsonschema` crate) was considered and not taken: it pulls a large
//! dependency tree (regex, URL and HTTP resolution) for checks five lines express, and
//! family validation already pins every schema to this subset.

use serde_json::{Map, Value as Json};

/// Parses an argument string and checks it; the error says what is wrong.
pub fn check(schema: &Json, raw: &str) -> Result<Map<String, Json>, String> {
    let value: Json =
        serde_json::from_str(raw).map_err(|e| format!("arguments are not valid JSON: {e}"))?;
    let Json::Object(args) = value else {
        return Err("arguments must be a JSON object".into());
    };
    let empty = Map::new();
    let props = schema["properties"].as_object().unwrap_or(&empty);
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str() {
            if !args.contains_key(name) {
                return Err(format!("missing required argument `{name}`"));
            }
        }
    }
    for (name, value) in &args {
        let Some(prop) = props.get(name) else {
            if schema["additionalProperties"] == Json::Bool(false) {
                return Err(format!("unexpected argument `{name}`"));
            }
            continue;
        };
        if let Some(ty) = prop["type"].as_str() {
            let ok = match ty {
                "string" => value.is_string(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "object" => value.is_object(),
                "array" => value.is_array(),
                _ => true,
            };
            if !ok {
                return Err(format!("argument `{name}` must be of type {ty}"));
            }
        }
        if let Some(allowed) = prop["enum"].as_array() {
            if !allowed.contains(value) {
                return Err(format!(
                    "argument `{name}` must be one of {}",
                    Json::Array(allowed.clone())
                ));
            }
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Json {
        json!({"type": "object", "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}},
               "required": ["id"], "additionalProperties": false})
    }

    #[test]
    fn accepts_valid_and_names_each_kind_of_error() {
        assert!(check(&schema(), r#"{"id": "rec_1", "amount": 3}"#).is_ok());
        assert!(check(&schema(), r#"{"id": "rec_1""#)
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(check(&schema(), "[1]").unwrap_err().contains("object"));
        assert!(check(&schema(), "{}")
            .unwrap_err()
            .contains("missing required argument `id`"));
        assert!(check(&schema(), r#"{"id": "x", "extra": 1}"#)
            .unwrap_err()
            .contains("unexpected"));
        assert!(check(&schema(), r#"{"id": 7}"#)
            .unwrap_err()
            .contains("type string"));
    }
}
