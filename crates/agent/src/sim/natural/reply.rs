//! What the agent says to the user in a natural-language task: the outcome with the
//! result in it, a question for a missing value, an error it could not get past, or
//! that no tool can do what is asked.
//!
//! Never: claims a result no tool returned.

use serde_json::Value as Json;

use super::fill::Param;
use super::pyrepr::Reading;
use super::words;
use crate::ToolSchema;

/// Verbs that start the names of tools that change something.
const WRITE_VERBS: &[&str] = &[
    "add", "send", "set", "modify", "remove", "delete", "update", "create",
];

/// A result as plain words: numbers and strings as they are, `key: value` pairs, rows
/// separated by `;`.
pub fn render(v: &Json) -> String {
    match v {
        Json::Null => "nothing".into(),
        Json::String(s) => s.clone(),
        Json::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Json::Number(n) => n.to_string(),
        Json::Array(rows) if rows.is_empty() => "no results".into(),
        Json::Array(rows) => rows.iter().map(render).collect::<Vec<_>>().join("; "),
        Json::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{}: {}", k.replace('_', " "), render(v)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The outcome of the call that did what was asked.
pub fn outcome(tool: &ToolSchema, args: &serde_json::Map<String, Json>, r: &Reading) -> String {
    let switch = args.iter().find_map(|(k, v)| {
        let s = words::stems(k);
        (s.iter().any(|w| w == "on" || w == "enabl"))
            .then(|| v.as_bool())
            .flatten()
    });
    if let Some(on) = switch {
        let subject: Vec<String> = words::words(&tool.name)
            .into_iter()
            .filter(|w| {
                !matches!(
                    w.as_str(),
                    "set" | "status" | "enable" | "disable" | "toggle"
                )
            })
            .collect();
        let subject = capitalise(&subject.join(" "));
        return format!("{subject} is turned {}.", if on { "on" } else { "off" });
    }
    let verb = words::words(&tool.name)
        .into_iter()
        .next()
        .unwrap_or_default();
    let writes = WRITE_VERBS.contains(&verb.as_str());
    match r {
        Reading::Value(_) if writes => {
            format!(
                "Done: {}.",
                first_sentence(&tool.description).to_lowercase()
            )
        }
        Reading::Value(v) => format!("Here is what I found: {}.", render(v)),
        Reading::Text(t) => format!("Here is what I found: {t}"),
        Reading::Error { message, .. } => cannot_complete(message),
    }
}

/// A question for a parameter, marked so that the answer is read as its value
/// ([`super::task::asks_for`]).
pub fn question(p: &Param) -> String {
    let what = match first_sentence(&p.description).split(',').next() {
        Some(d) if !d.trim().is_empty() => d.trim().to_lowercase(),
        _ => p.name.replace('_', " "),
    };
    format!("Could you tell me the {what} (`{}`)?", p.name)
}

/// An error the agent could not get past.
pub fn cannot_complete(message: &str) -> String {
    format!("I couldn't complete that: {}", message.trim())
}

/// No visible tool can do what is asked.
pub fn cannot_help() -> String {
    "Sorry, I can't help with that: none of the tools I have can do it.".into()
}

fn first_sentence(s: &str) -> String {
    let s = s.trim();
    let end = s.find(['.', '\n']).unwrap_or(s.len());
    s[..end].trim().to_string()
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
