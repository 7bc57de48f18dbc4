//! Argument filling: a tool parameter's value from what the user said, what the user
//! answered, or what an earlier result holds — chosen by the parameter's name and type.
//!
//! - an answer to the agent's question about the parameter, read for the type;
//! - booleans: a switch (`on`, `enabled`, …) from on/off words; another flag when the
//!   user speaks of it (`is_self` when the request is about *my* own details);
//! - strings by name: phone numbers; a holiday; a relationship (`my mom`); content-like
//!   text (`content`, `message`, `text`, …) from a quotation, `saying:` or what a
//!   reminder is for; `from`/`to` units; names from capitalised words;
//! - numbers: a shift's amount for a time unit (`days`, `hours`); other amounts from
//!   the numbers written;
//! - otherwise the value under the parameter's name (or the end of it) in the latest
//!   result that has one (`person_id`, `phone_number` from a contact search).
//!
//! Timestamps are not filled here ([`super::plan`] derives them with tools).
//!
//! Never: invents a value; a parameter it cannot fill stays empty.

use serde_json::{json, Value as Json};

use super::extract;
use super::pyrepr::Reading;
use super::task::Task;
use super::time::When;
use super::words;
use crate::ToolSchema;

/// One parameter of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Name.
    pub name: String,
    /// JSON type (`string` when unsaid).
    pub ty: String,
    /// Description.
    pub description: String,
    /// Whether required.
    pub required: bool,
}

impl Param {
    /// The stems of its name.
    pub fn stems(&self) -> Vec<String> {
        // Every word of a name counts (`from_unit`, `is_self`): no function words here.
        words::words(&self.name)
            .iter()
            .map(|w| words::stem(w))
            .collect()
    }

    /// Whether a word of its name is `word` (both stemmed).
    pub fn has(&self, word: &str) -> bool {
        let w = words::stem(word);
        self.stems().contains(&w)
    }

    /// Whether it takes a POSIX timestamp.
    pub fn is_timestamp(&self) -> bool {
        matches!(self.ty.as_str(), "number" | "integer")
            && (self.has("timestamp") || self.description.to_lowercase().contains("posix"))
    }
}

/// The parameters of a schema, required ones first, each group in schema order.
pub fn params(t: &ToolSchema) -> Vec<Param> {
    let required: Vec<&str> = t.parameters["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    // Required ones in the order the schema requires them (JSON objects keep no order
    // here), then the optional ones.
    let mut out: Vec<Param> = t.parameters["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| Param {
                    name: k.clone(),
                    ty: v["type"].as_str().unwrap_or("string").to_string(),
                    description: v["description"].as_str().unwrap_or_default().to_string(),
                    required: required.contains(&k.as_str()),
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|p| {
        required
            .iter()
            .position(|r| *r == p.name)
            .unwrap_or(required.len())
    });
    out
}

const CONTENT: &[&str] = &[
    "content", "messag", "text", "payload", "body", "note", "titl",
];
const TIME_UNITS: &[&str] = &["week", "day", "hour", "minute", "second"];

/// A value for `p` from the user's words: an answer to a question about it first, then
/// the first message that has one.
pub fn from_user(p: &Param, task: &Task) -> Option<Json> {
    if let Some(a) = task.answer(&p.name) {
        if let Some(v) = from_text(p, a, true) {
            return Some(v);
        }
    }
    // Each message on its own: a value does not run from one message into the next.
    task.messages.iter().find_map(|m| from_text(p, m, false))
}

/// A value for `p` from one text; `answer` when the text answers a question about `p`
/// (a bare answer is then the value itself).
fn from_text(p: &Param, text: &str, answer: bool) -> Option<Json> {
    let bare = || {
        let t = text.trim().trim_matches(['"', '\'', '“', '”']).trim();
        let lower = t.to_lowercase();
        let t = ["it's ", "it is ", "its "]
            .iter()
            .find(|s| lower.starts_with(*s))
            .map_or(t, |s| &t[s.len()..]);
        t.trim_end_matches(['.', '!']).to_string()
    };
    let has = |s: &str| p.has(s);
    match p.ty.as_str() {
        "boolean" => {
            if has("on") || has("enabled") || has("status") || has("active") {
                extract::switch(text).map(Json::Bool)
            } else if has("self") {
                let w = words::words(text);
                let mine = w.iter().any(|x| x == "my" || x == "myself" || x == "me");
                (mine && extract::relationship(text).is_none() && extract::names(text).is_empty())
                    .then_some(json!(true))
            } else if answer {
                extract::switch(text)
                    .or_else(|| {
                        let w = words::words(text);
                        w.first()
                            .map(|x| matches!(x.as_str(), "yes" | "yeah" | "sure" | "true"))
                    })
                    .map(Json::Bool)
            } else {
                None
            }
        }
        "number" | "integer" => {
            if p.is_timestamp() {
                return None;
            }
            let unit = TIME_UNITS.iter().find(|u| has(u));
            let x = if let Some(u) = unit {
                let w = When::read(text);
                match w.shift {
                    Some((su, n)) if words::stem(su) == words::stem(u) => Some(n as f64),
                    _ if *u == "day" => w.day_offset.filter(|d| *d > 0).map(|d| d as f64),
                    _ => None,
                }
            } else if has("year") || has("month") || has("hour") || has("minute") {
                None
            } else {
                extract::numbers(text).first().copied()
            };
            x.map(|x| {
                if p.ty == "integer" || x.fract() == 0.0 && p.ty != "number" {
                    json!(x as i64)
                } else {
                    json!(x)
                }
            })
        }
        _ => {
            let found = if has("phone") {
                extract::phones(text).into_iter().next()
            } else if has("holiday") {
                When::read(text).holiday
            } else if has("relationship") {
                extract::relationship(text)
            } else if CONTENT.iter().any(|c| has(c)) {
                extract::quoted(text)
                    .or_else(|| extract::purpose(text))
                    .or_else(|| extract::after_that(text))
            } else if has("unit") {
                extract::units(text).map(|(from, to)| if has("from") { from } else { to })
            } else if has("name") {
                extract::names(&extract::without_quote(text))
                    .into_iter()
                    .next()
            } else {
                None
            };
            // A bare answer is the value itself, unless the parameter wants a shape
            // (a phone number, an id, a unit) the answer does not have.
            let shaped = ["phone", "holiday", "relationship", "unit", "id"]
                .iter()
                .any(|s| has(s));
            found
                .or_else(|| (answer && !shaped).then(bare))
                .map(Json::String)
        }
    }
}

/// A value for `p` from the latest result that holds one under its name (or the end of
/// its name: `recipient_phone_number` takes a `phone_number`).
pub fn from_results(p: &Param, task: &Task) -> Option<Json> {
    if p.is_timestamp() {
        return None;
    }
    task.events.iter().rev().find_map(|ev| match &ev.reading {
        Reading::Value(v) => lookup(v, &p.name),
        _ => None,
    })
}

fn lookup(v: &Json, name: &str) -> Option<Json> {
    match v {
        Json::Array(rows) => rows.iter().find_map(|r| lookup(r, name)),
        Json::Object(m) => m
            .iter()
            .filter(|(k, v)| !v.is_null() && (*k == name || name.ends_with(&format!("_{k}"))))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, v)| v.clone()),
        _ => None,
    }
}
