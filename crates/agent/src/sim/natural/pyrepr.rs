//! Reading a tool result written as Python's `repr` (or JSON), as a model reads one.
//!
//! A result is either a value — `None`, `True`, a number, a quoted string, a list, a
//! tuple or a dict of those — or an exception line, `ErrorType: message`. Values become
//! JSON (`None` is null, a tuple a list); anything else is kept as text.
//!
//! Never: knows which tool wrote the result; it reads the text only.

use serde_json::{Map, Number, Value as Json};

/// One tool result, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// A value.
    Value(Json),
    /// An exception: its type and message.
    Error {
        /// `PermissionError`, `ValueError`, …
        kind: String,
        /// What it says.
        message: String,
    },
    /// Text that is neither.
    Text(String),
}

/// Reads one result.
pub fn read(content: &str) -> Reading {
    let t = content.trim();
    if let Some((kind, message)) = exception(t) {
        return Reading::Error { kind, message };
    }
    if let Ok(v) = serde_json::from_str::<Json>(t) {
        return Reading::Value(v);
    }
    let mut p = Parser {
        s: t.as_bytes(),
        at: 0,
    };
    match p.value() {
        Some(v) if p.rest_is_blank() => Reading::Value(v),
        _ => Reading::Text(t.to_string()),
    }
}

/// `SomeError: message` (the type a Python identifier ending in `Error` or
/// `Exception`).
fn exception(t: &str) -> Option<(String, String)> {
    let (kind, message) = t.split_once(':')?;
    let kind = kind.trim();
    let ident = !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let named = kind.ends_with("Error") || kind.ends_with("Exception");
    (ident && named).then(|| (kind.to_string(), message.trim().to_string()))
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn blank(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn rest_is_blank(&mut self) -> bool {
        self.blank();
        self.at == self.s.len()
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.s[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Json> {
        self.blank();
        let c = *self.s.get(self.at)?;
        match c {
            b'[' | b'(' => self.list(if c == b'[' { b']' } else { b')' }),
            b'{' => self.dict(),
            b'\'' | b'"' => self.string().map(Json::String),
            _ if self.eat("None") => Some(Json::Null),
            _ if self.eat("True") => Some(Json::Bool(true)),
            _ if self.eat("False") => Some(Json::Bool(false)),
            _ => self.number(),
        }
    }

    fn list(&mut self, close: u8) -> Option<Json> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            self.blank();
            if self.s.get(self.at) == Some(&close) {
                self.at += 1;
                return Some(Json::Array(out));
            }
            out.push(self.value()?);
            self.blank();
            if self.s.get(self.at) == Some(&b',') {
                self.at += 1;
            }
        }
    }

    fn dict(&mut self) -> Option<Json> {
        self.at += 1;
        let mut out = Map::new();
        loop {
            self.blank();
            if self.s.get(self.at) == Some(&b'}') {
                self.at += 1;
                return Some(Json::Object(out));
            }
            let key = match self.value()? {
                Json::String(k) => k,
                other => other.to_string(),
            };
            self.blank();
            if !self.eat(":") {
                return None;
            }
            let v = self.value()?;
            out.insert(key, v);
            self.blank();
            if self.s.get(self.at) == Some(&b',') {
                self.at += 1;
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.s[self.at];
        self.at += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.s.get(self.at) {
            self.at += 1;
            match c {
                _ if c == quote => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.at)?;
                    self.at += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn number(&mut self) -> Option<Json> {
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        if let Ok(i) = text.parse::<i64>() {
            return Some(Json::from(i));
        }
        let f = text.parse::<f64>().ok()?;
        Number::from_f64(f).map(Json::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_values_and_exceptions_are_read() {
        let contact = "[{'person_id': '9e137f06-916a-5310-8174-cf0b7e9f7054', 'name': 'Fredrik Thordendal', 'phone_number': '+12453344098', 'relationship': 'friend', 'is_self': False}]";
        assert_eq!(
            read(contact),
            Reading::Value(json!([{
                "person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054",
                "name": "Fredrik Thordendal",
                "phone_number": "+12453344098",
                "relationship": "friend",
                "is_self": false
            }]))
        );
        assert_eq!(read("1796455147.0"), Reading::Value(json!(1796455147.0)));
        assert_eq!(read("None"), Reading::Value(Json::Null));
        assert_eq!(read("True"), Reading::Value(json!(true)));
        assert_eq!(
            read("{'days': 19, 'seconds': 60053}"),
            Reading::Value(json!({"days": 19, "seconds": 60053}))
        );
        assert_eq!(
            read("PermissionError: Cellular service is not enabled."),
            Reading::Error {
                kind: "PermissionError".into(),
                message: "Cellular service is not enabled.".into()
            }
        );
        assert_eq!(
            read("('a', \"it's\")"),
            Reading::Value(json!(["a", "it's"]))
        );
        assert_eq!(read("Done: sent"), Reading::Text("Done: sent".into()));
    }
}
