//! The conversation read as a natural-language task: what the user has said (every user
//! message; later ones add facts), what the agent asked and was answered, and the calls
//! made with their results (the evidence).
//!
//! Never: remembers anything between requests; the messages are the whole state.

use serde_json::{Map, Value as Json};

use super::pyrepr::{self, Reading};
use crate::{ChatRequest, Message};

/// One executed call and what it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Tool name.
    pub tool: String,
    /// Arguments (empty when they were not a JSON object).
    pub args: Map<String, Json>,
    /// The result, read.
    pub reading: Reading,
}

impl Event {
    /// Whether the call returned something other than an exception.
    pub fn succeeded(&self) -> bool {
        !matches!(self.reading, Reading::Error { .. })
    }

    /// Whether this is a call of `tool` with `args` (numbers compared as numbers).
    pub fn is(&self, tool: &str, args: &Map<String, Json>) -> bool {
        self.tool == tool
            && self.args.len() == args.len()
            && args.iter().all(|(k, v)| {
                self.args
                    .get(k)
                    .is_some_and(|w| match (v.as_f64(), w.as_f64()) {
                        (Some(a), Some(b)) => a == b,
                        _ => v == w,
                    })
            })
    }
}

/// The task and its evidence.
#[derive(Debug, Clone, Default)]
pub struct Task {
    /// Every user message, in order.
    pub messages: Vec<String>,
    /// The parameters the agent asked about, with the user's answer to each.
    pub answers: Vec<(String, String)>,
    /// Calls and results, in order.
    pub events: Vec<Event>,
}

/// The marker a question puts around the parameter it asks for, so that the agent,
/// re-reading its own question on a later request, knows what the answer fills.
pub fn asks_for(text: &str) -> Option<&str> {
    let at = text.find("(`")?;
    let rest = &text[at + 2..];
    Some(&rest[..rest.find("`)")?])
}

impl Task {
    /// Reads the conversation of a request.
    pub fn read(request: &ChatRequest) -> Task {
        let mut task = Task::default();
        let mut asked: Option<String> = None;
        let mut calls: Vec<(&str, &str, &str)> = Vec::new();
        for m in &request.messages {
            match m {
                Message::System { .. } => {}
                Message::User { content } => {
                    if let Some(param) = asked.take() {
                        task.answers.push((param, content.clone()));
                    }
                    task.messages.push(content.clone());
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    asked = content
                        .as_deref()
                        .filter(|_| tool_calls.is_empty())
                        .and_then(asks_for)
                        .map(str::to_string);
                    for c in tool_calls {
                        calls.push((c.id.as_str(), c.name.as_str(), c.arguments.as_str()));
                    }
                }
                Message::Tool {
                    call_id,
                    name,
                    content,
                } => {
                    let (tool, raw) = calls
                        .iter()
                        .find(|(id, _, _)| id == call_id)
                        .map_or((name.as_str(), ""), |(_, n, a)| (*n, *a));
                    let args = serde_json::from_str::<Json>(raw)
                        .ok()
                        .and_then(|v| v.as_object().cloned())
                        .unwrap_or_default();
                    task.events.push(Event {
                        tool: tool.to_string(),
                        args,
                        reading: pyrepr::read(content),
                    });
                }
            }
        }
        task
    }

    /// Everything the user said, one message a line.
    pub fn text(&self) -> String {
        self.messages.join("\n")
    }

    /// The latest answer to a question about `param`.
    pub fn answer(&self, param: &str) -> Option<&str> {
        self.answers
            .iter()
            .rev()
            .find(|(p, _)| p == param)
            .map(|(_, a)| a.as_str())
    }

    /// The user's messages that answer none of the agent's questions (the request and
    /// the facts it volunteers), one a line: what the task is about.
    pub fn request(&self) -> String {
        let answers: Vec<&str> = self.answers.iter().map(|(_, a)| a.as_str()).collect();
        self.messages
            .iter()
            .filter(|m| !answers.contains(&m.as_str()))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether some call has returned something other than an exception.
    pub fn located(&self) -> bool {
        self.events.iter().any(Event::succeeded)
    }
}
